"""The chunk viewer: the passage intact, boundaries, overlaps and evidence marked, text escaped."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from conftest import REPO

from workbench.chunkers import ChunkEnv
from workbench.dataset import Dataset, Document, Span
from workbench.figures.viewer import COLORS, EVIDENCE, OVERLAP, around, chunk_html
from workbench.ingest import READERS
from workbench.variant import Variant


def visible_text(markup: str) -> str:
    body = markup.split('line-height:1.6">', 1)[1]
    return html.unescape(re.sub(r"<[^>]+>", "", body))


def test_passage_is_shown_whole_with_boundaries_overlap_and_evidence(tiny: Dataset) -> None:
    chunks = Variant.make("fixed", size=12, overlap=4).chunk(tiny, ChunkEnv())
    q = tiny.questions[0]
    doc_id, start, end = around(q.answers[0], 80)
    markup = chunk_html(tiny, chunks, doc_id, start, end, q.answers)
    text = tiny.docs[doc_id].text
    assert visible_text(markup) == text[start:min(end, len(text))]
    assert COLORS[0] in markup and COLORS[1] in markup and f"background:{OVERLAP}" in markup
    pattern = rf'style="[^"]*{re.escape(EVIDENCE)}" title="[^"]*">([^<]*)<'
    marked = "".join(html.unescape(m) for m in re.findall(pattern, markup))
    a = q.answers[0]
    assert marked == text[a.start:a.end]
    first = next(i for i, c in enumerate(chunks) if c.doc_id == doc_id and c.end > start)
    assert f"chunk {first} [{chunks[first].start}, {chunks[first].end})" in markup


def test_no_overlap_colour_without_overlap_and_text_is_escaped() -> None:
    doc = Document("d", "T", "if a < b and c > d: print('<b>hi</b>') & done")
    ds = Dataset("x", (doc,), ())
    chunks = Variant.make("fixed", size=10, unit="chars").chunk(ds, ChunkEnv())
    markup = chunk_html(ds, chunks, "d")
    assert f"background:{OVERLAP};" not in markup.split("</div>", 1)[1]
    assert "<b>" not in markup and "&lt;b&gt;" in markup
    assert visible_text(markup) == doc.text


def test_bad_passages_are_named(tiny: Dataset) -> None:
    with pytest.raises(KeyError, match="nope"):
        chunk_html(tiny, [], "nope")
    with pytest.raises(ValueError, match="out of range"):
        chunk_html(tiny, [], "space.txt", 50, 50)
    assert "in no chunk" in chunk_html(tiny, [], "space.txt", 0, 20, [Span("space.txt", 0, 5)])


def test_tooltips_and_the_passage_name_where_each_chunk_is() -> None:
    folder = REPO / "tests" / "data" / "formats"
    docs = [READERS[Path(n).suffix](folder / n, n) for n in ("handbook.pdf", "docs_src/cors_tutorial001.py",
                                                             "install.rst")]
    ds = Dataset("formats", tuple(docs), ())
    pdf, code, rst = (chunk_html(ds, Variant.make(strategy, **kw).chunk(ds, ChunkEnv()), d.doc_id)
                      for d, (strategy, kw) in zip(docs, [("page", {}), ("code", {"size": 30}),
                                                          ("markdown", {"size": 32})], strict=True))
    tips = [html.unescape(t) for markup in (pdf, code, rst) for t in re.findall(r' title="([^"]*)"', markup)]
    assert any(t.endswith("): handbook.pdf · page 3") for t in tips)
    assert any(t.endswith("): docs_src/cors_tutorial001.py · async def main()") for t in tips)
    assert any(t.endswith("): install.rst · Installing the client > From source > Checking the install") for t in tips)
    assert html.escape("handbook.pdf · pages 1-3 [0, ") in pdf  # the passage: the whole document
