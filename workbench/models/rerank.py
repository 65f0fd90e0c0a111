"""Rerankers: score (question, passage) pairs, so a second retrieval stage can reorder the first
stage's top n (workbench.retrieval.rerank).

Why models of their own: a cross-encoder reads the question and the passage together, which is
what makes it better than a cosine of two vectors and also what makes it slow, one forward pass
per pair. Pairs are therefore scored in batches and each score is cached by content (the
reranker's fingerprint names the file, the pair's text the row), so a variant that reranks the
same candidates again, or another k, scores nothing.

A reranker is named by a spec string, the stage's `model` parameter: a local sentence-transformers
CrossEncoder folder (a hub name is refused: nothing is downloaded).
"""

from __future__ import annotations

import time
from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from workbench.models.base import Model, local_model_path, model_fingerprint, resolve_device
from workbench.models.cache import RerankCache, cache_file, pair_key

DEFAULT_BATCH = 32  # pairs per forward pass


@dataclass
class RerankStats:
    """What a reranker did since it was made: pairs scored by the model, pairs read from the cache, seconds."""

    scored: int = 0
    cached: int = 0
    seconds: float = 0.0


class Reranker(Model):
    """Scores (question, passage) pairs, higher = more relevant; `score` reads the cache first."""

    cache: RerankCache | None
    batch_size: int

    def __init__(self) -> None:
        self.stats = RerankStats()

    @abstractmethod
    def _compute(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """Scores of pairs none of which is cached, in batches of `batch_size`."""

    def score(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """One float64 score per pair, each distinct pair computed once ever (per cache)."""
        keys = [pair_key(q, p) for q, p in pairs]
        found = self.cache.get_many(keys) if self.cache is not None else {}
        missing: dict[bytes, tuple[str, str]] = {}
        for k, pair in zip(keys, pairs, strict=True):
            if k not in found and k not in missing:
                missing[k] = pair
        if missing:
            t0 = time.perf_counter()
            computed = dict(zip(missing, map(float, self._compute(list(missing.values()))), strict=True))
            self.stats.seconds += time.perf_counter() - t0
            if self.cache is not None:
                self.cache.put_many(computed)
            found.update(computed)
        self.stats.scored += len(missing)
        self.stats.cached += len(pairs) - len(missing)
        return np.array([found[k] for k in keys], dtype=np.float64)


class CrossEncoderReranker(Reranker):
    """A sentence-transformers CrossEncoder from a local folder (e.g. ms-marco-MiniLM-L-6-v2 saved
    with `CrossEncoder(...).save(folder)` on a machine that is online)."""

    def __init__(self, model: str | Path, cache_dir: str | Path | None = None, batch_size: int = DEFAULT_BATCH,
                 device: str = "cpu"):
        super().__init__()
        self.fingerprint = reranker_fingerprint(str(model))
        self.path = Path(model)
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.name = self.path.name
        self.device = resolve_device(device)
        self.batch_size = batch_size
        self.cache_dir = None if cache_dir is None else Path(cache_dir)
        self.cache = None if self.cache_dir is None else RerankCache(cache_file(self.cache_dir, "rerank",
                                                                                self.fingerprint))

    def arguments(self) -> dict[str, Any]:
        return {"model": str(self.path), "cache_dir": None if self.cache_dir is None else str(self.cache_dir),
                "batch_size": self.batch_size, "device": self.device}

    @cached_property
    def model(self) -> Any:
        from sentence_transformers import CrossEncoder

        return CrossEncoder(str(self.path), device=self.device, local_files_only=True)

    def _compute(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        scores = self.model.predict([list(p) for p in pairs], batch_size=self.batch_size, show_progress_bar=False,
                                    convert_to_numpy=True)
        return np.asarray(scores, dtype=np.float64).reshape(len(pairs))


def reranker_fingerprint(spec: str) -> str:
    """The fingerprint of the reranker `spec` names, without loading it: what keys the scores of
    the variants that rerank with it, so a changed model never serves their old scores."""
    return f"ce-{model_fingerprint(local_model_path(spec, ('config.json',), 'cross-encoder'))}"


class Rerankers:
    """The rerankers of one sweep, by spec, each loaded once and sharing one cache folder."""

    def __init__(self, cache_dir: str | Path | None):
        self.cache_dir = None if cache_dir is None else Path(cache_dir)
        self._loaded: dict[str, Reranker] = {}

    def get(self, spec: str) -> Reranker:
        if spec not in self._loaded:
            self._loaded[spec] = CrossEncoderReranker(spec, self.cache_dir)
        return self._loaded[spec]

    @property
    def seconds(self) -> float:
        """Seconds the loaded rerankers spent scoring, all together (a variant's share is a difference)."""
        return sum(r.stats.seconds for r in self._loaded.values())
