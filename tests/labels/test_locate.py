"""Locating text in a document: exact offsets and how they were found, from pure text."""

from __future__ import annotations

import re

import pytest
from conftest import REPO
from hypothesis import given, settings
from hypothesis import strategies as st
from textgen import texts

from workbench.core.locate import (
    AmbiguousQuote,
    Found,
    Located,
    NotFound,
    QuoteError,
    QuoteNotFound,
    find,
    find_in_order,
    locate_quote,
    normalise,
)
from workbench.dataset import Document

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


def test_an_overlap_only_tail_lies_inside_the_piece_before_and_a_stale_hint_is_not_taken() -> None:
    text = "| `gprav` | `git pull --rebase --autostash -v` |\n| `gpr` | `git pull --rebase` |"
    pieces = ["| `gprav` | `git pull --rebase --autostash -v`", "-v`", "|\n| `gpr`"]
    found = list(find_in_order(text, ((p, None) for p in pieces)))
    assert [text[f.start : f.end] for f in found] == pieces and found[1].end == found[0].end  # the tail itself
    again = list(find_in_order("abcdef cd", [("abcdef", 0), ("cd", 2)]))  # hint 2: inside the piece before
    assert [(f.start, f.how) for f in again] == [(0, "hint"), (7, "exact")]


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


# Quotes people write: locate_quote on real documents.

README = Document("httpx.md", "HTTPX", (REPO / "tests" / "data" / "semantic" / "httpx_readme.md").read_text("utf-8"))
SOTU = Document("sotu.txt", "State of the Union", (REPO / "tests" / "data" / "semantic" / "sotu_2024.txt")
                .read_text("utf-8"))
DOCS = {d.doc_id: d for d in (README, SOTU)}


def quoted(found: Located) -> str:
    return DOCS[found.doc_id].text[found.start : found.end]


def test_a_quote_copied_from_the_rendered_page_is_found_as_its_markdown_source() -> None:
    rendered = "It includes an integrated command line client, has support for both HTTP/1.1 and HTTP/2"
    found = locate_quote(DOCS, rendered)
    assert (found.doc_id, found.how, found.score) == ("httpx.md", "normalised", 100.0)
    assert quoted(found) == ("It includes **an integrated command line client**, has support for both "
                             "**HTTP/1.1 and HTTP/2")
    exact = "HTTPX is a fully featured HTTP client library for Python 3."
    assert locate_quote(DOCS, exact, "httpx.md") == Located("httpx.md", README.text.index(exact),
                                                            README.text.index(exact) + len(exact), "exact", 100.0)


@pytest.mark.parametrize("rewrite", [
    lambda s: s.replace("\u2019", "'").replace("\u2014", "-"),  # typed: ASCII for the source's typographic marks
    lambda s: " \n ".join(s.split(" ")),  # line-broken, as copied from a PDF viewer
    lambda s: s.replace("a", "\uff41"),  # full-width letters: NFKC makes them ASCII
])
def test_a_rewritten_quote_maps_back_to_the_exact_source(rewrite) -> None:
    sentence = next(s for s in SOTU.text.split(". ") if "\u2019" in s and "\u2014" in s)
    found = locate_quote(DOCS, rewrite(sentence))
    assert found.how == "normalised" and quoted(found) == sentence


def test_link_syntax_and_code_spans_drop_but_the_span_stays_the_source() -> None:
    doc = Document("l.md", "l", "See [the install guide](https://x.org/install \"Install\") and run `pip install x`.")
    found = locate_quote({"l.md": doc}, "See the install guide and run pip install x.")
    assert (found.start, found.end, found.how) == (0, len(doc.text), "normalised")


def test_fuzzy_quotes_end_on_whole_words_and_a_miss_names_the_best_candidate() -> None:
    sentence = "HTTPX is a fully featured HTTP client library for Python 3. It includes"
    typo = sentence.replace("featured", "featred").replace("library", "libary")
    found = locate_quote(DOCS, typo)
    assert found.how == "fuzzy" and 90 <= found.score < 100
    assert quoted(found) == sentence
    with pytest.raises(QuoteNotFound) as err:
        locate_quote(DOCS, typo, threshold=99)
    assert err.value.best == found and f"score {found.score:.0f}," in str(err.value) and "'httpx.md'" in str(err.value)
    with pytest.raises(QuoteNotFound, match="no candidate shares a word"):
        locate_quote(DOCS, "zzzz qqqq")


def test_equal_matches_need_a_hint_and_each_hint_picks_one() -> None:
    starts = [m.start() for m in re.finditer("HTTP/2", README.text)]
    assert len(starts) >= 3
    with pytest.raises(AmbiguousQuote) as err:
        locate_quote(DOCS, "HTTP/2")
    assert err.value.count == len(starts) and [w.start for w in err.value.where] == starts
    assert locate_quote(DOCS, "HTTP/2", occurrence=2).start == starts[2]
    assert locate_quote(DOCS, "HTTP/2", near=starts[1] + 3).start == starts[1]
    assert locate_quote(DOCS, "HTTP/2", context="both HTTP/1.1 and HTTP/2").start == starts[0]  # markup between
    assert locate_quote(DOCS, "HTTP/2", context="HTTP/1.1 and HTTP/2", occurrence=1).start == starts[1]
    with pytest.raises(QuoteError, match="'occurrence' is 99") as bad:
        locate_quote(DOCS, "HTTP/2", occurrence=99)
    assert bad.value.field == "occurrence"
    with pytest.raises(AmbiguousQuote, match="'context' is around none"):
        locate_quote(DOCS, "HTTP/2", context="no such words here")


def test_bad_parameters_are_named() -> None:
    with pytest.raises(QuoteError, match="parameter 'quote'"):
        locate_quote(DOCS, "  ")
    with pytest.raises(QuoteError, match="blank once normalised"):
        locate_quote(DOCS, "**`")
    with pytest.raises(KeyError, match="parameter 'doc_id'"):
        locate_quote(DOCS, "HTTPX", "nope.md")
    with pytest.raises(ValueError, match="parameter 'threshold'"):
        locate_quote(DOCS, "HTTPX", threshold=0)


@settings(max_examples=100, deadline=None)
@given(text=texts, data=st.data())
def test_any_slice_rendered_locates_to_a_span_that_normalises_to_it(text: str, data: st.DataObject) -> None:
    """Any run of words of random Markdown-ish Unicode, joined by single spaces and without its
    backticks (as a page shows it), locates to a source span that normalises to the same text."""
    words = text.split()
    start = data.draw(st.integers(0, len(words) - 1))
    end = data.draw(st.integers(start + 1, len(words)))
    rendered = " ".join(words[start:end]).replace("`", "")
    want = normalise(rendered).text.strip()
    if not want:
        return
    try:
        found = locate_quote({"doc": Document("doc", "t", text)}, rendered)
    except AmbiguousQuote as e:
        assert all(normalise(text[w.start : w.end]).text.strip() == want for w in e.where)
        return
    assert found.how in ("exact", "normalised")
    assert normalise(text[found.start : found.end]).text.strip() == want
