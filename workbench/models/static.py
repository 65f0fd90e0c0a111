"""Embedders without a transformer here: any `encode(texts) -> vectors` function, an OpenAI-compatible
embeddings endpoint ("openai:<model>@<base_url>", workbench.models.endpoint), and WordLlama's static
token vectors (PyPI `wordllama`, whose package folder holds its weights and tokenizer).

Both are Embedders (same vector cache, `encode`, stats and progress as the sentence-transformers one),
so the sweep, the index store and the score cache take them as they are. What differs is the
model's window: neither truncates a text (WordLlama averages the vectors of every token, however
many; a function or an endpoint reads what it is given), so `window_tokens` is None and no chunk counts as
truncated. WordLlama has a tokenizer, so `tokenizer="model"` sizes chunks in its tokens, and its
token embeddings (a row of its table per token) serve late chunking and the preview; a function
or an endpoint has neither, and asking for them is refused. An endpoint truncates where its server
does, which the workbench cannot see: its `truncated` column stays 0.
"""

from __future__ import annotations

import hashlib
import importlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from workbench.core.io import CACHE_DIR
from workbench.models.base import _hash_files
from workbench.models.cache import VectorCache, cache_file
from workbench.models.embed import DEFAULT_BATCH, DocTokens, Embedder, EmbedStats
from workbench.models.endpoint import parse_endpoint, post

Encode = Callable[[list[str]], Any]  # texts -> (len(texts), dim) vectors
PROBE = ("The quick brown fox jumps over the lazy dog.", "def add(a, b):\n    return a + b", "Ünïcödé, 数字 42")
WORDLLAMA_CONFIG, WORDLLAMA_DIM = "l2_supercat", 256


def _normalised(vecs: Any, n: int) -> np.ndarray:
    """float32 rows of unit length (a zero row stays zero rather than NaN); the shape is checked."""
    out = np.asarray(vecs, dtype=np.float32)
    if out.ndim != 2 or out.shape[0] != n:
        raise ValueError(f"the model's encode must return one vector per text, shape ({n}, dim); got {out.shape}")
    return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)


class _Batches:
    """What `Embedder._compute` calls (sentence-transformers' `encode` signature), over a plain function."""

    def __init__(self, encode: Encode):
        self.fn = encode

    def encode(self, texts: list[str], batch_size: int, normalize_embeddings: bool = True,
               show_progress_bar: bool = False) -> np.ndarray:
        return np.concatenate([_normalised(self.fn(texts[i : i + batch_size]), len(texts[i : i + batch_size]))
                               for i in range(0, len(texts), batch_size)])


class FunctionEmbedder(Embedder):
    """An Embedder over any `encode(texts) -> vectors` function (a list of str in, one row per text
    out; rows are L2-normalised here). `encode` may be a "module:function" name, which is what
    `spec` gives to rebuild it in another process (a lambda or a closure cannot be).

    `fingerprint` (which names the vector cache and the index entries) defaults to a hash of the
    function's name and of its vectors for three probe texts: a changed function gets a new cache
    rather than stale vectors. Pass one to name the cache yourself."""

    def __init__(self, encode: Encode | str, name: str | None = None, fingerprint: str | None = None,
                 cache_dir: str | Path | None = CACHE_DIR, batch_size: int = DEFAULT_BATCH, progress: bool = True):
        fn = _imported(encode) if isinstance(encode, str) else encode
        if not callable(fn):
            raise TypeError(f"encode must be a function texts -> vectors or a 'module:function' name, got {encode!r}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.function = fn
        self.name = name or getattr(fn, "__name__", type(fn).__name__)
        probe = _normalised(fn(list(PROBE)), len(PROBE))
        digest = hashlib.sha256(f"{_qualified(fn)}\0".encode() + probe.round(5).tobytes()).hexdigest()[:16]
        self._setup(fingerprint or f"fn-{digest}", int(probe.shape[1]), cache_dir, batch_size, progress)

    def _setup(self, fingerprint: str, dim: int, cache_dir: str | Path | None, batch_size: int, progress: bool) -> None:
        """The attributes the sweep and the vector cache read of every Embedder."""
        self.model_fingerprint = self.fingerprint = fingerprint
        self.dim, self.batch_size, self.progress = dim, batch_size, progress
        self.device, self.backend, self.threads = "cpu", "numpy", None
        self.engine = None  # a function or static model computes in-process (no worker rebuilds it yet)
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self.stats = EmbedStats()
        self.cache = VectorCache(cache_file(self.cache_dir, "embeddings", fingerprint)) if self.cache_dir else None

    def arguments(self) -> dict[str, Any]:
        name = _qualified(self.function)
        if "<" in name:
            raise ValueError(f"{self.name}: a {name} cannot be rebuilt in another process; "
                             "pass a module-level function")
        return {"encode": name, "name": self.name, "fingerprint": self.fingerprint,
                "cache_dir": None if self.cache_dir is None else str(self.cache_dir), "batch_size": self.batch_size,
                "progress": self.progress}

    @cached_property
    def model(self) -> Any:
        return _Batches(self.function)

    max_tokens = window_tokens = None  # reads a whole text: nothing is truncated

    def truncated(self, texts: Sequence[str]) -> list[bool]:
        return [False] * len(texts)

    tokenizer = None  # tokenizer="model" is refused (workbench.core.tokens.get_tokenizer)

    def token_embeddings(self, texts: Mapping[str, str]) -> Iterator[tuple[str, DocTokens]]:
        raise ValueError(f"model {self.name!r} is a function with no token embeddings: late chunking and the "
                         "preview need a sentence-transformers folder or 'wordllama'")


class EndpointError(RuntimeError):
    """An embeddings endpoint could not be asked, or its answer is no list of embeddings."""


class EndpointEmbedder(FunctionEmbedder):
    """An Embedder over an OpenAI-compatible embeddings endpoint (`POST <base_url>/embeddings`), named
    by the spec "openai:<model>@<base_url>[#KEY_VAR]" (workbench.models.endpoint). Made, it asks the
    endpoint for the three probe texts: their vectors fingerprint it, so another model behind the same
    name gets a cache of its own, and the same model at another address shares it. The key is read
    per request."""

    def __init__(self, spec: str, cache_dir: str | Path | None = CACHE_DIR, batch_size: int = DEFAULT_BATCH,
                 progress: bool = True, timeout: float = 60.0, retries: int = 2):
        self.spec_text = spec
        self.model_name, self.base_url, self.api_key_env = parse_endpoint(spec)
        self.timeout, self.retries = timeout, retries
        super().__init__(self._embed, name=spec.partition("#")[0], cache_dir=cache_dir, batch_size=batch_size,
                         progress=progress)

    @cached_property
    def _client(self) -> Any:
        import httpx

        return httpx.Client(base_url=self.base_url, timeout=self.timeout)

    def _embed(self, texts: list[str]) -> np.ndarray:
        data = post(self._client, "/embeddings", {"model": self.model_name, "input": texts},
                    key_env=self.api_key_env, retries=self.retries, timeout=self.timeout, base_url=self.base_url,
                    error=EndpointError)
        try:
            rows = sorted(data["data"], key=lambda row: row["index"])  # the API may answer out of order
            return np.array([row["embedding"] for row in rows], dtype=np.float32)
        except (KeyError, TypeError, ValueError):
            raise EndpointError(f"endpoint {self.base_url} sent no embeddings: {str(data)[:200]!r}") from None

    def arguments(self) -> dict[str, Any]:
        return {"spec": self.spec_text, "cache_dir": None if self.cache_dir is None else str(self.cache_dir),
                "batch_size": self.batch_size, "progress": self.progress, "timeout": self.timeout,
                "retries": self.retries}


class WordLlamaEmbedder(FunctionEmbedder):
    """WordLlama (l2_supercat, 256 dimensions): a text's vector is the mean of its tokens' static
    vectors. Loaded offline from the files of the installed package (nothing downloads);
    its fingerprint hashes those two files."""

    def __init__(self, cache_dir: str | Path | None = CACHE_DIR, batch_size: int = DEFAULT_BATCH,
                 progress: bool = True):
        from wordllama import WordLlama

        self.folder = Path(importlib.import_module("wordllama").__file__).parent
        self.inference = WordLlama.load(WORDLLAMA_CONFIG, cache_dir=self.folder, dim=WORDLLAMA_DIM,
                                        disable_download=True)
        self.function, self.name = self._embed, "wordllama"
        files = (self.weights_file, self.tokenizer_file)
        fingerprint = "wl-" + _hash_files(self.folder, tuple((f, f.stat().st_size, f.stat().st_mtime_ns)
                                                            for f in files))
        self._setup(fingerprint, int(self.inference.embedding.shape[1]), cache_dir, batch_size, progress)

    @property
    def weights_file(self) -> Path:
        return self.folder / "weights" / f"{WORDLLAMA_CONFIG}_{WORDLLAMA_DIM}.safetensors"

    @property
    def tokenizer_file(self) -> Path:
        return self.folder / "tokenizers" / f"{WORDLLAMA_CONFIG}_tokenizer_config.json"

    def _embed(self, texts: list[str]) -> np.ndarray:
        return self.inference.embed(texts, batch_size=self.batch_size)

    def arguments(self) -> dict[str, Any]:
        return {"cache_dir": None if self.cache_dir is None else str(self.cache_dir), "batch_size": self.batch_size,
                "progress": self.progress}

    @cached_property
    def tokenizer(self) -> Any:
        """Its tokenizer as a transformers fast tokenizer (what tokenizer="model" calls), from its own
        copy of the file: WordLlama pads the one it embeds with."""
        from tokenizers import Tokenizer
        from transformers import PreTrainedTokenizerFast

        return PreTrainedTokenizerFast(tokenizer_object=Tokenizer.from_file(str(self.tokenizer_file)))

    def token_embeddings(self, texts: Mapping[str, str]) -> Iterator[tuple[str, DocTokens]]:
        """Each text's tokens with their static vectors: context-free, so late chunking with WordLlama
        equals embedding each chunk alone up to the tokens cut at its edges."""
        table = self.inference.embedding
        for key, text in texts.items():
            enc = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
            offsets = np.array(enc["offset_mapping"], dtype=np.int64).reshape(-1, 2)
            ids = np.clip(np.array(enc["input_ids"], dtype=np.int64), 0, len(table) - 1)
            yield key, DocTokens(list(ids), offsets[:, 0], np.maximum.accumulate(offsets[:, 1]), table[ids])


def _qualified(fn: Callable) -> str:
    return f"{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', type(fn).__qualname__)}"


def _imported(name: str) -> Encode:
    module, _, attr = name.partition(":")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError, ValueError) as e:
        raise ValueError(f"encode {name!r} is not an importable 'module:function' ({e})") from e
