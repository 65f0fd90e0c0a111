"""Answer quality (workbench.results.answers) with the real bundled LLM on a tiny corpus of invented facts:
SQuAD grading against hand-computed values, the anchors, the cache, the CLI and the report."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from conftest import REPO

import workbench as wb
from workbench.cli import main
from workbench.dataset import Dataset, DatasetError
from workbench.ingest import load_dataset
from workbench.models.embed import Embedder
from workbench.report import write_report
from workbench.results.answers import (
    CEILING,
    FLOOR,
    Answers,
    evaluate,
    exact_match,
    grade,
    normalize_answer,
    token_f1,
)
from workbench.results.result import SweepResult
from workbench.run.session import sweep

# facts no model can know, so the floor (no context) cannot find them and the ceiling can
NOTES = """# Project notes

The code name of project Zephyrine is Bluefinch. The project started in the spring.

The backup server of the Oslo office is called Marrowgate. It is restarted every Sunday night.

## Lunch

The canteen serves lentil soup on Tuesdays and pancakes on Fridays.
"""
GRID = ["fixed:size=8", "fixed:size=16", "sentence:size=32"]
SWEEP = {"ks": (1, 3), "budgets": (64,)}
BUDGET, MAX_TOKENS = 64, 16
CLI = [*(w for v in GRID for w in ("-v", v)), "--ks", "1", "3", "--budgets", "64", "--top", "2",
       "--context-tokens", str(BUDGET), "--max-tokens", str(MAX_TOKENS)]


def answer(quote: str) -> dict:
    start = NOTES.index(quote)
    return {"doc_id": "notes.md", "start": start, "end": start + len(quote)}


def write_notes(folder: Path, extra: dict | None = None) -> Path:
    """Three questions: one with a reference answer, one SQuAD-style (its span and an alternative
    span), one with none (graded against its evidence)."""
    folder.mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(json.dumps({"doc_id": "notes.md", "title": "Notes", "text": NOTES}) + "\n")
    questions = [
        {"qid": "q-code", "question": "What is the code name of project Zephyrine?",
         "answers": [answer("The code name of project Zephyrine is Bluefinch.")], "reference_answer": "Bluefinch",
         **(extra or {})},
        {"qid": "q-server", "question": "What is the backup server of the Oslo office called?",
         "answers": [answer("Marrowgate")], "alt_answers": [answer("called Marrowgate")]},
        {"qid": "q-restart", "question": "When is the backup server restarted?",
         "answers": [answer("It is restarted every Sunday night.")]},
    ]
    (folder / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions))
    return folder


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("answers-cache")


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_notes(tmp_path_factory.mktemp("answers-data") / "notes")


@pytest.fixture(scope="module")
def notes(data: Path) -> Dataset:
    return load_dataset(data)


@pytest.fixture(scope="module")
def result(notes: Dataset, cache: Path) -> SweepResult:
    return sweep(notes, [wb.parse_variant(v) for v in GRID], embedder=Embedder(cache_dir=cache, progress=False),
                 store=cache, progress=False, **SWEEP)


@pytest.fixture(scope="module")
def llm(cache: Path) -> wb.LLM:
    return wb.LLM(cache_dir=cache, progress=False)


@pytest.fixture(scope="module")
def answers(result: SweepResult, notes: Dataset, llm: wb.LLM) -> Answers:
    return evaluate(result, notes, top=2, llm=llm, context_tokens=BUDGET, max_tokens=MAX_TOKENS, judge=True)


def test_squad_grading_matches_hand_computed_values() -> None:
    assert normalize_answer("The  Denver Broncos!") == "denver broncos"
    assert normalize_answer("An apple, a pear") == "apple pear"
    # 2 common tokens of 3 answered and 2 expected: P = 2/3, R = 1, F1 = 0.8
    assert token_f1("Denver Broncos won", "the Denver Broncos") == pytest.approx(0.8)
    assert token_f1("Broncos Broncos", "Broncos") == pytest.approx(2 / 3)  # P = 1/2 (counted once), R = 1
    assert token_f1("Carolina", "Denver Broncos") == 0.0
    assert token_f1("", "") == 1.0 and token_f1("the", "Broncos") == 0.0  # empty once normalised
    assert exact_match("the Broncos.", "Broncos") == 1.0 and exact_match("Broncos won", "Broncos") == 0.0
    # the max over alternatives, each metric on its own: F1 from the second, exact match from the third
    assert grade("Santa Clara", ["Levi's Stadium", "Santa Clara, California", "santa clara"]) == (1.0, 1.0)
    assert grade("Santa Clara", ["Levi's Stadium", "Santa Clara, California"]) == (pytest.approx(0.8), 0.0)
    with pytest.raises(ValueError, match="no reference"):
        grade("x", [])


def test_references_are_read_from_the_questions_file(notes: Dataset, tmp_path: Path) -> None:
    refs = {q.qid: q.references for q in notes.questions}
    assert refs == {"q-code": ("Bluefinch",), "q-server": ("Marrowgate", "called Marrowgate"), "q-restart": ()}
    with pytest.raises(DatasetError, match=r"questions\.jsonl, line 1.*reference_answer.*string"):
        load_dataset(write_notes(tmp_path / "bad", {"reference_answer": 3}))
    squad = load_dataset(REPO / "tests" / "data" / "squad_v11_dev")  # the shipped copy: a clone has no ../shared
    assert squad.questions[0].references == ("Denver Broncos",)
    assert squad.questions[2].references == ("Santa Clara, California", "Levi's Stadium",
                                             "Levi's Stadium in the San Francisco Bay Area at Santa Clara, California.")


@pytest.mark.model
@pytest.mark.llm
def test_the_best_variants_are_framed_by_the_floor_and_the_ceiling(answers: Answers, result: SweepResult) -> None:
    t = answers.table
    best = [v.key for v in result.top(2, "recall", k=3)]
    assert list(t["key"]) == [FLOOR, *best, CEILING]
    assert list(t["kind"]) == ["floor", "variant", "variant", "ceiling"]
    assert list(t["graded_against"]) == ["2 reference, 1 evidence"] * 4
    for m in ("f1", "exact_match", "judge"):
        assert ((t[f"{m}_low"] <= t[m] + 1e-12) & (t[m] <= t[f"{m}_high"] + 1e-12) & t[m].between(0, 1)).all(), m
    assert t.loc[0, "context_tokens"] == 0 and (t["context_tokens"][1:] <= BUDGET).all()
    assert (t["context_tokens"][1:] > 0).all() and (t["tokens_generated"] > 0).all()
    pq = answers.per_question.set_index(["key", "qid"])
    # the invented fact: nothing to know without context, and the evidence holds it word for word
    assert pq.loc[(FLOOR, "q-code"), "f1"] == 0.0 < pq.loc[(CEILING, "q-code"), "f1"]
    assert t["f1"].iloc[-1] >= t["f1"].iloc[0]
    assert pq.loc[(CEILING, "q-restart"), "graded_against"] == "evidence"
    assert pq.loc[(CEILING, "q-restart"), "references"] == ("It is restarted every Sunday night.",)
    assert pq.loc[(CEILING, "q-restart"), "context"] == "It is restarted every Sunday night."
    # paired differences: this row minus the best variant, and minus the floor, over the same questions
    top = t[t["kind"] == "variant"]["f1"].idxmax()
    assert pd.isna(t.loc[top, "f1_vs_best"]) and t.drop(index=top)["f1_vs_best"].notna().all()
    assert t["f1_vs_best"].drop(index=top).tolist() == pytest.approx((t["f1"] - t.loc[top, "f1"]).drop(index=top))
    assert pd.isna(t.loc[0, "f1_vs_floor"]) and t["f1_vs_floor"][1:].tolist() == pytest.approx(t["f1"][1:] - t["f1"][0])
    assert ((t["f1_vs_floor_low"] <= t["f1_vs_floor"] + 1e-12) | t["f1_vs_floor"].isna()).all()
    assert answers.per_question["p_yes"].between(0, 1).all()
    assert (answers.per_question["judge"] == (answers.per_question["p_yes"] > 0.5)).all()


@pytest.mark.model
@pytest.mark.llm
def test_a_second_run_generates_nothing(answers: Answers, result: SweepResult, notes: Dataset, cache: Path) -> None:
    again = wb.LLM(cache_dir=cache, progress=False)
    second = evaluate(result, notes, top=2, llm=again, context_tokens=BUDGET, max_tokens=MAX_TOKENS, judge=True)
    assert again.stats.generated_tokens == 0 and again.stats.generated == 0 and second.config["generated"] == 0
    assert "_local" not in vars(again)  # answers and judgements cached: the model never loaded
    assert answers.config["generated"] > 0
    pd.testing.assert_frame_equal(second.table, answers.table)
    assert second.per_question["cached"].all() and not answers.per_question["cached"].all()


@pytest.mark.model
@pytest.mark.llm
def test_bad_arguments_give_clear_errors(result: SweepResult, notes: Dataset, llm: wb.LLM, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="top must be an int >= 1, got 0"):
        evaluate(result, notes, top=0, llm=llm)
    with pytest.raises(ValueError, match="context_tokens must be an int >= 1"):
        evaluate(result, notes, llm=llm, context_tokens=0)
    with pytest.raises(ValueError, match=r"variant 'nope' is not in the result"):
        evaluate(result, notes, variants=["nope"], llm=llm)
    empty = SweepResult(result.per_question.iloc[:0], result.summary, result.variants, result.provenance,
                        result.hits.iloc[:0])
    with pytest.raises(ValueError, match="the result holds no questions"):
        evaluate(empty, notes, llm=llm)
    other = load_dataset(write_notes(tmp_path / "other", {"question": "What is Bluefinch?"}))
    with pytest.raises(ValueError, match="the result was measured on"):
        evaluate(result, other, llm=llm)
    remote = wb.LLM("m", backend="openai", base_url="http://127.0.0.1:9/v1", cache_dir=tmp_path)
    with pytest.raises(ValueError, match="judge=True reads the model's next-token logits"):
        evaluate(result, notes, llm=remote, judge=True)


def test_cli_help_names_the_answer_options(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["answers", "--help"])
    out = capsys.readouterr().out
    for option in ("--context-tokens", "--max-tokens", "--judge", "--llm", "--top", "--no-report", "--data", "--cache"):
        assert option in out
    assert "best by recall@k" in out


@pytest.mark.model
@pytest.mark.llm
def test_cli_prints_the_table_and_errors_in_one_line(answers: Answers, data: Path, cache: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    main(["answers", "--data", str(data), "--cache", str(cache), "--out", str(tmp_path / "out"), "--no-report",
          "--quiet", *CLI])
    out = capsys.readouterr().out.splitlines()
    estimates, out = out[:2], out[2:]  # one per prompt (no context, with context), before any generation
    assert all(line.startswith("estimate (") and "nothing to generate" in line for line in estimates)
    assert out[0].startswith("Answer quality at 64 cl100k_base tokens of context, SmolLM2-135M-Instruct, 3 questions")
    assert "generated nothing" in out[0]  # the same contexts as the API's run: every answer cached
    rows = [line for line in out if line.startswith(tuple(answers.table["variant"]))]
    assert [r.split("  ")[0] for r in rows] == list(answers.table["variant"])
    assert f"{answers.table['f1'].iloc[0]:.3f} [" in rows[0]
    saved = pd.read_csv(tmp_path / "out" / "answers.csv")
    assert list(saved["key"]) == list(answers.table["key"])
    for extra, message in ((["--context-tokens", "0"], "error: --context-tokens must be >= 1, got 0"),
                           (["--llm", str(tmp_path / "missing.gguf")], "error: --llm: ")):
        with pytest.raises(SystemExit) as e:
            main(["answers", "--data", str(data), "--cache", str(cache), "--out", str(tmp_path / "x"), *CLI, *extra])
        assert str(e.value.code).startswith(message) and "\n" not in str(e.value.code)


@pytest.mark.model
@pytest.mark.llm
def test_the_report_gains_an_answer_quality_section(answers: Answers, result: SweepResult, notes: Dataset,
                                                    tmp_path: Path) -> None:
    page = write_report(result, tmp_path / "r.html", figures={}, dataset=notes, answers=answers).read_text()
    section = page[page.index('<section id="answers">'):]
    section = section[: section.index("</section>")]
    assert "<h2>Answer quality</h2>" in section and "64 cl100k_base tokens" in section
    assert "no context)" in section and "evidence as context)" in section and "judged correct" in section
    assert section.count('<div class="scroll"><table>') == 2  # both tables scroll sideways at 400 px
    assert "Bluefinch" in section  # the answers, for drill-down
    assert page.index('id="scores"') < page.index('id="answers"') < page.index('id="provenance"')
    assert 'id="answers"' not in write_report(result, tmp_path / "plain.html", figures={}).read_text()
