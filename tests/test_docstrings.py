"""The examples in the package's docstrings run as written: an example that no longer holds fails here."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

import workbench

ROOT = Path(workbench.__file__).parent
MODULES = sorted(".".join(p.relative_to(ROOT.parent).with_suffix("").parts) for p in ROOT.rglob("*.py")
                 if ">>> " in p.read_text(encoding="utf-8"))


def test_the_package_has_examples() -> None:
    assert len(MODULES) >= 10, MODULES  # the search below finds them


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_hold(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples of {name} failed (output above)"
