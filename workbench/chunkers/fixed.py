"""Fixed-size chunking: every `size` tokens (or characters), repeating `overlap` of them.

The baseline every other strategy is measured against: fast, predictable, blind to meaning.
"""

from __future__ import annotations

import numpy as np

from workbench.chunkers.base import Chunk, ChunkEnv, make_chunk
from workbench.chunkers.registry import Param, check_overlap, strategy
from workbench.dataset import Document
from workbench.tokens import MODEL_TOKENIZER, TIKTOKEN_ENCODINGS

UNIT = Param("tokens", "size unit: tokens of `tokenizer`, or characters", choices=("tokens", "chars"))
TOKENIZER = Param("cl100k_base", "tokenizer for unit=tokens", choices=(*TIKTOKEN_ENCODINGS, MODEL_TOKENIZER))


def unit_boundaries(text: str, unit: str, tokenizer: str, env: ChunkEnv) -> np.ndarray:
    """Char offsets of unit starts (plus len(text)): a run of units [i, j) is text[b[i]:b[j]]."""
    if unit == "chars":
        return np.arange(len(text) + 1, dtype=np.int64)
    return env.tokenizer(tokenizer).boundaries(text)


def windows(n: int, size: int, overlap: int) -> list[tuple[int, int]]:
    """Unit windows [i, i + size) stepping by size - overlap, the last one ending at n."""
    step = size - overlap
    out = []
    for i in range(0, max(n, 1), step):
        out.append((i, min(i + size, n)))
        if i + size >= n:
            break
    return out


@strategy(
    "fixed",
    "Cut every `size` units, repeating the last `overlap` units at the start of the next chunk.",
    {
        "size": Param(256, "chunk size in `unit`", lo=1, label=True),
        "overlap": Param(0, "units repeated between neighbours, in [0, size)", lo=0, label=True),
        "unit": UNIT,
        "tokenizer": TOKENIZER,
    },
    check=check_overlap(),
)
def fixed(doc: Document, env: ChunkEnv, *, size: int, overlap: int, unit: str, tokenizer: str) -> list[Chunk]:
    b = unit_boundaries(doc.text, unit, tokenizer, env)
    chunks = []
    for i, j in windows(len(b) - 1, size, overlap):
        start, end = int(b[i]), int(b[j])
        if end > start and doc.text[start:end].strip():
            chunks.append(make_chunk(doc, start, end))
    return chunks
