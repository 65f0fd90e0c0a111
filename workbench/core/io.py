"""Atomic file writes (results and caches are replaced whole or not at all), the hash of source
code that names a cache entry, and the project folder a notebook writes into."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
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



def source_fingerprint(*modules: ModuleType | Path) -> str:
    """Hash of the modules' source files (a module, or its file when importing it would cost):
    part of a cache key, so an edit to the code that made an entry (scores, figures) is never
    served the old entry."""
    h = hashlib.sha256()
    for module in modules:
        h.update((module if isinstance(module, Path) else Path(module.__file__)).read_bytes())
    return h.hexdigest()[:16]


def publish(path: Path, write: Callable[[Path], None]) -> None:
    """Write a folder atomically: `write` fills a temporary sibling, which is renamed to `path`.
    If another process published `path` first, theirs is kept."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}."))
    try:
        write(tmp)
        try:
            tmp.rename(path)
        except OSError:
            if not path.exists():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def project_dir(start: str | Path | None = None) -> Path:
    """The project a notebook runs in, so that what a panel writes lands in the project's results/
    whatever the kernel's working directory (notebooks/): the nearest folder at or above `start`
    (default: the working directory) holding a pyproject.toml, else the nearest holding a results/
    folder, else `start` itself."""
    here = Path.cwd() if start is None else Path(start).resolve()
    for marker in ("pyproject.toml", "results"):
        found = next((d for d in (here, *here.parents) if (d / marker).exists()), None)
        if found is not None:
            return found
    return here
