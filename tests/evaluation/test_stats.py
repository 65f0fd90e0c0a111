"""Bootstrap summaries and paired comparisons: exact values where they are known, scipy agreement,
determinism, and independence of one group's interval from the others; P(best), Holm's
correction and questions-needed against hand computations and a slow reference loop."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from workbench.evaluation import stats
from workbench.evaluation.stats import (
    against_best,
    holm,
    mean_ci,
    paired_compare,
    prob_best,
    questions_needed,
    ranking_ties,
    resampled_means,
    summarize,
    summarize_by_group,
    wilson,
    with_prob_best,
)


def frame(variant: str, values, metric: str = "recall", k: int = 5) -> pd.DataFrame:
    return pd.DataFrame(
        {"variant": variant, "qid": [f"q{i}" for i in range(len(values))], "k": k, "metric": metric, "value": values}
    )


@pytest.fixture
def per_question() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    return pd.concat(
        [
            frame("A", rng.random(60)),
            frame("A", (rng.random(60) < 0.3).astype(float), metric="hit"),
            frame("B", np.zeros(60)),
            frame("B", np.ones(60), metric="hit"),
            frame("A", rng.random(40), k=1),
        ],
        ignore_index=True,
    )


def test_summary_columns_order_means_and_sizes(per_question):
    s = summarize(per_question, n_resamples=500)
    assert list(s.columns) == ["variant", "metric", "k", "mean", "ci_low", "ci_high", "n"]
    assert list(zip(s["variant"], s["metric"], s["k"], strict=True)) == [
        ("A", "recall", 5), ("A", "hit", 5), ("B", "recall", 5), ("B", "hit", 5), ("A", "recall", 1),
    ]  # fmt: skip
    assert s["n"].tolist() == [60, 60, 60, 60, 40]
    groups = per_question.groupby(["variant", "metric", "k"], sort=False)["value"]
    assert s["mean"].tolist() == pytest.approx([np.mean(v.to_numpy()) for _, v in groups], rel=1e-12)
    assert not s.isna().any().any()
    assert (s["ci_low"] <= s["mean"]).all() and (s["mean"] <= s["ci_high"]).all()


def test_all_hit_or_all_missed_gets_what_n_questions_can_show(per_question):
    """60 of 60 hits is not certainty: Wilson's interval, not the bootstrap's zero width; a constant
    cost keeps its point interval (it is no proportion)."""
    s = summarize(per_question, n_resamples=500, method="BCa").set_index(["variant", "metric"])
    low, high = wilson(60, 60)
    assert tuple(s.loc[("B", "hit"), ["mean", "ci_low", "ci_high"]]) == (1.0, low, 1.0) and 0.93 < low < 0.95
    assert tuple(s.loc[("B", "recall"), ["mean", "ci_low", "ci_high"]]) == (0.0, *wilson(0, 60))
    assert wilson(0, 60)[1] == pytest.approx(1 - low)  # the mirror of 60 of 60
    costs = summarize(frame("C", np.full(30, 120.0), metric="context_tokens"), n_resamples=500)
    assert tuple(costs[["mean", "ci_low", "ci_high"]].iloc[0]) == (120.0, 120.0, 120.0)
    assert wilson(10, 20, 0.95) == pytest.approx((0.2993, 0.7007), abs=1e-4)  # a textbook case


def test_intervals_are_scipy_bootstrap_and_seeded(per_question):
    x = per_question[(per_question.variant == "A") & (per_question.metric == "hit")]["value"].to_numpy()
    for method in ("percentile", "BCa"):
        ref = sps.bootstrap(
            (x,), np.mean, n_resamples=500, method=method, rng=np.random.default_rng(3)
        ).confidence_interval
        low, high = mean_ci(x[None, :], n_resamples=500, seed=3, method=method)
        assert (low[0], high[0]) == (ref.low, ref.high)
    a = summarize(per_question, n_resamples=500, seed=1)
    assert a.equals(summarize(per_question, n_resamples=500, seed=1))
    assert not a["ci_low"].equals(summarize(per_question, n_resamples=500, seed=2)["ci_low"])


def test_resampled_means_are_the_means_of_scipys_draws(monkeypatch):
    """Counts times scores equals gathering the drawn questions (scipy's way), on the same
    seeded draws, in batches or not; and the interval on skewed float scores is scipy's."""
    rng = np.random.default_rng(7)
    x = rng.beta(0.3, 0.7, size=(301, 4))  # skewed, piled up near 0 and 1, like recall
    draws = np.random.default_rng(5).integers(0, len(x), size=(1000, len(x)))
    gathered = x[draws].mean(axis=1)
    np.testing.assert_allclose(resampled_means(x, 1000, 5), gathered, rtol=1e-12)
    # batches of 64 replicates, one stream of draws
    monkeypatch.setattr("workbench.evaluation.stats._MAX_CELLS", 301 * 64)
    np.testing.assert_allclose(resampled_means(x, 999, 5), gathered[:999], rtol=1e-12)
    ref = sps.bootstrap((x[:, 0],), np.mean, n_resamples=1000, method="percentile",
                        rng=np.random.default_rng(5)).confidence_interval
    low, high = mean_ci(x[:, :1].T, n_resamples=1000, seed=5)
    np.testing.assert_allclose([low[0], high[0]], [ref.low, ref.high], rtol=1e-12)


def test_a_groups_interval_depends_neither_on_other_groups_nor_on_row_order(per_question):
    def run(df: pd.DataFrame) -> pd.DataFrame:
        return summarize(df, n_resamples=500).set_index(["variant", "metric", "k"])

    full = run(per_question)
    alone = run(per_question[per_question.metric == "hit"])
    pd.testing.assert_frame_equal(full.loc[alone.index], alone, check_exact=True)
    shuffled = run(per_question.sample(frac=1, random_state=3))
    pd.testing.assert_frame_equal(shuffled.loc[full.index], full, check_exact=True)


def test_a_table_of_many_variants_gives_each_the_bits_of_its_own_rows_alone():
    """A sweep summarises its whole table in one call (workbench.run.sweep), the widgets each variant
    as it comes: both must show the same intervals, to the last bit. With every variant's groups in
    one matrix product, its shape moved the last bits of some sums (9 of these 506 bounds, before)."""
    rng = np.random.default_rng(11)
    table = pd.concat([frame(f"v{v}", rng.random(276) ** 3, metric=f"m{m}").assign(key=f"key{v}")
                       for v in range(23) for m in range(11)], ignore_index=True)
    whole = summarize(table)
    alone = pd.concat([summarize(table[table["key"] == f"key{v}"]) for v in range(23)], ignore_index=True)
    pd.testing.assert_frame_equal(whole, alone, check_exact=True)
    assert list(whole.columns[:4]) == ["key", "variant", "metric", "k"]


def test_bad_input_is_named():
    with pytest.raises(ValueError, match=r"missing column\(s\) \['variant'\]"):
        summarize(pd.DataFrame({"qid": [], "k": [], "metric": [], "value": []}))
    with pytest.raises(ValueError, match=r"confidence must be in \(0, 1\)"):
        mean_ci(np.zeros((1, 3)), confidence=1.0)
    low, high = mean_ci(np.array([[0.3]]))  # one question: no spread to speak of
    assert np.isnan(low[0]) and np.isnan(high[0])


def test_paired_test_is_exact_on_small_samples():
    # b beats a by 1 on all 8 questions: of the 2**8 sign flips only "all +" reaches +1 and only
    # "all -" reaches -1, so the exact two-sided p-value is 2 / 256.
    a, b = np.zeros(8), np.ones(8)
    df = pd.concat([frame("a", a), frame("b", b)], ignore_index=True)
    r = paired_compare(df, "a", "b", "recall", 5)
    assert r["p_value"] == 2 / 256
    assert (r["n"], r["mean_a"], r["mean_b"], r["diff"], r["ci_low"], r["ci_high"]) == (8, 0.0, 1.0, 1.0, 1.0, 1.0)
    # 7 wins of 1 and one loss of 1: flips reaching |mean| >= 6/8 are those with at most one
    # negative sign or at most one positive: 2 * (1 + 8) = 18 of 256
    b2 = np.array([1, 1, 1, 1, 1, 1, 1, -1.0])
    r2 = paired_compare(pd.concat([frame("a", a), frame("b", b2)], ignore_index=True), "a", "b", "recall", 5)
    assert r2["p_value"] == 18 / 256 and r2["diff"] == 0.75


def test_paired_compare_pairs_by_qid_and_is_stable():
    rng = np.random.default_rng(0)
    x = rng.random(200)
    y = np.clip(x + rng.normal(0.05, 0.1, 200), 0, 1)
    df = pd.concat([frame("a", x), frame("b", y)], ignore_index=True)
    r = paired_compare(df, "a", "b", "recall", 5, n_resamples=2000)
    assert r == paired_compare(df.sample(frac=1, random_state=1), "a", "b", "recall", 5, n_resamples=2000)
    assert r["diff"] == pytest.approx(np.mean(y - x), rel=1e-12)
    assert r["ci_low"] < r["diff"] < r["ci_high"] and r["ci_low"] > 0
    assert r["p_value"] == 2 / 2001  # no random sign flip is as extreme: 2 * (0 + 1) / (2000 + 1)
    same = paired_compare(pd.concat([frame("a", x), frame("b", x)], ignore_index=True), "a", "b", "recall", 5)
    assert (same["diff"], same["ci_low"], same["ci_high"], same["p_value"]) == (0.0, 0.0, 0.0, 1.0)


def test_paired_compare_names_what_is_missing():
    df = frame("a", np.zeros(5))
    with pytest.raises(ValueError, match="no rows for variant='b', metric='recall', k=5"):
        paired_compare(df, "a", "b", "recall", 5)
    with pytest.raises(ValueError, match="duplicate qids for variant='a'"):
        paired_compare(pd.concat([df, df, frame("b", np.zeros(5))]), "a", "b", "recall", 5)


def test_against_best_ranks_and_pairs_every_other_variant():
    base = np.linspace(0, 1, 12)
    pq = pd.concat([frame("a", base), frame("b", base + 0.1), frame("c", base - 0.2)], ignore_index=True)
    table = against_best(pq, "recall", 5)
    assert set(table["best"]) == {"b"}
    assert list(table["variant"]) == ["a", "c"]  # best first, then by mean
    assert table["diff"].round(12).tolist() == [-0.1, -0.3]
    assert (table["ci_high"] < 0).all() and (table["p_value"] < 0.01).all()
    with pytest.raises(ValueError, match="no rows for metric='mrr'"):
        against_best(pq, "mrr", 5)


def test_against_best_takes_the_fewest_context_tokens_as_best():
    """A cost's best is its lowest mean (stats.lower_is_better), not the variant that sends the most."""
    base = np.arange(200.0, 260.0, 5.0)  # whole tokens: each difference is exact
    pq = pd.concat([frame(name, base + extra, metric="context_tokens")
                    for name, extra in (("costly", 600), ("cheap", 0), ("mid", 300))], ignore_index=True)
    table = against_best(pq, "context_tokens", 5)
    assert set(table["best"]) == {"cheap"}
    assert list(table["variant"]) == ["mid", "costly"]  # nearest the best first
    assert table["diff"].round(9).tolist() == [300.0, 600.0]  # each minus the best: costs more
    assert (table["ci_low"] > 0).all() and (table["p_value"] < 0.01).all()


def test_p_best_sums_to_one_for_every_metric_at_every_k(per_question):
    rng = np.random.default_rng(11)
    pq = pd.concat([per_question, frame("C", rng.random(60)), frame("C", rng.random(60) < 0.5, metric="hit"),
                    frame("C", rng.random(40), k=1)], ignore_index=True)
    s = with_prob_best(summarize(pq, n_resamples=500), pq, n_resamples=500)
    assert s["p_best"].between(0, 1).all()
    np.testing.assert_allclose(s.groupby(["metric", "k"])["p_best"].sum(), 1.0, rtol=1e-12)
    assert s.set_index(["variant", "metric", "k"]).loc[("B", "hit", 5), "p_best"] == 1.0  # all 1: never beaten
    assert s.drop(columns="p_best").equals(summarize(pq, n_resamples=500))  # the rest of the summary is untouched


def test_with_prob_best_equals_prob_best_of_each_cut_off_alone():
    """with_prob_best pivots once for every cut-off: its numbers are prob_best's, cut-off by cut-off,
    whatever the row order, with questions some variant lacks, budgets and a lower-is-better cost."""
    rng = np.random.default_rng(3)
    parts = [frame(v, rng.random(n), metric=m, k=k) for v, n in (("A", 40), ("B", 40), ("C", 35))
             for m, k in (("recall", 5), ("recall", 1), ("hit", 5), ("context_tokens", 5))]
    parts += [frame(v, rng.random(40), k=0).assign(budget=256) for v in ("A", "B", "C")]
    pq = pd.concat(parts, ignore_index=True)
    pq["budget"] = pq["budget"].fillna(0).astype(int)
    pq = pq.sample(frac=1, random_state=1).reset_index(drop=True)  # rows in no order
    s = with_prob_best(summarize(pq, n_resamples=300), pq, n_resamples=300, seed=2)
    for (metric, k, budget), rows in pq.groupby(["metric", "k", "budget"]):
        alone = prob_best(pq, metric, k, 300, 2, higher_is_better=metric != "context_tokens", budget=budget)
        got = rows[["variant"]].drop_duplicates().merge(s, on="variant").query(
            "metric == @metric and k == @k and budget == @budget").set_index("variant")["p_best"]
        assert got[alone.index].tolist() == alone.tolist()  # equal to the last digit
    with pytest.raises(ValueError, match="duplicate qids for one variant at metric='hit', k=5"):
        with_prob_best(s, pd.concat([pq, pq[pq["metric"] == "hit"].head(1)]))


def test_with_prob_best_reads_its_numbers_back_from_a_cache_to_the_last_digit(per_question, tmp_path, monkeypatch):
    summary = summarize(per_question, n_resamples=300)
    first = with_prob_best(summary, per_question, n_resamples=300, cache=tmp_path)
    assert len(list((tmp_path / "stats").glob("prob_best-*.parquet"))) == 1
    assert first.equals(with_prob_best(summary, per_question, n_resamples=300))  # as without a cache
    monkeypatch.setattr(stats, "_prob_best_rows", lambda *a: pytest.fail("computed again"))
    again = with_prob_best(summary, per_question, n_resamples=300, cache=tmp_path)
    pd.testing.assert_frame_equal(again, first)
    other = per_question.assign(value=per_question["value"] * 0.5)  # other scores: not served the old numbers
    with pytest.raises(pytest.fail.Exception, match="computed again"):
        with_prob_best(summary, other, n_resamples=300, cache=tmp_path)


def test_p_best_is_one_for_a_dominant_variant_and_split_between_twins():
    rng = np.random.default_rng(5)
    x = rng.random(50)
    pq = pd.concat([frame("low", x), frame("high", x + 0.01), frame("twin", x + 0.01)], ignore_index=True)
    p = prob_best(pq, "recall", 5, n_resamples=500)
    assert p.to_dict() == {"low": 0.0, "high": 0.5, "twin": 0.5}  # identical columns tie in every replicate
    alone = prob_best(pq[pq.variant != "twin"], "recall", 5, n_resamples=500)
    assert alone.to_dict() == {"low": 0.0, "high": 1.0}


def slow_prob_best(x: np.ndarray, n_resamples: int, seed: int) -> np.ndarray:
    """The definition, one replicate at a time: the same question draws for every variant."""
    draws = np.random.default_rng(seed).integers(0, len(x), size=(n_resamples, len(x)))
    wins = np.zeros(x.shape[1])
    for rows in draws:
        means = [np.mean(x[rows, j]) for j in range(x.shape[1])]
        best = [j for j, m in enumerate(means) if m == max(means)]
        for j in best:
            wins[j] += 1 / len(best)
    return wins / n_resamples


def test_p_best_matches_a_slow_loop_and_uses_only_shared_questions():
    rng = np.random.default_rng(9)
    x = rng.binomial(1, [0.5, 0.55, 0.6, 0.6], size=(30, 4)).astype(float)  # 0/1: many tied replicates
    names = ["a", "b", "c", "d"]
    pq = pd.concat([frame(n, x[:, j]) for j, n in enumerate(names)], ignore_index=True)
    p = prob_best(pq, "recall", 5, n_resamples=300, seed=4)
    in_qid_order = np.argsort([f"q{i}" for i in range(len(x))])  # questions are resampled in qid order
    assert p.tolist() == slow_prob_best(x[in_qid_order], 300, 4).tolist()
    extra = pd.DataFrame({"variant": "a", "qid": ["q99"], "k": 5, "metric": "recall", "value": [1.0]})
    assert prob_best(pd.concat([extra, pq.sample(frac=1, random_state=2)]), "recall", 5, 300, 4)[p.index].equals(p)
    assert not prob_best(pq, "recall", 5, n_resamples=300, seed=5).equals(p)


def test_fewer_context_tokens_is_better():
    cheap, costly = np.full(40, 300.0), np.full(40, 900.0)
    cheap[0] = 2000.0  # worse on one question, better on the mean of almost every resample
    pq = pd.concat([frame("cheap", cheap, metric="context_tokens"), frame("costly", costly, metric="context_tokens")],
                   ignore_index=True)
    s = with_prob_best(summarize(pq, n_resamples=200), pq, n_resamples=200).set_index("variant")
    assert s.loc["cheap", "p_best"] > 0.95 and s.loc["cheap", "p_best"] + s.loc["costly", "p_best"] == 1.0
    assert prob_best(pq, "context_tokens", 5, 200, higher_is_better=False).equals(s["p_best"].rename_axis(None))
    assert prob_best(pq, "context_tokens", 5, 200)["cheap"] < 0.05


def test_holm_against_a_hand_computation():
    # sorted: 0.005 * 4 = 0.02; 0.01 * 3 = 0.03; 0.03 * 2 = 0.06; 0.04 * 1 = 0.04 -> max so far 0.06
    np.testing.assert_allclose(holm([0.01, 0.04, 0.03, 0.005]), [0.03, 0.06, 0.06, 0.02], rtol=1e-12)
    assert holm([0.5, 0.6]).tolist() == [1.0, 1.0]  # 0.5 * 2 capped at 1, and never below an earlier one
    assert holm([0.2]).tolist() == [0.2]  # one comparison: nothing to correct
    assert holm([]).tolist() == []


def test_questions_needed_against_a_hand_computation():
    # z_0.975 = 1.959964, z_0.8 = 0.841621: (2.801585 * 0.5 / 0.1)^2 = 196.22 -> 197
    assert questions_needed(0.1, 0.5) == 197 and questions_needed(-0.1, 0.5) == 197
    assert questions_needed(0.1, 0.5, power=0.5) == 97  # (1.959964 * 5)^2 = 96.04 -> 97
    assert questions_needed(0.0, 0.5) == float("inf")
    assert questions_needed(0.3, 0.0) == 2  # no spread: the floor of a paired test
    sizes = [questions_needed(d, 0.4) for d in (0.01, 0.02, 0.05, 0.1, 0.2, 0.4)]
    assert sizes == sorted(sizes, reverse=True) and len(set(sizes)) == len(sizes)


def test_against_best_corrects_with_holm_and_says_how_many_questions():
    rng = np.random.default_rng(3)
    base = rng.integers(0, 4, 40) / 4  # quarters: "far" differs from "best" by exactly -0.75 everywhere
    pq = pd.concat([frame("best", base + 0.5), frame("near", base + 0.45 + rng.normal(0, 0.1, 40)),
                    frame("far", base - 0.25), frame("mid", base + 0.4 + rng.normal(0, 0.05, 40))],
                   ignore_index=True)
    table = against_best(pq, "recall", 5).set_index("variant")
    assert set(table["best"]) == {"best"}
    np.testing.assert_allclose(table["p_holm"], holm(table["p_value"]), rtol=1e-12)
    assert (table["p_holm"] >= table["p_value"]).all()
    d = (pq[pq.variant == "near"]["value"].to_numpy() - pq[pq.variant == "best"]["value"].to_numpy())
    assert table.loc["near", "questions_needed"] == questions_needed(d.mean(), d.std(ddof=1))
    assert table.loc["far", "questions_needed"] == 2  # every question loses 0.75: no spread


def test_p_best_at_each_budget_is_its_own_cut_off():
    # budget rows carry k = 0 and budget > 0: A wins at 256 tokens, B at 512
    x = np.linspace(0, 1, 30)
    pq = pd.concat([frame("A", x, k=0).assign(budget=256), frame("B", x - 0.1, k=0).assign(budget=256),
                    frame("A", x - 0.1, k=0).assign(budget=512), frame("B", x, k=0).assign(budget=512),
                    frame("A", x).assign(budget=0), frame("B", x).assign(budget=0)], ignore_index=True)
    assert prob_best(pq, "recall", 0, 200, budget=256).to_dict() == {"A": 1.0, "B": 0.0}
    s = with_prob_best(summarize(pq, n_resamples=200), pq, n_resamples=200).set_index(["variant", "k", "budget"])
    assert s["p_best"].to_dict() == {("A", 0, 256): 1.0, ("B", 0, 256): 0.0, ("A", 0, 512): 0.0,
                                     ("B", 0, 512): 1.0, ("A", 5, 0): 0.5, ("B", 5, 0): 0.5}


def test_cached_intervals_equal_computed_ones_and_a_rerun_computes_none(per_question, tmp_path, monkeypatch):
    """A warm sweep reads its summaries, paired comparisons and ties back (stats._cached): the
    same table to the last bit, without computing an interval (mean_ci and scipy's test are
    made to fail on the re-run); a changed value or argument is computed anew."""
    pq = pd.concat([per_question, frame("C", np.linspace(0, 1, 60))], ignore_index=True)
    groups = {q: "even" if int(q[1:]) % 2 == 0 else "odd" for q in pq["qid"]}
    calls = {
        "summarize": lambda cache: summarize(pq, n_resamples=500, cache=cache),
        "summarize_by_group": lambda cache: summarize_by_group(pq, groups, n_resamples=500, cache=cache),
        "against_best": lambda cache: against_best(pq, "recall", 5, n_resamples=500, cache=cache),
        "ranking_ties": lambda cache: ranking_ties(pq, "recall", 5, n_resamples=500, cache=cache),
    }
    fresh = {name: call(None) for name, call in calls.items()}
    for name, call in calls.items():
        pd.testing.assert_frame_equal(call(tmp_path), fresh[name], check_exact=True)
    assert len(list((tmp_path / "stats").glob("*.parquet"))) == 5  # summarize_by_group: one per group (2)

    def computed(*args, **kwargs):
        raise AssertionError("computed again")

    with monkeypatch.context() as m:
        m.setattr(stats, "mean_ci", computed)
        m.setattr(sps, "permutation_test", computed)
        for name, call in calls.items():
            pd.testing.assert_frame_equal(call(tmp_path), fresh[name], check_exact=True)

    changed = pq.assign(value=pq["value"].where(pq.index != 0, 0.5))  # A's first recall@5
    pd.testing.assert_frame_equal(summarize(changed, n_resamples=500, cache=tmp_path),
                                  summarize(changed, n_resamples=500), check_exact=True)
    assert not summarize(changed, n_resamples=500).equals(fresh["summarize"])
    pd.testing.assert_frame_equal(summarize(pq, confidence=0.8, n_resamples=500, cache=tmp_path),
                                  summarize(pq, confidence=0.8, n_resamples=500), check_exact=True)
