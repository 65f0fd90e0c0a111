"""Reading documents: provenance (kind, path, pages) rides along, but never names a cache."""

from __future__ import annotations

import json
from dataclasses import FrozenInstanceError, replace
from pathlib import Path

import pytest
from conftest import REPO

from workbench.core.stages import STAGES, stage
from workbench.dataset import Dataset, DatasetError, DatasetWarning, Document
from workbench.ingest import READERS, load_dataset

SHIPPED = REPO / "tests" / "data"


def semantic_folder(tmp_path: Path) -> Path:
    """tests/data/semantic (three .txt, one .md) as a text-folder dataset, with one question."""
    q = {"qid": "q", "question": "Which client?", "answers": [{"doc_id": "httpx_readme.md", "start": 0, "end": 5}]}
    (tmp_path / "questions.jsonl").write_text(json.dumps(q) + "\n", encoding="utf-8")
    return tmp_path / "questions.jsonl"


@pytest.mark.parametrize(
    ("folder", "corpus", "full"),
    [
        (REPO / "data" / "chroma_small", "4abd8e38b5cb3b15", "2a5f53584d9a9f94"),
        (SHIPPED / "squad_v11_dev", "7fc480df34d51f9a", "48747f0a5dbf9efe"),
        (SHIPPED / "semantic", "f202e6c571212bac", "d3c21bd640f8199a"),
    ],
    ids=lambda v: v.name if isinstance(v, Path) else None,
)
def test_fingerprints_are_those_every_cache_was_named_by(folder: Path, corpus: str, full: str, tmp_path) -> None:
    """The values computed before documents carried provenance (kind, path, pages): they name
    every user's chunk, index and score cache entries, so they must never change."""
    questions = semantic_folder(tmp_path) if folder.name == "semantic" else None
    ds = load_dataset(folder, questions=questions)
    assert (ds.corpus_fingerprint, ds.fingerprint) == (corpus, full)


def test_readers_record_kind_and_path_which_change_no_fingerprint(tmp_path: Path) -> None:
    ds = load_dataset(SHIPPED / "semantic", questions=semantic_folder(tmp_path))
    assert {d.doc_id: (d.kind, d.path) for d in ds.documents} == {
        "httpx_readme.md": ("markdown", "httpx_readme.md"),
        "pubmed_pmc212319.txt": ("text", "pubmed_pmc212319.txt"),
        "sotu_2024.txt": ("text", "sotu_2024.txt"),
        "wikitext_valkyria.txt": ("text", "wikitext_valkyria.txt"),
    }
    squad = load_dataset(SHIPPED / "squad_v11_dev")
    assert {(d.kind, d.path) for d in squad.documents} == {("jsonl", "corpus.jsonl")}
    bare = [Document(d.doc_id, d.title, d.text, d.group) for d in ds.documents]
    made = Dataset(ds.name, (replace(bare[0], pages=(0, 10)), *bare[1:]), ds.questions)
    assert made.documents != ds.documents
    assert (made.corpus_fingerprint, made.fingerprint) == (ds.corpus_fingerprint, ds.fingerprint)


def test_a_new_format_is_one_reader_in_the_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def read_csv(file: Path, doc_id: str) -> Document:
        return Document(doc_id, file.stem, file.read_text(encoding="utf-8").replace(",", " "), kind="csv", path=doc_id)

    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "rows.CSV").write_text("a,b\n1,2\n", encoding="utf-8")
    (tmp_path / "notes.md").write_text("# Notes\n\nText.\n", encoding="utf-8")
    q = {"qid": "q", "question": "?", "answers": [{"doc_id": "t/rows.CSV", "start": 0, "end": 3, "quote": "a b"}]}
    (tmp_path / "questions.jsonl").write_text(json.dumps(q) + "\n", encoding="utf-8")
    with pytest.warns(DatasetWarning, match=r"\.csv: 1 unknown type \('t/rows.CSV'\)"), \
            pytest.raises(DatasetError, match=r"'t/rows.CSV' was skipped \(unknown type\)"):
        load_dataset(tmp_path)
    monkeypatch.setitem(READERS, ".csv", read_csv)
    ds = load_dataset(tmp_path)
    assert [(d.doc_id, d.kind) for d in ds.documents] == [("notes.md", "markdown"), ("t/rows.CSV", "csv")]
    assert ds.docs["t/rows.CSV"].text == "a b\n1 2\n"


def test_pages_map_offsets_and_keep_the_document_frozen_and_hashable() -> None:
    text = "Page one. " + "Page two is longer. " + "Three."
    doc = Document("p.pdf", "P", text, kind="pdf", path="p.pdf", pages=(0, 10, 30, 30))  # page 3 is empty
    assert [doc.page_of(i) for i in (0, 9, 10, 29, 30, len(text) - 1)] == [1, 1, 2, 2, 4, 4]
    assert Document("t", "T", text).page_of(5) is None
    assert doc in {doc} and hash(doc) == hash(replace(doc))
    with pytest.raises(FrozenInstanceError):
        doc.pages = ()  # type: ignore[misc]
    with pytest.raises(ValueError, match="offset 36 out of range"):
        doc.page_of(len(text))
    for bad in [(5, 10), (0, 20, 10), (0, 99)]:
        with pytest.raises(ValueError, match="'p.pdf': field 'pages' must ascend from 0"):
            Document("p.pdf", "P", text, pages=bad)


def test_a_reader_and_a_stage_registered_by_a_test_are_undone_after_it() -> None:
    """Left for the next test to check: conftest's fixture restores every registry table."""
    READERS[".test-leak"] = READERS[".txt"]
    del READERS[".md"]
    stage("test_leak_stage", "a stage left behind")(lambda queries, rankings, index, depth: [])


def test_the_previous_test_left_no_reader_and_no_stage() -> None:
    assert ".test-leak" not in READERS and ".md" in READERS and "test_leak_stage" not in STAGES
