"""Bootstrap summaries and paired comparisons: exact values where they are known, scipy agreement,
determinism, and independence of one group's interval from the others."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from workbench.stats import against_best, mean_ci, paired_compare, summarize


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
    assert list(zip(s["variant"], s["metric"], s["k"])) == [
        ("A", "recall", 5), ("A", "hit", 5), ("B", "recall", 5), ("B", "hit", 5), ("A", "recall", 1),
    ]  # fmt: skip
    assert s["n"].tolist() == [60, 60, 60, 60, 40]
    groups = per_question.groupby(["variant", "metric", "k"], sort=False)["value"]
    assert s["mean"].tolist() == pytest.approx([np.mean(v.to_numpy()) for _, v in groups], rel=1e-12)
    assert not s.isna().any().any()
    assert (s["ci_low"] <= s["mean"]).all() and (s["mean"] <= s["ci_high"]).all()


def test_constant_groups_collapse_to_their_value(per_question):
    s = summarize(per_question, n_resamples=500, method="BCa").set_index(["variant", "metric"])
    assert tuple(s.loc[("B", "recall"), ["mean", "ci_low", "ci_high"]]) == (0.0, 0.0, 0.0)
    assert tuple(s.loc[("B", "hit"), ["mean", "ci_low", "ci_high"]]) == (1.0, 1.0, 1.0)


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


def test_a_groups_interval_depends_neither_on_other_groups_nor_on_row_order(per_question):
    def run(df: pd.DataFrame) -> pd.DataFrame:
        return summarize(df, n_resamples=500).set_index(["variant", "metric", "k"])

    full = run(per_question)
    alone = run(per_question[per_question.metric == "hit"])
    pd.testing.assert_frame_equal(full.loc[alone.index], alone, check_exact=True)
    shuffled = run(per_question.sample(frac=1, random_state=3))
    pd.testing.assert_frame_equal(shuffled.loc[full.index], full, check_exact=True)


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
