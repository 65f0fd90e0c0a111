"""PDF pages as chunks: a page, or a window of pages, so text-based cuts can be compared with the
unit a reader of the PDF sees.

Pages come from `Document.pages` (the start offset of each page, filled by the PDF reader). A
document without pages (any other format) is one page: the whole text is one chunk, which keeps
every strategy usable on every corpus while saying plainly that the document has no pages. Pages
holding only whitespace are skipped; each chunk is trimmed of edge whitespace and headed
"page 3" or "pages 3-4" (as viewers count, from 1).

    >>> doc = Document("r.pdf", "r", "One.\\fTwo.\\fThree.", pages=(0, 5, 10))
    >>> [(c.text, c.heading) for c in page(doc, ChunkEnv(), window=2, overlap=1)]
    [('One.\\x0cTwo.', 'pages 1-2'), ('Two.\\x0cThree.', 'pages 2-3')]
"""

from __future__ import annotations

from workbench.chunkers.base import ChunkEnv
from workbench.chunkers.registry import check_overlap, strategy
from workbench.core.chunk import Chunk, make_chunk, strip_span, windows
from workbench.core.params import Param
from workbench.dataset import Document


def page_spans(doc: Document) -> list[tuple[int, int]]:
    """[start, end) of each page of `doc`, in order; the whole text when it has no pages."""
    starts = doc.pages or (0,)
    return [(s, e) for s, e in zip(starts, (*starts[1:], len(doc.text)), strict=True)]


def page_range(first: int, last: int) -> str:
    """"page 3" or "pages 3-4": how a chunk names the pages it spans (from 1, as viewers count)."""
    return f"page {first}" if first == last else f"pages {first}-{last}"


@strategy(
    "page",
    "PDF pages as units: `window` pages per chunk, `overlap` of them shared by neighbours; a document "
    "without pages is one chunk.",
    {
        "window": Param(1, "pages per chunk", lo=1, label=True, slider_hi=10, unit="pages"),
        "overlap": Param(0, "pages repeated between neighbouring windows, in [0, window)", lo=0, unit="pages"),
    },
    check=check_overlap("window", "overlap"),
)
def page(doc: Document, env: ChunkEnv, *, window: int, overlap: int) -> list[Chunk]:
    kept = [(n, s, e) for n, (s, e) in enumerate(page_spans(doc), 1) if doc.text[s:e].strip()]
    out = []
    for i, j in windows(len(kept), window, overlap):
        if i >= j:
            continue
        first, last = kept[i][0], kept[j - 1][0]
        span = strip_span(doc.text, kept[i][1], kept[j - 1][2])
        if span is not None:
            out.append(make_chunk(doc, *span, heading=page_range(first, last)))
    return out
