"""Locating text in a document: exact offsets and how they were found, from pure text."""

from __future__ import annotations

import json
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
from workbench.ingest.text import read_rst

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


# reStructuredText copied from its rendered page (pallets/itsdangerous's docs, built with Sphinx 9.0.4)

ITSDANGEROUS = REPO / "tests" / "data" / "itsdangerous"
RST = {p.relative_to(ITSDANGEROUS).as_posix(): Document(p.relative_to(ITSDANGEROUS).as_posix(), p.stem,
                                                         read_rst(p, p.name).text)
       for p in sorted((ITSDANGEROUS / "docs").glob("*.rst"))}


@pytest.mark.parametrize(("doc_id", "rendered", "first", "last"), [
    ("docs/signer.rst", "If the value is changed, the signature will no longer match, and unsigning will raise a "
     "BadSignature exception:", "If the value", "BadSignature` exception:"),  # :exc:`~itsdangerous.exc.BadSignature`
    ("docs/serializer.rst", "If you don\u2019t want to inspect attributes to figure out what exactly went wrong you "
     "can also use loads_unsafe():", "If you don't", "loads_unsafe`:"),  # :meth: shows its name with ()
    ("docs/serializer.rst", "A Signer class to instantiated with the secret_key, salt, and signer_kwargs passed to the "
     "serializer.", "A :class:", "serializer."),  # ``literals``
    ("docs/changes.rst", "Handle date overflow in timed unsign on 32-bit systems. #299", "Handle date", ":pr:`299`"),
    ("docs/concepts.rst", "One way to generate a key is to use os.urandom().", "One way", ":func:`os.urandom`."),
])
def test_a_quote_copied_from_rendered_rst_maps_back_to_its_markup(doc_id: str, rendered: str, first: str,
                                                                  last: str) -> None:
    found = locate_quote(RST, rendered, doc_id)
    span = RST[doc_id].text[found.start : found.end]
    assert found.how == "normalised" and span.startswith(first) and span.endswith(last)


def test_rst_roles_links_directives_and_emphasis_show_as_a_page_does() -> None:
    source = ("See :doc:`the guide <install>` and :class:`!Plain`, :pep:`8`, :py:meth:`.Signer.sign`,\n"
              ":attr:`~a.b.Thing.name` or `the site <https://x.org>`_. It is *very* **safe** ``code``.\n\n"
              ".. note::\n\n    Keep it.\n\n.. code-block:: python\n    :linenos:\n\n    x = 1\n\n"
              ".. versionchanged:: 2.0\n    Rewritten.\n\nAn example::\n\n    y = 2\n\n.. _site: https://x.org\n")
    assert normalise(source).text.strip() == (
        "See the guide and Plain, PEP 8, Signer.sign(), name or the site. It is very safe code. Keep it. x = 1 "
        "Changed in version 2.0: Rewritten. An example: y = 2")
    doc = Document("a.rst", "a", source)
    found = locate_quote({"a.rst": doc}, "PEP 8, Signer.sign(), name or the site.")
    assert source[found.start : found.end] == (":pep:`8`, :py:meth:`.Signer.sign`,\n:attr:`~a.b.Thing.name` or "
                                               "`the site <https://x.org>`_.")


def test_quotes_copied_from_the_rendered_itsdangerous_docs_locate_but_for_page_titles() -> None:
    """Every sentence of 6+ words of the narrative pages as rendered (tests/data/itsdangerous_rendered.jsonl)
    is found once normalised (or exactly), save those naming another page by its title (:doc:`/signer`
    shows "Signing Interface", which the source does not hold): those are left to fuzzy matching."""
    rendered = REPO / "tests" / "data" / "itsdangerous_rendered.jsonl"
    rows = [json.loads(line) for line in rendered.open(encoding="utf-8")]
    how: dict[str, str] = {}
    for r in rows:
        try:
            how[r["quote"]] = locate_quote(RST, r["quote"], r["doc_id"]).how
        except QuoteNotFound:
            how[r["quote"]] = "missing"
    loose = sorted(q for q, h in how.items() if h not in ("exact", "normalised"))
    titles = ("Signing Interface", "Serialization Interface", "Signing With Timestamps", "URL Safe Serialization")
    assert len(rows) == 156 and loose == sorted(q for q in how if any(t in q for t in titles)) and len(loose) == 6


def test_a_fuzzy_span_covers_the_whole_quote_from_its_first_word_to_its_last() -> None:
    """A quote whose first words differ a little and which leaves words out: an alignment of its length
    covered only part of the source sentence; the span is the whole sentence."""
    quote = ("Wars were raging in Europe. President Roosevelt's purpose was to wake up Congress and to alert the "
             "people that this was no ordinary time.")
    found = locate_quote(DOCS, quote)
    assert found.how == "fuzzy" and quoted(found) == (
        "War was raging in Europe.\n\nPresident Roosevelt\u2019s purpose was to wake up Congress and alert the "
        "American people that this was no ordinary time.")
    typo = "If a value was changed, the signature will no longer match, and unsigning will raise a BadSignature error."
    found = locate_quote(RST, typo, "docs/signer.rst")
    assert found.how == "fuzzy" and RST["docs/signer.rst"].text[found.start : found.end].startswith("If the value")
