"""Locating text in a document: exact offsets and how they were found, from pure text."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from textgen import texts

from workbench.labels.locate import Found, NotFound, find, find_in_order

SOURCE = "Refunds are paid\nwithin  five days. Refunds are paid within five days."


def test_find_says_how_the_text_was_found() -> None:
    assert find(SOURCE, "within five days.") == Found(53, 70, "exact")  # the second copy: the first has two spaces
    assert find(SOURCE, "paid within five days.") == Found(48, 70, "exact")  # exactly anywhere beats modulo whitespace
    assert find(SOURCE, "paid within  five days.") == Found(12, 35, "whitespace")  # a line break for a space
    assert find(SOURCE, "paid within  five days.", cursor=13) == Found(48, 70, "whitespace")
    assert find(SOURCE, "Refunds are paid", cursor=1) == Found(36, 52, "exact")
    assert find(SOURCE, "Refunds are paid", after=16) == Found(36, 52, "exact")  # the first ends too early
    assert find(SOURCE, "within six days.") is None
    with pytest.raises(ValueError, match="parameter 'piece' is blank"):
        find(SOURCE, " \n")


def test_pieces_in_order_use_confirmed_hints_and_name_the_missing_one() -> None:
    text = "abc abc abc"
    found = list(find_in_order(text, [("abc", 4), ("  ", None), ("abc", 0)]))
    assert found == [Found(4, 7, "hint"), Found(8, 11, "exact")]  # the blank piece is skipped
    with pytest.raises(NotFound) as err:
        list(find_in_order(text, [("abc", 4), ("  ", None), ("abc", 0), ("abc", None)]))
    assert (err.value.index, err.value.piece, err.value.cursor) == (3, "abc", 9)
    assert "piece 3 is not in the text after offset 9" in str(err.value)


@settings(max_examples=100, deadline=None)
@given(text=texts, data=st.data())
def test_a_slice_with_its_whitespace_rewritten_is_found(text: str, data: st.DataObject) -> None:
    """Any slice of random Unicode text, stripped and with its whitespace collapsed, is found:
    exactly when the text holds it so, else modulo whitespace, no later than where it was cut."""
    start = data.draw(st.integers(0, len(text) - 1))
    end = data.draw(st.integers(start + 1, len(text)))
    words = text[start:end].split()
    if not words:
        return
    piece = " ".join(words)
    f = find(text, piece)
    assert f is not None and text[f.start : f.end].split() == words
    if f.how == "exact":
        assert text[f.start : f.end] == piece and f.start == text.find(piece)
    else:
        assert f.how == "whitespace" and piece not in text
        assert f.start <= start + len(text[start:end]) - len(text[start:end].lstrip())
