"""The semantic explorer's state: one document, its sentences and group vectors, and re-cuts.

Why a state apart from the widget: what is expensive (embedding sentence groups) happens once
per (document, sentence splitter, buffer size) and is memoised here; everything a slider moves
(percentile, min and max size) only re-cuts from those vectors with `cut_from_vectors`, the very
function the `semantic` strategy calls, so a cut shown equals the chunks that variant makes.
No ipywidgets here: this is plain logic, tested without a front end.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from workbench.chunkers import ChunkEnv
from workbench.chunkers.semantic import SemanticCut, cut_from_vectors, group_texts
from workbench.chunkers.sentence import sentence_splitter
from workbench.core.chunk import Bounds, Chunk, make_chunk
from workbench.core.tokens import MODEL_TOKENIZER
from workbench.dataset import Dataset, Document
from workbench.models.embed import Embedder
from workbench.variant import Variant


@dataclass(frozen=True)
class ExplorerCut:
    """One cut of the explorer's document: what decided it and what it gives."""

    variant: Variant  # the semantic variant whose chunks these are, for this document
    sentences: list[Bounds]  # the sentence spans the distances run over
    semantic: SemanticCut  # distances, threshold, breakpoints, final spans
    chunks: list[Chunk]
    sizes: list[int]  # each chunk's length in the variant's tokenizer tokens

    @property
    def count(self) -> int:
        return len(self.chunks)


class ExplorerState:
    """Sentences and sentence-group vectors of one document of `dataset`, memoised, and cuts.

    `doc_id` selects the document (default: the first); switching it keeps what was embedded
    for the others. `last` is the most recent successful cut (None before the first).
    """

    def __init__(self, dataset: Dataset, embedder: Embedder, doc_id: str | None = None, tokenizer: str = "cl100k_base"):
        if not dataset.documents:
            raise ValueError(f"dataset {dataset.name!r} has no documents to explore")
        self.dataset = dataset
        self.embedder = embedder
        self.tokenizer = tokenizer
        # The model's own tokenizer (not its weights) only when sizes are counted in it.
        self.env = ChunkEnv(model_tokenizer=embedder.tokenizer if tokenizer == MODEL_TOKENIZER else None)
        self._sentences: dict[tuple[str, str], list[Bounds]] = {}
        self._vectors: dict[tuple[str, str, int], np.ndarray] = {}
        self.doc_id = dataset.documents[0].doc_id
        self.last: ExplorerCut | None = None
        if doc_id is not None:
            self.select(doc_id)

    @property
    def doc(self) -> Document:
        return self.dataset.docs[self.doc_id]

    def select(self, doc_id: str) -> None:
        """Explore another document (its vectors are embedded on its first cut)."""
        if doc_id not in self.dataset.docs:
            raise KeyError(f"doc_id {doc_id!r} is not in dataset {self.dataset.name!r}")
        self.doc_id = doc_id
        self.last = None

    def sentences(self, name: str = "lines+punkt") -> list[Bounds]:
        """The document's sentence spans by splitter `name`, split once."""
        key = (self.doc_id, name)
        if key not in self._sentences:
            self._sentences[key] = sentence_splitter(name)(self.doc.text)
        return self._sentences[key]

    def vectors(self, buffer_size: int, sentences: str = "lines+punkt") -> np.ndarray:
        """One vector per sentence group (`group_texts`), embedded once per buffer size; the
        Embedder's cache makes even the first call a lookup for groups it has seen before."""
        key = (self.doc_id, sentences, buffer_size)
        if key not in self._vectors:
            texts = group_texts(self.doc.text, self.sentences(sentences), buffer_size)
            self._vectors[key] = self.embedder.encode(texts, desc="sentence groups")
        return self._vectors[key]

    def has_vectors(self, buffer_size: int, sentences: str = "lines+punkt") -> bool:
        """Whether a cut at this buffer size and splitter is only a re-cut (nothing to embed)."""
        return (self.doc_id, sentences, buffer_size) in self._vectors

    def cut(
        self,
        percentile: float,
        buffer_size: int,
        min_size: int = 0,
        max_size: int = 0,
        sentences: str = "lines+punkt",
    ) -> ExplorerCut:
        """Cut the document as `semantic` would with these parameters. The variant is made first,
        so a bad setting raises the strategy's own ValueError before any work; `last` keeps the
        previous cut then."""
        variant = Variant.make("semantic", breakpoint_percentile=percentile, buffer_size=buffer_size,
                               min_size=min_size, max_size=max_size, tokenizer=self.tokenizer, sentences=sentences)
        spans, p = self.sentences(sentences), variant.kwargs  # canonical values, as the strategy gets them
        if spans:
            result = cut_from_vectors(self.doc.text, spans, self.vectors(buffer_size, sentences),
                                      p["breakpoint_percentile"], p["min_size"], p["max_size"], p["tokenizer"],
                                      self.env)
        else:  # nothing but whitespace: the strategy gives no chunk either
            result = SemanticCut([], [], None, [])
        chunks = [make_chunk(self.doc, a, b) for a, b in result.spans]
        count = self.env.length_fn("tokens", self.tokenizer)
        self.last = ExplorerCut(variant, spans, result, chunks, [count(c.text) for c in chunks])
        return self.last

    def variant(self) -> Variant:
        """The semantic Variant of the last cut, to measure it on the whole dataset."""
        if self.last is None:
            raise ValueError("no cut yet: call cut(...) first")
        return self.last.variant
