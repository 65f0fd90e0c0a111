"""Plain-text formats (Markdown, text): the file is the document, its first heading the title."""

from __future__ import annotations

from pathlib import Path

from workbench.dataset import DatasetError, Document


def read_text(file: Path, doc_id: str, kind: str = "text") -> Document:
    """`file` as one document named `doc_id` (its path in the dataset); the title is its first
    line when that is a Markdown heading (any number of '#'), else the file name without suffix."""
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise DatasetError(file, None, None, f"not UTF-8 text ({e.reason} at byte {e.start})") from e
    first = (text.lstrip().splitlines() or [""])[0]
    title = first.lstrip("#").strip() if first.startswith("#") else file.stem
    return Document(doc_id, title, text, kind=kind, path=doc_id)


def read_markdown(file: Path, doc_id: str) -> Document:
    return read_text(file, doc_id, "markdown")
