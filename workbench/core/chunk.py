"""The chunk: a span of its source, `text == doc.text[start:end]` by construction.

What is embedded (`embed_text`, e.g. with a contextual header or an LLM-written `context`) and
what is returned to the LLM (`parent_*`, for small-to-big retrieval; `context_text`, a proposition
sent instead of its passage) are explicit fields, never hidden rewrites of `text`. Here, below every
family, because chunkers make chunks and the models (late chunking, +context) read them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from workbench.dataset import Document, Span

Bounds = tuple[int, int]  # [start, end) character offsets within one document, before it is a Chunk


@dataclass(frozen=True, slots=True)
class Chunk:
    doc_id: str
    start: int
    end: int
    text: str
    heading: str = ""  # heading path of the section, e.g. "Billing > Refunds"
    embed_text: str | None = None  # embedded instead of `text` when set
    parent_start: int | None = None  # returned instead of [start, end) when set (small-to-big)
    parent_end: int | None = None
    context_text: str | None = None  # sent to the LLM instead of the returned span's text, and counted as context
    context: str | None = None  # an LLM's sentences situating the chunk in its document (+context), embedded above it

    @property
    def span(self) -> Span:
        return Span(self.doc_id, self.start, self.end)

    @property
    def returned(self) -> Span:
        """The span handed to the LLM: the parent when there is one, else the chunk itself."""
        if self.parent_start is None or self.parent_end is None:
            return self.span
        return Span(self.doc_id, self.parent_start, self.parent_end)


def make_chunk(doc: Document, start: int, end: int, **extra: Any) -> Chunk:
    """The only way chunkers build chunks: the text is always sliced from the source."""
    if not 0 <= start < end <= len(doc.text):
        raise ValueError(f"chunk [{start}, {end}) out of range for {doc.doc_id!r} (len {len(doc.text)})")
    return Chunk(doc.doc_id, start, end, doc.text[start:end], **extra)


def strip_span(text: str, start: int, end: int) -> Bounds | None:
    """[start, end) without its leading and trailing whitespace; None if nothing is left."""
    piece = text[start:end]
    stripped = piece.strip()
    if not stripped:
        return None
    lead = len(piece) - len(piece.lstrip())
    return start + lead, start + lead + len(stripped)


def windows(n: int, size: int, overlap: int) -> list[tuple[int, int]]:
    """Unit windows [i, i + size) stepping by size - overlap, the last one ending at n."""
    step = size - overlap
    out = []
    for i in range(0, max(n, 1), step):
        out.append((i, min(i + size, n)))
        if i + size >= n:
            break
    return out
