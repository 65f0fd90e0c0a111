"""PDF: the text layer page by page (pypdf, BSD), with the page map kept (Document.pages), the running
headers and footers dropped and words hyphenated across lines rejoined: what a chunk should read.

A PDF without a text layer (a scan) is refused by name: read as empty, it would be skipped as if
blank, or worse, answer no question without saying why.
"""

from __future__ import annotations

import io
import re
from collections import Counter
from pathlib import Path

from workbench.dataset import Document
from workbench.ingest.report import Unreadable
from workbench.ingest.text import read_bytes

PAGE_SEP = "\n\n"  # between pages: a paragraph break, so no chunker glues two pages' lines into one sentence
EDGE_LINES = 2  # header and footer lines considered at each edge of a page
_HYPHENATED = re.compile(r"(\w)-\n(?=[a-z])")  # "exam-\nple": a word broken at a line end


def _key(line: str) -> str:
    """A line with its numbers masked, so "Page 3 of 9" repeats as "Page 4 of 9" does."""
    return re.sub(r"\d+", "#", " ".join(line.split()))


def drop_running_lines(pages: list[list[str]]) -> list[list[str]]:
    """The pages' lines without the headers and footers: a first (or last) line, numbers masked, that
    recurs at that edge on more than half of three or more pages."""
    if len(pages) < 3:
        return pages
    for _ in range(EDGE_LINES):
        for edge in (0, -1):
            counts = Counter(_key(lines[edge]) for lines in pages if lines)
            running = {k for k, n in counts.items() if n > len(pages) / 2 and k}
            cut = slice(1, None) if edge == 0 else slice(None, -1)
            pages = [lines[cut] if lines and _key(lines[edge]) in running else lines for lines in pages]
    return pages


def read_pdf(file: Path, doc_id: str) -> Document:
    """The pages' text joined by PAGE_SEP, `pages` their start offsets; titled by its metadata, else the file name."""
    from pypdf import PdfReader  # pypdf loads with the first PDF, not with every dataset
    data = read_bytes(file)
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise Unreadable(file, "unreadable", "encrypted PDF (password-protected): save a copy without password")
        raw = [page.extract_text() or "" for page in reader.pages]
        title = (reader.metadata.title if reader.metadata else None) or file.stem
    except Unreadable:
        raise
    except Exception as e:  # pypdf raises many kinds on a malformed file: each is this file's problem, by name
        raise Unreadable(file, "unreadable", f"not a readable PDF ({type(e).__name__}: {e})") from e
    if not any(t.strip() for t in raw):
        raise Unreadable(file, "unreadable", f"no text layer in {len(raw)} page(s) (a scan? OCR it first)")
    lines = drop_running_lines([[line.rstrip() for line in t.strip().splitlines()] for t in raw])
    texts = [_HYPHENATED.sub(r"\1", "\n".join(page).strip()) for page in lines]
    starts, at = [], 0
    for t in texts:
        starts.append(at)
        at += len(t) + len(PAGE_SEP)
    return Document(doc_id, str(title), PAGE_SEP.join(texts), kind="pdf", path=doc_id, pages=tuple(starts))
