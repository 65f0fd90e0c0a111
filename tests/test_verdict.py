"""The verdict on constructed results whose answer is known: a clear winner, a tie, one variant."""

from __future__ import annotations

import html
import textwrap
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import REPO

from workbench import load_dataset, parse_variant, sweep
from workbench.cli import answer
from workbench.cli.options import WIDTH
from workbench.evaluation import stats
from workbench.models.embed import Embedder
from workbench.report import write_report
from workbench.results.provenance import ModelInfo, Provenance
from workbench.results.result import SweepResult
from workbench.results.verdict import document_warning, evidence_warning, sweep_warnings, truncation_warning, verdict
from workbench.widgets.panel import Panel

N = 120  # questions


def constructed(recall: dict[str, np.ndarray], tokens: dict[str, float]) -> SweepResult:
    """A result with per-question recall@5 and context_tokens@5 given per variant label."""
    rows = []
    for name, values in recall.items():
        for i, value in enumerate(values):
            rows.append((f"key-{name}", name, f"q{i:03d}", 5, "recall", float(value)))
            rows.append((f"key-{name}", name, f"q{i:03d}", 5, "context_tokens", tokens[name] + i % 7))
    pq = pd.DataFrame(rows, columns=["key", "variant", "qid", "k", "metric", "value"])
    variants = pd.DataFrame({"key": [f"key-{n}" for n in recall], "variant": list(recall),
                             "chunks": [int(tokens[n]) // 10 for n in recall],
                             "tokens_embedded": [int(tokens[n]) * 3 for n in recall]})
    return SweepResult(pq, stats.summarize(pq, n_resamples=500), variants, Provenance.from_config({"ks": [5]}))


def test_a_clear_winner_is_named_and_not_called_tied() -> None:
    rng = np.random.default_rng(1)
    result = constructed({"small": rng.binomial(1, 0.45, N), "big": rng.binomial(1, 0.9, N),
                          "mid": rng.binomial(1, 0.55, N)}, {"small": 300, "big": 1200, "mid": 600})
    v = verdict(result)
    assert (v.metric, v.k, v.best, v.tied, v.trade_off) == ("recall", 5, "key-big", (), None)
    means = result.per_question.query("metric == 'recall'").groupby("key")["value"].mean()
    assert v.runner_up == means.drop("key-big").idxmax()
    first, second = v.sentences()  # no sentence about ties: there are none
    assert first.startswith(f"big has the highest recall@5: {means['key-big']:.3f}")
    assert "beats every other variant" in second and "tied" not in second
    assert f"{means['key-big'] - means[v.runner_up]:+.3f}" in second
    assert means["key-small"] < means["key-mid"] < means["key-big"]  # so every variant buys recall with tokens
    assert v.pareto == ("key-small", "key-mid", "key-big")


def test_a_tie_is_called_a_tie_and_the_cheaper_twin_is_a_trade_off_never_the_best() -> None:
    """The trial's finding: a cheaper variant tied with the top was the headline and the top was "tied".
    Now the highest mean is the headline, the tie is said plainly, and the cheaper twin is a trade-off
    with what it could lose."""
    rng = np.random.default_rng(2)
    base = rng.binomial(1, 0.8, N).astype(float)
    twin = base.copy()
    ones, zeros = np.flatnonzero(base == 1), np.flatnonzero(base == 0)
    twin[ones[:4]], twin[zeros[:3]] = 0, 1  # b misses 4 that a finds and finds 3 that a misses
    result = constructed({"a": base, "b": twin, "worse": rng.binomial(1, 0.3, N)},
                         {"a": 1000, "b": 400, "worse": 100})
    v = verdict(result)
    assert (v.best, v.runner_up, v.tied, v.trade_off) == ("key-a", "key-b", ("key-b",), "key-b")
    means = result.per_question.query("metric == 'recall'").groupby("key")["value"].mean()
    first, second, third = v.sentences()
    assert first.startswith(f"a has the highest recall@5: {means['key-a']:.3f} [")
    assert second.startswith("These 120 questions cannot separate the top 2: a and b: the paired interval of each "
                             "difference holds 0, so read them as tied, not as equal. The closest: +0.008 over the "
                             "runner-up b (paired interval [")
    # b - a is -1 on 4 questions, +1 on 3, 0 on the rest: mean -1/120, sd sqrt((7 - 1/120) / 119);
    # n = ((1.959964 + 0.841621) * sd / (1/120))^2 = 6640.3 -> 6641
    sd = np.sqrt((7 - 1 / 120) / 119)
    assert np.ceil((2.801585 * sd * 120) ** 2) == 6641 == v.row("key-b")["questions_needed"]
    assert "About 6,641 questions would separate those two at this difference" in second
    loss = -v.row("key-b")["diff_low"]
    assert third == (f"A trade-off, not a better variant: b, tied with it, reaches {means['key-b']:.3f} against "
                     f"{means['key-a']:.3f} with 60% fewer context tokens per question (403 against 1,003) and 60% "
                     "fewer tokens embedded or generated to build the index (1,200 against 3,000); with these "
                     f"questions its loss could be as large as {loss:.3f}.")
    assert loss > 0 and v.pareto == ("key-worse", "key-b", "key-a")  # least context first; each buys recall


def test_a_dominated_tied_variant_is_no_trade_off() -> None:
    """c ties with the top and is cheaper, but d, which the questions can tell from the top, scores
    higher than c for fewer tokens: c is dominated, so nothing is offered as a trade-off."""
    rng = np.random.default_rng(7)
    base = rng.binomial(1, 0.8, N).astype(float)
    close = base.copy()
    close[np.flatnonzero(base == 1)[:10]] = 0  # d: 10 fewer found, never one more: significantly worse
    loose = rng.permutation(base)  # c: the same mean, unpaired: a wide interval holds 0
    loose[np.flatnonzero(loose == 1)[:11]] = 0  # just below d
    result = constructed({"a": base, "c": loose, "d": close}, {"a": 1000, "c": 400, "d": 300})
    v = verdict(result)
    t = v.table.set_index("key")
    assert bool(t.loc["key-c", "tied"]) and not t.loc["key-d", "tied"]  # the premise
    assert t.loc["key-d", "mean"] > t.loc["key-c", "mean"] and not t.loc["key-c", "pareto"]
    assert v.best == "key-a" and v.tied == ("key-c",) and v.trade_off is None
    assert not any("trade-off" in s for s in v.sentences())


def test_a_saving_under_five_percent_is_no_trade_off() -> None:
    rng = np.random.default_rng(5)
    base = rng.binomial(1, 0.8, N).astype(float)
    twin = base.copy()
    ones, zeros = np.flatnonzero(base == 1), np.flatnonzero(base == 0)
    twin[ones[:3]], twin[zeros[:2]] = 0, 1
    v = verdict(constructed({"a": base, "b": twin}, {"a": 1000, "b": 990}))
    assert v.best == "key-a" and v.tied == ("key-b",) and v.trade_off is None
    assert len(v.sentences()) == 2


def test_model_time_per_question_is_a_cost_never_about_the_same() -> None:
    """The trial's +rerank: fewer context tokens by a hair, seconds of model time per question, lower
    recall. It is off the Pareto set, no trade-off, and the verdict says what it spends."""
    rng = np.random.default_rng(9)
    plain = rng.binomial(1, 0.8, N).astype(float)
    slow = plain.copy()
    slow[np.flatnonzero(plain == 1)[:2]] = 0  # two fewer found: tied with plain on 120 questions
    result = constructed({"plain": plain, "reranked": slow}, {"plain": 1000, "reranked": 990})
    variants = result.variants.assign(rerank_seconds_per_question=[0.0, 22.7])
    result = SweepResult(result.per_question, result.summary, variants, result.provenance)
    v = verdict(result)
    t = v.table.set_index("key")
    assert v.tied == ("key-reranked",) and t.loc["key-reranked", "query_seconds"] == 22.7
    assert v.pareto == ("key-plain",) and v.trade_off is None
    assert v.sentences()[-1] == "Model cost: plain none; reranked 22.70 s of model time per question."
    faster = verdict(constructed({"plain": plain, "reranked": slow}, {"plain": 1000, "reranked": 990}))
    assert faster.pareto == ("key-plain",) and not any("Model cost" in s for s in faster.sentences())


def test_a_verdict_at_an_equal_context_budget() -> None:
    """recall@budget=1024 judges the budget rows (k = 0), names the choice, and ranks by them."""
    rng = np.random.default_rng(10)
    result = constructed({"small": rng.binomial(1, 0.5, N), "big": rng.binomial(1, 0.9, N)},
                         {"small": 300, "big": 1200})
    at_budget = result.per_question.assign(k=0, budget=1024, value=lambda t: np.where(
        (t["metric"] == "recall") & (t["variant"] == "small"), 1.0, t["value"]))  # small fills the budget best
    pq = pd.concat([result.per_question.assign(budget=0), at_budget], ignore_index=True)
    budgeted = SweepResult(pq, stats.summarize(pq, n_resamples=500), result.variants,
                           Provenance.from_config({"ks": [5], "budgets": [1024]}))
    v = budgeted.verdict("recall@budget=1024")
    assert (v.at.label, v.best, v.k) == ("recall@1,024 tokens", "key-small", 0)
    assert v.sentences()[0].startswith("small has the highest recall@1,024 tokens: 1.000 [")
    assert budgeted.verdict("recall").best == "key-big"  # at k = 5, as before


def test_truncated_chunks_get_a_warning_in_the_verdict() -> None:
    rng = np.random.default_rng(8)
    result = constructed({"small": rng.binomial(1, 0.45, N), "big": rng.binomial(1, 0.9, N)},
                         {"small": 300, "big": 1200})
    assert not any("truncated" in s for s in verdict(result).sentences())  # no column, no claim
    variants = result.variants.assign(truncated_chunks=[0, 110], retriever=["dense", "dense"])  # big: 120 chunks
    window = result.provenance.with_(models=(ModelInfo("m", "0" * 16, window=254),))
    warned = SweepResult(result.per_question, result.summary, variants, window)
    warning = verdict(warned).sentences()[-1]
    assert warning.startswith("Warning: 1 of 2 variants embed chunks longer than the 254 word pieces the model reads "
                              "(big 92% of their chunks), so they are ranked by the head of each chunk only")
    assert "(tokenizer=model, size <= 254)" in warning
    under = variants.assign(truncated_chunks=[0, 12])  # 10% of 120: not more than the threshold
    assert truncation_warning(under, 254) is None


def test_the_table_says_how_sure_the_winner_is() -> None:
    rng = np.random.default_rng(5)
    result = constructed({"a": rng.binomial(1, 0.6, N), "b": rng.binomial(1, 0.62, N), "c": rng.binomial(1, 0.2, N),
                          "d": rng.binomial(1, 0.58, N)}, {"a": 100, "b": 200, "c": 300, "d": 400})
    v = verdict(result)
    t = v.table.set_index("key")
    assert t["p_best"].sum() == pytest.approx(1.0, abs=1e-12) and t["p_best"].idxmax() == v.best
    assert t.loc["key-c", "p_best"] == 0.0
    others = t.drop(v.best)
    np.testing.assert_allclose(others["p_holm"], stats.holm(others["p_value"]), rtol=1e-12)
    assert (others["p_holm"] >= others["p_value"]).all() and others["questions_needed"].gt(0).all()


def test_one_variant_and_unknown_metric() -> None:
    result = constructed({"only": np.ones(N)}, {"only": 50})
    v = verdict(result)
    assert v.runner_up is None and v.sentences()[1].startswith("It is the only variant")
    with pytest.raises(ValueError, match="metric: 'nope' is not a metric; known: "):
        verdict(result, metric="nope")
    with pytest.raises(ValueError, match="metric 'ndcg' not in the result; known: "):
        verdict(result, metric="ndcg")


def test_on_context_tokens_the_best_is_the_cheapest() -> None:
    """A verdict on a cost ranks by fewest tokens, and agrees with stats.against_best on who is best."""
    rng = np.random.default_rng(6)
    result = constructed({"small": rng.binomial(1, 0.45, N), "big": rng.binomial(1, 0.9, N),
                          "mid": rng.binomial(1, 0.55, N)}, {"small": 300, "big": 1200, "mid": 600})
    v = verdict(result, metric="context_tokens")
    assert (v.best, v.runner_up, v.tied, v.pareto) == ("key-small", "key-mid", (), ("key-small",))
    t = v.table.set_index("key")
    assert list(t.index) == ["key-small", "key-mid", "key-big"]
    assert t["diff"].round(9).tolist() == [0.0, 300.0, 900.0] and t.loc["key-small", "p_best"] == 1.0
    assert v.sentences()[0].startswith(f"small has the lowest context_tokens@5: {t.loc['key-small', 'mean']:.3f}")
    assert "-300.000 over the runner-up mid" in v.sentences()[1]


def test_the_report_opens_with_the_verdict(tmp_path) -> None:
    rng = np.random.default_rng(3)
    result = constructed({"x": rng.binomial(1, 0.4, N), "y<script>": rng.binomial(1, 0.95, N)},
                         {"x": 100, "y<script>": 900})
    text = write_report(result, tmp_path / "r.html", figures={}).read_text(encoding="utf-8")
    assert text.index('id="verdict"') < text.index('id="scores"') < text.index('id="against-best"')
    assert "y&lt;script&gt; has the highest recall@5" in text and "<script>" not in text
    assert text.count("evidence</a>") == len(verdict(result).sentences()) == 2  # each sentence links its evidence


def test_identical_variants_are_tied_by_zero_not_minus_zero(tmp_path) -> None:
    same = np.random.default_rng(4).binomial(1, 0.7, N)
    result = constructed({"one": same, "two": same.copy()}, {"one": 500, "two": 700})
    v = verdict(result)
    assert v.tied == (v.runner_up,) and "-0.000" not in " ".join(v.sentences())
    assert v.sentences()[1].startswith("These 120 questions cannot separate the top 2: one and two")
    assert "+0.000 over the runner-up two (paired interval [+0.000, +0.000]" in v.sentences()[1]
    assert "no number of questions would separate them" in v.sentences()[1]
    assert v.table["p_best"].tolist() == [0.5, 0.5]
    text = write_report(result, tmp_path / "r.html", figures={}).read_text(encoding="utf-8")
    section = text[text.index('id="verdict"'):text.index("</section>")]
    assert "cannot separate the top 2" in section and "<td>tied</td>" in section and "<th>P(best)</th>" in section
    assert '<tr class="headline"><td class="label">★\xa0one' in section  # marked at every width
    assert "<td>0.50</td>" in section  # P(best) of each twin


@pytest.fixture(scope="module")
def squad_swept(fake_embedder: Embedder, tmp_path_factory: pytest.TempPathFactory) -> SweepResult:
    """The SQuAD excerpt: answers of 10 characters (median) against chunks of 250 and more, and
    106 of its 130 questions on the Super Bowl article."""
    ds = load_dataset(REPO / "tests" / "data" / "squad_v11_dev")
    variants = [parse_variant("fixed:size=256+bm25"), parse_variant("sentence:size=128+bm25")]
    return sweep(ds, variants, store=tmp_path_factory.mktemp("store"), embedder=fake_embedder, progress=False,
                 ks=(1, 5))


def test_short_evidence_and_one_document_are_warned_of_in_the_cli_the_report_and_the_widgets(
        squad_swept: SweepResult, tmp_path: Path) -> None:
    r = squad_swept
    assert r.provenance.dataset.evidence_chars == 10.0 and r.provenance.dataset.main_document == ("squad-dev-00", 106)
    assert sorted(r.variants["min_chunk_chars"]) == [263, 272]  # a chunk's tail is its smallest
    evidence, document = verdict(r).sentences()[-2:]
    assert evidence.startswith("Warning: the median evidence span is 10 characters, and every chunk of 2 of 2 "
                               "variants is over 4 times as long (smallest chunk: sentence(size=128, overlap=0)+bm25 "
                               "272, fixed(size=256, overlap=0)+bm25 263 characters)")
    assert document.startswith("Warning: 106 of the 130 questions (82%) have their evidence in one document of 2, "
                               "'squad-dev-00'")
    printed = "\n".join(answer(r))
    page = write_report(r, tmp_path / "r.html", figures={}).read_text(encoding="utf-8")
    shown = Panel.warnings_html(r)
    for warning in (evidence, document):
        assert " ".join(textwrap.wrap(warning, WIDTH)) in " ".join(printed.split())
        assert f'<p class="warning" role="alert"><b>Warning:</b> {html.escape(warning.split(": ", 1)[1])}</p>' in page
        assert html.escape(warning) in shown
    one = r.variants[r.variants["variant"].str.startswith("fixed")]
    assert evidence_warning(one, 70.0) is None  # 263 is not over 4 times 70 characters
    assert "smallest chunk: fixed(size=256, overlap=0)+bm25 263 characters" in evidence_warning(one, 65.0)


def test_a_spread_out_set_with_long_evidence_gets_no_warning(fake_embedder: Embedder, tmp_path: Path) -> None:
    """Chroma's excerpt: spans of 120 characters (median), 7 of 20 questions on its largest document."""
    ds = load_dataset(REPO / "tests" / "data" / "chroma_general")
    r = sweep(ds, [parse_variant("sentence:size=128+bm25")], store=tmp_path, embedder=fake_embedder, progress=False,
              ks=(1, 5))
    d = r.provenance.dataset
    assert d.main_document == ("state_of_the_union", 7) and r.variants["min_chunk_chars"].item() == 134
    assert sweep_warnings(r.variants, r.provenance) == [] and not verdict(r).warnings
    assert document_warning(replace(d, main_document=("state_of_the_union", 11))) is not None  # 11 > half of 20
    assert document_warning(replace(d, main_document=("state_of_the_union", 20), documents=1)) is None
