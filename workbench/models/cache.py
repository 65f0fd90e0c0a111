"""Content-addressed caches of model outputs: key = (model fingerprint, sha256 of the input).

Why: variants share most of their inputs (the same sentences for every semantic percentile, the
same chunks for every k), so an output is computed once per model, ever. The fingerprint names
the file, so a changed model can never serve stale outputs; the input's sha256 names the row.
SQLite gives atomic, crash-safe writes for free: an interrupted run keeps every finished batch
and never leaves a corrupt cache. `ContentCache` is that SQLite file; each kind of output
subclasses it to say how one output becomes bytes (`VectorCache`: float32 vectors;
`JSONCache`: an LLM's generations, with their token counts and seconds; a reranker's scores next).
An input that is more than one text (a prompt's name, version and inputs) is keyed by `json_key`.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np


def text_key(text: str) -> bytes:
    """The row key of an input: the sha256 of its UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8")).digest()


def json_key(value: Any) -> bytes:
    """The row key of a structured input (JSON-able: dicts, lists, strings, numbers): the sha256
    of its canonical JSON, so that equal inputs share a row whatever their dict order."""
    return text_key(json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":")))


BUSY_SECONDS = 60  # how long a connection waits for another's lock on the file


def cache_file(cache_dir: Path, kind: str, fingerprint: str) -> Path:
    """Where a model's cache of one kind of output lives: <cache_dir>/<kind>/<fingerprint>.sqlite."""
    return cache_dir / kind / f"{fingerprint}.sqlite"


class ContentCache(ABC):
    """Input key -> output, in one SQLite file; a subclass names its table and says how one
    output becomes bytes and back."""

    table: str

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._db = sqlite3.connect(path, timeout=BUSY_SECONDS, check_same_thread=False)
        self._lock = threading.Lock()  # one connection, used from several threads (a preview's model passes)
        deadline = time.monotonic() + BUSY_SECONDS
        while True:
            try:
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute(f"CREATE TABLE IF NOT EXISTS {self.table} (key BLOB PRIMARY KEY, v BLOB NOT NULL)")
                self._db.commit()
                return
            except sqlite3.OperationalError as e:
                # two connections switching a new file to WAL at once would deadlock, so SQLite
                # fails one at once (SQLITE_BUSY, the low byte of any extended code) instead of
                # waiting its busy timeout: try again
                if e.sqlite_errorcode & 0xFF != sqlite3.SQLITE_BUSY or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    @abstractmethod
    def to_bytes(self, value: Any) -> bytes: ...

    @abstractmethod
    def from_bytes(self, blob: bytes) -> Any: ...

    def get_many(self, keys: Sequence[bytes]) -> dict[bytes, Any]:
        found: dict[bytes, Any] = {}
        unique = list(dict.fromkeys(keys))
        for i in range(0, len(unique), 500):
            part = unique[i : i + 500]
            with self._lock:
                rows = self._db.execute(f"SELECT key, v FROM {self.table} WHERE key IN ({','.join('?' * len(part))})",
                                        part).fetchall()
            found.update((k, self.from_bytes(v)) for k, v in rows)
        return found

    def put_many(self, items: dict[bytes, Any]) -> None:
        with self._lock, self._db:  # one transaction: all of the batch or none of it
            self._db.executemany(f"INSERT OR IGNORE INTO {self.table} (key, v) VALUES (?, ?)",
                                 ((k, self.to_bytes(v)) for k, v in items.items()))

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute(f"SELECT COUNT(*) FROM {self.table}").fetchone()[0]

    def close(self) -> None:
        self._db.close()


class VectorCache(ContentCache):
    """sha256(text) -> float32 vector, one file per embedding model fingerprint."""

    table = "vec"  # the name every existing cache file has

    def to_bytes(self, value: np.ndarray) -> bytes:
        return np.asarray(value, dtype=np.float32).tobytes()

    def from_bytes(self, blob: bytes) -> np.ndarray:
        return np.frombuffer(blob, dtype=np.float32)


class RerankCache(ContentCache):
    """sha256(question, passage) -> the reranker's float score, one file per reranker fingerprint."""

    table = "score"

    def to_bytes(self, value: float) -> bytes:
        return np.float64(value).tobytes()

    def from_bytes(self, blob: bytes) -> float:
        return float(np.frombuffer(blob, dtype=np.float64)[0])


def pair_key(question: str, passage: str) -> bytes:
    """The row key of a (question, passage) pair: no pair of other texts can share it (a NUL
    separates them, and neither text is changed)."""
    return text_key(f"{len(question)}\0{question}\0{passage}")


class JSONCache(ContentCache):
    """key -> a JSON-able record (an LLM generation: its text, token counts and seconds)."""

    table = "json"

    def to_bytes(self, value: Any) -> bytes:
        return json.dumps(value, ensure_ascii=False).encode("utf-8")

    def from_bytes(self, blob: bytes) -> Any:
        return json.loads(blob)
