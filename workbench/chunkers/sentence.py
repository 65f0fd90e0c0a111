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

import copy
import re
from collections.abc import Callable
from functools import cache, lru_cache
from typing import Any

import numpy as np

from workbench.chunkers.base import Bounds, Chunk, ChunkEnv, make_chunk, strip_span
from workbench.chunkers.registry import strategy
from workbench.chunkers.units import SIZE, TOKENIZER, UNIT, unit_boundaries, windows
from workbench.dataset import Document
from workbench.offline import use_bundled_nltk_data
from workbench.params import Param

# Abbreviations punkt's English model lacks; "etc." is left out on purpose: it often ends a sentence.
EXTRA_ABBREVIATIONS = ("e.g", "i.e", "vs", "cf", "fig", "al", "approx")
_LINE = re.compile(r"[^\n]+")
_CJK_END = re.compile(r"[。！？]+[」』”’）)]*")  # a CJK sentence end, with any closing quotes



@lru_cache(maxsize=1)
def _punkt() -> Any:
    from nltk.tokenize.punkt import PunktTokenizer

    use_bundled_nltk_data()
    tok = PunktTokenizer("english")
    tok._params.abbrev_types.update(EXTRA_ABBREVIATIONS)  # the documented way to add abbreviations
    return tok


def _punkt_for_one_text() -> Any:
    """`_punkt()` deciding each distinct candidate break once: punkt's decision is a function
    of its context ("word. Next") alone, and contexts repeat within a text (wikitexts has ". The"
    145 times). A shallow copy, so the memo lives only as long as the one text's splitting."""
    tok = copy.copy(_punkt())
    tok.text_contains_sentbreak = cache(tok.text_contains_sentbreak)
    return tok


def sentence_spans(text: str) -> list[Bounds]:
    """Sorted sentence spans that tile the non-whitespace text: each starts and ends on
    non-whitespace, and every non-whitespace character lies in exactly one span."""
    out: list[Bounds] = []
    punkt = _punkt_for_one_text()
    line_spans: dict[str, list[Bounds]] = {}  # punkt is the cost, and lines repeat (table rows, boilerplate)
    cjk = _CJK_END.search(text) is not None
    for line in _LINE.finditer(text):
        if line.group() not in line_spans:
            line_spans[line.group()] = list(punkt.span_tokenize(line.group()))
        for a, b in line_spans[line.group()]:
            a, b = a + line.start(), b + line.start()
            cuts = [m.end() for m in _CJK_END.finditer(text, a, b)] if cjk else []
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
    spans = pack(doc.text, sentence_spans(doc.text), size, overlap, unit, tokenizer, env)
    return [make_chunk(doc, a, b) for a, b in spans]
