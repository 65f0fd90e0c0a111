"""Labels as people write them: the flat shapes, "did you mean" for a field no reader reads, labels left out
by missing="skip", and evidence given as alternatives, read by load_dataset and `labels check|resolve`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import REPO

from workbench.cli import main
from workbench.dataset import DatasetError, DatasetWarning, Span
from workbench.ingest import load_dataset
from workbench.labels.check import check_labels, resolve_labels

SEMANTIC = REPO / "tests" / "data" / "semantic"
README = (SEMANTIC / "httpx_readme.md").read_text("utf-8")
SOTU = (SEMANTIC / "sotu_2024.txt").read_text("utf-8")
INTRO = "HTTPX is a fully featured HTTP client library for Python 3."
WAR = "War was raging in Europe."
ROOSEVELT = "In January 1941, Franklin Roosevelt came to this chamber"
MISSING = "Llamas graze on the Python client library"


def span(doc_id: str, quote: str) -> Span:
    text = {"httpx.md": README, "sotu.txt": SOTU}[doc_id]
    return Span(doc_id, text.index(quote), text.index(quote) + len(quote))


def folder(tmp_path: Path, *lines: dict) -> Path:
    """The HTTPX README and a State of the Union excerpt as a text folder, with these question lines."""
    out = tmp_path / "data"
    out.mkdir(parents=True)
    shutil.copy(SEMANTIC / "httpx_readme.md", out / "httpx.md")
    shutil.copy(SEMANTIC / "sotu_2024.txt", out / "sotu.txt")
    (out / "questions.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return out


def test_the_flat_shapes_people_write_load_as_their_quotes(tmp_path: Path) -> None:
    """qid, question, a document (source, file, doc or doc_id; none: the whole corpus) and the evidence (evidence,
    quote or answer: one quote, or a list of them jointly required) are the same labels as nested answers."""
    flat = [{"qid": "a", "question": "?", "source": "httpx.md", "evidence": INTRO},
            {"qid": "b", "question": "?", "file": "sotu.txt", "quote": [WAR, ROOSEVELT]},
            {"qid": "c", "question": "?", "doc": "httpx.md", "answer": INTRO},
            {"qid": "d", "question": "?", "doc_id": "sotu.txt", "evidence": [WAR]},
            {"qid": "e", "question": "?", "evidence": INTRO}]
    nested = [{"qid": x["qid"], "question": "?", "answers": [{"doc_id": d, "quote": q} for d, q in pairs]}
              for x, pairs in zip(flat, [[("httpx.md", INTRO)], [("sotu.txt", WAR), ("sotu.txt", ROOSEVELT)],
                                         [("httpx.md", INTRO)], [("sotu.txt", WAR)], [("httpx.md", INTRO)]],
                                  strict=True)]
    ds = load_dataset(folder(tmp_path / "flat", *flat))
    assert ds.questions[0].answers == (span("httpx.md", INTRO),)
    assert ds.questions[1].answers == (span("sotu.txt", WAR), span("sotu.txt", ROOSEVELT))
    assert ds.fingerprint == load_dataset(folder(tmp_path / "nested", *nested)).fingerprint
    assert [s.field for s in check_labels(folder(tmp_path / "check", *flat))] == [
        "evidence", "quote[0]", "quote[1]", "answer", "evidence[0]", "evidence"]


@pytest.mark.parametrize(("line", "field", "says"), [
    ({"qid": "q", "question": "?", "source": "httpx", "evidence": INTRO}, "source",
     "unknown document 'httpx' (did you mean 'httpx.md'?)"),
    ({"qid": "q", "question": "?", "source": "httpx.md", "evidence": [INTRO, MISSING]}, "evidence[1]",
     "quote not found"),
    ({"qid": "q", "question": "?", "source": "httpx.md", "evidence": [INTRO, 3]}, "evidence",
     "must be a quote or a non-empty list of quotes"),
    ({"qid": "q", "question": "?", "answers": [{"quote": INTRO}], "quote": INTRO}, "quote",
     "and 'answers' both give evidence: give it in one field"),
    ({"qid": "q", "question": "?", "source": "httpx.md", "file": "sotu.txt", "evidence": INTRO}, "file",
     "and 'source' both name the document"),
    ({"qid": "q", "question": "?", "sources": "httpx.md", "evidences": INTRO}, "answers",
     "is missing: give the evidence as 'answers' (a list of answers), 'alternatives' (a list of answer lists, any "
     "one of which answers the question), or flat, a quote or a list of quotes in 'evidence' ('quote', 'answer') with"
     " their document in 'source' ('file', 'doc', 'doc_id'; none: the whole corpus); field 'sources' is not read: did "
     "you mean 'source'?; field 'evidences' is not read: did you mean 'evidence'?\n  a valid line: {\"qid\": \"q1\", "
     "\"question\": \"How long do refunds take?\", \"source\": \"billing\", \"evidence\": \"Refunds are paid"),
    ({"qid": "q", "question": "?", "answers": [{"quote": INTRO}], "alternative": [[{"quote": WAR}]]}, "alternative",
     "is not read: did you mean 'alternatives'?"),
    ({"qid": "q", "question": "?", "answers": [{"source": "httpx.md", "quote": INTRO}]}, "answers[0].source",
     "is not read: did you mean 'doc_id'?"),
])
def test_a_bad_line_names_the_field_as_written_and_says_what_was_meant(tmp_path: Path, line: dict, field: str,
                                                                         says: str) -> None:
    with pytest.raises(DatasetError) as err:
        load_dataset(folder(tmp_path, line))
    assert (err.value.line, err.value.field) == (1, field) and says in str(err.value)


def test_labels_check_says_did_you_mean_and_shows_a_valid_line_once(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    lines = [{"qid": f"q{i}", "question": "?", "doc": "httpx.md", "evidences": INTRO} for i in range(3)]
    with pytest.raises(SystemExit):
        main(["labels", "check", str(folder(tmp_path, *lines))])
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("line 1 q0 answers: invalid: is missing: give the evidence as 'answers'")
    assert out[0].endswith("; field 'evidences' is not read: did you mean 'evidence'?")
    assert [line for line in out if line.startswith("a valid line: ")] == [
        'a valid line: {"qid": "q1", "question": "How long do refunds take?", "source": "billing", '
        '"evidence": "Refunds are paid within five days."}']
    assert out[-1] == "3 labels: 3 invalid"


def test_missing_skip_leaves_out_what_is_not_located_and_says_so_once(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    data = folder(tmp_path, {"qid": "ok", "question": "?", "answers": [{"quote": INTRO}]},
                  {"qid": "half", "question": "?", "source": "sotu.txt", "evidence": [WAR, MISSING]},
                  {"qid": "gone", "question": "?", "answers": [{"quote": MISSING}, {"quote": "HTTP/2"}]})
    with pytest.raises(DatasetError, match=r"line 2: field 'evidence\[1\]' quote not found.*--skip-missing"):
        load_dataset(data)
    with pytest.warns(DatasetWarning) as caught:
        ds = load_dataset(data, missing="skip")
    said = [str(w.message) for w in caught if "left out" in str(w.message)]
    assert said == [f"{data / 'questions.jsonl'}: left out 3 label(s) whose evidence is not located (missing='skip'): "
                    "line 2 half evidence[1] (missing), line 3 gone answers[0] (missing), line 3 gone answers[1] "
                    "(ambiguous); and 1 question(s) left with no answer: 'gone'; `python -m workbench labels check "
                    "<data folder>` lists them"]
    assert [q.qid for q in ds.questions] == ["ok", "half"] and ds.questions[1].answers == (span("sotu.txt", WAR),)
    assert said[0] in ds.notes  # the report says it (DatasetIdentity.notes)
    with pytest.raises(SystemExit):
        main(["labels", "check", str(data)])
    assert capsys.readouterr().out.splitlines()[-1] == (
        "--skip-missing would leave out 3 label(s) (2 missing, 1 ambiguous) and 1 question(s) left with no answer: "
        "gone")
    (data / "questions.jsonl").write_text(json.dumps({"qid": "x", "question": "?", "source": "nope.md",
                                                      "evidence": INTRO}) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError, match="unknown document 'nope.md'"):  # invalid, not unlocated: refused still
        load_dataset(data, missing="skip")
    with pytest.raises(ValueError, match="parameter 'missing' must be one of"):
        load_dataset(data, missing="drop")


def test_alternatives_load_in_every_form_and_check_and_resolve_report_each(tmp_path: Path) -> None:
    """Any one alternative answers the question: each is a list of answers (jointly required), one answer, or a
    quote (in the line's document); `answers` is the first; labels check names each, resolve writes offsets."""
    lines = [{"qid": "a", "question": "?", "alternatives": [[{"doc_id": "httpx.md", "quote": INTRO}],
                                                            [{"doc_id": "sotu.txt", "quote": WAR},
                                                             {"doc_id": "sotu.txt", "quote": ROOSEVELT}]]},
             {"qid": "b", "question": "?", "source": "sotu.txt", "alternatives": [WAR, {"doc_id": "httpx.md",
                                                                                         "quote": INTRO}]}]
    data = folder(tmp_path, *lines)
    ds = load_dataset(data)
    a, b = ds.questions
    assert a.answers == (span("httpx.md", INTRO),)
    assert a.alternatives == ((span("sotu.txt", WAR), span("sotu.txt", ROOSEVELT)),)
    assert b.any_of == ((span("sotu.txt", WAR),), (span("httpx.md", INTRO),)) and len(b.located) == 2
    assert [(s.field, s.status) for s in check_labels(data)] == [
        ("alternatives[0][0]", "exact"), ("alternatives[1][0]", "exact"), ("alternatives[1][1]", "exact"),
        ("alternatives[0]", "exact"), ("alternatives[1]", "exact")]
    resolve_labels(data, tmp_path / "resolved.jsonl")
    written = [json.loads(line) for line in (tmp_path / "resolved.jsonl").open(encoding="utf-8")]
    assert written[1] == {"qid": "b", "question": "?", "alternatives": [
        [{"doc_id": "sotu.txt", "start": SOTU.index(WAR), "end": SOTU.index(WAR) + len(WAR), "quote": WAR}],
        [{"doc_id": "httpx.md", "start": README.index(INTRO), "end": README.index(INTRO) + len(INTRO),
          "quote": INTRO}]]}
    shutil.copy(tmp_path / "resolved.jsonl", data / "questions.jsonl")
    again = load_dataset(data)
    assert again.questions == ds.questions and again.fingerprint == ds.fingerprint
    one = folder(tmp_path / "one", {**lines[0], "alternatives": lines[0]["alternatives"][:1]})
    assert load_dataset(one).questions[0].alternatives == ()  # a single alternative is plain answers
    assert load_dataset(one).fingerprint != ds.fingerprint  # alternatives are part of the labels' identity
    with pytest.raises(DatasetError, match=r"field 'alternatives\[1\]' must be a non-empty list of answers"):
        load_dataset(folder(tmp_path / "bad", {**lines[0], "alternatives": [[{"quote": WAR}], []]}))


def test_select_keeps_the_alternatives_in_the_documents_kept(tmp_path: Path) -> None:
    data = folder(tmp_path, {"qid": "a", "question": "?", "alternatives": [
        [{"doc_id": "httpx.md", "quote": INTRO}], [{"doc_id": "sotu.txt", "quote": WAR}]]})
    ds = load_dataset(data)
    (q,) = ds.select(["sotu.txt"]).questions
    assert (q.answers, q.alternatives, len(q.located)) == ((span("sotu.txt", WAR),), (), 1)
    assert ds.select(["httpx.md"]).questions[0].answers == (span("httpx.md", INTRO),)
    assert ds.groups_of_questions() == {"a": "mixed"}  # httpx.md and sotu.txt: its evidence may be in either


def test_fingerprints_of_questions_without_alternatives_stay_as_they_were() -> None:
    """Caches and results are keyed by the dataset's fingerprint: reading alternatives changed none of the
    bundled sets' (the values of the commit before)."""
    assert load_dataset(REPO / "tests" / "data" / "squad_v11_dev").fingerprint == "48747f0a5dbf9efe"
    assert load_dataset(REPO / "tests" / "data" / "itsdangerous").fingerprint == "8079217f3355c544"
