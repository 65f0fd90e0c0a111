"""A dataset folder: `corpus.jsonl` + `questions.jsonl`, or files of any registered format.

A new format is one module with a reader (file, doc_id) -> Document and one line in READERS.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Literal

from workbench.dataset import EMPTY_DOCS, Dataset, DatasetError, Document, Loaded, drop_empty
from workbench.ingest.jsonl import read_corpus, read_questions
from workbench.ingest.text import read_markdown, read_text

Reader = Callable[[Path, str], Document]  # (file, doc_id: its path relative to the folder) -> the document

READERS: dict[str, Reader] = {  # file suffix, lower case -> reader
    ".md": read_markdown,
    ".markdown": read_markdown,
    ".txt": read_text,
}


def read_folder(folder: Path) -> list[Loaded]:
    """Every file below `folder` that a reader takes, in path order; doc_id is its relative path."""
    files = sorted(p for p in folder.rglob("*") if p.suffix.lower() in READERS and p.is_file())
    docs = [Loaded(READERS[f.suffix.lower()](f, f.relative_to(folder).as_posix()), f, None) for f in files]
    if not docs:
        raise DatasetError(folder, None, None, f"no {'/'.join(READERS)} files found")
    return docs


def load_dataset(
    path: str | Path,
    questions: str | Path | None = None,
    name: str | None = None,
    empty_docs: Literal["skip", "error"] = "skip",
) -> Dataset:
    """Load a dataset folder.

    Two layouts: `corpus.jsonl` + `questions.jsonl` (the shared format), or a folder of
    .md/.txt files (doc_id = relative path) with a `questions.jsonl` beside or given explicitly.
    Empty or whitespace-only documents have nothing to chunk: `empty_docs="skip"` leaves them
    out with a DatasetWarning naming them, `"error"` raises a DatasetError naming the first.
    """
    if empty_docs not in EMPTY_DOCS:
        raise ValueError(f"load_dataset: parameter 'empty_docs' must be one of {list(EMPTY_DOCS)}, got {empty_docs!r}")
    root = Path(path)
    if not root.is_dir():
        raise DatasetError(root, None, None,
                           "is not a folder (expected corpus.jsonl + questions.jsonl, or .md/.txt files)")
    corpus = root / "corpus.jsonl"
    loaded = read_corpus(corpus) if corpus.exists() else read_folder(root)
    doc_list = drop_empty(loaded, empty_docs, corpus if corpus.exists() else root)
    qpath = Path(questions) if questions is not None else root / "questions.jsonl"
    if not qpath.exists():
        raise DatasetError(qpath, None, None, "questions file not found")
    docs = {d.doc_id: d for d in doc_list}
    skipped = {x.doc.doc_id for x in loaded} - set(docs)
    return Dataset(name or root.name, tuple(doc_list), tuple(read_questions(qpath, docs, skipped)))
