"""Dataset.with_distractors: the question documents always kept, n others drawn with a seed, every
question kept, corpus order, counts; bad n refused naming it; the CLI's --distractors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.cli import main
from workbench.dataset import Dataset, Document, Question, Span

EVIDENCE = ("d03", "d11", "d27")


@pytest.fixture(scope="module")
def corpus() -> Dataset:
    docs = tuple(Document(f"d{i:02d}", f"Doc {i}", f"Document number {i} talks about topic {i}.") for i in range(30))
    questions = (Question("q1", "topic 3?", (Span("d03", 0, 8),)),
                 Question("q2", "topics 11 and 27?", (Span("d11", 0, 8), Span("d27", 0, 8))))
    return Dataset("synthetic", docs, questions)


@pytest.mark.parametrize("n", [0, 1, 10, 27])
def test_the_question_documents_and_n_others_are_kept(corpus: Dataset, n: int) -> None:
    sampled = corpus.with_distractors(n, seed=5)
    ids = [d.doc_id for d in sampled.documents]
    assert len(ids) == len(EVIDENCE) + n and set(EVIDENCE) <= set(ids)
    assert ids == sorted(ids)  # corpus order
    assert sampled.questions == corpus.questions
    assert sampled.name == f"synthetic+{n}distractors-seed5"


def test_the_sample_is_seeded(corpus: Dataset) -> None:
    def others(seed: int) -> set[str]:
        return {d.doc_id for d in corpus.with_distractors(5, seed=seed).documents} - set(EVIDENCE)

    assert others(0) == others(0)
    assert len({frozenset(others(seed)) for seed in range(6)}) > 1  # the seed decides which
    assert corpus.with_distractors(5).fingerprint == corpus.with_distractors(5).fingerprint


@pytest.mark.parametrize("n, problem", [(-1, "n must be an int >= 0"), (True, "n must be an int >= 0"),
                                        (2.0, "n must be an int >= 0"), (28, "has only 27 documents without")])
def test_a_bad_n_is_refused_naming_it(corpus: Dataset, n: object, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        corpus.with_distractors(n)  # type: ignore[arg-type]


def write(corpus: Dataset, folder: Path) -> Path:
    folder.mkdir()
    (folder / "corpus.jsonl").write_text("".join(
        json.dumps({"doc_id": d.doc_id, "title": d.title, "text": d.text}) + "\n" for d in corpus.documents))
    (folder / "questions.jsonl").write_text("".join(json.dumps(
        {"qid": q.qid, "question": q.question, "answers": [{"doc_id": a.doc_id, "start": a.start, "end": a.end}
                                                           for a in q.answers]}) + "\n" for q in corpus.questions))
    return folder


@pytest.mark.model
def test_the_cli_sweeps_the_sampled_corpus(corpus: Dataset, tmp_path: Path) -> None:
    data = write(corpus, tmp_path / "data")
    with pytest.raises(SystemExit, match="--distractors: with_distractors: n = 99"):
        main(["sweep", "--data", str(data), "--distractors", "99", "--cache", str(tmp_path)])
    out = tmp_path / "out"
    main(["sweep", "--data", str(data), "--distractors", "4", "--cache", str(tmp_path / "cache"), "--out", str(out),
          "--no-report", "--quiet", "-v", "fixed:size=8", "--ks", "1", "--budgets"])
    config = json.loads((out / "config.json").read_text())
    assert (config["documents"], config["dataset"]) == (7, "data+4distractors")  # the folder names the dataset
    assert config["corpus_fingerprint"] == corpus.with_distractors(4).corpus_fingerprint
