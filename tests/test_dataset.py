"""Loading and validating datasets: every rule has a bad-input case naming file, line and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import SHARED

from workbench.dataset import DatasetError, Span, load_dataset

DOCS = [
    {"doc_id": "a", "title": "Alpha", "text": "Café au lait. 中文句子。"},
    {"doc_id": "b", "title": "Beta", "text": "Second document text."},
]
QUESTIONS = [
    {"qid": "q1", "question": "What drink?", "answers": [{"doc_id": "a", "start": 0, "end": 4}]},
    {"qid": "q2", "question": "Which text?", "answers": [{"doc_id": "b", "start": 0, "end": 6},
                                                          {"doc_id": "b", "start": 7, "end": 15}], "extra": 1},
]


def write(folder: Path, docs: list | str = DOCS, questions: list | str = QUESTIONS) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, rows in (("corpus.jsonl", docs), ("questions.jsonl", questions)):
        body = rows if isinstance(rows, str) else "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
        (folder / name).write_text(body, encoding="utf-8")
    return folder


def test_loads_jsonl_format(tmp_path: Path) -> None:
    ds = load_dataset(write(tmp_path / "ds"))
    assert ds.name == "ds"
    assert [d.doc_id for d in ds.documents] == ["a", "b"]
    assert ds.questions[1].answers == (Span("b", 0, 6), Span("b", 7, 15))
    assert ds.docs["a"].text[0:4] == "Café"


def test_fingerprints_follow_content(tmp_path: Path) -> None:
    a = load_dataset(write(tmp_path / "a"))
    b = load_dataset(write(tmp_path / "b"))
    assert a.corpus_fingerprint == b.corpus_fingerprint and a.fingerprint == b.fingerprint
    docs = [dict(DOCS[0], text=DOCS[0]["text"] + "!"), DOCS[1]]
    c = load_dataset(write(tmp_path / "c", docs=docs))
    assert c.corpus_fingerprint != a.corpus_fingerprint
    questions = [QUESTIONS[0], dict(QUESTIONS[1], question="Changed?")]
    d = load_dataset(write(tmp_path / "d", questions=questions))
    assert d.corpus_fingerprint == a.corpus_fingerprint  # same corpus: indexes are reused
    assert d.fingerprint != a.fingerprint


def test_text_folder_layout(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "guide.md").write_text("# Billing\n\nRefunds take 5 days.\n", encoding="utf-8")
    (tmp_path / "sub" / "notes.txt").write_text("Plain notes.", encoding="utf-8")
    q = {"qid": "q", "question": "How long?", "answers": [{"doc_id": "guide.md", "start": 11, "end": 31,
                                                            "text": "Refunds take 5 days."}]}
    (tmp_path / "questions.jsonl").write_text(json.dumps(q) + "\n", encoding="utf-8")
    ds = load_dataset(tmp_path)
    assert {d.doc_id: d.title for d in ds.documents} == {"guide.md": "Billing", "sub/notes.txt": "notes"}


@pytest.mark.parametrize(
    ("docs", "questions", "file", "line", "field", "problem"),
    [
        ('{"doc_id": "a", "text": "x"}\n{oops\n', QUESTIONS, "corpus.jsonl", 2, None, "invalid JSON"),
        ('[1, 2]\n', QUESTIONS, "corpus.jsonl", 1, None, "expected a JSON object"),
        ([{"title": "t", "text": "x"}], QUESTIONS, "corpus.jsonl", 1, "doc_id", "is missing"),
        ([{"doc_id": 3, "text": "x"}], QUESTIONS, "corpus.jsonl", 1, "doc_id", "must be str"),
        ([DOCS[0], DOCS[1], DOCS[0]], QUESTIONS, "corpus.jsonl", 3, "doc_id", "duplicate id 'a' (first on line 1)"),
        ([DOCS[0], {"doc_id": "b", "text": "  \n"}], QUESTIONS, "corpus.jsonl", 2, "text", "empty text"),
        (DOCS, [QUESTIONS[0], QUESTIONS[0]], "questions.jsonl", 2, "qid", "duplicate id 'q1'"),
        (DOCS, [{"qid": "q", "question": " ", "answers": QUESTIONS[0]["answers"]}], "questions.jsonl", 1,
         "question", "is empty"),
        (DOCS, [{"qid": "q", "question": "?", "answers": []}], "questions.jsonl", 1, "answers", "no answer spans"),
        (DOCS, [{"qid": "q", "question": "?", "answers": "a:0:4"}], "questions.jsonl", 1, "answers", "must be list"),
        (DOCS, [{"qid": "q", "question": "?", "answers": [{"doc_id": "zz", "start": 0, "end": 1}]}],
         "questions.jsonl", 1, "answers[0].doc_id", "unknown document 'zz'"),
        (DOCS, [{"qid": "q", "question": "?", "answers": [{"doc_id": "b", "start": 5, "end": 99}]}],
         "questions.jsonl", 1, "answers[0]", "out of range"),
        (DOCS, [{"qid": "q", "question": "?", "answers": [{"doc_id": "b", "start": 5, "end": 5}]}],
         "questions.jsonl", 1, "answers[0]", "out of range"),
        (DOCS, [{"qid": "q", "question": "?", "answers": [{"doc_id": "b", "start": "0", "end": 5}]}],
         "questions.jsonl", 1, "start", "must be int"),
        (DOCS, [{"qid": "q", "question": "?", "answers": [{"doc_id": "b", "start": 0, "end": 6, "text": "Sec"}]}],
         "questions.jsonl", 1, "answers[0].text", "does not match"),
    ],
)
def test_bad_input_names_file_line_field(tmp_path, docs, questions, file, line, field, problem) -> None:
    folder = write(tmp_path / "bad", docs, questions)
    with pytest.raises(DatasetError) as err:
        load_dataset(folder)
    e = err.value
    assert Path(e.path).name == file
    assert e.line == line and e.field == field
    assert problem in str(e)
    assert f"line {line}" in str(e) and file in str(e)


def test_not_utf8_and_missing_files(tmp_path: Path) -> None:
    folder = write(tmp_path / "enc")
    (folder / "corpus.jsonl").write_bytes(b'{"doc_id": "a", "text": "caf\xe9"}\n')
    with pytest.raises(DatasetError, match="not UTF-8"):
        load_dataset(folder)
    (folder / "questions.jsonl").unlink()
    (folder / "corpus.jsonl").write_text(json.dumps(DOCS[0]) + "\n")
    with pytest.raises(DatasetError, match="questions file not found"):
        load_dataset(folder)
    with pytest.raises(DatasetError, match="is not a folder"):
        load_dataset(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DatasetError, match="no .md/.markdown/.txt files"):
        load_dataset(tmp_path / "empty")


def test_select_is_reproducible(tmp_path: Path) -> None:
    ds = load_dataset(write(tmp_path / "ds"))
    assert [q.qid for q in ds.select(doc_ids=["b"]).questions] == ["q2"]
    assert ds.select(max_questions=1, seed=3).questions == ds.select(max_questions=1, seed=3).questions
    with pytest.raises(KeyError, match="zz"):
        ds.select(doc_ids=["zz"])


@pytest.mark.parametrize("name", ["chroma_general", "qmsum_val", "squad_v11_dev"])
def test_shared_datasets_load(name: str) -> None:
    if not (SHARED / name).exists():
        pytest.skip("../shared not beside the repo")
    ds = load_dataset(SHARED / name)
    assert len(ds.questions) > 200
    assert all(a.end <= len(ds.docs[a.doc_id].text) for q in ds.questions for a in q.answers)
