"""`page`: a page or a window of pages from Document.pages, empty pages skipped, a document
without pages as one chunk, exact spans on random page layouts."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from textgen import texts

from workbench.chunkers import ChunkEnv, run_strategy
from workbench.dataset import Document
from workbench.variant import Variant

ENV = ChunkEnv()
PAGES = ["Page one text.\n", "Page two text.\n", "  \n", "Page four text.\n", "Page five."]


def paged(parts: list[str]) -> Document:
    starts = [sum(len(p) for p in parts[:i]) for i in range(len(parts))]
    return Document("r.pdf", "report", "".join(parts), kind="pdf", pages=tuple(starts))


def test_one_page_per_chunk_skipping_blank_pages() -> None:
    chunks = run_strategy("page", {}, paged(PAGES), ENV)
    assert [(c.text, c.heading) for c in chunks] == [
        ("Page one text.", "page 1"), ("Page two text.", "page 2"), ("Page four text.", "page 4"),
        ("Page five.", "page 5")]


def test_windows_of_pages_with_overlap() -> None:
    doc = paged(PAGES)
    chunks = run_strategy("page", {"window": 2, "overlap": 1}, doc, ENV)
    assert [c.heading for c in chunks] == ["pages 1-2", "pages 2-4", "pages 4-5"]  # page 3 is blank
    assert chunks[1].text == "Page two text.\n  \nPage four text."
    assert [c.heading for c in run_strategy("page", {"window": 3}, doc, ENV)] == ["pages 1-4", "page 5"]


def test_a_document_without_pages_is_one_chunk_and_overlap_is_checked() -> None:
    chunks = run_strategy("page", {"window": 3}, Document("n.md", "notes", "\n# Notes\n\nNo pages here.\n"), ENV)
    assert [(c.text, c.heading) for c in chunks] == [("# Notes\n\nNo pages here.", "page 1")]
    with pytest.raises(ValueError, match=r"page: parameter 'overlap' must be in \[0, window\) = \[0, 2\), got 2"):
        Variant.make("page", window=2, overlap=2)


@given(parts=st.lists(texts, min_size=1, max_size=8), window=st.integers(1, 4), data=st.data())
def test_spans_exact_inside_their_pages(parts: list[str], window: int, data: st.DataObject) -> None:
    doc = paged(parts)
    overlap = data.draw(st.integers(0, window - 1))
    chunks = run_strategy("page", {"window": window, "overlap": overlap}, doc, ENV)
    ends = (*doc.pages[1:], len(doc.text))
    n = len(parts)  # no page is blank: `texts` are never whitespace only
    assert len(chunks) == (1 if n <= window else -(-(n - overlap) // (window - overlap)))
    for c in chunks:
        assert c.text == doc.text[c.start : c.end] and c.text == c.text.strip() and c.text
        first, last = doc.page_of(c.start), doc.page_of(c.end - 1)
        assert c.heading == (f"page {first}" if first == last else f"pages {first}-{last}")
        assert last - first < window and doc.pages[first - 1] <= c.start and c.end <= ends[last - 1]
