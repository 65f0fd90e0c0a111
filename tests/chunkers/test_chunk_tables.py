"""`table`: GFM and HTML tables cut only between rows, the header row embedded above later parts
(the text stays the source span), one row per chunk on request, and `markdown`'s chunks where no
table is split."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given
from hypothesis import strategies as st
from textgen import texts

from workbench.chunkers import ChunkEnv, run_strategy
from workbench.chunkers.tables import html_tables, markdown_tables
from workbench.core.chunk import Chunk
from workbench.dataset import Document

ENV = ChunkEnv()
GFM_HEADER = "| city | population | note |\n|---|---|---|"
GFM = ("# Cities\n\nSome prose before the table.\n\n" + GFM_HEADER + "\n"
       + "".join(f"| city {i} | {i * 1000} | naïve café {i} 😀 |\n" for i in range(12)) + "\nProse after.\n")
HTML_HEADER = "<tr><th>Name</th><th>Qty</th></tr>"
HTML = ("<p>Intro.</p>\n<table>\n<thead>" + HTML_HEADER + "</thead>\n<tbody>\n"
        + "".join(f"<tr><td>item {i}\n  second line</td><td>{i}</td></tr>\n" for i in range(8))
        + "</tbody>\n</table>\n<p>After.</p>\n")


def chunks_of(text: str, **params: object) -> list[Chunk]:
    return run_strategy("table", params, Document("d", "t", text), ENV)


def row_edges(text: str) -> set[int]:
    """Offsets where a row of any table of `text` starts or ends (whitespace-trimmed)."""
    tables = markdown_tables(text)[0] + html_tables(text)
    return {x for t in tables for s, e in t.rows for x in (s + len(text[s:e]) - len(text[s:e].lstrip()),
                                                          s + len(text[s:e].rstrip()))}


def table_span(text: str) -> tuple[int, int]:
    ((t,),) = [markdown_tables(text)[0] or html_tables(text)]
    return t.span


def test_gfm_table_over_size_splits_between_rows_with_its_header_repeated() -> None:
    chunks = chunks_of(GFM, size=60)
    s, e = table_span(GFM)
    parts = [c for c in chunks if s <= c.start and c.end <= e]
    assert len(parts) >= 3 and parts[0].text.startswith(GFM_HEADER) and parts[0].embed_text is None
    edges = row_edges(GFM)
    for c in parts:
        assert c.text == GFM[c.start : c.end] and c.start in edges and c.end in edges
        assert c.heading == "Cities"
    for c in parts[1:]:
        assert c.embed_text == f"{GFM_HEADER}\n{c.text}"
        assert ENV.tokenizer("cl100k_base").count(c.embed_text) <= 60 + 2  # the header counted in (+ a seam)
    assert "".join(c.text for c in parts).replace("\n", "") == GFM[s:e].replace("\n", "")


def test_html_table_rows_stay_whole_and_the_header_row_is_repeated() -> None:
    chunks = chunks_of(HTML, size=40)
    parts = [c for c in chunks if "<tr>" in c.text]
    edges = row_edges(HTML)
    assert len(parts) >= 4
    for c in parts:
        assert c.text.count("<tr>") == c.text.count("</tr>")  # a row's two lines never parted
        assert c.start in edges and c.end in edges
    assert parts[0].embed_text is None and HTML_HEADER in parts[0].text
    assert all(c.embed_text == f"{HTML_HEADER}\n{c.text}" for c in parts[1:])
    assert [c.text for c in chunks][0] == "<p>Intro.</p>" and chunks[-1].text == "<p>After.</p>"


def test_rows_each_makes_every_row_a_chunk() -> None:
    chunks = chunks_of(GFM, size=4096, rows="each")
    s, e = table_span(GFM)
    parts = [c for c in chunks if s <= c.start and c.end <= e]
    assert len(parts) == 12  # the header row rides with the first body row
    assert parts[0].text == f"{GFM_HEADER}\n| city 0 | 0 | naïve café 0 😀 |"
    assert [c.text for c in parts[1:]] == [f"| city {i} | {i * 1000} | naïve café {i} 😀 |" for i in range(1, 12)]


def test_equal_to_markdown_where_no_table_is_split() -> None:
    doc = Document("d", "t", GFM)
    same = run_strategy("markdown", {"size": 512, "overlap": 0}, doc, ENV)
    assert chunks_of(GFM, size=512) == same and len(same) == 1
    small = run_strategy("markdown", {"size": 60, "overlap": 0}, doc, ENV)
    assert chunks_of(GFM, size=60) != small  # split there: markdown cut the table by lines, with no header


def test_tables_in_code_blocks_are_code() -> None:
    text = "```html\n<table><tr><th>a</th></tr><tr><td>1</td></tr></table>\n```\n\n" + GFM
    assert len(html_tables(text)) == 1 and markdown_tables(text)[1]
    assert all(c.embed_text is None or c.embed_text.startswith(GFM_HEADER) for c in chunks_of(text, size=60))


@given(cells=st.lists(st.lists(texts.map(lambda t: t.replace("|", "/").replace("\n", " ")), min_size=2,
                               max_size=2), min_size=1, max_size=10),
       prose=texts, size=st.integers(1, 80), rows=st.sampled_from(["fit", "each"]))
def test_random_tables_never_cut_inside_a_row(cells: list[list[str]], prose: str, size: int, rows: str) -> None:
    body = "".join(f"| {a} | {b} |\n" for a, b in cells)
    text = f"{prose}\n\n| x | y |\n|---|---|\n{body}\n{prose}\n"
    chunks = chunks_of(text, size=size, rows=rows)
    inner = [(s + len(text[s:e]) - len(text[s:e].lstrip()), s + len(text[s:e].rstrip()))
             for t in markdown_tables(text)[0] for s, e in t.rows]
    for c in chunks:
        assert c.text == text[c.start : c.end] and c.text.strip()
        assert not any(a < x < b for a, b in inner for x in (c.start, c.end)), f"a row cut by {c.text!r}"
    assert all(a.end <= b.start for a, b in pairwise(chunks))
    covered = "".join(c.text for c in chunks)
    assert "".join(text.split()) == "".join(covered.split())  # every non-space character, once
