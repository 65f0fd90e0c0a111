"""Make every library we use work with no network, before any of them is imported.

Why: a hub model name without HF_HUB_OFFLINE hangs for 70 s, and tiktoken and NLTK try to
download their data on first use. llama-index-core ships both tiktoken encodings and NLTK
punkt_tab/stopwords, so we point the libraries at its bundled copies.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path


def _llama_static() -> Path | None:
    spec = importlib.util.find_spec("llama_index.core")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "_static"


def configure() -> None:
    """Set offline flags and data paths; idempotent, never overrides a user's own setting."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    static = _llama_static()
    if static is None:
        return
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(static / "tiktoken_cache"))
    nltk_dir = str(static / "nltk_cache")
    paths = os.environ.get("NLTK_DATA", "")
    if nltk_dir not in paths.split(os.pathsep):
        os.environ["NLTK_DATA"] = os.pathsep.join(p for p in (paths, nltk_dir) if p)
