"""The node hierarchy of LlamaIndex's auto-merging retrieval, as exact spans: the chunking half of
`auto_merging` (the retrieval half is the `auto_merge` stage, workbench/retrieval/automerge.py).

LlamaIndex's HierarchicalNodeParser cuts the document with a SentenceSplitter of the first size,
each of those nodes with one of the next size, and so on (2048, 512, 128 tokens by default); here
every level is cut the same way, each node located inside its parent, so a node is a span and its
parent the span that contains it. All levels are chunks (the stage needs the parents as rows to
return them); a span that two levels share (a parent with one child) is one chunk. Overlap is 0
(LlamaIndex's default is 20 tokens): with overlap a child could sit in two parents' spans, and the
hierarchy would no longer follow from the spans. Use it with the stage, `auto_merging+auto_merge`,
which searches the leaves only; alone, parents and leaves are ranked together.

    >>> from workbench.variant import Variant
    >>> Variant.make("auto_merging", chunk_sizes=[64, 16], retrieval=["dense", "auto_merge"]).label
    'auto_merging(chunk_sizes=(64, 16))+auto_merge'
"""

from __future__ import annotations

from functools import cache
from typing import Any

from workbench.chunkers.adapters import locate, node_pieces
from workbench.chunkers.base import ChunkEnv
from workbench.chunkers.external import library_version
from workbench.chunkers.registry import strategy
from workbench.core.chunk import Bounds, Chunk, make_chunk
from workbench.core.params import Param
from workbench.dataset import Document

SIZES = (2048, 512, 128)  # HierarchicalNodeParser.from_defaults' chunk sizes, in cl100k tokens


@cache
def _splitter(size: int) -> Any:
    from llama_index.core.node_parser import SentenceSplitter

    return SentenceSplitter(chunk_size=size, chunk_overlap=0)


def levels(doc: Document, sizes: tuple[int, ...]) -> list[list[Bounds]]:
    """The spans of each level, top first: each level's nodes cut from the nodes of the one above."""
    out: list[list[Bounds]] = []
    parents = [(0, len(doc.text))]
    for size in sizes:
        level = []
        for ps, pe in parents:
            part = Document(doc.doc_id, doc.title, doc.text[ps:pe])
            level += [(ps + c.start, ps + c.end) for c in locate("auto_merging", part,
                                                                 node_pieces(_splitter(size), part.text))]
        out.append(level)
        parents = level
    return out


def _check(p: dict[str, Any]) -> None:
    sizes = p["chunk_sizes"]
    if not sizes or any(type(s) is not int or s < 1 for s in sizes) or list(sizes) != sorted(sizes, reverse=True):
        raise ValueError(f"parameter 'chunk_sizes' must be positive integers, largest first, got {list(sizes)!r}")


@strategy(
    "auto_merging",
    "LlamaIndex's HierarchicalNodeParser levels (chunk_sizes tokens, top first, overlap 0) as nested spans, "
    "for the auto_merge stage: search the leaves, merge into parents when enough children are retrieved.",
    {"chunk_sizes": Param(SIZES, "token size of each level's SentenceSplitter, largest first", label=True)},
    check=_check,
    version=library_version("llama-index-core"),
)
def auto_merging(doc: Document, env: ChunkEnv, *, chunk_sizes: tuple[int, ...]) -> list[Chunk]:
    spans = {span for level in levels(doc, tuple(chunk_sizes)) for span in level}
    return [make_chunk(doc, s, e) for s, e in sorted(spans, key=lambda b: (b[0], -b[1]))]
