"""A piece of text -> its exact [start, end) in a document.

Pure text in, offsets out (never a Chunk or a Span). Chunker adapters locate the pieces of libraries
that return texts (`find`, `find_in_order`: exactly, else modulo whitespace); label tools locate the
quotes people write (`locate_quote`: exactly, else normalised, else fuzzily). Finding a piece that
is not there is an error for the caller to name, never a silently misplaced span.
"""

from __future__ import annotations

import bisect
import itertools
import re
import unicodedata
from array import array
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from rapidfuzz import fuzz

from workbench.dataset import Document, Located

How = Literal["hint", "exact", "whitespace"]  # a given offset confirmed, str.find, any whitespace run matching any


@dataclass(frozen=True, slots=True)
class Found:
    start: int
    end: int
    how: How


class NotFound(ValueError):
    """Piece `index` of a sequence is not in the text at or after offset `cursor`."""

    def __init__(self, index: int, piece: str, cursor: int):
        super().__init__(f"piece {index} is not in the text after offset {cursor} "
                         f"(searched exactly and modulo whitespace): {piece[:60]!r}")
        self.index, self.piece, self.cursor = index, piece, cursor


def find(text: str, piece: str, cursor: int = 0, after: int = 0) -> Found | None:
    """First occurrence of `piece` starting at or after `cursor` and ending after `after`:
    exactly, else with any run of whitespace matching any other. A match ending inside the
    previous piece would add nothing, so it is taken for an earlier copy of the text and skipped
    ("the the\\nthe" split into lines must place the second "the" on the second line)."""
    if not piece.strip():
        raise ValueError("find: parameter 'piece' is blank: whitespace matches everywhere")
    start = text.find(piece, cursor)
    while start >= 0:
        if start + len(piece) > after:
            return Found(start, start + len(piece), "exact")
        start = text.find(piece, start + 1)
    pattern = re.compile(r"\s+".join(map(re.escape, piece.split())))
    m = next((m for m in pattern.finditer(text, cursor) if m.end() > after), None)
    return None if m is None else Found(m.start(), m.end(), "whitespace")


def find_in_order(text: str, pieces: Iterable[tuple[str, int | None]]) -> Iterator[Found]:
    """Where each `(piece, start hint)` of a sequence in document order lies; blank pieces are skipped.

    Each piece must start after the previous one's start (overlaps are fine) and end after its
    end. A hint is used when the text really holds the piece there, ending after the previous
    piece (a library's hint can point at an earlier copy of the text); else the piece is searched
    from the previous start, exactly, then modulo whitespace (pieces that were stripped or had
    their whitespace collapsed). A piece found nowhere past the previous one may lie inside it:
    an overlap-only tail that a splitter emits alone ("-v`" after "... --autostash -v`"). Raises
    NotFound for the first piece that is not there."""
    cursor, after = 0, 0  # the next piece starts at or after `cursor` and (but for a nested one) ends after `after`
    for i, (piece, hint) in enumerate(pieces):
        if not piece.strip():
            continue
        if hint is not None and hint >= cursor and hint + len(piece) > after and text.startswith(piece, hint):
            found: Found | None = Found(hint, hint + len(piece), "hint")
        else:
            found = find(text, piece, cursor, after)
        if found is None:
            nested = text.find(piece, cursor, after)
            found = None if nested < 0 else Found(nested, nested + len(piece), "exact")
        if found is None:
            raise NotFound(i, piece, cursor)
        yield found
        cursor, after = found.start + 1, max(after, found.end)


# Quotes people write: exactly, else normalised, else fuzzy; always an exact span of the source.

THRESHOLD = 90.0  # the least rapidfuzz score a fuzzy match must reach
_QUOTE_MARKS = str.maketrans({**dict.fromkeys("‘’‚‛′‹›", "'"), **dict.fromkeys("“”„‟″«»", '"'),
                              **dict.fromkeys("‐‑‒–—―−", "-")})
_DROPPED = frozenset("`*_")  # code and emphasis markers a rendered page does not show
_LINK = re.compile(r"!?\[([^\]\n]*)\]\([^)\s]*(?:\s+\"[^\"\n]*\")?\)")  # [text](url "title"), ![alt](src)
_LINE_MARK = re.compile(r"(?:^|(?<=\s))(?:(?:#{1,6}|#:)(?:[ \t]+|$)|>[ \t]?)")  # heading, block-quote markers and
# the '#:' of an attribute's doc comment: a quote joins lines, so they are dropped wherever a line could have
# started (both sides alike), and at the very end
# reStructuredText, as Sphinx renders it: a role shows its title, else its target (`~` keeps the last
# dotted part; a leading `!` or `.` is dropped), some with words around it (ROLE_SHOWN); `title <url>`_
# shows its title; a directive line and its options show nothing but a version note's sentence
# (DIRECTIVE_SHOWN), nor does a link target; a paragraph's closing '::' shows as ':' (nothing after a
# space). ``literals`` and *emphasis* are the backticks and asterisks dropped below.
_ROLE = re.compile(r"(?<![\w`]):(?:[A-Za-z][\w+.-]*:)*(?P<name>[A-Za-z][\w+.-]*):`"
                   r"(?P<body>(?:[^`\n]|\n(?![ \t]*\n))+)`_{0,2}")  # within a paragraph
_TITLED = re.compile(r"(?P<title>.*?\S)\s*<[^<>]+>", re.DOTALL)  # a role's or link's `title <target>`
_RST_LINK = re.compile(r"(?<![\w`:])`(?P<title>[^`<>]*?\S)\s*<[^<>`]+>`_{1,2}")
_DIRECTIVE = re.compile(r"^[ \t]*\.\.[ \t]+(?P<name>[\w:.-]+)::(?P<arg>[^\n]*)(?:\n[ \t]+:[\w-]+:(?:[ \t][^\n]*)?)*"
                        r"|^[ \t]*\.\.[ \t]+_[^\n]*", re.M)
_LITERAL_MARK = re.compile(r"(?<=\S)::(?=[ \t]*$)|(?:^|(?<=\s))::(?=[ \t]*$)", re.M)
ROLE_SHOWN = {"func": "{}()", "meth": "{}()", "pep": "PEP {}", "rfc": "RFC {}", "issue": "#{}", "pr": "#{}"}
DIRECTIVE_SHOWN = {"versionadded": "Added in version {}:", "versionchanged": "Changed in version {}:",
                   "deprecated": "Deprecated since version {}:"}
_PLAIN = re.compile(r"[!-)+-^a-~]+")  # printable ASCII but the dropped markers: kept as is, in bulk
_ANCHOR = re.compile(r"\w{4,}")  # quote words a fuzzy match is sought around
_ANCHORS_PER_WORD = 5000  # a word this frequent places nothing
_WINDOWS = 12  # candidate places a fuzzy match is scored at, per quote
_CONTEXT_SLACK = 10  # characters (spaces, markup) a context may leave between itself and the quote


class QuoteError(ValueError):
    """A quote (or a hint) that gives no single span; `field` names the answer field to fix."""

    def __init__(self, message: str, field: str = "quote"):
        super().__init__(message)
        self.field = field


class QuoteNotFound(QuoteError):
    """Not in the text, not even fuzzily; `best` is the closest place found (below the threshold), if any."""

    def __init__(self, quote: str, best: Located | None, threshold: float, docs: Mapping[str, Document]):
        near = "no candidate shares a word with it" if best is None else (
            f"the best candidate, score {best.score:.0f}, is {best.doc_id!r} [{best.start}, {best.end}): "
            f"{docs[best.doc_id].text[best.start:best.end][:80]!r}")
        super().__init__(f"quote not found (exactly, normalised, or fuzzily with a score >= {threshold:g}): "
                         f"{quote[:60]!r}; {near}")
        self.quote, self.best = quote, best


class QuoteDrift(QuoteError):
    """A label's quote no longer matches its offsets (its document changed); `now` is where the quote
    is (None: not found or ambiguous), so that a check can report it and a resolve move the label."""

    def __init__(self, quote: str, span: str, start: int, end: int, now: Located | None, why: str):
        super().__init__(f"does not match the text at [{start}, {end}), which reads {span[:60]!r}; {why}: fix the "
                         "offsets, or write them anew with `python -m workbench labels resolve`")
        self.quote, self.start, self.end, self.now, self.why = quote, start, end, now, why


class AmbiguousQuote(QuoteError):
    """Equal matches in several places and no hint that picks one; `where` lists them in corpus order."""

    def __init__(self, quote: str, where: tuple[Located, ...], why: str = ""):
        places = ", ".join(f"{w.doc_id!r} [{w.start}, {w.end})" for w in where[:5]) + (
            f" and {len(where) - 5} more" if len(where) > 5 else "")
        super().__init__(f"quote occurs {len(where)} times{why}: {places}: {quote[:60]!r}; pick one with "
                         "'occurrence' (0-based), 'near' (a character offset) or 'context' (text around it)")
        self.quote, self.where, self.count = quote, where, len(where)


@dataclass(frozen=True, slots=True)
class Normalised:
    """A text as `normalise` leaves it, and where each of its characters came from in the source:
    char i of `text` comes from source[starts[i]:ends[i]], so a match maps back to an exact span."""

    text: str
    starts: array
    ends: array

    def source(self, start: int, end: int) -> tuple[int, int]:
        """The source span that normalised [start, end) came from."""
        return self.starts[start], self.ends[end - 1]

    def index(self, offset: int) -> int:
        """The first normalised character from source `offset` or later."""
        return bisect.bisect_left(self.starts, offset)


Edit = tuple[int, int, str, int]  # source [start, end) shown as a text ("": not at all); a hidden one joins the
# character shown after it (1: a role's ':meth:`~a.'), before it (-1: its closing '`'), or neither (0), so that
# a span ending or starting at the text a role shows covers the role


def _role(m: re.Match[str]) -> list[Edit]:
    """What a page shows of the role `m` (:meth:`~a.B.c`): its title or target, kept as source, and the
    markup around it hidden or replaced by the words its kind adds (ROLE_SHOWN)."""
    a, b = m.span("body")
    body = m.group("body")
    titled = _TITLED.fullmatch(body)
    if titled:
        show_from, show_to, template = a, a + titled.end("title"), "{}"
    else:
        show_from, show_to = a + len(body) - len(body.lstrip("!.~")), b
        if body.lstrip("!.").startswith("~"):
            show_from = max(show_from, m.string.rfind(".", show_from, b) + 1)
        template = ROLE_SHOWN.get(m.group("name"), "{}")
        if template.endswith("()") and body.endswith(")"):
            template = "{}"
    before, _, after = template.partition("{}")
    return [(m.start(), show_from, before, 1), (show_to, m.end(), after, -1)]


def _edits(text: str) -> Iterator[Edit]:
    """The markup of `text` a rendered page does not show as written: Markdown's link syntax (its text
    kept) and line-start markers, and reStructuredText's roles, links, directives and closing '::'."""
    for m in _LINK.finditer(text):
        yield m.start(), m.start(1), "", 0
        yield m.end(1), m.end(), "", 0
    yield from ((*m.span(), "", 0) for m in _LINE_MARK.finditer(text) if m.end() > m.start())
    for m in _ROLE.finditer(text):
        yield from _role(m)
    yield from ((m.end("title"), m.end(), "", -1) for m in _RST_LINK.finditer(text))
    for m in _DIRECTIVE.finditer(text):
        shown = DIRECTIVE_SHOWN.get(m.group("name") or "")
        yield m.start(), m.end(), shown.format(m.group("arg").strip()) if shown else "", 0
    for m in _LITERAL_MARK.finditer(text):
        yield m.end() - 1 if m.start() and not text[m.start() - 1].isspace() else m.start(), m.end(), "", -1


def _pieces(text: str) -> Iterator[Edit | tuple[int, int, None, int]]:
    """`text` as runs of source to normalise (shown None) and its markup (`_edits`), in order; an edit
    that begins inside an earlier one only widens what is hidden."""
    at = 0
    for a, b, shown, attach in sorted(_edits(text), key=lambda e: (e[0], -e[1])):
        if a < at:
            at = max(at, b)
            continue
        if a > at:
            yield at, a, None, 0
        yield a, b, shown, attach
        at = b
    if at < len(text):
        yield at, len(text), None, 0


def normalise(text: str) -> Normalised:
    """What a rendered page and a copy-paste keep of `text`: Unicode NFKC, typographic quotes and dashes
    made ASCII, every whitespace run one space, Markdown's backticks, emphasis markers, heading and
    block-quote markers (after any whitespace) and link syntax ([text](url) -> text) dropped, and
    reStructuredText shown as Sphinx renders it (`_edits`: :meth:`~a.b` -> b(), ``x`` -> x, directive
    lines dropped). Both sides of a comparison go through it; a base character is normalised with the
    combining marks after it, and a text a piece of markup shows maps back to that markup."""
    out: list[str] = []
    starts, ends = array("q"), array("q")
    joins: int | None = None  # where hidden markup that joins the next character shown begins

    def put(chars: str, i: int, j: int) -> None:
        """Characters from source [i, j), markers dropped and whitespace runs made one space."""
        nonlocal joins
        for ch in chars:
            if ch in _DROPPED:
                continue
            if ch.isspace():
                if out and out[-1][-1] == " ":
                    ends[-1] = j
                    continue
                ch = " "
            out.append(ch)
            starts.append(i if joins is None else joins)
            ends.append(j)
            joins = None

    for lo, hi, shown, attach in _pieces(text):
        if shown:
            put(shown, lo, hi)
        elif shown == "" and attach > 0:
            joins = lo if joins is None else joins
        elif shown == "" and attach < 0 and out:
            ends[-1] = hi
        i = lo if shown is None else hi
        while i < hi:
            m = _PLAIN.match(text, i, hi)
            j = m.end() if m else i
            while j > i and j < hi and unicodedata.combining(text[j]):  # the last one goes with its marks
                j -= 1
            if j > i:
                out.append(text[i:j])
                first = len(starts)
                starts.extend(range(i, j))
                ends.extend(range(i + 1, j + 1))
                if joins is not None:
                    starts[first], joins = joins, None
                i = j
                continue
            j = i + 1
            while j < hi and unicodedata.combining(text[j]):
                j += 1
            put(unicodedata.normalize("NFKC", text[i:j]).translate(_QUOTE_MARKS), i, j)
            i = j
    return Normalised("".join(out), starts, ends)


@lru_cache(maxsize=4096)
def _normalised(text: str) -> Normalised:
    """`normalise`, once per document text (a corpus is searched for many quotes)."""
    return normalise(text)


def _quote_form(value: str, name: str) -> str:
    """A quote or context normalised and stripped, refused when nothing is left."""
    form = normalise(value).text.strip()
    if not form:
        raise QuoteError(f"locate_quote: parameter '{name}' is blank once normalised: {value[:40]!r}", name)
    return form


def _occurrences(text: str, piece: str) -> Iterator[int]:
    """Every start of `piece` in `text`, overlapping ones too."""
    at = text.find(piece)
    while at >= 0:
        yield at
        at = text.find(piece, at + 1)


def _words(text: str, a: int, b: int) -> tuple[int, int]:
    """[a, b) without edge spaces and widened to whole words: an alignment may cut a word it mismatched."""
    while a < b and text[a] == " ":
        a += 1
    while b > a and text[b - 1] == " ":
        b -= 1
    while 0 < a < b and text[a - 1].isalnum() and text[a].isalnum():
        a -= 1
    while a < b < len(text) and text[b - 1].isalnum() and text[b].isalnum():
        b += 1
    return a, b


def _whole(text: str, quote: str, a: int, b: int) -> tuple[int, int, float]:
    """[a, b) of normalised `text` moved to the word boundaries within half the quote's length that match
    the whole `quote` best (rapidfuzz's ratio; the wider span on a tie), and that score. Why: partial
    alignment places a window of the quote's length, which clips a span that is longer (markup a page
    does not show) or whose first words differ; the best ratio spans from the quote's first word to its last."""
    reach = len(quote) // 2
    lo, hi = max(0, a - reach), min(len(text), b + reach)
    words = [m.span() for m in re.finditer(r"\S+", text[lo:hi])]
    firsts, lasts = [lo + s for s, _ in words], [lo + e for _, e in words]
    best = (fuzz.ratio(quote, text[a:b]), b - a)
    while True:
        start = max(firsts, key=lambda s: (fuzz.ratio(quote, text[s:b]), b - s) if s < b else (-1.0, 0))
        end = max(lasts, key=lambda e: (fuzz.ratio(quote, text[start:e]), e - start) if e > start else (-1.0, 0))
        score = (fuzz.ratio(quote, text[start:end]), end - start)
        if score <= best:
            return a, b, best[0]
        a, b, best = start, end, score


def _fuzzy(docs: Mapping[str, Document], ids: list[str], quote: str) -> list[Located]:
    """Fuzzy alignments of the normalised quote, best first: scored only where its words place it
    (each occurrence of a quote word votes for where the quote would start), so a megabyte corpus
    costs a few windows of rapidfuzz, not a scan. Each is scored as rapidfuzz's ratio of the quote
    and the span it ends as (widened to whole words)."""
    words = {m.group(): m.start() for m in reversed(list(_ANCHOR.finditer(quote)))}  # word -> first offset
    if not words:
        words = {w: quote.find(w) for w in quote.split()}
    half = max(1, len(quote) // 2)
    votes: dict[tuple[str, int], set[str]] = {}
    for doc_id in ids:
        text = _normalised(docs[doc_id].text).text
        for w, offset in words.items():
            places = list(itertools.islice(_occurrences(text, w), _ANCHORS_PER_WORD + 1))
            if len(places) <= _ANCHORS_PER_WORD:
                for p in places:
                    votes.setdefault((doc_id, (p - offset) // half), set()).add(w)
    best = sorted(votes, key=lambda k: -len(votes[k]))[:_WINDOWS]
    found: dict[tuple[str, int, int], float] = {}
    for doc_id, bucket in best:
        norm = _normalised(docs[doc_id].text)
        lo = max(0, bucket * half - half)
        window = norm.text[lo:lo + len(quote) + 3 * half]
        al = fuzz.partial_ratio_alignment(quote, window)
        a, b = _words(norm.text, lo + al.dest_start, lo + al.dest_end)
        if b > a:
            a, b, score = _whole(norm.text, quote, a, b)
            found[(doc_id, *norm.source(a, b))] = score
    ranked = sorted(found.items(), key=lambda kv: -kv[1])
    return [Located(d, s, e, "fuzzy", score) for (d, s, e), score in ranked]


def _pick(docs: Mapping[str, Document], quote: str, matches: list[Located], occurrence: int | None,
          near: int | None, context: str | None) -> Located:
    """The one match the hints leave: `context` keeps those with it around them (within a few characters
    of markup), `occurrence` indexes what is left (0-based, in corpus order), `near` takes the closest
    start; several left is ambiguous. A single match needs no hint, so none is consulted."""
    if len(matches) == 1:
        return matches[0]
    if context is not None:
        form = _quote_form(context, "context")
        kept = []
        for m in matches:
            norm = _normalised(docs[m.doc_id].text)
            a, b = norm.index(m.start), norm.index(m.end)
            if form in norm.text[max(0, a - len(form) - _CONTEXT_SLACK):b + len(form) + _CONTEXT_SLACK]:
                kept.append(m)
        if not kept:
            raise AmbiguousQuote(quote, tuple(matches), " and 'context' is around none of them")
        matches = kept
    if occurrence is not None:
        if not 0 <= occurrence < len(matches):
            raise QuoteError(f"locate_quote: parameter 'occurrence' is {occurrence}, but the quote has "
                             f"{len(matches)} equal matches (0..{len(matches) - 1}): {quote[:60]!r}", "occurrence")
        return matches[occurrence]
    if near is not None:
        distance = {m: abs(m.start - near) for m in matches}
        closest = min(distance.values())
        matches = [m for m in matches if distance[m] == closest]
    if len(matches) > 1:
        raise AmbiguousQuote(quote, tuple(matches))
    return matches[0]


def locate_quote(
    docs: Mapping[str, Document],
    quote: str,
    doc_id: str | None = None,
    *,
    occurrence: int | None = None,
    near: int | None = None,
    context: str | None = None,
    threshold: float = THRESHOLD,
) -> Located:
    """Where `quote` is in document `doc_id` (None: anywhere in `docs`), as an exact span of the source.

    Searched exactly, then normalised (`normalise`: what a copy from a rendered page changes), then
    fuzzily (rapidfuzz's partial-ratio alignment, a score of at least `threshold`); the first stage
    that finds it decides. Several equal matches need a hint (see `_pick`): else AmbiguousQuote.
    Not found: QuoteNotFound, naming the best candidate."""
    if not isinstance(quote, str) or not quote.strip():
        raise QuoteError(f"locate_quote: parameter 'quote' must be non-blank text, got {quote!r:.40}")
    if doc_id is not None and doc_id not in docs:
        raise KeyError(f"locate_quote: parameter 'doc_id': unknown document {doc_id!r}")
    if not 0 < threshold <= 100:
        raise ValueError(f"locate_quote: parameter 'threshold' must be in (0, 100], got {threshold!r}")
    ids = list(docs) if doc_id is None else [doc_id]
    exact = quote.strip()
    matches = [Located(d, s, s + len(exact), "exact", 100.0) for d in ids for s in _occurrences(docs[d].text, exact)]
    if not matches:
        form = _quote_form(quote, "quote")
        for d in ids:
            norm = _normalised(docs[d].text)
            matches += [Located(d, *norm.source(s, s + len(form)), "normalised", 100.0)
                        for s in _occurrences(norm.text, form)]
    if not matches:
        fuzzy = _fuzzy(docs, ids, _quote_form(quote, "quote"))
        if not fuzzy or fuzzy[0].score < threshold:
            raise QuoteNotFound(quote, fuzzy[0] if fuzzy else None, threshold, docs)
        matches = [m for m in fuzzy if m.score == fuzzy[0].score]
    return _pick(docs, quote, matches, occurrence, near, context)


def _quote_at(docs: Mapping[str, Document], quote: str, doc_id: str, start: int, end: int,
              threshold: float) -> Located | None:
    """How well a label's `quote` matches its own offsets: exactly, normalised, or fuzzily (rapidfuzz's
    ratio of the normalised forms, at least `threshold`); None when it does not (the text drifted)."""
    span = docs[doc_id].text[start:end]
    if span == quote:
        return Located(doc_id, start, end, "exact", 100.0)
    have, want = normalise(span).text.strip(), normalise(quote).text.strip()
    if have == want:
        return Located(doc_id, start, end, "normalised", 100.0)
    score = fuzz.ratio(want, have)
    return Located(doc_id, start, end, "fuzzy", score) if score >= threshold else None


def verify_quote(
    docs: Mapping[str, Document],
    quote: str,
    doc_id: str,
    start: int,
    end: int,
    *,
    occurrence: int | None = None,
    near: int | None = None,
    context: str | None = None,
    threshold: float = THRESHOLD,
) -> Located:
    """How a label's `quote` matches its own offsets [start, end) of `doc_id` (a score of 100 when exact
    or normalised). When it does not, QuoteDrift says where the quote is now: located in the same
    document, the hints deciding between equal matches, else the one nearest the old start."""
    found = _quote_at(docs, quote, doc_id, start, end, threshold)
    if found is not None:
        return found
    try:
        now: Located | None = locate_quote(docs, quote, doc_id, occurrence=occurrence, context=context,
                                           near=start if near is None else near, threshold=threshold)
        why = f"the quote is now at [{now.start}, {now.end}) ({now.how})"
    except QuoteError as e:
        now, why = None, f"and cannot be located again ({e})"
    raise QuoteDrift(quote, docs[doc_id].text[start:end], start, end, now, why)
