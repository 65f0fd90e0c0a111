"""Loading and validating datasets: every rule has a bad-input case naming file, line and field."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import fakemodel
import pytest
from conftest import REPO, SHARED

from workbench.chunkers import STRATEGIES, ChunkEnv, run_strategy
from workbench.dataset import DatasetError, DatasetWarning, Document, Span
from workbench.ingest import load_dataset
from workbench.models.embed import Embedder

SHIPPED = REPO / "tests" / "data"
SHARED_NAMES = ["chroma_general", "qmsum_val", "squad_v11_dev"]

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
                                                            "quote": "Refunds take 5 days."}]}
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
         "questions.jsonl", 1, "answers[0].start", "must be int"),
        (DOCS, [{"qid": "q", "question": "?", "answers": [{"doc_id": "b", "start": 0, "end": 6, "quote": "Sec"}]}],
         "questions.jsonl", 1, "answers[0].quote", "which reads 'Second'; the quote is now at [0, 3) (exact)"),
        (DOCS, [{"qid": "q", "question": "?", "answers": [{"doc_id": "b", "start": 0, "end": 6, "text": "Second"}]}],
         "questions.jsonl", 1, "answers[0].text", "is now called 'quote'"),
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
    with pytest.raises(DatasetError, match="no readable documents: read 0 file"):
        load_dataset(tmp_path / "empty")


def sampled(folder: Path, seed: int) -> list[str]:
    """The qids `select(max_questions=10, seed=seed)` picks, computed in a fresh interpreter
    (another hash seed), so that reproducible means reproducible across runs."""
    code = (f"from workbench.ingest import load_dataset; ds = load_dataset({str(folder)!r}); "
            f"print(' '.join(q.qid for q in ds.select(max_questions=10, seed={seed}).questions))")
    return subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.split()


def test_select_samples_reproducibly_within_the_chosen_documents(tmp_path: Path) -> None:
    docs = [{"doc_id": f"d{i}", "text": " ".join(f"Sentence {j} of document {i}." for j in range(10))}
            for i in range(4)]
    questions = [{"qid": f"q{i}-{j}", "question": "Which?", "answers": [{"doc_id": f"d{i}", "start": 0, "end": 8}]}
                 for i in range(4) for j in range(10)]
    questions.append({"qid": "both", "question": "Both?", "answers": [{"doc_id": "d0", "start": 0, "end": 8},
                                                                     {"doc_id": "d1", "start": 0, "end": 8}]})
    ds = load_dataset(write(tmp_path / "ds", docs, questions))
    order = [q.qid for q in ds.questions]
    picks = {seed: [q.qid for q in ds.select(max_questions=10, seed=seed).questions] for seed in range(4)}
    for seed, qids in picks.items():
        assert len(set(qids)) == 10 and qids == [q for q in order if q in qids]  # a subset, in file order
        assert sampled(tmp_path / "ds", seed) == qids
    assert len({tuple(q) for q in picks.values()}) == 4  # 41 choose 10: distinct seeds, distinct samples
    assert ds.select(max_questions=10, seed=1).fingerprint != ds.select(max_questions=10, seed=2).fingerprint

    sub = ds.select(doc_ids=["d2", "d0"], max_questions=50)
    assert [d.doc_id for d in sub.documents] == ["d0", "d2"]  # the dataset's order, not the argument's
    assert [q.qid for q in sub.questions] == [q for q in order if q[:2] in ("q0", "q2")]  # not "both": d1 is out
    assert sub.corpus_fingerprint != ds.corpus_fingerprint
    assert all(a.doc_id in ("d1", "d3") for q in ds.select(doc_ids=["d1", "d3"], max_questions=5).questions
               for a in q.answers)
    with pytest.raises(KeyError, match="zz"):
        ds.select(doc_ids=["zz"])


def lines(path: Path) -> int:
    return sum(1 for line in path.read_text(encoding="utf-8").splitlines() if line.strip())


@pytest.mark.parametrize(
    "folder", [SHIPPED / n for n in SHARED_NAMES] + [SHARED / n for n in SHARED_NAMES if (SHARED / n).exists()],
    ids=lambda f: f"{f.parent.name}/{f.name}",
)
def test_shared_format_datasets_load_every_line(folder: Path) -> None:
    """The three shared datasets, as excerpts shipped in tests/data (always) and in full when
    ../shared is beside the repo: every line loads, extra keys (alt_answers,
    reference_summary) are ignored, and every span holds text."""
    ds = load_dataset(folder)
    assert len(ds.documents) == lines(folder / "corpus.jsonl")
    assert len(ds.questions) == lines(folder / "questions.jsonl") > 0
    assert all(ds.docs[a.doc_id].text[a.start : a.end].strip() for q in ds.questions for a in q.answers)


@pytest.mark.parametrize("name", SHARED_NAMES)
def test_shipped_excerpts_are_prefixes_of_the_shared_data(name: str) -> None:
    """Each excerpt document is the start of its shared document and its questions are the
    shared ones verbatim (checked when ../shared exists; the excerpt loads either way)."""
    excerpt = load_dataset(SHIPPED / name)
    assert 2 <= len(excerpt.documents) <= 3 and len(excerpt.questions) >= 5
    if (SHARED / name).exists():
        full = load_dataset(SHARED / name)
        for d in excerpt.documents:
            assert full.docs[d.doc_id].text.startswith(d.text) and full.docs[d.doc_id].title == d.title
        assert set(excerpt.questions) <= set(full.questions)


EMPTY = [{"doc_id": "blank", "text": ""}, {"doc_id": "spaces", "text": " \n\t\u3000"}]


def test_empty_documents_are_skipped_with_a_warning_naming_them(tmp_path: Path) -> None:
    with pytest.warns(DatasetWarning) as caught:
        ds = load_dataset(write(tmp_path / "ds", [DOCS[0], *EMPTY, DOCS[1]]))
    assert [d.doc_id for d in ds.documents] == ["a", "b"] and len(ds.questions) == 2
    message = str(caught[0].message)
    assert "corpus.jsonl" in message and "skipped 2 empty" in message and "'blank', 'spaces'" in message
    assert ds.corpus_fingerprint == load_dataset(write(tmp_path / "clean")).corpus_fingerprint

    many = [{"doc_id": f"e{i}", "text": " "} for i in range(7)]
    with pytest.warns(DatasetWarning, match=r"skipped 7 empty .*'e0', 'e1', 'e2', 'e3', 'e4' and 2 more"):
        load_dataset(write(tmp_path / "many", [*many, *DOCS]))


def test_empty_documents_are_an_error_on_request(tmp_path: Path) -> None:
    with pytest.raises(DatasetError) as err:
        load_dataset(write(tmp_path / "ds", [DOCS[0], DOCS[1], *EMPTY]), empty_docs="error")
    e = err.value
    assert (Path(e.path).name, e.line, e.field) == ("corpus.jsonl", 3, "text")
    assert "'blank' is empty or whitespace-only (2 such documents" in str(e)

    (tmp_path / "md").mkdir()
    (tmp_path / "md" / "full.md").write_text("# Full\n\nText.\n", encoding="utf-8")
    (tmp_path / "md" / "blank.md").write_text("\n  \n", encoding="utf-8")
    q = {"qid": "q", "question": "?", "answers": [{"doc_id": "full.md", "start": 8, "end": 13}]}
    (tmp_path / "md" / "questions.jsonl").write_text(json.dumps(q) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError) as err:
        load_dataset(tmp_path / "md", empty_docs="error")
    assert Path(err.value.path).name == "blank.md" and err.value.field == "text"
    with pytest.warns(DatasetWarning, match="'blank.md'"):
        assert [d.doc_id for d in load_dataset(tmp_path / "md").documents] == ["full.md"]
    with pytest.raises(ValueError, match="parameter 'empty_docs' must be one of \\['skip', 'error'\\], got 'warn'"):
        load_dataset(tmp_path / "md", empty_docs="warn")


def test_a_question_into_a_skipped_document_names_it(tmp_path: Path) -> None:
    questions = [QUESTIONS[0], {"qid": "qs", "question": "?", "answers": [{"doc_id": "spaces", "start": 0, "end": 2}]}]
    with pytest.warns(DatasetWarning), pytest.raises(DatasetError) as err:
        load_dataset(write(tmp_path / "ds", [*DOCS, *EMPTY], questions))
    e = err.value
    assert (Path(e.path).name, e.line, e.field) == ("questions.jsonl", 2, "answers[0].doc_id")
    assert "document 'spaces' was skipped (empty): no answer can point into it" in str(e)
    with pytest.raises(DatasetError, match="all 2 documents are empty or whitespace-only"):
        load_dataset(write(tmp_path / "none", EMPTY))


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_a_one_word_document_gets_its_chunk(name: str, fake_embedder: Embedder) -> None:
    """Every registered strategy, with its defaults (sizes far above one word), on a document
    shorter than one chunk: exactly one chunk, the word itself."""
    env = ChunkEnv(embed=fake_embedder.encode, model_tokenizer=fakemodel.model_tokenizer())
    doc = Document("w", "W", "\n  Refunds \n")
    chunks = run_strategy(name, {}, doc, env)
    assert [c.text.strip() for c in chunks] == ["Refunds"]
    assert all(doc.text[c.start : c.end] == c.text for c in chunks)
