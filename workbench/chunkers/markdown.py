"""Structure-aware Markdown chunking: one section per heading, blocks kept whole.

Headings come from markdown-it-py's CommonMark parse (plus GFM tables), never from a regex, so a
`#` line inside a code fence is code and a setext underline is a heading. A section's chunks
carry its heading path ("Billing > Refunds", MkDocs/Pandoc "{ #anchor }" attributes left out): the
context a bare paragraph lacks. Tables and code blocks are split only when they alone exceed `size`,
and then by lines, never mid-row.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from functools import lru_cache
from typing import TYPE_CHECKING

from workbench.chunkers.base import ChunkEnv
from workbench.chunkers.recursive import LINES, PRESETS, Units, merge_pieces, split_pieces
from workbench.chunkers.registry import check_overlap, strategy
from workbench.chunkers.units import SIZE, TOKENIZER, UNIT, unit_boundaries
from workbench.core.chunk import Bounds, Chunk, make_chunk
from workbench.core.params import UNIT_PARAM, Param
from workbench.dataset import Document
from workbench.ingest.text import heading_title

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token

_NEWLINE = re.compile(r"\r\n|\r|\n")  # what markdown-it counts as a line break
_ATOMIC = {"fence", "code_block", "table_open"}  # blocks split only when bigger than `size`
PATH_SEP = " > "


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    from markdown_it import MarkdownIt  # loads with the first Markdown parse: a warm sweep's chunks are cached

    return MarkdownIt("commonmark").enable("table")


def _line_starts(text: str) -> list[int]:
    """Char offset of every line start, plus len(text): token.map line numbers -> offsets."""
    return [0, *(m.end() for m in _NEWLINE.finditer(text)), len(text)]


def line_offset(lines: list[int], line: int) -> int:
    return lines[min(line, len(lines) - 1)]


def parse_blocks(text: str) -> tuple[list[Token], list[int]]:
    """markdown-it's block tokens of `text` and its line starts (token.map lines -> offsets)."""
    return _parser().parse(text), _line_starts(text)


def sections(text: str, tokens: list[Token], lines: list[int], max_level: int) -> list[tuple[int, int, str]]:
    """Sections from top-level headings up to `max_level`; see `section_spans`."""
    heads: list[tuple[int, int, str]] = []  # (start, body start, path)
    stack: list[tuple[int, str]] = []  # (level, title) of the enclosing headings
    for i, tok in enumerate(tokens):
        if tok.type != "heading_open" or tok.level != 0 or tok.map is None or int(tok.tag[1:]) > max_level:
            continue
        level = int(tok.tag[1:])
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, heading_title(" ".join(tokens[i + 1].content.split()))))  # setext titles may span lines
        path = PATH_SEP.join(t for _, t in stack)
        heads.append((line_offset(lines, tok.map[0]), line_offset(lines, tok.map[1]), path))
    if not heads:
        return [(0, len(text), "")] if text else []
    ends = [h[0] for h in heads[1:]] + [len(text)]
    out: list[tuple[int, int, str]] = []
    # Backwards, so a heading directly followed by its subheading joins that subsection (no
    # chunk is a bare title; the deeper path is the true one for the whole span).
    for (start, body, path), end in reversed(list(zip(heads, ends, strict=True))):
        if out and not text[body:end].strip() and out[-1][2].startswith(path + PATH_SEP):
            end, path = out.pop()[1:]
        out.append((start, end, path))
    out.reverse()
    if text[: out[0][0]].strip():
        out.insert(0, (0, out[0][0], ""))
    else:
        out[0] = (0, *out[0][1:])
    return out


def section_spans(text: str, max_level: int = 6) -> list[tuple[int, int, str]]:
    """(start, end, heading path) of the Markdown sections of `text`, in order, covering it exactly.

    A section runs from a top-level heading (level <= max_level) to the next one; text before
    the first heading is a section with path "" (or joins the first section when blank), and a
    text without headings is one section. Headings inside code fences, lists or quotes do not
    count.
    """
    tokens, lines = parse_blocks(text)
    return sections(text, tokens, lines, max_level)


def source_code(doc: Document, params: object = None) -> str | None:
    """Why Markdown's structure is not read in `doc`: it is source code, where a `# comment` line is no
    heading (the strategy's fallback, said in the variant's row); None for any other text."""
    return f"source code ({doc.language}): no headings read, split along lines" if doc.language else None


def code_pieces(doc: Document, units: Units, size: int) -> list[Bounds]:
    """What a Markdown strategy cuts source code into (`source_code`): pieces along blank lines and
    lines, up to `size`, for merge_pieces."""
    return split_pieces(doc.text, 0, len(doc.text), units, size, PRESETS["code"])


def _atomic_blocks(tokens: list[Token], lines: list[int]) -> list[tuple[int, int]]:
    """Char ranges of tables and code blocks (outermost only), in order."""
    out: list[tuple[int, int]] = []
    for tok in tokens:
        if tok.type in _ATOMIC and tok.map is not None:
            s, e = line_offset(lines, tok.map[0]), line_offset(lines, tok.map[1])
            if not out or s >= out[-1][1]:
                out.append((s, e))
    return out


def _section_pieces(
    text: str, start: int, end: int, blocks: list[tuple[int, int]], units: Units, size: int
) -> list[Bounds]:
    """Pieces of one section: prose split recursively, each table/code block one piece if it
    fits in `size`, else its lines."""
    pieces: list[Bounds] = []
    pos = start
    for s, e in blocks:
        if pos < s:
            pieces += split_pieces(text, pos, s, units, size, PRESETS["markdown"])
        pieces += split_pieces(text, s, e, units, size, LINES)
        pos = e
    if pos < end:
        pieces += split_pieces(text, pos, end, units, size, PRESETS["markdown"])
    return pieces


@strategy(
    "markdown",
    "One section per Markdown heading (chunks carry the heading path); tables and code blocks "
    "kept whole when they fit; long sections split recursively.",
    {
        "size": SIZE,
        "overlap": Param(0, "units repeated between neighbours of a section, in [0, size)", lo=0, label=True,
                         unit=UNIT_PARAM),
        "unit": UNIT,
        "tokenizer": TOKENIZER,
        "max_heading_level": Param(6, "deepest heading level that starts a section", lo=1, hi=6),
    },
    check=check_overlap(),
    version=3,  # 2: heading paths without MkDocs/Pandoc "{ #anchor }" attributes; 3: source code has no headings
    fallback=source_code,
)
def markdown(
    doc: Document, env: ChunkEnv, *, size: int, overlap: int, unit: str, tokenizer: str, max_heading_level: int
) -> list[Chunk]:
    text = doc.text
    units = Units(unit_boundaries(text, unit, tokenizer, env))
    if source_code(doc):
        return [make_chunk(doc, s, e) for s, e in merge_pieces(text, code_pieces(doc, units, size), units, size,
                                                              overlap)]
    tokens, lines = parse_blocks(text)
    blocks = _atomic_blocks(tokens, lines)
    block_starts = [s for s, _ in blocks]
    chunks = []
    for start, end, path in sections(text, tokens, lines, max_heading_level):
        inner = blocks[bisect_left(block_starts, start) : bisect_left(block_starts, end)]
        pieces = _section_pieces(text, start, end, inner, units, size)
        chunks += [make_chunk(doc, s, e, heading=path) for s, e in merge_pieces(text, pieces, units, size, overlap)]
    return chunks
