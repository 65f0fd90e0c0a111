"""The two test tiers (docs/testing.md), a plugin of conftest.py.

A test gets a slow marker from the fixtures it uses (FIXTURE_MARKS) or from its own decorator or
module `pytestmark`. A test with none of them is in the fast tier, and runs under a guard: it may
not load the embedding model (on torch or onnxruntime) nor import the model, LLM, Ray, browser or
kernel stacks, here or in a process it starts; if it does, it fails, naming the marker it needs.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fastguard.sitecustomize import LOG_ENV, SLOW_MARKS, Refuse

from workbench.models import onnx
from workbench.models.embed import Embedder

GUARD = Path(__file__).resolve().parent / "fastguard"
FAST_LOG = Path(tempfile.gettempdir()) / f"workbench-fast-tier-{os.getpid()}.log"
# A test that uses one of these fixtures (directly or through another) pays for what it loads.
FIXTURE_MARKS = {
    "embedder": "model", "cross_encoder": "model",
    "llm_models": "llm", "llm_cache": "llm", "llm_server": "llm", "model_stack_files": "llm",
    "browser": "browser", "tab": "browser", "workspace": "browser", "lab": "browser", "voila_app": "browser",
}


def pytest_unconfigure(config: pytest.Config) -> None:
    FAST_LOG.unlink(missing_ok=True)


def pytest_itemcollected(item: pytest.Item) -> None:
    for name in getattr(item, "fixturenames", ()):
        if name in FIXTURE_MARKS:
            item.add_marker(FIXTURE_MARKS[name])


@contextmanager
def fast_only(log: Path) -> Iterator[Callable[[], list[str]]]:
    """The guard, for one phase of an unmarked test: REFUSED imports fail (here, and in a process
    started meanwhile, through fastguard/sitecustomize.py), and so does loading a sentence-transformers
    model (on torch, or as an ONNX session). Making an Embedder is allowed: it only hashes the model
    files. Yields what was refused so far, which a caught exception cannot hide."""
    refuse, saved = Refuse(), {key: os.environ.get(key) for key in ("PYTHONPATH", LOG_ENV)}

    def refused_load(*args: Any, **kwargs: Any) -> None:
        refuse.seen.append("loaded the embedding model (mark the test `model`, or give it tests/fakemodel.py)")
        raise RuntimeError(f"fast tier: {refuse.seen[-1]}")

    loads = [(Embedder, "_torch_model"), (onnx, "onnx_session")]
    kept = [getattr(owner, name) for owner, name in loads]
    log.write_text("")
    sys.meta_path.insert(0, refuse)
    os.environ["PYTHONPATH"] = os.pathsep.join([str(GUARD), *filter(None, [saved["PYTHONPATH"]])])
    os.environ[LOG_ENV] = str(log)
    for owner, name in loads:
        setattr(owner, name, refused_load)
    try:
        yield lambda: refuse.seen + log.read_text().splitlines()
    finally:
        for (owner, name), value in zip(loads, kept, strict=True):
            setattr(owner, name, value)
        sys.meta_path.remove(refuse)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def refusal(seen: list[str]) -> str:
    return "fast tier: " + "; ".join(dict.fromkeys(seen))


def guarded(item: pytest.Item) -> Generator[None, Any, Any]:
    """One phase of a test (setup, call or teardown: a module's fixtures are made in a setup) under
    `fast_only`, unless a slow marker is on the test."""
    if any(item.get_closest_marker(m) for m in SLOW_MARKS):
        return (yield)
    with fast_only(FAST_LOG) as refused:
        try:
            outcome = yield
        except Exception:
            if refused():
                raise pytest.fail.Exception(refusal(refused()), pytrace=False) from None
            raise
        if refused():
            pytest.fail(refusal(refused()), pytrace=False)
        return outcome


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, Any, Any]:
    return (yield from guarded(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, Any, Any]:
    return (yield from guarded(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, Any, Any]:
    return (yield from guarded(item))
