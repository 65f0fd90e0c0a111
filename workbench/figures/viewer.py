"""See where a variant cuts: a passage of a document with its chunk boundaries and the evidence.

For teaching and for debugging a chunker: neighbouring chunks alternate between two colours,
text held by two chunks at once (overlap) gets a third, the evidence of a question is underlined,
every piece carries a tooltip naming the chunks that hold it and where each is (`where`: path, pages,
heading path or enclosing function), and the passage is named the same way. Plain HTML and inline
styles, so it renders in a notebook and in any saved page alike.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from itertools import pairwise
from typing import Any

from workbench.chunkers import where
from workbench.core.chunk import Chunk, make_chunk
from workbench.dataset import Dataset, Span

COLORS = ("#dbeafe", "#fde68a")  # alternate chunks
OVERLAP = "#c4b5fd"  # held by two or more chunks
EVIDENCE = "border-bottom: 3px solid #dc2626;"
CUT = '<span class="ellipsis" title="the document goes on">\u2026</span>'  # where a passage is cut from its text


def chunk_html(
    dataset: Dataset,
    chunks: Sequence[Chunk],
    doc_id: str,
    start: int = 0,
    end: int | None = None,
    evidence: Sequence[Span] = (),
    ellipsis: bool = False,
) -> str:
    """HTML of `doc_id`[start:end] with the chunks (of that document) that touch it; `ellipsis`
    marks with "…" an end where the passage is cut from its document (outside the text spans)."""
    if doc_id not in dataset.docs:
        raise KeyError(f"doc_id {doc_id!r} is not in dataset {dataset.name!r}")
    doc = dataset.docs[doc_id]
    text = doc.text
    end = len(text) if end is None else min(end, len(text))
    if not 0 <= start < end:
        raise ValueError(f"passage [{start}, {end}) is empty or out of range for {doc_id!r} (len {len(text)})")
    mine = [(i, c) for i, c in enumerate(chunks) if c.doc_id == doc_id and c.start < end and c.end > start]
    marks = [e for e in evidence if e.doc_id == doc_id]
    rank = {i: n for n, (i, _) in enumerate(mine)}  # colour by order within the passage
    out = []
    for a, b, holders in pieces(mine, start, end, [x for e in marks for x in (e.start, e.end)]):
        style = chunk_style(holders, rank)
        if any(e.start <= a and b <= e.end for e in marks):
            style += EVIDENCE
        tip = "\n".join(f"chunk {i} [{chunks[i].start}, {chunks[i].end}): {where(doc, chunks[i])}"
                        for i in holders) or "in no chunk"
        out.append(f'<span style="{style}" title="{html.escape(tip)}">{html.escape(text[a:b])}</span>')
    legend = (f'<span style="background:{COLORS[0]}">chunk</span> <span style="background:{COLORS[1]}">next chunk'
              f'</span> <span style="background:{OVERLAP}">overlap</span> <span style="{EVIDENCE}">evidence</span>')
    return (f'<div style="font-size:0.85em;color:#555">{html.escape(where(doc, make_chunk(doc, start, end)))} '
            f'[{start}, {end}): {len(mine)} chunks. '
            f'{legend}</div><div style="white-space:pre-wrap;font-family:monospace;line-height:1.6">'
            + CUT * (ellipsis and start > 0) + "".join(out) + CUT * (ellipsis and end < len(text)) + "</div>")


def pieces(
    mine: Sequence[tuple[int, Chunk]], start: int, end: int, cuts: Iterable[int] = ()
) -> list[tuple[int, int, list[int]]]:
    """[start, end) cut wherever one of `mine` ((index, chunk) of one document) or a `cuts` offset
    begins or ends: (a, b, the indices of the chunks holding all of [a, b)), in text order."""
    at = sorted({start, end, *(x for _, c in mine for x in (c.start, c.end) if start < x < end),
                 *(x for x in cuts if start < x < end)})
    return [(a, b, [i for i, c in mine if c.start <= a and b <= c.end]) for a, b in pairwise(at)]


def chunk_style(holders: Sequence[int], rank: Mapping[int, int]) -> str:
    """The background of a piece held by `holders`: neighbouring chunks (`rank`: chunk index -> its
    order in the passage) alternate, overlaps stand out."""
    if len(holders) > 1:
        return f"background:{OVERLAP};"
    return f"background:{COLORS[rank[holders[0]] % 2]};" if holders else ""


def show_chunks(*args: Any, **kwargs: Any) -> Any:
    """`chunk_html` (same arguments) as an IPython HTML object, for a notebook cell; IPython is
    imported here so that the rest of the package works without it."""
    from IPython.display import HTML

    return HTML(chunk_html(*args, **kwargs))


def span_chunks(dataset: Dataset, spans: Sequence[Span]) -> list[Chunk]:
    """Retrieved spans (hits, parents included) as chunks to draw: `where` finds their headings from
    their position, as the spans carry none."""
    return [make_chunk(dataset.docs[s.doc_id], s.start, s.end) for s in spans]


def around(span: Span, chars: int = 600) -> tuple[str, int, int]:
    """(doc_id, start, end) of a passage with `chars` of context on each side of `span`."""
    return span.doc_id, max(0, span.start - chars), span.end + chars
