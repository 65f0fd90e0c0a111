"""Recursive chunking: the chunk contract on random text, separator handling, greedy merging,
overlap by whole pieces, presets and parameter errors."""

from __future__ import annotations

import json

import pytest
from chunkcheck import ENV, PROPS, check_random_doc
from hypothesis import given
from hypothesis import strategies as st
from textgen import documents

from workbench.chunkers import run_strategy
from workbench.chunkers.recursive import PRESETS, Units, recursive_spans, split_pieces
from workbench.dataset import Document
from workbench.variant import Variant


def texts(doc: Document, **params) -> list[str]:
    return [c.text for c in run_strategy("recursive", params, doc, ENV)]


@PROPS
@given(doc=documents, size=st.integers(1, 40), data=st.data(), preset=st.sampled_from(sorted(PRESETS)))
def test_recursive_contract_on_random_text(doc: Document, size: int, data: st.DataObject, preset: str) -> None:
    check_random_doc("recursive", doc, size, data, ENV, separators=preset)


def test_short_text_is_one_trimmed_chunk() -> None:
    assert texts(Document("d", "t", "\n  One. Two.  \n"), size=50, unit="chars") == ["One. Two."]


def test_paragraphs_before_sentences_and_greedy_merge() -> None:
    doc = Document("d", "t", "Aa aa. Bb bb.\n\nCc cc. Dd dd. Ee.")
    # whole text 32 chars > 20: split on "\n\n"; the second paragraph (17 chars) fits, the first
    # (15 chars incl. its blank line) fits, and the two cannot merge (32 > 20)
    assert texts(doc, size=20, unit="chars") == ["Aa aa. Bb bb.", "Cc cc. Dd dd. Ee."]
    # at 11 chars sentences are the pieces, merged greedily while they fit
    assert texts(doc, size=11, unit="chars") == ["Aa aa.", "Bb bb.", "Cc cc.", "Dd dd. Ee."]


def test_sentence_marks_stay_with_their_sentence() -> None:
    doc = Document("d", "t", "Yes! Why? 真的。好的。")
    assert texts(doc, size=5, unit="chars") == ["Yes!", "Why?", "真的。", "好的。"]


def test_overlap_repeats_whole_trailing_pieces() -> None:
    doc = Document("d", "t", "one two three four five six")
    # words are the pieces; each chunk <= 14 chars and starts with what fits of the last in 8 chars
    assert texts(doc, size=14, overlap=8, unit="chars") == ["one two three", "three four", "four five six"]


def test_unbreakable_run_is_cut_at_unit_boundaries() -> None:
    doc = Document("d", "t", "x" * 25)
    assert texts(doc, size=10, overlap=3, unit="chars") == ["x" * 10, "x" * 10, "x" * 10, "x" * 4]


def test_custom_separators_replace_the_preset() -> None:
    doc = Document("d", "t", "a1;b2;c3|d4;e5")
    assert texts(doc, size=6, unit="chars", custom_separators=("|",)) == ["a1;b2;", "c3|", "d4;e5"]
    assert texts(doc, size=6, unit="chars", custom_separators=["|", ";"]) == ["a1;b2;", "c3|", "d4;e5"]
    # "c3|d4;" has no separator left: cut into characters, which merge with their neighbours
    assert texts(doc, size=4, unit="chars", custom_separators=(";",)) == ["a1;", "b2;c", "3|d4", ";e5"]


def test_code_preset_splits_at_definitions() -> None:
    code = "import os\n\ndef f():\n    return 1\n\ndef g():\n    return 2\n"
    doc = Document("d", "t", code)
    assert texts(doc, size=24, unit="chars", separators="code") == [
        "import os",
        "def f():\n    return 1",
        "def g():\n    return 2",
    ]


def test_units_count_tokens_cut_by_the_edges() -> None:
    u = Units([0, 4, 8, 8, 12])  # four tokens; the third is zero-width (a split character)
    assert u.count(0, 12) == 4
    assert u.count(2, 6) == 2  # both cut tokens count whole
    assert u.count(8, 12) == 2  # a character made of two tokens counts twice
    assert u.inside(0, 12) == [4, 8]


def test_recursive_spans_on_a_sub_range() -> None:
    text = "skip me. Keep this. And this. skip"
    units = Units(range(len(text) + 1))
    spans = recursive_spans(text, 9, 29, units, 10, 0, PRESETS["prose"])
    assert [text[s:e] for s, e in spans] == ["Keep this.", "And this."]
    assert split_pieces(text, 9, 29, units, 100, PRESETS["prose"]) == [(9, 29)]


@pytest.mark.parametrize(
    "params,named",
    [
        (dict(separators="latex"), "separators"),
        (dict(custom_separators=("a", "")), "custom_separators"),
        (dict(custom_separators="ab"), "custom_separators"),
    ],
)
def test_recursive_invalid_parameters(params: dict, named: str) -> None:
    with pytest.raises(ValueError, match=f"'{named}'"):
        Variant.make("recursive", **params)


def test_unknown_preset_lists_the_choices() -> None:
    with pytest.raises(ValueError, match="prose.*markdown.*code"):
        Variant.make("recursive", separators="latex")


def test_variant_with_custom_separators_is_hashable_and_labelled() -> None:
    v = Variant.make("recursive", size=64, custom_separators=["\n\n", ". "])
    assert hash(v) == hash(Variant.make("recursive", size=64, custom_separators=("\n\n", ". ")))
    assert v.label == "recursive(size=64, overlap=0, custom_separators=('\\n\\n', '. '))"
    assert json.loads(json.dumps(v.spec()))["params"]["custom_separators"] == ["\n\n", ". "]
