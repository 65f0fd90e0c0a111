"""Fixed-size chunking: the shared chunk contract on random text, and hand-computed cases."""

from __future__ import annotations

from chunkcheck import ENV, PROPS, check_random_doc
from hypothesis import given
from hypothesis import strategies as st
from textgen import documents

from workbench.chunkers import run_strategy
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


