"""Sentence splitting (NLTK punkt, exact offsets) and sentence packing.

Two splitters, chosen by name with `sentence_splitter` (the `semantic` strategy's `sentences`
parameter): "lines+punkt" (`sentence_spans`, described next) and "llamaindex"
(`llamaindex_sentence_spans`, LlamaIndex's default for SemanticSplitterNodeParser).

Punkt knows abbreviations (Dr., U.S.) and decimals (3.14) but not CJK full stops, which need no
following space, and it would glue a heading or a table row to the next line. So every line
break ends a sentence (the shared corpora put headings, table rows and speaker turns on their
own lines), punkt splits inside a line, and 。！？ split inside punkt's sentences.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any

import numpy as np

from workbench.chunkers.base import ChunkEnv
from workbench.chunkers.registry import strategy
from workbench.chunkers.units import SIZE, TOKENIZER, UNIT, unit_boundaries
from workbench.core.chunk import Bounds, Chunk, make_chunk, strip_span, windows
from workbench.core.memo import TextMemo
from workbench.core.offline import use_bundled_nltk_data
from workbench.core.params import Param
from workbench.dataset import Document

# Abbreviations punkt's English model lacks; "etc." is left out on purpose: it often ends a sentence.
EXTRA_ABBREVIATIONS = ("e.g", "i.e", "vs", "cf", "fig", "al", "approx")
SENTENCE_CHARS = 1 << 24  # characters of the texts whose sentence spans are kept (sentences_of)
_LINE = re.compile(r"[^\n]+")
_CJK_STOPS = "。！？"
_CJK_END = re.compile(rf"[{_CJK_STOPS}]+[」』”’）)]*")  # a CJK sentence end, with any closing quotes


def _unguarded(pattern: Any) -> Any:
    """NLTK's compiled `pattern` without its ReDoS guard (an nltk.redos.TimedPattern: a Python
    wrapper and a timer around every call), recompiled with the same engine (`regex`) and flags,
    so it matches the same. Punkt's patterns are NLTK's own, fixed and linear, not a caller's; the
    guard costs several times a match on punkt's short contexts, and a timeout could only raise."""
    import regex

    return regex.compile(pattern.pattern, pattern.flags)


@dataclass(frozen=True)
class _Punkt:
    """Punkt's English model, the break decision, and the two patterns `punkt_line_spans` runs itself."""

    decider: Any  # a PunktSentenceTokenizer: its text_contains_sentbreak decides one candidate's context
    period_context: Any  # punkt's candidate-break pattern ("." "?" "!" before punctuation or a next word)
    realignment: Any  # closing punctuation after a break, moved onto the sentence it closes


@lru_cache(maxsize=1)
def _punkt() -> _Punkt:
    from nltk.tokenize.punkt import PunktLanguageVars, PunktSentenceTokenizer, PunktToken, PunktTokenizer

    class LangVars(PunktLanguageVars):  # punkt's documented extension point, here only to unguard a pattern
        __slots__ = ()
        _word_tokenizer = _unguarded(PunktLanguageVars()._word_tokenizer_re())

        def _word_tokenizer_re(self) -> Any:
            return self._word_tokenizer

    class Token(PunktToken):
        __slots__ = ()
        _RE_ELLIPSIS = _unguarded(PunktToken._RE_ELLIPSIS)
        _RE_NUMERIC = _unguarded(PunktToken._RE_NUMERIC)
        _RE_INITIAL = _unguarded(PunktToken._RE_INITIAL)
        _RE_ALPHA = _unguarded(PunktToken._RE_ALPHA)

    use_bundled_nltk_data()
    decider = PunktSentenceTokenizer(lang_vars=LangVars(), token_cls=Token)
    decider._params = PunktTokenizer("english")._params  # the English model (PunktTokenizer has no lang_vars)
    decider._params.abbrev_types.update(EXTRA_ABBREVIATIONS)  # the documented way to add abbreviations
    return _Punkt(decider, _unguarded(PunktLanguageVars().period_context_re()),
                  _unguarded(PunktLanguageVars.re_boundary_realignment))


_ASCII_SPACE = " \t\r\x0b\x0c"  # string.whitespace without "\n": what punkt looks back for, within a line


def punkt_line_spans(text: str) -> list[Bounds]:
    """What NLTK punkt's `span_tokenize` gives on each line of `text` (a maximal run without
    "\n"), shifted to text offsets, in order: the same spans, found in one pass over the text.

    Why not call span_tokenize per line: its generators, slices and guarded regexes cost more per
    line than the decisions do. This is its algorithm (`_match_potential_end_contexts`,
    `_slices_from_text`, `_realign_boundaries`, NLTK 3.10) with each line's state reset where
    the line starts. The one pass finds the same candidates as per-line passes: a candidate is
    one "." "?" "!" plus a lookahead, which sees past the line end only through a whitespace run
    holding the "\n" (dropped here). Punkt's decision, a function of the candidate's context
    alone, is asked once per distinct context. Tests compare with per-line span_tokenize."""
    punkt = _punkt()
    decide = cache(punkt.decider.text_contains_sentbreak)
    candidates = [m for m in punkt.period_context.finditer(text) if "\n" not in m.group("after_tok")]
    out: list[Bounds] = []
    k = 0  # next candidate
    for line in _LINE.finditer(text):
        start, end = line.span()
        # _match_potential_end_contexts: each candidate with the word before it, unless that word
        # overlaps the previous candidate's (as in "acting!!!"), then the decision on its context
        word, prev = (start, start), None
        last_break, slices = start, []
        while k < len(candidates) and candidates[k].start() < end:
            m = candidates[k]
            k += 1
            space = max(text.rfind(c, word[1], m.start()) for c in _ASCII_SPACE)
            here = (space + 1 if space > word[1] else word[0], m.start())
            if prev is not None and word[1] <= here[0]:
                last_break = _slice_at(text, prev, word, decide, last_break, slices)
            prev, word = m, here
        if prev is not None:
            last_break = _slice_at(text, prev, word, decide, last_break, slices)
        slices.append((last_break, start + len(line.group().rstrip())))
        # _realign_boundaries: closing punctuation that opens a sentence moves to the one before
        realign = 0
        for (a, b), following in zip(slices, [*slices[1:], None], strict=True):
            a += realign
            close = None if following is None else punkt.realignment.match(text, *following)
            if close is not None:
                out.append((a, following[0] + len(close.group().rstrip())))
                realign = close.end() - following[0]
            else:
                realign = 0
                if b > a:
                    out.append((a, b))
    return out


def _slice_at(text: str, m: Any, word: Bounds, decide: Callable[[str], bool], last_break: int,
              slices: list[Bounds]) -> int:
    """_slices_from_text's step: if punkt breaks at candidate `m` (after `word`), end a slice
    there; the next one starts at the next word, or at the punctuation that follows."""
    if not decide(text[word[0] : word[1]] + m.group() + m.group("after_tok")):
        return last_break
    slices.append((last_break, m.end()))
    return m.start("next_tok") if m.group("next_tok") else m.end()


def _has_cjk_stop(text: str, start: int, end: int) -> bool:
    """Whether text[start:end] holds a CJK full stop: str.find, as `re` scans non-ASCII text a
    character at a time (on a long document, over an order of magnitude slower)."""
    return any(text.find(c, start, end) >= 0 for c in _CJK_STOPS)


def sentence_spans(text: str) -> list[Bounds]:
    """Sorted sentence spans that tile the non-whitespace text: each starts and ends on
    non-whitespace, and every non-whitespace character lies in exactly one span."""
    out: list[Bounds] = []
    for a, b in punkt_line_spans(text):
        cuts = [m.end() for m in _CJK_END.finditer(text, a, b)] if _has_cjk_stop(text, a, b) else []
        for lo, hi in zip([a, *cuts], [*cuts, b], strict=True):
            span = strip_span(text, lo, hi)
            if span is not None:
                out.append(span)
    return out


@lru_cache(maxsize=1)
def _untrained_punkt() -> Any:
    from nltk.tokenize import PunktSentenceTokenizer

    return PunktSentenceTokenizer()


def llamaindex_sentence_spans(text: str) -> list[Bounds]:
    """LlamaIndex's default sentence splitting (llama-index-core `split_by_sentence_tokenizer`):
    NLTK's *untrained* `PunktSentenceTokenizer()` (no abbreviation list, so "Dr." ends a
    sentence), with no split at line breaks (a heading joins the next sentence) nor at CJK stops.

    LlamaIndex's sentence string i is text[start_i : start_{i+1}] (the last one runs to the end
    of the text), so it keeps the whitespace that follows it; punkt's first span starts at 0.
    Our span i is that string with leading and trailing whitespace removed, so the spans tile the
    non-whitespace text like `sentence_spans`, and `group_texts` rebuilds LlamaIndex's strings."""
    spans = (strip_span(text, a, b) for a, b in _untrained_punkt().span_tokenize(text))
    return [s for s in spans if s is not None]


SENTENCE_SPLITTERS: dict[str, Callable[[str], list[Bounds]]] = {
    "lines+punkt": sentence_spans,
    "llamaindex": llamaindex_sentence_spans,
}


def sentence_splitter(name: str) -> Callable[[str], list[Bounds]]:
    """The sentence splitter called `name` (a key of SENTENCE_SPLITTERS): text -> sentence spans."""
    if name not in SENTENCE_SPLITTERS:
        raise ValueError(f"unknown sentence splitter {name!r}; choose one of {list(SENTENCE_SPLITTERS)}")
    return SENTENCE_SPLITTERS[name]


_SENTENCES: TextMemo[list[Bounds]] = TextMemo(SENTENCE_CHARS)  # by (splitter, text)


def sentences_of(text: str, splitter: str = "lines+punkt") -> list[Bounds]:
    """`splitter`'s sentence spans of `text` (see sentence_splitter), split once per process while kept
    (SENTENCE_CHARS characters of texts): shared by every chunking of the text (a sweep's sentence sizes and
    overlaps, semantic's percentiles, the hierarchies'), so never to be mutated."""
    return _SENTENCES.get(splitter, text, sentence_splitter(splitter))


def covered(text: str, spans: list[Bounds], start: int, end: int) -> list[Bounds]:
    """The parts of `spans` inside [start, end), whitespace-trimmed (for packing inside a parent)."""
    clipped = (strip_span(text, max(a, start), min(b, end)) for a, b in spans if a < end and b > start)
    return [s for s in clipped if s is not None]


def cut_windows(text: str, start: int, end: int, size: int, unit: str, tokenizer: str, env: ChunkEnv) -> list[Bounds]:
    """A span too big for one chunk, cut into fixed windows of `size` units (no overlap).
    A window that counts longer alone (BPE merges depend on context, e.g. " naï" vs "naï")
    is cut again, so every piece fits unless it is a single unsplittable unit."""
    length = env.length_fn(unit, tokenizer)
    b = unit_boundaries(text[start:end], unit, tokenizer, env) + start
    out: list[Bounds] = []
    for i, j in windows(len(b) - 1, size, 0):
        piece = strip_span(text, int(b[i]), int(b[j]))
        if piece is None:
            continue
        if piece != (start, end) and length(text[piece[0] : piece[1]]) > size:
            out += cut_windows(text, *piece, size, unit, tokenizer, env)
        else:
            out.append(piece)
    return out


def pack(
    text: str, sentences: list[Bounds], size: int, overlap: int, unit: str, tokenizer: str, env: ChunkEnv
) -> list[Bounds]:
    """Greedily pack whole sentences into spans of at most `size` units (the span's own count),
    starting each span with up to `overlap` sentences of the previous one when they fit.
    A sentence longer than `size` is cut into fixed windows instead.

    Why estimate first: counting every candidate exactly is quadratic; the document's own
    token boundaries predict the last sentence that fits, and one or two exact counts confirm it.
    Those counts come from the same boundaries plus the span's edge words (`span_count`).
    """
    if not sentences:
        return []
    lo = sentences[0][0]
    b = unit_boundaries(text[lo : sentences[-1][1]], unit, tokenizer, env) + lo
    count = (lambda s, e: e - s) if unit == "chars" else env.tokenizer(tokenizer).span_count(text, b)
    starts = np.array([s for s, _ in sentences])
    ends = np.array([e for _, e in sentences])
    n = len(sentences)

    def fits(i: int, j: int) -> bool:  # sentences [i, j) together
        return count(int(starts[i]), int(ends[j - 1])) <= size

    def extend(i: int, j: int) -> int:
        """Largest end >= j such that [i, end) fits, given that [i, j) fits."""
        first_unit = int(np.searchsorted(b, starts[i], "right")) - 1
        limit = b[min(first_unit + size, len(b) - 1)]
        end = max(j, int(np.searchsorted(ends, limit, "right")))
        while end > j and not fits(i, end):
            end -= 1
        while end < n and fits(i, end + 1):
            end += 1
        return end

    out: list[Bounds] = []
    i = 0  # first sentence not yet in any span
    while i < n:
        if not fits(i, i + 1):
            out += cut_windows(text, int(starts[i]), int(ends[i]), size, unit, tokenizer, env)
            i += 1
            continue
        first = i
        while first > max(i - overlap, 0) and fits(first - 1, i + 1):
            first -= 1
        end = extend(first, i + 1)
        out.append((int(starts[first]), int(ends[end - 1])))
        i = end
    return out


@strategy(
    "sentence",
    "Whole sentences (punkt, plus line breaks and CJK stops) packed up to `size` units; "
    "`overlap` sentences repeated between neighbours; longer sentences cut like `fixed`.",
    {
        "size": SIZE,
        "overlap": Param(0, "sentences repeated from the previous chunk (when they fit)", lo=0, label=True,
                         slider_hi=10, unit="sentences"),
        "unit": UNIT,
        "tokenizer": TOKENIZER,
    },
)
def sentence(doc: Document, env: ChunkEnv, *, size: int, overlap: int, unit: str, tokenizer: str) -> list[Chunk]:
    spans = pack(doc.text, sentences_of(doc.text), size, overlap, unit, tokenizer, env)
    return [make_chunk(doc, a, b) for a, b in spans]
