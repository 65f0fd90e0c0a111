"""Generated questions with the real bundled SmolLM2 (weak, so the mechanics are asserted: every written
answer an exact span, a re-run generating nothing, the counts), and drafts from a real Markdown file."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

import workbench as wb
from workbench.cli import main
from workbench.dataset import Document
from workbench.labels.generate import MAX_TOKENS, Generated, drafts, passages, prompt, prompt_items, windows
from workbench.models.llm import LLM
from workbench.widgets.labeler_state import LabelerState

FORMATS = Path(__file__).parent.parent / "data" / "formats"
TOKENS = 40  # a short question and excerpt; SmolLM2 makes 1-2 tokens/s on busy cores
CHARS = 80  # a passage of one sentence: a short prompt
CORPUS = [
    {"doc_id": "billing", "title": "Billing", "text": "Refunds are paid within five days of the request. "
     "A refund goes back to the card that paid. Invoices are sent on the first day of each month."},
    {"doc_id": "support", "title": "Support", "text": "Support answers email within four hours on working days. "
     "Chat is open from nine to five. Urgent problems can be reported by phone at any time."},
]


@pytest.fixture(scope="module")
def cache_dir(llm_cache: Callable[[str], Path]) -> Path:
    return llm_cache("generate-cache")


@pytest.fixture(scope="module")
def llm(cache_dir: Path) -> LLM:
    return LLM(cache_dir=cache_dir, progress=False)


def _folder(root: Path) -> Path:
    root.mkdir()
    (root / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in CORPUS), encoding="utf-8")
    return root


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_generated_questions_are_exact_spans_and_a_rerun_generates_nothing(llm: LLM, cache_dir: Path,
                                                                          tmp_path: Path) -> None:
    data = _folder(tmp_path / "data")
    out = data / "questions.jsonl"
    made = _run(data, llm, out)
    assert made.asked == 2 and llm.stats.generated == 2 and llm.stats.generated_tokens > 0
    assert made.written + made.not_located + made.unparsable + made.duplicates == made.asked
    again = LLM(cache_dir=cache_dir, progress=False)
    assert _run(data, again, tmp_path / "again.jsonl").summary() == made.summary()
    assert again.stats.generated_tokens == 0 and again.stats.cached == 2
    if not made.written:  # SmolLM2-135M writes prose, not JSON, for these passages: nothing to check in a file
        return
    lines = _lines(out)
    assert len(lines) == made.written and (tmp_path / "again.jsonl").read_text() == out.read_text()
    texts = {d["doc_id"]: d["text"] for d in CORPUS}
    for q in lines:
        a = q["answers"][0]
        assert texts[a["doc_id"]][a["start"]:a["end"]] == a["quote"] and a["located"] in ("exact", "normalised",
                                                                                            "fuzzy")
        assert q["generated"] is True and q["model"] == llm.name and q["model_fingerprint"] == llm.fingerprint
        assert (q["prompt"], q["prompt_version"]) == (prompt().name, prompt().version)
    ds = wb.load_dataset(data)  # an ordinary questions file
    assert [(s.doc_id, s.start, s.end) for q in ds.questions for s in q.answers] == \
        [(a["doc_id"], a["start"], a["end"]) for q in lines for a in q["answers"]]


def _run(data: Path, llm: LLM, out: Path) -> Generated:
    """generate() over two passages; when nothing is written, the counts its error gives."""
    try:
        return wb.labels.generate(data, 2, llm, out=out, chars=CHARS, max_tokens=TOKENS)
    except ValueError as e:
        counts = re.search(r"\((\d+) asked, 0 written, (\d+) not located, (\d+) unparsable, (\d+) duplicates\)",
                           str(e))
        assert counts is not None and not out.exists(), e
        asked, missing, unparsable, duplicates = map(int, counts.groups())
        return Generated(out, asked, 0, missing, unparsable, duplicates, ())


def _planted(docs: list[Document], outputs: list[str], cache_dir: Path) -> Generated:
    """generate() over the three passages of `docs`, the model's outputs read from a cache holding `outputs`."""
    planted = LLM(cache_dir=cache_dir, progress=False)
    keys = planted.keys(prompt(), prompt_items(docs, passages(docs, 3, chars=60)), MAX_TOKENS)
    planted.cache.put_many({k: {"text": t, "prompt_tokens": 1, "generated_tokens": 1, "seconds": 0.0}
                            for k, t in zip(keys, outputs, strict=True)})
    made = wb.labels.generate(docs, 3, planted, out=cache_dir / "q.jsonl", chars=60)
    assert planted.stats.generated == 0  # all served from the cache
    return made


def test_passages_end_at_sentences_and_are_seeded() -> None:
    text = CORPUS[0]["text"]
    cuts = windows(text, 80)
    assert [text[a:b] for a, b in cuts] == ["Refunds are paid within five days of the request.",
                                            "A refund goes back to the card that paid.",
                                            "Invoices are sent on the first day of each month."]
    docs = [Document(d["doc_id"], d["title"], d["text"]) for d in CORPUS]
    assert passages(docs, 4, chars=80) == passages(docs, 4, chars=80) != passages(docs, 4, chars=80, seed=1)
    assert len(passages(docs, 99, chars=80)) == 6  # every window once


def test_drafts_from_headings_and_definitions_load_in_the_labeler(tmp_path: Path) -> None:
    data = tmp_path / "docs"
    data.mkdir()
    shutil.copy(FORMATS / "README.md", data / "README.md")
    shutil.copy(FORMATS / "install.rst", data / "install.rst")
    shutil.copy(FORMATS / "docs_src" / "cors_tutorial001.py", data / "app.py")  # comments are no headings
    (data / "glossary.md").write_text("# Glossary\n\nA chunk is a span of a document, cut by a chunker.\n"
                                      "The index is the store that holds the vectors.\n", encoding="utf-8")
    out = data / "questions.jsonl"
    made = wb.labels.generate(data, 50, False, out=out)
    lines = _lines(out)
    questions = [q["question"] for q in lines]
    assert "What does the section 'Sample files of every format the folder loader reads' say?" in questions
    assert "What is a chunk?" in questions and "What is the index?" in questions
    assert all(q["draft"] is True and q["answers"][0]["doc_id"] != "app.py" for q in lines)
    readme = next(q for q in lines if q["answers"][0]["doc_id"] == "README.md")["answers"][0]
    assert readme["quote"].startswith("Written for these tests") and readme["quote"].endswith("from the content).")
    assert made.written == len(lines) and made.asked == made.written + made.duplicates
    state = LabelerState.open(data)  # the widget reads them for review, every span checked
    assert [lab.question for lab in state.labels] == questions
    assert wb.load_dataset(data).questions[0].qid == "draft-1"
    assert len(list(drafts([Document("x.py", "x", "# A comment\nx = 1\n", kind="code")]))) == 0


def test_cli_generate_prints_the_counts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "docs"
    data.mkdir()
    shutil.copy(FORMATS / "install.rst", data / "install.rst")
    main(["labels", "generate", str(data), "--n", "2", "--out", str(tmp_path / "q.jsonl"), "--no-llm"])
    printed = capsys.readouterr().out
    assert "2 asked, 2 written, 0 not located, 0 unparsable, 0 duplicates" in printed
    assert len(_lines(tmp_path / "q.jsonl")) == 2
    with pytest.raises(SystemExit, match="parameter 'n' must be an int >= 1"):
        main(["labels", "generate", str(data), "--n", "0", "--out", str(tmp_path / "q.jsonl"), "--no-llm"])
