"""What a chunker may ask of its environment (tokenizers, cached vectors, LLMs). The chunk type
every chunker returns is workbench.core.chunk.Chunk."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from workbench.core.io import CACHE_DIR
from workbench.core.tokens import Tokenizer, get_tokenizer
from workbench.models.llm import llm_of


@dataclass
class ChunkEnv:
    """What a chunker may need beyond the document: tokenizers, (for semantic chunking) a cached
    embedding function and (for LLM strategies) the LLMs their `model` parameter names, with what
    those cost. Passed explicitly; chunkers hold no global state."""

    embed: Callable[[list[str]], np.ndarray] | None = None  # texts -> L2-normalised vectors
    model_tokenizer: Any = None  # the embedding model's HF tokenizer, for tokenizer="model"
    llm_cache_dir: str | Path | None = CACHE_DIR  # where the LLMs made by `llm` cache their generations
    llm_engine: Any = None  # where they generate (a workbench.run.engine engine; None: in this process)
    stop: Callable[[], bool] | None = None  # asked between generations (LLM.generate's `stop`): a sweep's Stop
    llms: dict[str, Any] = field(default_factory=dict)  # model spec -> workbench.models.llm.LLM, made by `llm`
    # what LLM strategies spent on the chunks made with this env: "tokens_generated" and "llm_seconds" (a
    # cached generation at what it cost when it was made) and "fallbacks" (model outputs that could not be used)
    llm_cost: Counter[str] = field(default_factory=Counter)
    _tokenizers: dict[str, Tokenizer] = field(default_factory=dict)

    def llm(self, spec: str) -> Any:
        """The LLM (workbench.models.llm.LLM) a strategy's `model` parameter names, made on first
        use and kept; its weights load only for its first uncached generation."""
        if spec not in self.llms:
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
