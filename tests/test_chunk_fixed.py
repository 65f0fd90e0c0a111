"""Fixed-size chunking: the shared chunk contract on random text, and hand-computed cases."""

from __future__ import annotations

import pytest
from chunkcheck import ENV, MIXED, PROPS, UNITS, assert_chunk_contract, check_random_doc
from hypothesis import given
from hypothesis import strategies as st
from textgen import documents

from workbench.chunkers import ChunkEnv, run_strategy
from workbench.dataset import Document


@PROPS
@given(doc=documents, size=st.integers(1, 40), data=st.data())
def test_fixed_contract_on_random_text(doc: Document, size: int, data: st.DataObject) -> None:
    check_random_doc("fixed", doc, size, data, ENV)


def test_fixed_chars_hand_computed() -> None:
    doc = Document("d", "t", "abcdefghij")
    spans = [(c.start, c.end) for c in run_strategy("fixed", dict(size=4, overlap=1, unit="chars"), doc, ENV)]
    assert spans == [(0, 4), (3, 7), (6, 10)]


def test_fixed_skips_whitespace_only_windows() -> None:
    doc = Document("d", "t", "ab" + " " * 6 + "cd")
    texts = [c.text for c in run_strategy("fixed", dict(size=2, unit="chars"), doc, ENV)]
    assert texts == ["ab", "cd"]


@pytest.mark.parametrize("unit,tokenizer", UNITS)
def test_fixed_exact_offsets_on_non_ascii(unit: str, tokenizer: str) -> None:
    doc = Document("d", "t", MIXED)
    chunks = run_strategy("fixed", dict(size=5, overlap=2, unit=unit, tokenizer=tokenizer), doc, ENV)
    assert len(chunks) > 3
    assert_chunk_contract(doc, chunks, 5, 2, unit, tokenizer, ENV)


def test_fixed_model_tokenizer_exact_offsets(embedder) -> None:
    env = ChunkEnv(model_tokenizer=embedder.tokenizer)
    doc = Document("d", "t", MIXED)
    chunks = run_strategy("fixed", dict(size=6, tokenizer="model"), doc, env)
    assert len(chunks) > 2
    assert_chunk_contract(doc, chunks, 6, 0, "tokens", "model", env)


@pytest.mark.parametrize(
    "params,named",
    [
        (dict(size=4, overlap=4), "overlap"),
        (dict(size=0), "size"),
        (dict(unit="words"), "unit"),
        (dict(tokenizer="gpt2"), "tokenizer"),
    ],
)
def test_fixed_invalid_parameters(params: dict, named: str) -> None:
    with pytest.raises(ValueError, match=f"'{named}'"):
        run_strategy("fixed", params, Document("d", "t", "text"), ENV)
