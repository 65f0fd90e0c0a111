"""Atomic file writes: results and caches are replaced whole or not at all."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

CACHE_DIR = Path("results/cache")  # embeddings and index entries, shared by every run that names it


def atomic_write(path: str | Path, write: Callable[[str], Any]) -> Path:
    """Call `write(tmp_path)` on a temporary file beside `path`, then rename it over `path`.

    Readers never see half a file, and a failure leaves any previous file intact.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, 0o644)  # mkstemp makes files private; results are meant to be shared
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def write_text(path: str | Path, text: str) -> Path:
    return atomic_write(path, lambda p: Path(p).write_text(text, encoding="utf-8"))

