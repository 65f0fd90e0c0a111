"""Word documents (.docx, python-docx, MIT): paragraphs in order, headings as Markdown headings (their
level kept), list items as list lines and tables as Markdown rows, so the structure-aware chunkers apply.

A .docx is a zip: its sizes are checked before python-docx unpacks it, so a zip bomb is refused by name.
"""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING

from workbench.dataset import Document
from workbench.ingest.report import Unreadable
from workbench.ingest.text import read_bytes

if TYPE_CHECKING:
    from docx.table import Table
    from docx.text.paragraph import Paragraph

MAX_UNZIPPED_BYTES = 200_000_000  # what a .docx may unpack to, at most
MAX_RATIO = 100  # and at most this many times its packed size (text compresses ~10x, a bomb ~1000x)


def check_zip(file: Path, data: bytes) -> None:
    """Refuse a file that is no Word package, or would unpack to far more than a document could hold."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            infos = z.infolist()
    except zipfile.BadZipFile as e:
        raise Unreadable(file, "unreadable", "not a Word document (not a zip package)") from e
    if "word/document.xml" not in {i.filename for i in infos}:
        raise Unreadable(file, "unreadable", "not a Word document (no word/document.xml in the package)")
    unpacked = sum(i.file_size for i in infos)
    if unpacked > MAX_UNZIPPED_BYTES or unpacked > MAX_RATIO * max(len(data), 1):
        raise Unreadable(file, "unreadable", f"refused as a zip bomb: {unpacked:,} bytes would unpack from "
                         f"{len(data):,} (at most {MAX_UNZIPPED_BYTES:,}, {MAX_RATIO}x)")


def paragraph_text(p: Paragraph) -> str:
    """One paragraph: "## text" for a Heading 2 (and "# " for Title), "- " for a list item."""
    text = " ".join(p.text.split())
    style = p.style.name if p.style is not None else ""
    if m := re.fullmatch(r"Heading ([1-6])", style):
        return "#" * int(m.group(1)) + " " + text
    if style == "Title":
        return "# " + text
    if style.startswith("List Number"):
        return "1. " + text
    if style.startswith("List"):
        return "- " + text
    return text


def table_text(t: Table) -> str:
    """A table as Markdown rows, the first row its header."""
    rows = ["| " + " | ".join(" ".join(c.text.split()).replace("|", "\\|") for c in row.cells) + " |"
            for row in t.rows]
    if rows:
        rows.insert(1, "|" + " --- |" * len(t.rows[0].cells))
    return "\n".join(rows)


def read_docx(file: Path, doc_id: str) -> Document:
    """Paragraphs and tables in document order, one block each; titled by its properties, else its first heading."""
    import docx  # python-docx loads with the first .docx, not with every dataset
    from docx.text.paragraph import Paragraph

    data = read_bytes(file)
    check_zip(file, data)
    try:
        body = docx.Document(io.BytesIO(data))
        blocks = [paragraph_text(b) if isinstance(b, Paragraph) else table_text(b) for b in body.iter_inner_content()]
        title = body.core_properties.title
    except Exception as e:  # python-docx raises many kinds on a damaged package: each is this file's problem
        raise Unreadable(file, "unreadable", f"not a readable Word document ({type(e).__name__}: {e})") from e
    blocks = [b for b in blocks if b.strip()]
    heading = next((b.lstrip("#").strip() for b in blocks if b.startswith("#")), "")
    return Document(doc_id, title or heading or file.stem, "\n\n".join(blocks) + "\n" if blocks else "",
                    kind="docx", path=doc_id)
