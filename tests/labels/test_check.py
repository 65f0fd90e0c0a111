"""`labels check` and `labels resolve`: every label's status, drift after a document changes, offsets written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import REPO

from workbench.cli import main
from workbench.ingest import load_dataset
from workbench.labels.check import check_labels, resolve_labels

CHROMA = REPO / "data" / "chroma_small"


def as_quotes(tmp_path: Path, n: int = 40) -> tuple[Path, list[dict]]:
    """chroma_small with its first `n` questions' answers written as quotes alone (no doc_id, no offsets)."""
    out = tmp_path / "chroma"
    out.mkdir()
    shutil.copy(CHROMA / "corpus.jsonl", out)
    texts = {d["doc_id"]: d["text"] for d in map(json.loads, (CHROMA / "corpus.jsonl").open(encoding="utf-8"))}
    rows = [json.loads(line) for line in (CHROMA / "questions.jsonl").open(encoding="utf-8")][:n]
    quoted = [{**r, "answers": [{"quote": texts[a["doc_id"]][a["start"]:a["end"]]} for a in r["answers"]]}
              for r in rows]
    (out / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in quoted), encoding="utf-8")
    return out, [dict(r, texts=texts) for r in rows]


def test_quotes_alone_find_chroma_spans_and_the_ambiguous_ones_are_listed(tmp_path: Path) -> None:
    data, rows = as_quotes(tmp_path)
    statuses = check_labels(data)
    assert len(statuses) == sum(len(r["answers"]) for r in rows)
    answers = [(r, a) for r in rows for a in r["answers"]]
    for s, (r, a) in zip(statuses, answers, strict=True):
        quote = r["texts"][a["doc_id"]][a["start"]:a["end"]]
        copies = sum(t.count(quote) for t in r["texts"].values())
        if copies == 1:
            assert (s.status, s.span.doc_id, s.span.start, s.span.end) == ("exact", a["doc_id"], a["start"], a["end"])
        else:  # the same sentence twice in the corpus: a hint must pick one
            assert s.status == "ambiguous" and len(s.matches) == copies and s.span is None


def test_drift_is_listed_with_where_the_quote_is_now_and_resolve_moves_it(tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    data, rows = as_quotes(tmp_path, n=6)
    out = tmp_path / "resolved.jsonl"
    main(["labels", "resolve", str(data), "--out", str(out)])
    assert capsys.readouterr().out.endswith(f"; wrote {out} (0 drifted label(s) moved)\n")
    resolved = [json.loads(line) for line in out.open(encoding="utf-8")]
    assert [[(a["doc_id"], a["start"], a["end"]) for a in q["answers"]] for q in resolved] == \
        [[(a["doc_id"], a["start"], a["end"]) for a in r["answers"]] for r in rows]
    assert all("quote" in a for q in resolved for a in q["answers"])  # kept: a later check sees drift
    shutil.copy(out, data / "questions.jsonl")
    corpus = [json.loads(line) for line in (data / "corpus.jsonl").open(encoding="utf-8")]
    edited = rows[0]["answers"][0]["doc_id"]
    for d in corpus:  # the document gains a preface: every later offset moves
        d["text"] = "Preface added later.\n\n" + d["text"] if d["doc_id"] == edited else d["text"]
    (data / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in corpus), encoding="utf-8")
    with pytest.raises(SystemExit) as stop:
        main(["labels", "check", str(data)])
    assert stop.value.code == 1
    printed = capsys.readouterr().out.splitlines()
    first = rows[0]["answers"][0]
    moved = len("Preface added later.\n\n")
    assert printed[0] == (f"line 1 {rows[0]['qid']} answers[0]: drift {edited!r} [{first['start'] + moved}, "
                          f"{first['end'] + moved}): offsets [{first['start']}, {first['end']}) no longer hold the "
                          f"quote; the quote is now at [{first['start'] + moved}, {first['end'] + moved}) (exact)")
    drifted = sum(a["doc_id"] == edited for r in rows for a in r["answers"])
    assert drifted == sum(len(r["answers"]) for r in rows)  # the first six questions are all on one document
    assert printed[-2] == f"{drifted} labels: {drifted} drift"
    assert printed[-1] == (f"--skip-missing would leave out {drifted} label(s) ({drifted} drift) and 6 question(s) "
                           "left with no answer: " + ", ".join(r["qid"] for r in rows))
    statuses = resolve_labels(data, data / "questions.jsonl")
    assert sum(s.status == "drift" for s in statuses) == drifted
    ds = load_dataset(data)
    quotes = [a["quote"] for line in (data / "questions.jsonl").open(encoding="utf-8")
              for a in json.loads(line)["answers"]]
    assert [ds.docs[a.doc_id].text[a.start : a.end] for q in ds.questions for a in q.answers] == quotes
    assert {h.how for q in ds.questions for h in q.located} == {"exact"}
    assert ds.questions[0].answers[0].start == first["start"] + moved


def test_resolve_writes_nothing_while_a_label_cannot_be_located(tmp_path: Path) -> None:
    data, _ = as_quotes(tmp_path, n=3)
    with (data / "questions.jsonl").open("a", encoding="utf-8") as f:
        f.write(json.dumps({"qid": "x", "question": "?", "answers": [{"quote": "the"}]}) + "\n")
        missing = {"quote": "Llamas graze on the economy of quantum toast"}
        f.write(json.dumps({"qid": "y", "question": "?", "answers": [missing]}) + "\n")
    out = tmp_path / "out.jsonl"
    with pytest.raises(SystemExit, match=r"2 label\(s\) cannot be resolved, nothing written:\n"
                       r"line 4 x answers\[0\]: ambiguous \(\d+\): quote occurs .*\nline 5 y answers\[0\]: missing: "
                       r"quote not found .*the best candidate, score \d+, is '"):
        main(["labels", "resolve", str(data), "--out", str(out)])
    assert not out.exists()
