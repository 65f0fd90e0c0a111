"""What sized chunkers share: the size parameters (unit, size, tokenizer) and unit arithmetic.

A size is counted in `unit`s: characters, or tokens of `tokenizer`. Text is cut only at unit
boundaries (character offsets where a unit starts), in windows of at most `size` units. Apart
from base.py (what every chunker returns and may ask for), since only sized chunkers need it.
"""

from __future__ import annotations

import numpy as np

from workbench.chunkers.base import ChunkEnv
from workbench.core.params import UNIT_PARAM, Param
from workbench.core.tokens import MODEL_TOKENIZER, TIKTOKEN_ENCODINGS

UNIT = Param("tokens", "size unit: tokens of `tokenizer`, or characters", choices=("tokens", "chars"))
SIZE = Param(256, "chunk size in `unit`", lo=1, label=True, unit=UNIT_PARAM)
TOKENIZER = Param("cl100k_base", "tokenizer that counts sizes: a tiktoken encoding, or model "
                  "(the embedding model's own)", choices=(*TIKTOKEN_ENCODINGS, MODEL_TOKENIZER))


def unit_boundaries(text: str, unit: str, tokenizer: str, env: ChunkEnv) -> np.ndarray:
    """Char offsets of unit starts (plus len(text)): a run of units [i, j) is text[b[i]:b[j]]. Token
    boundaries are read-only (the tokenizer keeps them for the other variants chunking the same text)."""
    if unit == "chars":
        return np.arange(len(text) + 1, dtype=np.int64)
    return env.tokenizer(tokenizer).boundaries(text)


def char_windows(b: np.ndarray, size: int, overlap: int) -> list[tuple[int, int]]:
    """Char spans of windows of at most `size` units that never cut a character.

    `windows` over raw unit indices is not enough for tokens: an emoji or a CJK character can be
    several tokens, and a window starting inside it would, once snapped to the character start,
    hold more than `size` tokens. Here such a character moves whole and counts all its tokens.
    """
    first = np.flatnonzero(np.r_[True, b[1:] != b[:-1]])  # b is sorted: each distinct offset's first unit
    starts = b[first]
    last = len(starts) - 1
    if last <= 0:
        return []

    def reach(g: int) -> int:  # furthest boundary within `size` units of g (at least one character)
        return max(g + 1, int(np.searchsorted(first, first[g] + size, "right")) - 1)

    out, g, prev = [], 0, 0
    while True:
        h = reach(g)
        if h <= prev:  # overlap plus the next character exceeds size: no overlap this time
            g, h = prev, reach(prev)
        out.append((int(starts[g]), int(starts[h])))
        if h == last:
            return out
        prev, g = h, max(g + 1, int(np.searchsorted(first, first[h] - overlap, "left")))
