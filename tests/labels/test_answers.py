"""Answers in questions.jsonl as offsets, offsets with a quote, or quotes alone: load_dataset locates them."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import pytest
from conftest import REPO

from workbench.dataset import DatasetError, DatasetWarning
from workbench.ingest import load_dataset

SEMANTIC = REPO / "tests" / "data" / "semantic"
README = (SEMANTIC / "httpx_readme.md").read_text("utf-8")
SOTU = (SEMANTIC / "sotu_2024.txt").read_text("utf-8")
INTRO = "HTTPX is a fully featured HTTP client library for Python 3."
RENDERED = "It includes an integrated command line client, has support for both HTTP/1.1 and HTTP/2"


def folder(tmp_path: Path, *answers: dict) -> Path:
    """The HTTPX README and a State of the Union excerpt as a text folder, one question per answer."""
    out = tmp_path / "data"
    out.mkdir(parents=True)
    shutil.copy(SEMANTIC / "httpx_readme.md", out / "httpx.md")
    shutil.copy(SEMANTIC / "sotu_2024.txt", out / "sotu.txt")
    lines = [json.dumps({"qid": f"q{i}", "question": "?", "answers": [a]}) for i, a in enumerate(answers)]
    (out / "questions.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


def test_every_answer_form_loads_as_the_same_span_and_records_how(tmp_path: Path) -> None:
    start = README.index(INTRO)
    offsets = {"doc_id": "httpx.md", "start": start, "end": start + len(INTRO)}
    forms = [offsets, {**offsets, "quote": INTRO}, {"doc_id": "httpx.md", "quote": INTRO}, {"quote": INTRO},
             {"quote": " ".join(INTRO.split()[4:8]), "context": "HTTPX is a fully"}]
    with warnings.catch_warnings():
        warnings.simplefilter("error", DatasetWarning)  # exact matches: nothing to warn about
        ds = load_dataset(folder(tmp_path, *forms))
    spans = [q.answers[0] for q in ds.questions]
    assert {(s.doc_id, s.start, s.end) for s in spans[:4]} == {("httpx.md", start, start + len(INTRO))}
    assert ds.docs["httpx.md"].text[spans[4].start : spans[4].end] == "featured HTTP client library"
    assert [q.located[0] and q.located[0].how for q in ds.questions] == [None, "exact", "exact", "exact", "exact"]
    by_offsets = load_dataset(folder(tmp_path / "o", *[offsets] * 4, {"doc_id": "httpx.md", "start": spans[4].start,
                                                                      "end": spans[4].end}))
    assert by_offsets.fingerprint == ds.fingerprint  # how a span was given is no part of the label


def test_loose_matches_load_with_one_warning_counting_them(tmp_path: Path) -> None:
    typo = INTRO.replace("featured", "featred").replace("library", "libary") + " It includes"
    dash = next(s for s in SOTU.split(". ") if "\u2014" in s)
    data = folder(tmp_path, {"quote": RENDERED}, {"doc_id": "sotu.txt", "quote": dash.replace("\u2014", "--")},
                  {"quote": typo}, {"doc_id": "sotu.txt", "quote": dash.replace("\u2014", "-")})
    with pytest.warns(DatasetWarning) as caught:
        ds = load_dataset(data)
    assert len(caught) == 1
    hows = [q.located[0].how for q in ds.questions]
    assert hows == ["normalised", "fuzzy", "fuzzy", "normalised"]
    lowest = min(q.located[0].score for q in ds.questions)
    assert f"4 quote(s) matched the text only loosely: 2 once normalised, 2 fuzzily (lowest score {lowest:.0f})" \
        in str(caught[0].message)
    assert ds.docs["sotu.txt"].text[ds.questions[3].answers[0].start : ds.questions[3].answers[0].end] == dash


def test_a_question_without_an_id_is_named_by_its_line(tmp_path: Path) -> None:
    """People write questions without ids: each is `line-<n>`, n its line in the file (blank lines count)."""
    data = folder(tmp_path)
    lines = [{"question": "What is HTTPX?", "evidence": INTRO}, {"qid": "mine", "question": "?", "evidence": INTRO}]
    (data / "questions.jsonl").write_text(json.dumps(lines[0]) + "\n\n" + json.dumps(lines[1]) + "\n", encoding="utf-8")
    assert [q.qid for q in load_dataset(data).questions] == ["line-1", "mine"]
    (data / "questions.jsonl").write_text("\n" + json.dumps(lines[0]) + "\n" + json.dumps({**lines[1], "qid": "line-2"})
                                          + "\n", encoding="utf-8")
    with pytest.raises(DatasetError, match="duplicate id 'line-2' \\(first on line 2\\)"):
        load_dataset(data)


@pytest.mark.parametrize(("line", "field", "says"), [
    ({"qid": "q", "answers": [{"quote": INTRO}]}, "question", 'is missing\n  a valid line: {"qid": "q1"'),
    ({"qid": "q", "question": "?", "answers": [{"doc_id": "httpx.md", "start": 3}]}, "answers[0].end",
     'is missing (offsets are a start and an end; or give a quote alone)\n  a valid line: {"qid"'),
    ({"qid": "q", "question": "?", "answers": [{"doc_id": "httpx.md"}]}, "answers[0]",
     "has neither offsets (doc_id, start, end) nor a quote"),
    ({"qid": "q", "question": "?", "answers": [{"quote": INTRO, "near": "x"}]}, "answers[0].near", "must be int"),
    ({"qid": "q", "question": "?", "answers": [{"quote": "HTTP/2"}]}, "answers[0].quote",
     "quote occurs 5 times: 'httpx.md' ["),
    ({"qid": "q", "question": "?", "answers": [{"quote": "HTTP/2", "occurrence": 5}]}, "answers[0].occurrence",
     "has 5 equal matches (0..4)"),
    ({"qid": "q", "question": "?", "answers": [{"quote": "Llamas graze on the Python client library"}]},
     "answers[0].quote", "the best candidate, score"),
    ({"qid": "q", "question": "?", "answers": [{"doc_id": "httpx.md", "start": 0, "end": len(INTRO),
                                                 "quote": INTRO}]},
     "answers[0].quote", f"does not match the text at [0, {len(INTRO)}), which reads '<p align=\"center\">"),
    ({"qid": "q", "question": "?", "answers": [{"doc_id": "httpx.md", "start": 0, "end": len(INTRO),
                                                 "quote": INTRO}]},
     "answers[0].quote", f"the quote is now at [{README.index(INTRO)}, {README.index(INTRO) + len(INTRO)}) (exact)"),
    ({"qid": "q", "question": "?", "answers": [{"doc_id": "httpx", "quote": INTRO}]}, "answers[0].doc_id",
     "unknown document 'httpx' (did you mean 'httpx.md'?)"),
])
def test_a_bad_answer_is_named_by_its_full_path_and_says_what_to_write(tmp_path: Path, line: dict, field: str,
                                                                        says: str) -> None:
    data = folder(tmp_path)
    (data / "questions.jsonl").write_text(json.dumps(line) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError) as err:
        load_dataset(data)
    assert (err.value.line, err.value.field) == (1, field)
    assert says in str(err.value)
