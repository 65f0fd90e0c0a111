"""Recursive chunking: split on the coarsest separator present, recurse into what is still too
big, then greedily merge neighbouring pieces up to `size` (as LangChain and LlamaIndex do).

Everything works on character offsets into the source, so chunks stay exact spans and no
separator is ever dropped. Sizes are measured with unit boundaries computed once per document
(two binary searches per span), never by re-tokenizing pieces: a 740k-character document takes
seconds, not hours.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Sequence
from functools import cache
from itertools import pairwise

import numpy as np

from workbench.chunkers.base import ChunkEnv
from workbench.chunkers.registry import check_overlap, strategy
from workbench.chunkers.units import SIZE, TOKENIZER, UNIT, unit_boundaries
from workbench.core.chunk import Bounds, Chunk, make_chunk, strip_span
from workbench.core.params import UNIT_PARAM, Param
from workbench.dataset import Document

# Coarsest first. A separator that starts with whitespace opens the next piece ("\n## " keeps the
# heading mark with its section); one that starts with a mark closes the previous piece (". "
# keeps the full stop with its sentence). See `_separator`.
PRESETS: dict[str, tuple[str, ...]] = {
    "prose": ("\n\n", "\n", ". ", "? ", "! ", "。", "？", "！", "; ", ", ", " "),
    "markdown": (
        "\n# ", "\n## ", "\n### ", "\n#### ", "\n##### ", "\n###### ", "\n```", "\n\n", "\n",
        ". ", "? ", "! ", "。", "？", "！", " ",
    ),
    "code": (
        "\nclass ", "\ndef ", "\nasync def ", "\nfunction ", "\n    def ", "\n    async def ",
        "\n\n", "\n", " ",
    ),
}
LINES = ("\n",)


class Units:
    """Unit boundaries of one text (char offsets where units start, plus len(text)), so any
    span is measured without re-tokenizing it."""

    def __init__(self, boundaries: np.ndarray | Sequence[int]):
        self.b = np.asarray(boundaries)

    def count(self, start: int, end: int) -> int:
        """Units overlapping [start, end): a unit cut by either edge counts whole."""
        (lo,), (hi,) = self.edges([(start, end)])
        return hi - lo

    def edges(self, spans: Sequence[Bounds]) -> tuple[list[int], list[int]]:
        """Per span, the index of the unit holding its start and of the first unit at or after
        its end, so that count(spans[i][0], spans[j][1]) == hi[j] - lo[i]: one vectorised search
        instead of two binary searches per pair."""
        starts = np.array([s for s, _ in spans], dtype=np.int64)
        ends = np.array([e for _, e in spans], dtype=np.int64)
        lo = np.searchsorted(self.b, starts, "left")
        lo -= self.b[lo] > starts
        return lo.tolist(), np.searchsorted(self.b, ends, "left").tolist()

    def inside(self, start: int, end: int) -> list[int]:
        """Distinct unit boundaries strictly inside (start, end): where a run may be cut."""
        lo, hi = np.searchsorted(self.b, start, "right"), np.searchsorted(self.b, end, "left")
        return np.unique(self.b[lo:hi]).tolist()


@cache
def _separator(sep: str) -> tuple[re.Pattern, int]:
    """The literal pattern of `sep`, and where a match is cut: after its leading run of
    whitespace or of non-whitespace."""
    return re.compile(re.escape(sep)), re.match(r"\s+|\S+", sep).end()


def _cuts(text: str, start: int, end: int, sep: str) -> list[int]:
    """Cut positions strictly inside (start, end) at every match of `sep`."""
    pattern, off = _separator(sep)
    return [cut for m in pattern.finditer(text, start, end) if start < (cut := m.start() + off) < end]


def split_pieces(
    text: str, start: int, end: int, units: Units, size: int, separators: Sequence[str]
) -> list[Bounds]:
    """Contiguous pieces covering [start, end), each at most `size` units unless it is a single
    unbreakable character: split on the first separator present, recurse with the finer ones
    into pieces still too big, and cut at unit boundaries when no separator is left.

    The recursion runs level by level (one separator each), so the parts of every span split
    at one level are measured in one vectorised search instead of one call each."""
    if units.count(start, end) <= size:
        return [(start, end)]
    pieces: list[Bounds] = []
    big = [(start, end)]  # spans over `size` that the finer separators have yet to try
    for sep in separators:
        if not big:
            break
        parts: list[Bounds] = []
        uncut: list[Bounds] = []
        for s, e in big:
            cuts = _cuts(text, s, e, sep)
            if cuts:
                parts += pairwise([s, *cuts, e])
            else:
                uncut.append((s, e))
        big = uncut
        lo, hi = units.edges(parts)
        for part, first, after in zip(parts, lo, hi, strict=True):
            if after - first <= size:
                pieces.append(part)
            else:
                big.append(part)
    for s, e in big:
        pieces += pairwise([s, *units.inside(s, e), e])
    return sorted(pieces)


def merge_pieces(text: str, pieces: Sequence[Bounds], units: Units, size: int, overlap: int) -> list[Bounds]:
    """Greedily join contiguous pieces into spans of at most `size` units; each new span starts
    with the trailing pieces of the previous one that fit in `overlap` units (but never with its
    first words, so spans never nest). Spans are trimmed of edge whitespace, and one adding
    nothing but whitespace is dropped."""
    out: list[Bounds] = []
    lo, hi = units.edges(pieces)  # units in pieces i..j: hi[j] - lo[i]
    window: deque[int] = deque()  # indices of the pieces of the span being built

    def emit() -> int:
        """Append the window's trimmed span if it adds text; return where its text starts."""
        start = pieces[window[0]][0]
        s, e = strip_span(text, start, pieces[window[-1]][1]) or (start, start)
        if e > s and (not out or e > out[-1][1]):
            out.append((s, e))
        return s

    for k in range(len(pieces)):
        if window and hi[k] - lo[window[0]] > size:
            first = emit()
            while window and (
                pieces[window[0]][0] <= first
                or hi[window[-1]] - lo[window[0]] > overlap
                or hi[k] - lo[window[0]] > size
            ):
                window.popleft()
        window.append(k)
    if window:
        emit()
    return out


def recursive_spans(
    text: str, start: int, end: int, units: Units, size: int, overlap: int, separators: Sequence[str]
) -> list[Bounds]:
    """Chunk spans of text[start:end]: `split_pieces` then `merge_pieces`."""
    return merge_pieces(text, split_pieces(text, start, end, units, size, separators), units, size, overlap)


def check_separators(p: dict) -> None:
    check_overlap()(p)
    bad = [s for s in p["custom_separators"] if not isinstance(s, str) or not s]
    if bad:
        raise ValueError(f"parameter 'custom_separators' must hold non-empty strings, got {bad!r}")


@strategy(
    "recursive",
    "Split on paragraphs, then lines, sentences and words until pieces fit; merge neighbours up to `size`.",
    {
        "size": SIZE,
        "overlap": Param(0, "units repeated between neighbours, in [0, size), whole pieces only", lo=0, label=True,
                         unit=UNIT_PARAM),
        "unit": UNIT,
        "tokenizer": TOKENIZER,
        "separators": Param("prose", "separator preset, coarsest first", choices=tuple(PRESETS)),
        "custom_separators": Param((), "literal separators, coarsest first; replace the preset when given"),
    },
    check=check_separators,
)
def recursive(
    doc: Document,
    env: ChunkEnv,
    *,
    size: int,
    overlap: int,
    unit: str,
    tokenizer: str,
    separators: str,
    custom_separators: tuple[str, ...],
) -> list[Chunk]:
    units = Units(unit_boundaries(doc.text, unit, tokenizer, env))
    seps = custom_separators or PRESETS[separators]
    return [make_chunk(doc, s, e) for s, e in recursive_spans(doc.text, 0, len(doc.text), units, size, overlap, seps)]
