"""Where a chunk is, in words a person can follow back to the source: the one label every view of a chunk shows.

"guide.md · Install > Linux", "handbook.pdf · pages 3-4", "docs_src/app.py · class Cache > def get(self, key)":
the file (its path, else the doc id), the pages of a PDF, and the heading path of Markdown-structured text or
the enclosing definitions of code. A chunk's own `heading` names its section when its strategy set one; a
chunk cut without it (a `recursive` cut, or a span rebuilt from a result's hits) gets the one its position
has, so every strategy's chunks read alike.
"""

from __future__ import annotations

from bisect import bisect_right
from functools import lru_cache

from workbench.chunkers.code import scope_at
from workbench.chunkers.markdown import section_spans
from workbench.chunkers.pages import page_range
from workbench.core.chunk import Chunk
from workbench.dataset import Document

SEP = " · "
MARKDOWN_KINDS = frozenset({"markdown", "rst", "html", "docx"})  # formats read as Markdown headings (workbench.ingest)


@lru_cache(maxsize=8)
def _sections(text: str) -> tuple[list[int], list[str]]:
    """Start offsets and heading paths of the sections of `text`, parsed once for every chunk named."""
    spans = section_spans(text)
    return [s for s, _, _ in spans], [p for _, _, p in spans]


def _heading_at(doc: Document, start: int, end: int) -> str:
    """The heading path (Markdown-structured formats) or enclosing definitions (code) at [start, end)."""
    if doc.kind in MARKDOWN_KINDS:
        starts, paths = _sections(doc.text)
        return paths[bisect_right(starts, start) - 1] if starts else ""
    return scope_at(doc, start, end) if doc.language else ""


def where(doc: Document, chunk: Chunk) -> str:
    """The label naming where `chunk` (of `doc`) is: path, pages (PDF), then heading path or code scope."""
    if chunk.doc_id != doc.doc_id or not 0 <= chunk.start < chunk.end <= len(doc.text):
        raise ValueError(f"chunk {chunk.doc_id!r} [{chunk.start}, {chunk.end}) is not a span of document "
                         f"{doc.doc_id!r} (len {len(doc.text)})")
    parts = [doc.path or doc.doc_id]
    pages = page_range(doc.page_of(chunk.start), doc.page_of(chunk.end - 1)) if doc.pages else ""
    heading = chunk.heading or _heading_at(doc, chunk.start, chunk.end)
    parts += [p for p in (pages, heading if heading != pages else "") if p]  # a `page` chunk is headed by its pages
    return SEP.join(parts)
