"""Where the data that lets our libraries run with no network lives: llama-index-core ships
tiktoken's encodings and NLTK's punkt_tab and stopwords, so nothing is ever downloaded.

Nothing here (nor anywhere in the workbench) sets an environment variable: a user's other code in
the same kernel keeps the HF_HUB_OFFLINE, TIKTOKEN_CACHE_DIR or NLTK_DATA it had. Models load with
local files only (workbench.models.base), tiktoken's encodings are built from the bundled files
(workbench.core.tokens), and NLTK is given the bundled folder on `nltk.data.path` when punkt loads.
"""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path


def _llama_static() -> Path:
    spec = importlib.util.find_spec("llama_index.core")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("llama-index-core is not installed: its bundled tiktoken and NLTK data are needed")
    return Path(next(iter(spec.submodule_search_locations))) / "_static"


def bundled_tiktoken() -> Path:
    """The bundled tiktoken cache folder: each file named by the sha1 of its download URL, as
    tiktoken names the files of its own cache."""
    return _llama_static() / "tiktoken_cache"


def bundled_tiktoken_file(url: str) -> Path:
    """The bundled copy of the tiktoken file tiktoken would download from `url`."""
    file = bundled_tiktoken() / hashlib.sha1(url.encode()).hexdigest()
    if not file.exists():
        raise FileNotFoundError(f"no bundled copy of {url} in {file.parent}: nothing is downloaded here")
    return file


def bundled_nltk_data() -> Path:
    """The bundled NLTK data folder (punkt_tab, stopwords), laid out as NLTK_DATA folders are."""
    return _llama_static() / "nltk_cache"


def use_bundled_nltk_data() -> None:
    """Put the bundled NLTK folder on nltk.data.path (last: a user's own data comes first), once."""
    import nltk.data

    folder = str(bundled_nltk_data())
    if folder not in nltk.data.path:
        nltk.data.path.append(folder)
