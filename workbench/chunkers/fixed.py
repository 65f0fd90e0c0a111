"""Fixed-size chunking: every `size` tokens (or characters), repeating `overlap` of them.

The baseline every other strategy is measured against: fast, predictable, blind to meaning.
"""

from __future__ import annotations

from workbench.chunkers.base import ChunkEnv
from workbench.chunkers.registry import check_overlap, strategy
from workbench.chunkers.units import SIZE, TOKENIZER, UNIT, char_windows, unit_boundaries
from workbench.core.chunk import Chunk, make_chunk
from workbench.core.params import UNIT_PARAM, Param
from workbench.dataset import Document


@strategy(
    "fixed",
    "Cut every `size` units, repeating the last `overlap` units at the start of the next chunk.",
    {
        "size": SIZE,
        "overlap": Param(0, "units repeated between neighbours, in [0, size)", lo=0, label=True, unit=UNIT_PARAM),
        "unit": UNIT,
        "tokenizer": TOKENIZER,
    },
    check=check_overlap(),
    version=2,
)
def fixed(doc: Document, env: ChunkEnv, *, size: int, overlap: int, unit: str, tokenizer: str) -> list[Chunk]:
    b = unit_boundaries(doc.text, unit, tokenizer, env)
    return [make_chunk(doc, s, e) for s, e in char_windows(b, size, overlap) if doc.text[s:e].strip()]
