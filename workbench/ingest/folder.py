"""A dataset folder: `corpus.jsonl` + `questions.jsonl`, or files of any registered format.

A new format is one module with a reader (file, doc_id) -> Document and one line in READERS. A reader
refuses a file it cannot read with `Unreadable`; the folder load reports every such file in one
warning (`strict`: one error) and loads the rest.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from workbench.dataset import EMPTY_DOCS, Dataset, DatasetError, DatasetWarning, Document, Loaded, drop_empty
from workbench.ingest.code import CODE_SUFFIXES, read_code, read_untyped
from workbench.ingest.html import read_html
from workbench.ingest.jsonl import MISSING, Missing, read_corpus, read_questions
from workbench.ingest.pdf import read_pdf
from workbench.ingest.report import Skip, Unreadable, report
from workbench.ingest.text import read_markdown, read_rst, read_text
from workbench.ingest.word import read_docx

Reader = Callable[[Path, str], Document]  # (file, doc_id: its path relative to the folder) -> the document

READERS: dict[str, Reader] = {  # file suffix, lower case -> reader; "" for a file without one (content decides)
    ".md": read_markdown,
    ".markdown": read_markdown,
    ".txt": read_text,
    ".rst": read_rst,
    ".html": read_html,
    ".htm": read_html,
    ".pdf": read_pdf,
    ".docx": read_docx,
    **dict.fromkeys(CODE_SUFFIXES, read_code),
    "": read_untyped,
}


def utf8(name: str) -> bool:
    """Whether a file name decoded from the file system is UTF-8 (else it holds surrogates no id can carry)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def walk(folder: Path, exclude: set[Path]) -> tuple[list[Path], list[Skip]]:
    """The files below `folder` a reader takes, in path order, and those it left out. Symbolic links are
    followed, but no folder twice (a link loop is reported, not walked forever); hidden files and folders
    (.git, .venv) are reported as one line each, not read."""
    files: list[Path] = []
    skips: list[Skip] = []
    seen = {folder.resolve()}

    def name(p: Path | str) -> str:
        return Path(p).relative_to(folder).as_posix()

    def unlisted(e: OSError) -> None:
        skips.append(Skip(name(e.filename) + "/", "unreadable", f"cannot list: {e.strerror}"))

    for here, dirs, names in os.walk(folder, onerror=unlisted, followlinks=True):
        keep = []
        for d in sorted(dirs):
            p = Path(here, d)
            try:
                real = p.resolve(strict=True)
            except (OSError, RuntimeError):  # RuntimeError: Python 3.11's word for a link loop
                real = None
            if d.startswith("."):
                skips.append(Skip(name(p) + "/", "hidden", "folder not read"))
            elif real is None or real in seen:
                skips.append(Skip(name(p) + "/", "unreadable", "symbolic link loop (a folder already read)"))
            else:
                seen.add(real)
                keep.append(d)
        dirs[:] = keep
        for f in names:
            p = Path(here, f)
            rel, suffix = name(p), p.suffix.lower()
            if p.absolute() in exclude:
                continue
            if not utf8(rel):
                skips.append(Skip(ascii(rel), "unreadable", "file name is not UTF-8"))
            elif f.startswith("."):
                skips.append(Skip(rel, "hidden", ""))
            elif suffix not in READERS:
                skips.append(Skip(rel, "unknown type", ""))
            elif not p.is_file():
                skips.append(Skip(rel, "unreadable", "broken link" if p.is_symlink() else "not a regular file"))
            else:
                files.append(p)
    return sorted(files), skips


def read_folder(folder: Path, exclude: set[Path] = frozenset()) -> tuple[list[Loaded], list[Skip]]:
    """Every file below `folder` that a reader takes (doc_id: its relative path), and every file left out."""
    files, skips = walk(folder, exclude)
    loaded = []
    for f in files:
        rel = f.relative_to(folder).as_posix()
        try:
            loaded.append(Loaded(READERS[f.suffix.lower()](f, rel), f, None))
        except Unreadable as e:
            skips.append(Skip(rel, e.reason, e.problem))
    return loaded, skips


def load_documents(
    path: str | Path,
    questions: str | Path | None = None,
    empty_docs: Literal["skip", "error"] = "skip",
    strict: bool = False,
    require_questions: bool = True,
) -> tuple[list[Document], dict[str, str], Path]:
    """A dataset folder's documents (see `load_dataset`), the ids of those left out -> why, and the path
    of its questions file: what questions are checked against, by `load_dataset` and the label tools
    (`require_questions=False`: a folder that has none yet, for the tools that write them)."""
    if empty_docs not in EMPTY_DOCS:
        raise ValueError(f"load_dataset: parameter 'empty_docs' must be one of {list(EMPTY_DOCS)}, got {empty_docs!r}")
    root = Path(path)
    if not root.is_dir():
        raise DatasetError(root, None, None, "is not a folder (expected corpus.jsonl + questions.jsonl, "
                           "or documents: .md, .txt, .rst, .html, .pdf, .docx, source code)")
    corpus = root / "corpus.jsonl"
    qpath = Path(questions) if questions is not None else root / "questions.jsonl"
    if corpus.exists():
        loaded = read_corpus(corpus)
        doc_list = drop_empty(loaded, "error" if strict else empty_docs, corpus)
        skipped = dict.fromkeys({x.doc.doc_id for x in loaded} - {d.doc_id for d in doc_list}, "empty")
    else:
        loaded, skips = read_folder(root, {qpath.absolute(), (root / "questions.jsonl").absolute()})
        if empty_docs == "error" and any(not x.doc.text.strip() for x in loaded):
            drop_empty(loaded, "error", root)  # raises, naming the first empty document
        doc_list = [x.doc for x in loaded if x.doc.text.strip()]
        skips += [Skip(x.doc.doc_id, "empty", "") for x in loaded if not x.doc.text.strip()]
        report(root, doc_list, skips, strict)
        skipped = {s.name: s.why() for s in skips}
    if require_questions and not qpath.exists():
        raise DatasetError(qpath, None, None, "questions file not found")
    return doc_list, skipped, qpath


def load_dataset(
    path: str | Path,
    questions: str | Path | None = None,
    name: str | None = None,
    empty_docs: Literal["skip", "error"] = "skip",
    strict: bool = False,
    missing: Missing = "error",
) -> Dataset:
    """Load a dataset folder.

    Two layouts: `corpus.jsonl` + `questions.jsonl` (the shared format), or a folder of files of any
    format in READERS (doc_id = relative path) with a `questions.jsonl` beside or given explicitly.
    Files left out (unknown type, binary, unreadable, empty) are named in one DatasetWarning, with
    the documents read counted by kind; `strict=True` makes that a DatasetError. Empty or
    whitespace-only documents have nothing to chunk: `empty_docs="skip"` leaves them out (reported),
    `"error"` raises a DatasetError naming the first. Answers given as quotes are located in the text
    (`read_questions`), one DatasetWarning counting those that matched only normalised or fuzzily. A label
    whose evidence is not located (a quote not found or ambiguous, offsets that no longer hold their quote)
    is an error; `missing="skip"` leaves it out (and a question left with no answer), naming them in one
    DatasetWarning, which the dataset's `notes` keep for the report.
    """
    if missing not in MISSING:
        raise ValueError(f"load_dataset: parameter 'missing' must be one of {list(MISSING)}, got {missing!r}")
    said: list[warnings.WarningMessage] = []
    try:
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always", DatasetWarning)
            doc_list, skipped, qpath = load_documents(path, questions, empty_docs, strict)
            docs = {d.doc_id: d for d in doc_list}
            questions_read = tuple(read_questions(qpath, docs, skipped, missing))
    finally:  # said again to the caller, as they were (an error too), and kept on the dataset for its report
        for w in said:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    notes = tuple(str(w.message) for w in said if issubclass(w.category, DatasetWarning))
    return Dataset(name or Path(path).name, tuple(doc_list), questions_read, notes)
