"""Questions that probe the cuts (workbench.labels.probe, labels generate --probe-cuts): evidence around
the cuts some variants make and others do not, drafts and the model's questions (its outputs planted in
its cache, then the real SmolLM2), the CLI, and the report's ranking on probes beside the other questions."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

import workbench as wb
from workbench.cli import main
from workbench.core.chunk import Chunk
from workbench.dataset import Dataset, Document, Question, Span
from workbench.labels.generate import MAX_TOKENS, Probe, prompt, prompt_items
from workbench.labels.probe import MIN_WORDS, probes
from workbench.models.embed import Embedder
from workbench.models.llm import LLM
from workbench.variant import Variant

FIRST = "Refunds are paid within five days of the request by the billing team."
SECOND = "A refund always goes back to the same card that paid for the order."
THIRD = "Invoices are sent on the first day of each month to the account owner."
TEXT = f"# Billing\n\n{FIRST} {SECOND} {THIRD}"
DOC = Document("billing.md", "billing", TEXT)


def chunks_at(*cuts: int) -> list[Chunk]:
    bounds = [0, *cuts, len(TEXT)]
    return [Chunk(DOC.doc_id, a, b, TEXT[a:b]) for a, b in zip(bounds, bounds[1:], strict=False)]


def test_evidence_straddles_the_cuts_some_variants_make_and_is_asked_about_first() -> None:
    second = TEXT.index(SECOND)
    inside = second + 10
    found = probes([DOC], {"between": chunks_at(second - 1), "inside": chunks_at(inside), "heading": chunks_at(9)},
                   n=5, seed=0)
    spans = {(TEXT[p.evidence.start:p.evidence.end], p.straddles) for p in found}
    assert spans == {(f"{FIRST} {SECOND}", ("between", "inside")), (SECOND, ("inside",)),
                     (f"# Billing\n\n{FIRST}", ("heading",))}
    short = Document("short.md", "short", "# Billing\n\nRefunds in five days.\n\nCards only.")
    assert probes([short], {"a": [Chunk("short.md", 0, 9, "# Billing"), Chunk("short.md", 11, 52, short.text[11:])]},
                  n=5, seed=0) == []  # under MIN_WORDS words: nothing to ask about
    assert len(short.text.split()) - 1 < MIN_WORDS
    everyone = probes([DOC], {"a": chunks_at(inside), "b": chunks_at(inside)}, n=5, seed=0)
    assert [p.straddles for p in everyone] == [("a", "b")]  # cut by all: still a probe, asked after the telling ones


def test_drafted_probes_are_exact_marked_lines_the_loader_reads(tmp_path: Path) -> None:
    data = tmp_path / "docs"
    data.mkdir()
    (data / "billing.md").write_text(TEXT, encoding="utf-8")
    found = probes([DOC], {"fixed": chunks_at(TEXT.index(SECOND) + 10)}, n=3, seed=0)
    made = wb.labels.generate(data, 3, False, out=data / "questions.jsonl", probes=found)
    lines = [json.loads(line) for line in (data / "questions.jsonl").read_text(encoding="utf-8").splitlines()]
    assert made.written == len(lines) == 1 and lines[0]["qid"] == "probe-1"
    assert lines[0]["question"] == ("What does the text say from 'A refund always goes back' to 'that paid "
                                    "for the order.'?")
    assert lines[0]["probe"] == {"straddles": ["fixed"]} and lines[0]["draft"] is True
    question = wb.load_dataset(data).questions[0]
    assert question.probe and TEXT[question.answers[0].start:question.answers[0].end] == SECOND


@pytest.fixture(scope="module")
def cache_dir(llm_cache: Callable[[str], Path]) -> Path:
    return llm_cache("probe-cache")


def test_the_models_questions_that_copy_the_evidence_or_do_not_parse_are_dropped(cache_dir: Path,
                                                                                  tmp_path: Path) -> None:
    """The model's outputs planted in its cache: one question in other words, one copying the evidence,
    one that is no JSON, one repeating the first."""
    texts = [f"{FIRST} {SECOND}", SECOND, THIRD, FIRST]
    docs = [Document(f"d{i}.md", f"d{i}", t) for i, t in enumerate(texts)]
    found = [Probe(Span(d.doc_id, 0, len(d.text)), ("fixed",)) for d in docs]
    planted = LLM(cache_dir=cache_dir, progress=False)
    outputs = ['{"question": "How long until my money comes back?"}',
               '{"question": "A refund always goes back to the same card that paid?"}', "Sure! Here is a question.",
               '{"question": "How long until the money comes back?"}']
    keys = planted.keys(prompt(probe=True), prompt_items(docs, [p.evidence for p in found]), MAX_TOKENS)
    planted.cache.put_many({k: {"text": t, "prompt_tokens": 1, "generated_tokens": 1, "seconds": 0.0}
                            for k, t in zip(keys, outputs, strict=True)})
    made = wb.labels.generate(docs, 4, planted, out=tmp_path / "q.jsonl", probes=found)
    assert planted.stats.generated == 0
    assert (made.written, made.copied, made.unparsable, made.duplicates) == (1, 1, 1, 1)
    assert made.summary().endswith(", 1 copying their evidence")
    line = made.questions[0]
    assert line["question"] == "How long until my money comes back?" and line["generated"] is True
    assert (line["prompt"], line["probe"]) == ("probe-question", {"straddles": ["fixed"]})


@pytest.mark.llm
def test_the_bundled_model_writes_probe_questions_as_it_can(cache_dir: Path, tmp_path: Path) -> None:
    """SmolLM2-135M is weak: the mechanics are asserted, every written line exact and marked."""
    found = probes([DOC], {"fixed": chunks_at(TEXT.index(SECOND) + 10), "other": chunks_at(TEXT.index(THIRD) - 1)},
                   n=2, seed=0)
    llm = LLM(cache_dir=cache_dir, progress=False)
    try:
        made = wb.labels.generate([DOC], 2, llm, out=tmp_path / "q.jsonl", probes=found, max_tokens=40)
    except ValueError as e:  # nothing usable written: the counts say why
        assert "2 asked, 0 written" in str(e)
        return
    assert made.asked == 2 == made.written + made.unparsable + made.duplicates + made.copied
    for line in made.questions:
        a = line["answers"][0]
        assert TEXT[a["start"]:a["end"]] == a["quote"] and line["probe"]["straddles"]


def test_cli_probe_cuts_drafts_around_the_cuts_of_the_variants_named(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "docs"
    data.mkdir()
    (data / "billing.md").write_text(TEXT, encoding="utf-8")
    out = tmp_path / "probes.jsonl"
    main(["labels", "generate", str(data), "--probe-cuts", "--no-llm", "--n", "4", "--out", str(out),
          "-v", "fixed:size=60,unit=chars", "-v", "sentence:size=40+bm25", "-v", "sentence:size=40"])
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "chunking 1 documents with 3 variants to find their cuts..."
    assert printed[1].startswith("probing the cuts of 2 chunkings: ")  # two retrievers of one chunking: one
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert lines and all("fixed(size=60, overlap=0, unit=chars)" in q["probe"]["straddles"] for q in lines)
    assert lines[0]["probe"]["straddles"] == ["fixed(size=60, overlap=0, unit=chars)"]  # cut by one, kept by the other
    with pytest.raises(SystemExit, match="--variant names the variants whose cuts --probe-cuts probes"):
        main(["labels", "generate", str(data), "--no-llm", "--n", "4", "--out", str(out), "-v", "fixed:size=60"])


def test_the_report_ranks_the_variants_on_probes_beside_the_other_questions(tiny: Dataset, fake_embedder: Embedder,
                                                                            tmp_path: Path) -> None:
    marked = Dataset(tiny.name, tiny.documents, tuple(Question(q.qid, q.question, q.answers, probe=i % 2 == 0)
                                                      for i, q in enumerate(tiny.questions)))
    variants = [Variant.make("fixed", size=24, retriever="bm25"), Variant.make("fixed", size=64, retriever="bm25")]
    session = wb.Session(marked, cache=tmp_path, models=[fake_embedder], ks=(1, 3), progress=False)
    result = session.sweep(variants)
    page = wb.report.export(result, tmp_path / "out", dataset=marked)["report"].read_text(encoding="utf-8")
    section = page.split('<section id="probes">')[1].split("</section>")[0]
    assert "2 of the questions were written to probe the cuts" in section and "Spearman's rho" in section
    assert section.count("<tr") == 3 and "<th>your questions</th><th>rank</th><th>probe questions</th>" in section
    plain = wb.report.export(result, tmp_path / "plain", dataset=tiny)["report"].read_text(encoding="utf-8")
    assert 'id="probes"' not in plain
