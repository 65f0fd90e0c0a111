"""What a plain-Python export defines in place of the workbench objects its chunker asks for.

The export copies the chunker's own source (workbench.export.bundle); these stand in for the few
objects behind it that hold the workbench's machinery rather than the chunking: the environment
(ChunkEnv: caches and LLMs), the document (Document: provenance and validation), and where
tiktoken's and NLTK's data come from (llama-index-core's bundled copies, read here without the
network). Each has the name of the object it replaces and does what the chunker asks of it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np

from workbench.core.tokens import Tokenizer, get_tokenizer


@dataclass
class ChunkEnv:
    """What the chunker asks of its environment: tokenizers, the model's tokenizer and (semantic) an
    embedding function; a document's token boundaries and sentences are kept while it is chunked."""

    embed: Callable[[list[str]], np.ndarray] | None = None  # texts -> L2-normalised vectors
    model_tokenizer: Any = None  # the embedding model's tokenizer, for tokenizer="model"
    boundaries: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)
    sentences: dict[tuple[str, str], list[tuple[int, int]]] = field(default_factory=dict)

    def tokenizer(self, name: str) -> Tokenizer:
        return get_tokenizer(name, self.model_tokenizer)

    def length_fn(self, unit: str, tokenizer: str) -> Callable[[str], int]:
        return len if unit == "chars" else self.tokenizer(tokenizer).count


@dataclass(frozen=True)
class Document:
    """The text to chunk, with what the chunker reads of it besides: its language (source code is
    parsed in it) and path (named in code's embedded header)."""

    doc_id: str
    title: str
    text: str
    path: str | None = None
    language: str | None = None


def llama_static(name: str) -> str | None:
    """llama-index-core's bundled copy of tiktoken's or NLTK's data (`_static/<name>`) when it is
    installed: read instead of downloading, so the file runs offline wherever it is."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("llama_index.core")
    folder = Path(next(iter(spec.submodule_search_locations)), "_static", name) if spec and \
        spec.submodule_search_locations else None
    return str(folder) if folder is not None and folder.is_dir() else None


@cache
def tiktoken_encoding(name: str) -> Any:
    """The tiktoken encoding `name`, read from TIKTOKEN_CACHE_DIR when set, else from llama-index-core's
    copy when installed, else downloaded by tiktoken once and read from its cache."""
    import os

    import tiktoken

    if "TIKTOKEN_CACHE_DIR" not in os.environ and llama_static("tiktoken_cache"):
        os.environ["TIKTOKEN_CACHE_DIR"] = llama_static("tiktoken_cache")
    return tiktoken.get_encoding(name)


def use_bundled_nltk_data() -> None:
    """NLTK's punkt_tab tables, which punkt's English model reads: NLTK's own (NLTK_DATA), else
    llama-index-core's copy when installed, else downloaded once."""
    import nltk

    try:
        nltk.data.find("tokenizers/punkt_tab/english/")
        return
    except LookupError:
        if llama_static("nltk_cache"):
            nltk.data.path.append(llama_static("nltk_cache"))
    try:
        nltk.data.find("tokenizers/punkt_tab/english/")
    except LookupError:
        nltk.download("punkt_tab", quiet=True)


@cache
def sentence_model(path: str) -> Any:
    """The sentence-transformers model in folder `path`, loaded once."""
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(path, device="cpu")


def embedder(path: str) -> Callable[[list[str]], np.ndarray]:
    """Texts -> L2-normalised float32 vectors by the model in `path`, as the workbench embeds them."""
    return lambda texts: np.asarray(sentence_model(path).encode(texts, batch_size=32, normalize_embeddings=True,
                                                                show_progress_bar=False), dtype=np.float32)
