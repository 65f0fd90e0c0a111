"""Small-to-big: parent_child (fixed, window and section parents) and sentence_window."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from textgen import documents

from workbench.chunkers import ChunkEnv, get_strategy, run_strategy
from workbench.chunkers.markdown import section_spans
from workbench.core.chunk import Chunk
from workbench.dataset import Document
from workbench.variant import Variant

ENV = ChunkEnv()
FISH = "One fish. Two fish. Red fish. Blue fish. Old fish. New fish."


def pairs(text: str, chunks: list[Chunk]) -> list[tuple[str, str]]:
    return [(c.text, text[c.parent_start : c.parent_end]) for c in chunks]


def test_sentence_window_hand_computed() -> None:
    text = "One fish. Two fish. Red fish. Blue fish."
    chunks = run_strategy("sentence_window", {"window": 1}, Document("d", "t", text), ENV)
    assert pairs(text, chunks) == [
        ("One fish.", "One fish. Two fish."),
        ("Two fish.", "One fish. Two fish. Red fish."),
        ("Red fish.", "Two fish. Red fish. Blue fish."),
        ("Blue fish.", "Red fish. Blue fish."),
    ]


def test_cap_centres_the_parent_on_the_child() -> None:
    # cl100k tokens: "One", " fish", ".", " Two", ... (3 per sentence). A 7-token cap around a
    # 3-token child keeps 2 tokens on each side, shifted inwards at the document's ends.
    chunks = run_strategy("sentence_window", {"window": 5, "max_parent_tokens": 7}, Document("d", "t", FISH), ENV)
    assert pairs(FISH, chunks) == [
        ("One fish.", "One fish. Two fish. Red"),
        ("Two fish.", "fish. Two fish. Red fish"),
        ("Red fish.", "fish. Red fish. Blue fish"),
        ("Blue fish.", "fish. Blue fish. Old fish"),
        ("Old fish.", "fish. Old fish. New fish"),
        ("New fish.", ". Old fish. New fish."),
    ]


def test_section_parents_hand_computed() -> None:
    text = "# A\nText one. Text two.\n\n# B\nMore text."
    chunks = run_strategy("parent_child", {"child_size": 4, "parent": "section"}, Document("d", "t", text), ENV)
    a, b = "# A\nText one. Text two.", "# B\nMore text."
    assert pairs(text, chunks) == [("# A", a), ("Text one.", a), ("Text two.", a), ("# B", b), ("More text.", b)]
    assert [c.heading for c in chunks] == ["A", "A", "A", "B", "B"]


def test_window_parents_hand_computed() -> None:
    params = {"child_size": 6, "parent": "window", "window": 1}
    chunks = run_strategy("parent_child", params, Document("d", "t", FISH), ENV)
    assert pairs(FISH, chunks) == [
        ("One fish. Two fish.", "One fish. Two fish. Red fish."),
        ("Red fish. Blue fish.", "Two fish. Red fish. Blue fish. Old fish."),
        ("Old fish. New fish.", "Blue fish. Old fish. New fish."),
    ]


def test_parent_size_only_binds_fixed_parents() -> None:
    Variant.make("parent_child", child_size=600, parent="section")  # parent_size is unused there
    with pytest.raises(ValueError, match="'child_size'"):
        Variant.make("parent_child", child_size=600, parent="fixed")


def test_fixed_parents_shared_and_children_inside() -> None:
    # 18 tokens: fixed parents of 9 tokens are the first and last three sentences
    chunks = run_strategy("parent_child", {"child_size": 3, "parent_size": 9}, Document("d", "t", FISH), ENV)
    first, second = "One fish. Two fish. Red fish.", "Blue fish. Old fish. New fish."
    assert [p for _, p in pairs(FISH, chunks)] == [first] * 3 + [second] * 3
    assert len({(c.parent_start, c.parent_end) for c in chunks}) == 2  # identical spans: dedup works


def check_common(doc: Document, chunks: list[Chunk], child_size: int, cap: int, tokenizer: str) -> None:
    count = ENV.length_fn("tokens", tokenizer)
    covered = [0] * len(doc.text)
    for c in chunks:
        assert c.text == doc.text[c.start : c.end] and c.text.strip() == c.text != ""
        assert c.parent_start is not None and c.parent_end is not None
        assert c.parent_start <= c.start < c.end <= c.parent_end <= len(doc.text)
        parent = doc.text[c.parent_start : c.parent_end]
        assert parent.strip() == parent
        if cap:
            assert count(parent) <= cap or (c.parent_start, c.parent_end) == (c.start, c.end)
        if child_size:
            assert count(c.text) <= child_size or len(c.text) == 1
        for i in range(c.start, c.end):
            covered[i] += 1
    assert all(n == 1 or ch.isspace() and n == 0 for n, ch in zip(covered, doc.text, strict=True))  # a partition


@settings(max_examples=50, deadline=None)
@given(
    documents,
    st.integers(1, 20),
    st.sampled_from(["sentence", "fixed"]),
    st.sampled_from(["fixed", "window", "section"]),
    st.integers(0, 30),
    st.integers(0, 3),
    st.sampled_from([0, 10, 40]),
    st.sampled_from(["cl100k_base", "o200k_base"]),
)
def test_parent_child_properties(
    doc: Document, child_size: int, child: str, parent: str, extra: int, window: int, cap: int, tokenizer: str
) -> None:
    params: dict[str, Any] = {
        "child_size": child_size,
        "child": child,
        "parent": parent,
        "parent_size": child_size + extra,
        "window": window,
        "max_parent_tokens": cap and max(cap, child_size),
        "tokenizer": tokenizer,
    }
    chunks = run_strategy("parent_child", params, doc, ENV)
    assert chunks == run_strategy("parent_child", params, doc, ENV)  # deterministic
    check_common(doc, chunks, child_size, params["max_parent_tokens"], tokenizer)
    if parent != "window" and not cap:  # children never straddle parents; siblings share one span
        parents = {(c.parent_start, c.parent_end) for c in chunks}
        assert all(a[1] <= b[0] for a, b in pairwise(sorted(parents)))
    if parent == "section":
        sections = {(a, b): h for a, b, h in section_spans(doc.text)}
        for c in chunks:
            assert any(a <= c.start and c.end <= b and h == c.heading for (a, b), h in sections.items())


@settings(max_examples=50, deadline=None)
@given(documents, st.integers(0, 4), st.sampled_from([0, 5, 30]))
def test_sentence_window_properties(doc: Document, window: int, cap: int) -> None:
    params = {"window": window, "max_parent_tokens": cap}
    chunks = run_strategy("sentence_window", params, doc, ENV)
    assert chunks == run_strategy("sentence_window", params, doc, ENV)
    check_common(doc, chunks, 0, cap, "cl100k_base")
    if not cap:  # the parent runs from `window` sentences before to `window` after
        for i, c in enumerate(chunks):
            lo, hi = chunks[max(0, i - window)], chunks[min(len(chunks) - 1, i + window)]
            assert (c.parent_start, c.parent_end) == (lo.start, hi.end)


@pytest.mark.parametrize(
    ("strategy", "params", "name"),
    [
        ("parent_child", {"child_size": 0}, "child_size"),
        ("parent_child", {"child_size": 600, "parent_size": 512}, "child_size"),
        ("parent_child", {"parent_size": 0}, "parent_size"),
        ("parent_child", {"parent": "page"}, "parent"),
        ("parent_child", {"child": "words"}, "child"),
        ("parent_child", {"window": -1}, "window"),
        ("parent_child", {"max_parent_tokens": 100, "child_size": 128}, "max_parent_tokens"),
        ("parent_child", {"max_parent_tokens": -1}, "max_parent_tokens"),
        ("sentence_window", {"window": -1}, "window"),
        ("sentence_window", {"max_parent_tokens": -5}, "max_parent_tokens"),
        ("sentence_window", {"tokenizer": "gpt2"}, "tokenizer"),
    ],
)
def test_invalid_parameters_named(strategy: str, params: dict, name: str) -> None:
    with pytest.raises(ValueError, match=f"'{name}'"):
        Variant.make(strategy, **params)
    with pytest.raises(ValueError, match=f"'{name}'"):
        get_strategy(strategy).resolve(params)
