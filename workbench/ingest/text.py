"""Plain-text formats (Markdown, text, reStructuredText): the file is the document, its first heading the title."""

from __future__ import annotations

import re
from pathlib import Path

from workbench.dataset import Document
from workbench.ingest.report import Unreadable

MAX_FILE_BYTES = 50_000_000  # a bigger file is refused by name: a log or a dump, not a document to chunk
SNIFF_BYTES = 8192  # a NUL byte in the first this many bytes makes a file binary, as git and grep decide


def read_bytes(file: Path) -> bytes:
    """The file's bytes, refused by name when it cannot be opened or is too big to be a document."""
    try:
        size = file.stat().st_size
        if size > MAX_FILE_BYTES:
            raise Unreadable(file, "unreadable", f"too large ({size:,} bytes; at most {MAX_FILE_BYTES:,})")
        return file.read_bytes()
    except OSError as e:
        raise Unreadable(file, "unreadable", f"cannot read: {e.strerror}") from e


def read_utf8(file: Path) -> str:
    """The file as UTF-8 text (a BOM dropped); binary content and invalid UTF-8 are refused by name,
    never decoded with replacement characters that no quote would match."""
    data = read_bytes(file)
    if b"\0" in data[:SNIFF_BYTES]:
        raise Unreadable(file, "binary", "")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise Unreadable(file, "unreadable", f"not UTF-8 text ({e.reason} at byte {e.start})") from e


# A trailing MkDocs/Pandoc attribute block: "{ #install }", "{: #id .cls }", "{#id .class key=val}", "{-}"
_ATTRIBUTES = re.compile(r"\s*\{:?(?=\s*(?:[#.][^\s{}]|-\s*\}|[\w-]+=))[^{}]*\}\s*$")


def heading_title(content: str) -> str:
    """What a Markdown heading says, from its text after the '#' marks: its attribute block (an anchor
    for the site generator, not words of the title) dropped, spaces trimmed; kept when it is all there is."""
    return _ATTRIBUTES.sub("", content).strip() or content.strip()


def read_text(file: Path, doc_id: str, kind: str = "text") -> Document:
    """`file` as one document named `doc_id` (its path in the dataset); the title is its first
    line when that is a Markdown heading (any number of '#'; see `heading_title`), else the file name without
    suffix."""
    return text_document(file, doc_id, read_utf8(file), kind)


def text_document(file: Path, doc_id: str, text: str, kind: str) -> Document:
    """`text` as a document of `kind`, titled as `read_text` says."""
    first = (text.lstrip().splitlines() or [""])[0]
    title = heading_title(first.lstrip("#")) if first.startswith("#") else file.stem
    return Document(doc_id, title, text, kind=kind, path=doc_id)


def read_markdown(file: Path, doc_id: str) -> Document:
    return read_text(file, doc_id, "markdown")


_ADORNMENT = re.compile(r"([!-/:-@\[-`{-~])\1{2,}[ \t]*\r?\n?")  # a line of one punctuation character


def rst_headings(text: str) -> str:
    """`text` with each reStructuredText section title (underlined, optionally overlined) written as a
    Markdown heading, so the structure-aware chunkers see its sections. Levels follow the rst rule: each
    adornment style gets the next level the first time it appears. Every other line is kept verbatim."""
    lines = text.splitlines(keepends=True)
    styles: list[tuple[str, bool]] = []
    out: list[str] = []
    i = 0
    while i < len(lines):
        over = _ADORNMENT.fullmatch(lines[i])
        j = i + 1 if over else i  # the title line
        under = _ADORNMENT.fullmatch(lines[j + 1]) if j + 1 < len(lines) else None
        title = lines[j].strip() if j < len(lines) else ""
        fits = under and title and len(under.group(0).rstrip()) >= len(title) and not _ADORNMENT.fullmatch(lines[j])
        if fits and (not over or over.group(1) == under.group(1)) and (over or not lines[j][0].isspace()):
            style = (under.group(1), bool(over))
            if style not in styles:
                styles.append(style)
            out.append("#" * min(styles.index(style) + 1, 6) + " " + title + "\n")
            i = j + 2
            continue
        out.append(lines[i])
        i += 1
    return "".join(out)


def read_rst(file: Path, doc_id: str) -> Document:
    """reStructuredText as text, its section titles as Markdown headings (see `rst_headings`); the title
    is the first section title, else the file name without suffix."""
    text = rst_headings(read_utf8(file))
    first = next((line for line in text.splitlines() if line.startswith("#")), "")
    return Document(doc_id, first.lstrip("#").strip() or file.stem, text, kind="rst", path=doc_id)
