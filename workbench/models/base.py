"""What every model of the workbench shares: embedders now, an LLM and rerankers next.

A model has a `name` (for people), a `fingerprint` (a hash of its files and of anything else that
shapes its outputs, e.g. the backend: it names every cache entry of those outputs, so a changed
model never serves stale ones), a resolved `device`, and a `spec()`: plain JSON-able data from
which `from_spec` rebuilds an equivalent model in another process (a Ray worker), refusing if the
files there give another fingerprint.

Loading rule: a model is a local folder, loaded with local files only (`local_files_only=True`), or
a hub name already in the Hugging Face cache (`hf download NAME` once; it is then fingerprinted as
the folder it was downloaded to). Nothing is ever downloaded here, so a hub name not in the cache is
refused at once rather than waiting on a network, and the process environment (HF_HUB_OFFLINE and
the like) is left as the user set it.
"""

from __future__ import annotations

import hashlib
import importlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any, Protocol

DEVICES = ("cpu", "cuda", "auto")
_SKIP_FILES = {"README.md", ".gitattributes"}


def local_model_path(model: str | Path, markers: tuple[str, ...], kind: str) -> Path:
    """`model` as a local folder holding one of the `markers` files that make it a `kind` model, or
    the Hugging Face cache's folder of a hub name "org/name" downloaded before; anything else (a hub
    name not downloaded, a typo) is refused here, before anything loads."""
    path = Path(model)
    if not any((path / m).exists() for m in markers):
        path = _hub_cached(str(model)) or path
    if not any((path / m).exists() for m in markers):
        raise ValueError(f"model {str(model)!r} is not a local {kind} folder (no {' or '.join(markers)}), nor a hub "
                         "name in the Hugging Face cache; nothing is downloaded here: pass a folder path, or "
                         f"run `hf download {model}` once")
    return path


def _hub_cached(name: str) -> Path | None:
    """The Hugging Face cache's snapshot of hub name `name` (its newest "main"), None when it is
    not there or not a hub name; the cache alone is read, never the network."""
    if name.count("/") != 1 or Path(name).exists():
        return None
    from huggingface_hub import snapshot_download

    try:
        return Path(snapshot_download(name, local_files_only=True))
    except Exception:  # noqa: BLE001  (not in the cache, or not a valid repo id: the caller refuses it by name)
        return None


def model_fingerprint(path: Path) -> str:
    """Hash of every file of a local model folder (weights, config, tokenizer), or of a model
    that is one file (a GGUF). Files are read again only when one's size or modification time
    changed: every model and every report's reproducing code asks, and the weights are tens of MB."""
    root, files = (path.parent, [path]) if path.is_file() else \
        (path, sorted(p for p in path.rglob("*") if p.is_file() and p.name not in _SKIP_FILES))
    return _hash_files(root, tuple((f, f.stat().st_size, f.stat().st_mtime_ns) for f in files))


@cache
def _hash_files(root: Path, files: tuple[tuple[Path, int, int], ...]) -> str:
    h = hashlib.sha256()
    for f, _, _ in files:
        h.update(f.relative_to(root).as_posix().encode() + b"\0")
        with f.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()[:16]


@contextmanager
def quiet_loading() -> Iterator[None]:
    """transformers' progress bars hidden while a model loads ("Loading weights": a bar
    left behind in every output), then put back as they were."""
    from transformers.utils import logging as hf_logging

    shown = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if shown:
            hf_logging.enable_progress_bar()


def resolve_device(device: str) -> str:
    """"cpu" or "cuda": "auto" takes the GPU when torch sees one; "cuda" without one is refused
    here, before anything loads, rather than in the middle of a sweep."""
    if device not in DEVICES:
        raise ValueError(f"device must be one of {DEVICES}, got {device!r}")
    if device == "cpu":
        return device  # no torch import: a fully cached run never needs torch
    import torch

    if torch.cuda.is_available():
        return "cuda"
    if device == "cuda":
        raise ValueError("device='cuda' but torch sees no CUDA GPU on this machine; use device='cpu' or 'auto'")
    return "cpu"


class Model(ABC):
    """The base of every model: what caches, engines and reports ask of any of them."""

    name: str
    fingerprint: str
    device: str  # resolved: "cpu" or "cuda"

    @abstractmethod
    def arguments(self) -> dict[str, Any]:
        """JSON-able constructor arguments that rebuild this model (paths as strings)."""

    def spec(self) -> dict[str, Any]:
        """What `from_spec` needs to rebuild this model in another process: its class, its
        constructor arguments, and the fingerprint the rebuilt model must have."""
        return {"type": f"{type(self).__module__}.{type(self).__qualname__}", "arguments": self.arguments(),
                "fingerprint": self.fingerprint}


class Engine(Protocol):
    """Where a model's batches are computed when not in this process (workbench.run.engine runs them
    on Ray): `getattr(model, method)(batch)` for every batch, in order. The caller keeps the caches."""

    chunk_chars: int  # a corpus of more characters is chunked on the engine, in batches of about this many

    def map(self, model: Model, method: str, batches: Sequence[Any]) -> Iterator[Any]: ...

    def apply(self, fn: Callable[[Any], Any], batches: Sequence[Any], what: str) -> Iterator[Any]:
        """`fn(batch)` of every batch, in order: work that needs no model (chunking)."""
        ...


def from_spec(spec: Mapping[str, Any]) -> Model:
    """The model `spec` (from `Model.spec`) describes, built in this process. Refused unless its
    class is a Model of workbench.models and its fingerprint here is the spec's: a worker whose
    model files differ must not compute other outputs under the same cache names."""
    where, _, name = str(spec.get("type", "")).rpartition(".")
    cls = getattr(importlib.import_module(where), name, None) if where.startswith("workbench.models.") else None
    if not (isinstance(cls, type) and issubclass(cls, Model)):
        raise ValueError(f"spec 'type' must name a Model class of workbench.models, got {spec.get('type')!r}")
    model = cls(**spec["arguments"])
    if model.fingerprint != spec["fingerprint"]:
        raise ValueError(f"{name} rebuilt from its spec has fingerprint {model.fingerprint!r}, the spec says "
                         f"{spec['fingerprint']!r}: its model files differ in this process")
    return model
