"""The fast tier's guard (docs/testing.md): a test with none of the slow markers may not load what
they stand for. tests/tiers.py installs `Refuse` in the test process around every unmarked test and
puts this folder on PYTHONPATH meanwhile, so that a process the test starts (a CLI run, a worker)
imports this file as its sitecustomize and refuses the same imports, noting each in the file that
FAST_TIER_LOG names, which the test process reads: an ImportError caught on the way cannot hide it.
"""

from __future__ import annotations

import importlib.abc
import os
import sys
from collections.abc import Sequence
from types import ModuleType

LOG_ENV = "FAST_TIER_LOG"
SLOW_MARKS = ("model", "llm", "browser", "ray", "notebook")
# top-level modules that only a slow test needs (the marker it needs): the model and LLM stacks, Ray,
# Chromium and the servers it is pointed at, notebook kernels
REFUSED = {
    "torch": "model", "sentence_transformers": "model", "transformers": "model", "wordllama": "model",
    "ray": "ray", "playwright": "browser", "jupyterlab": "browser", "voila": "browser",
    "nbclient": "notebook", "ipykernel": "notebook",
}


class Refuse(importlib.abc.MetaPathFinder):
    """Refuses the first import of a REFUSED module and notes it in `seen` (and in `log`, if given).
    A module imported before, e.g. by a slow test earlier in a full run, is not looked up again:
    the fast tier run alone sees everything."""

    def __init__(self, log: str | None = None) -> None:
        self.seen: list[str] = []
        self.log = log

    def find_spec(self, name: str, path: Sequence[str] | None, target: ModuleType | None = None) -> None:
        top = name.partition(".")[0]
        if top not in REFUSED:
            return None
        what = f"imported {top} (mark the test `{REFUSED[top]}`)"
        self.seen.append(what)
        if self.log:
            with open(self.log, "a", encoding="utf-8") as f:
                f.write(f"{what} in process {os.getpid()} ({' '.join(sys.argv)[:200]})\n")
        raise ImportError(f"fast tier: {what}")


if os.environ.get(LOG_ENV):  # this process was started by an unmarked test
    sys.meta_path.insert(0, Refuse(os.environ[LOG_ENV]))
