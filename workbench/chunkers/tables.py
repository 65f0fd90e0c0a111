"""Tables cut between rows only, with their header row embedded again above each later part.

A table row cut in two is two meaningless halves, and a block of rows without its header is
numbers without names. So GFM tables (from markdown-it's parse) and HTML `<table>`s (from the
standard library's HTML parser, outermost tables only, none inside code blocks) are cut only
between rows: a table that fits in `size` stays one piece among its section's prose (as in
`markdown`); a longer one is packed by rows into chunks of its own, and each chunk after the first
embeds the header row (GFM: with its delimiter line) above its text, which stays the exact source
span. `rows="each"` makes every row its own chunk (the first with the header), whatever its size.
A row longer than `size` stays whole. Everything else is chunked as `markdown` does it.

    >>> text = "| a | b |\\n|---|---|\\n| 1 | 2 |\\n| 3 | 4 |\\n"
    >>> [(c.text, c.embed_text) for c in table(Document("t.md", "t", text), ChunkEnv(), size=20,
    ...  unit="chars", tokenizer="cl100k_base", max_heading_level=6, rows="each")]
    [('| a | b |\\n|---|---|\\n| 1 | 2 |', None), ('| 3 | 4 |', '| a | b |\\n|---|---|\\n| 3 | 4 |')]
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from html.parser import HTMLParser
from itertools import pairwise

from workbench.chunkers.base import ChunkEnv
from workbench.chunkers.markdown import code_pieces, line_offset, parse_blocks, sections, source_code
from workbench.chunkers.recursive import LINES, PRESETS, Units, merge_pieces, split_pieces
from workbench.chunkers.registry import strategy
from workbench.chunkers.units import SIZE, TOKENIZER, UNIT, unit_boundaries
from workbench.core.chunk import Bounds, Chunk, make_chunk, strip_span
from workbench.core.params import Param
from workbench.dataset import Document

ROWS = ("fit", "each")  # pack rows up to `size`, or one row per chunk


@dataclass(frozen=True)
class Table:
    """A table's rows as contiguous spans covering it (the first holds what opens the table, the
    last what closes it), and its header row's text when it has one (embedded above later parts)."""

    rows: tuple[Bounds, ...]
    header: str | None

    @property
    def span(self) -> Bounds:
        return self.rows[0][0], self.rows[-1][1]


class _HtmlTables(HTMLParser):
    """Offsets of the outermost <table>s of a text, with their <tr> starts and </tr> ends."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=False)
        self.text, self.depth = text, 0
        self.lines = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]
        self.tables: list[tuple[int, int, list[int], list[int], bool]] = []  # start, end, <tr>s, </tr>s, has <th>
        self.feed(text)
        self.close()

    def _at(self) -> int:
        line, col = self.getpos()
        return self.lines[line - 1] + col

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag == "table":
            self.depth += 1
            if self.depth == 1:
                self.tables.append((self._at(), -1, [], [], False))
        elif self.depth == 1 and tag == "tr":
            self.tables[-1][2].append(self._at())
        elif self.depth == 1 and tag == "th" and len(self.tables[-1][2]) == 1:
            start, end, trs, ends, _ = self.tables[-1]
            self.tables[-1] = (start, end, trs, ends, True)

    def handle_endtag(self, tag: str) -> None:
        at = self._at()
        close = self.text.find(">", at) + 1 or len(self.text)
        if tag == "table" and self.depth:
            self.depth -= 1
            if self.depth == 0:
                self.tables[-1] = (self.tables[-1][0], close, *self.tables[-1][2:])
        elif self.depth == 1 and tag == "tr":
            self.tables[-1][3].append(close)


def html_tables(text: str) -> list[Table]:
    """The closed outermost HTML tables of `text` with at least one row."""
    if "<table" not in text.lower():
        return []
    out = []
    for start, end, trs, ends, has_th in _HtmlTables(text).tables:
        if end < 0 or not trs:
            continue
        # a row runs to its </tr>, or (end tag omitted) to the next row; the table's edges join its outer rows
        cuts = [start, *trs[1:], end]
        for i, nxt in enumerate(trs[1:], 1):
            closed = [e for e in ends if trs[i - 1] < e <= nxt]
            cuts[i] = closed[-1] if closed else nxt
        rows = tuple(pairwise(cuts))
        header_end = cuts[1] if len(trs) > 1 else end
        out.append(Table(rows, text[trs[0] : header_end].strip() if has_th else None))
    return out


def markdown_tables(text: str) -> tuple[list[Table], list[Bounds]]:
    """The GFM tables of `text` (a row per line; the header row is its first two lines), and the
    spans of its code blocks (where an HTML table is code, not a table)."""
    tokens, lines = parse_blocks(text)
    tables, code = [], []
    for tok in tokens:
        if tok.map is None:
            continue
        first, last = tok.map
        if tok.type == "table_open":
            starts = [first, *range(first + 2, last), last]  # header + delimiter lines are one row
            rows = tuple((line_offset(lines, a), line_offset(lines, b)) for a, b in pairwise(starts))
            tables.append(Table(rows, text[rows[0][0] : rows[0][1]].rstrip("\r\n")))
        elif tok.type in ("fence", "code_block"):
            code.append((line_offset(lines, first), line_offset(lines, last)))
    return tables, code


def tables_and_code(text: str) -> tuple[list[Table], list[Bounds]]:
    """The GFM tables of `text`, then its HTML tables outside code blocks (there they are code), and the
    spans of its code blocks: what `table` cuts only between rows, and what the chunk audit checks."""
    gfm, code = markdown_tables(text)
    html = [t for t in html_tables(text) if not any(s < t.span[1] and t.span[0] < e for s, e in code)]
    return gfm + html, code


def _row_groups(table: Table, units: Units, size: int, rows: str) -> list[tuple[int, int]]:
    """Row index ranges [i, j) of a split table: packed up to `size` (the repeated header counted
    in), or one row each; the header row never stands alone."""
    n = len(table.rows)
    header = 0 if table.header is None else units.count(*table.rows[0])
    groups: list[tuple[int, int]] = []
    i = 0
    while i < n:
        j = i + 1 + (i == 0 and table.header is not None and n > 1)  # the header row takes a row with it
        extra = header if i > 0 else 0
        while rows == "fit" and j < n and units.count(table.rows[i][0], table.rows[j][1]) + extra <= size:
            j += 1
        groups.append((i, j))
        i = j
    return groups


def _table_chunks(doc: Document, table: Table, units: Units, size: int, rows: str, heading: str) -> list[Chunk]:
    out = []
    for i, j in _row_groups(table, units, size, rows):
        span = strip_span(doc.text, table.rows[i][0], table.rows[j - 1][1])
        if span is None:
            continue
        embed = f"{table.header}\n{doc.text[span[0] : span[1]]}" if i > 0 and table.header is not None else None
        out.append(make_chunk(doc, *span, heading=heading, embed_text=embed))
    return out


@strategy(
    "table",
    "Markdown sections as `markdown` cuts them, but GFM and HTML tables cut only between rows: a table over "
    "`size` splits by rows with its header row embedded above each part; rows=each: one row per chunk.",
    {
        "size": SIZE,
        "unit": UNIT,
        "tokenizer": TOKENIZER,
        "max_heading_level": Param(6, "deepest heading level that starts a section", lo=1, hi=6),
        "rows": Param("fit", "a table over `size` (fit) or every table (each) split by rows: packed up to `size`, "
                      "or one row per chunk", choices=ROWS),
    },
    version=3,  # 2: heading paths without MkDocs/Pandoc "{ #anchor }" attributes; 3: source code has no headings
    fallback=source_code,
)
def table(doc: Document, env: ChunkEnv, *, size: int, unit: str, tokenizer: str, max_heading_level: int,
          rows: str) -> list[Chunk]:
    text = doc.text
    units = Units(unit_boundaries(text, unit, tokenizer, env))
    if source_code(doc):
        return [make_chunk(doc, s, e) for s, e in merge_pieces(text, code_pieces(doc, units, size), units, size, 0)]
    found, code = tables_and_code(text)
    blocks = sorted([(t.span, t) for t in found] + [(span, None) for span in code], key=lambda b: b[0])
    starts = [s for (s, _), _ in blocks]
    tokens, lines = parse_blocks(text)
    out: list[Chunk] = []
    for start, end, path in sections(text, tokens, lines, max_heading_level):
        pieces: list[Bounds] = []

        def flush() -> None:
            out.extend(make_chunk(doc, s, e, heading=path) for s, e in merge_pieces(text, pieces, units, size, 0))
            pieces.clear()

        pos = start
        for (s, e), tab in blocks[bisect_left(starts, start) : bisect_left(starts, end)]:
            if s < pos or e > end:  # nested in the block before it, or past the section (then it is prose)
                continue
            pieces += split_pieces(text, pos, s, units, size, PRESETS["markdown"]) if pos < s else []
            if tab is not None and (rows == "each" or units.count(s, e) > size):
                flush()
                out.extend(_table_chunks(doc, tab, units, size, rows, path))
            else:
                pieces += split_pieces(text, s, e, units, size, LINES)  # a code block, or a table that fits
            pos = e
        pieces += split_pieces(text, pos, end, units, size, PRESETS["markdown"]) if pos < end else []
        flush()
    return out
