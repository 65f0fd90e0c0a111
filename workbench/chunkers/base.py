"""The one result type every chunker returns, and what a chunker may ask of its environment.

A chunk is a span of its source: `text == doc.text[start:end]` by construction. What is embedded
(`embed_text`, e.g. with a contextual header or an LLM-written `context`) and what is returned to
the LLM (`parent_*`, for small-to-big retrieval; `context_text`, a proposition sent instead of its
passage) are explicit fields, never hidden rewrites of `text`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from workbench.dataset import Document, Span
from workbench.io import CACHE_DIR
from workbench.tokens import Tokenizer, get_tokenizer

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


@dataclass
class ChunkEnv:
    """What a chunker may need beyond the document: tokenizers, (for semantic chunking) a cached
    embedding function and (for LLM strategies) the LLMs their `model` parameter names, with what
    those cost. Passed explicitly; chunkers hold no global state."""

    embed: Callable[[list[str]], np.ndarray] | None = None  # texts -> L2-normalised vectors
    model_tokenizer: Any = None  # the embedding model's HF tokenizer, for tokenizer="model"
    llm_cache_dir: str | Path | None = CACHE_DIR  # where the LLMs made by `llm` cache their generations
    llm_engine: Any = None  # where they generate (a workbench.engine engine; None: in this process)
    stop: Callable[[], bool] | None = None  # asked between generations (LLM.generate's `stop`): a sweep's Stop
    llms: dict[str, Any] = field(default_factory=dict)  # model spec -> workbench.models.llm.LLM, made by `llm`
    # what LLM strategies spent on the chunks made with this env: "tokens_generated" and "llm_seconds" (a
    # cached generation at what it cost when it was made) and "fallbacks" (model outputs that could not be used)
    llm_cost: Counter[str] = field(default_factory=Counter)
    # a document's sentence spans by (splitter, text): the chunkings made with one env (a sweep's sentence sizes and
    # overlaps, semantic's, the hierarchies') split each document once (workbench.chunkers.sentence.sentences_of)
    sentences: dict[tuple[str, str], list[Bounds]] = field(default_factory=dict)
    # a text's token boundaries by (tokenizer, text), read-only: likewise tokenized once (units.unit_boundaries)
    boundaries: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)
    _tokenizers: dict[str, Tokenizer] = field(default_factory=dict)

    def llm(self, spec: str) -> Any:
        """The LLM (workbench.models.llm.LLM) a strategy's `model` parameter names, made on first
        use and kept; its weights load only for its first uncached generation."""
        if spec not in self.llms:
            from workbench.models.llm import llm_of  # the model layer is above the chunkers: asked for only here

            self.llms[spec] = llm_of(spec, self.llm_cache_dir, self.llm_engine)
        return self.llms[spec]

    def tokenizer(self, name: str) -> Tokenizer:
        if name not in self._tokenizers:
            self._tokenizers[name] = get_tokenizer(name, self.model_tokenizer)
        return self._tokenizers[name]

    def length_fn(self, unit: str, tokenizer: str) -> Callable[[str], int]:
        """Size of a text in `unit` ('chars' or 'tokens' of `tokenizer`)."""
        if unit == "chars":
            return len
        return self.tokenizer(tokenizer).count
