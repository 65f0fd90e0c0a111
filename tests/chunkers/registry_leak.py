"""Two tests that must run in this order, so they live apart from the suite (no test_ prefix: not
collected) and test_adapters.py runs them in a pytest of their own: the first registers a strategy
and unregisters a built-in one, the second checks that conftest's registry fixture undid both."""

from __future__ import annotations

import pytest

from workbench.chunkers import STRATEGIES, unregister
from workbench.chunkers.adapters import register_function
from workbench.chunkers.registry import strategy


def test_a_registration_is_undone_after_its_test() -> None:
    register_function("test_leak", str.split)
    unregister("fixed")


def test_the_previous_test_left_no_trace() -> None:
    assert "test_leak" not in STRATEGIES and "fixed" in STRATEGIES
    # nor its right to be replaced: a built-in strategy registered under that name now stays built in
    strategy("test_leak", "built in", {})(lambda doc, env: [])
    with pytest.raises(ValueError, match="'test_leak' is built in and cannot be replaced"):
        register_function("test_leak", str.split)
