"""Reading documents: provenance (kind, path, pages) rides along, but never names a cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import REPO

from workbench.ingest import load_dataset

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
