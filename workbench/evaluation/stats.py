"""Uncertainty of mean scores: bootstrap confidence intervals and paired variant comparisons.

Per-question scores are few (hundreds) and far from normal (hit is 0/1, recall piles up at 0
and 1), so intervals come from scipy's bootstrap (percentile for the many summary groups, BCa
for the single interval of a paired difference), and the comparison of two variants on the
same questions from a paired sign-flip permutation test. Everything is seeded: the same input
gives the same numbers to the last digit, and one group's interval never depends on which other
groups were summarised with it (every group is resampled with the same seeded index draws).

How sure the winner is: `prob_best` resamples questions jointly for all variants (the chance each
has the best mean), `against_best` corrects its p-values with Holm's step-down (`holm`) and says
how many questions would make each observed difference significant (`questions_needed`), and
`ranking_ties` which neighbours of a ranking the questions cannot order.

A re-run that scored the same table computes no interval again: `summarize` and `against_best`
given a cache folder read back what they computed before from the same rows, arguments, code and
scipy (`_cached`), so a warm sweep never even imports scipy.stats (about a second).
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from threadpoolctl import ThreadpoolController

from workbench.core.io import atomic_write, source_fingerprint

KEYS = ["variant", "metric", "k"]  # what a per-question table must name (see _keys for what it may)
CONFIDENCE = 0.95  # the level of an interval, and of a tie, when none is chosen (Settings.confidence's default)


def _keys(per_question: pd.DataFrame) -> list[str]:
    """The columns naming a summary row: the key, label and model of its variant when the table has them,
    its metric and cut-offs (budget: a second kind of cut-off)."""
    return [c for c in ("key", "variant", "model", "metric", "k", "budget") if c in per_question.columns]


def lower_is_better(metric: str) -> bool:
    """Cost metrics (context tokens, any tokenizer) are better when lower; scores when higher."""
    return metric.startswith("context_tokens")


def _cached(cache: str | Path | None, name: str, rows: pd.DataFrame, args: Mapping[str, Any],
            compute: Callable[[], pd.DataFrame]) -> pd.DataFrame:
    """compute(), read back from `cache`/stats when computed before from the same `rows` (values,
    columns and dtypes), arguments, this module's source and scipy version; written there when
    computed now. Parquet keeps every float64 to the bit, so a read-back table equals a new one."""
    if cache is None:
        return compute()
    h = hashlib.sha256(pd.util.hash_pandas_object(rows, index=False).to_numpy().tobytes())
    h.update(json.dumps([name, dict(args), list(rows.columns), [str(t) for t in rows.dtypes],
                         *_code_version()]).encode())
    path = Path(cache) / "stats" / f"{name}-{h.hexdigest()[:32]}.parquet"
    if path.exists():
        return pd.read_parquet(path)
    table = compute()
    atomic_write(path, lambda tmp: table.to_parquet(tmp, index=False))
    return table


@cache
def _code_version() -> tuple[str, str]:
    """This module's source and scipy's version, found once per process (a sweep summarises each
    variant: reading them every time was a visible share of a warm sweep)."""
    return source_fingerprint(sys.modules[__name__]), metadata.version("scipy")


def _rows_of(sel: pd.DataFrame, variant: str) -> pd.DataFrame:
    """Rows of one variant, named by key (when the table has keys) or by label."""
    if "key" in sel.columns and (sel["key"] == variant).any():
        return sel[sel["key"] == variant]
    return sel[sel["variant"] == variant]


_MAX_CELLS = 10_000_000  # bound on the resamples x questions counts of one batch (80 MB)


def _check(confidence: float, n_resamples: int) -> None:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    _check_resamples(n_resamples)


def _check_resamples(n_resamples: int) -> None:
    if not isinstance(n_resamples, int) or n_resamples < 100:
        raise ValueError(f"n_resamples must be an integer >= 100, got {n_resamples!r}")


def resampled_means(x: np.ndarray, n_resamples: int, seed: int) -> np.ndarray:
    """Bootstrap means of every column of `x` (questions x columns), all columns on the same
    draws: (n_resamples x columns). Draws are scipy.stats.bootstrap's (the same seeded stream of
    question indices), but a replicate's mean is its question counts times the scores, one
    matrix product instead of gathering n_resamples x questions values per column."""
    with _blas().limit(limits=1, user_api="blas"):  # small products: more BLAS threads only fight torch's
        return np.concatenate([counts.astype(np.float64) @ x for counts in _counts(len(x), n_resamples, seed)]) / len(x)


@cache
def _blas() -> ThreadpoolController:
    """The loaded BLAS libraries, scanned on first use (not at import); each `limit` is then
    one call per library."""
    return ThreadpoolController()


@lru_cache(maxsize=4)
def _counts(n: int, n_resamples: int, seed: int) -> tuple[np.ndarray, ...]:
    """How often each of n questions is drawn in each replicate, in batches of at most _MAX_CELLS
    cells; kept for the next call, since every summary and P(best) of a sweep draws the same."""
    rng = np.random.default_rng(seed)
    step = max(1, _MAX_CELLS // max(1, n))
    out = []
    for i in range(0, n_resamples, step):
        m = min(step, n_resamples - i)
        draws = rng.integers(0, n, size=(m, n))
        counts = np.bincount((draws + n * np.arange(m)[:, None]).ravel(), minlength=m * n).reshape(m, n)
        out.append(counts.astype(np.uint16) if n < 2**16 else counts)  # a count is at most n: kept small
    return tuple(out)


def prepare(n: int, n_resamples: int = 2000, seed: int = 0) -> None:
    """Import scipy.stats and draw the bootstrap counts of n questions: what summarising their
    scores does first, done ahead, e.g. while a preview's model passes run."""
    from scipy import stats as sps  # noqa: F401 (see mean_ci)

    _counts(n, n_resamples, seed)


def mean_ci(
    samples: np.ndarray, confidence: float = CONFIDENCE, n_resamples: int = 2000, seed: int = 0,
    method: str = "percentile",
) -> tuple[np.ndarray, np.ndarray]:
    """Bootstrap CI of the mean of each row of `samples` (rows x n), rows resampled alike.

    The bootstrap distribution comes from `resampled_means` and the interval from
    scipy.stats.bootstrap given that distribution: scipy's numbers (equal for 0/1 scores, within
    float rounding of the sums otherwise) at a fraction of its cost. Constant rows (all 0, all 1,
    ...) have no sampling spread: their interval collapses to the value instead of BCa's NaN.
    Rows of fewer than 2 values get NaN: one question says nothing about spread."""
    from scipy import stats as sps  # about a second to import: only when an interval is computed (see _cached)

    _check(confidence, n_resamples)
    x = np.asarray(samples, dtype=np.float64)
    low, high = x.mean(axis=1), x.mean(axis=1)
    if x.shape[1] < 2:
        return np.full(len(x), np.nan), np.full(len(x), np.nan)
    todo = np.flatnonzero(x.min(axis=1) != x.max(axis=1))
    if not len(todo):
        return low, high
    means = resampled_means(x[todo].T, n_resamples, seed).T  # rows x resamples
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sps.DegenerateDataWarning)
        ci = sps.bootstrap((x[todo],), np.mean, n_resamples=0, vectorized=True, axis=-1, confidence_level=confidence,
                           method=method, bootstrap_result=_Distribution(means)).confidence_interval
    low[todo], high[todo] = ci.low, ci.high
    return low, high


@dataclass(frozen=True)
class _Distribution:
    """A bootstrap distribution computed here, for scipy.stats.bootstrap(bootstrap_result=...)."""

    bootstrap_distribution: np.ndarray


def summarize(
    per_question: pd.DataFrame,
    confidence: float = CONFIDENCE,
    n_resamples: int = 2000,
    seed: int = 0,
    method: str = "percentile",
    cache: str | Path | None = None,
) -> pd.DataFrame:
    """Mean and bootstrap CI per (variant, metric, k): columns `_keys` (key, variant, model, metric, k,
    budget: those the table has), then mean, ci_low, ci_high, n.

    Groups keep the order in which they first appear in `per_question`; within a group values are
    resampled in qid order, so row order never changes a number. A variant's groups of equal size
    are bootstrapped together in one vectorised call, apart from other variants' (whose number
    would change the shape of the matrix product, and so the last bits of its sums): a table of
    many variants summarised at once gives each the intervals of its own rows summarised alone,
    bit for bit, at one call's cost (a sweep's, see workbench.run.sweep). Percentile by default: for
    means of n ~ 500 its bounds stayed within 0.5 point of BCa's on 0/1 and skewed data, without
    BCa's jackknife. A score whose every value is 0 or every value 1 (all hit, all missed) gets
    Wilson's interval instead (`wilson`): the bootstrap of identical values has zero width, a
    certainty n questions cannot give.
    cache: a cache folder (the IndexStore's), where a table summarised before is read back (`_cached`)."""
    if cache is not None:
        args = {"confidence": confidence, "n_resamples": n_resamples, "seed": seed, "method": method}
        return _cached(cache, "summarize", per_question, args, lambda: summarize(per_question, **args))
    missing = [c for c in (*KEYS, "qid", "value") if c not in per_question.columns]
    if missing:
        raise ValueError(f"per_question: missing column(s) {missing}; need variant, qid, k, metric, value")
    # values ordered by qid, so the resampled questions (and the CI) do not depend on row order
    keys = _keys(per_question)
    group = per_question.groupby(keys, sort=False).ngroup().to_numpy()  # numbered as they first appear
    qid, _ = pd.factorize(per_question["qid"], sort=True)  # codes in qid order
    order = np.lexsort((qid, group))  # by group, then qid; stable
    sizes = np.bincount(group)
    first_rows = order[np.cumsum(sizes) - sizes]
    values = np.split(per_question["value"].to_numpy(np.float64)[order], np.cumsum(sizes)[:-1])
    owner, _ = pd.factorize(per_question[keys[0]].to_numpy()[first_rows])  # each group's variant (key, else label)
    low, high = np.empty(len(sizes)), np.empty(len(sizes))
    for v, n in dict.fromkeys(zip(owner.tolist(), sizes.tolist(), strict=True)):
        idx = np.flatnonzero((owner == v) & (sizes == n))
        low[idx], high[idx] = mean_ci(np.stack([values[i] for i in idx]), confidence, n_resamples, seed, method)
    firsts = per_question[keys].iloc[first_rows]
    ids = pd.DataFrame(list(firsts.itertuples(index=False, name=None)), columns=keys).astype({"k": np.int64})
    means = [float(np.mean(v)) for v in values]
    for i, x in enumerate(values):  # all at a bound: the bootstrap says [1, 1]; n questions cannot (wilson)
        if not lower_is_better(str(ids["metric"].iloc[i])) and len(x) and x[0] in (0.0, 1.0) and (x == x[0]).all():
            low[i], high[i] = wilson(int(x[0]) * len(x), len(x), confidence)
    return ids.assign(mean=means, ci_low=low, ci_high=high, n=sizes.astype(np.int64))


def wilson(successes: int, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Wilson's score interval of a proportion: what n questions can show when every one hits (or
    every one misses), where a bootstrap of identical values has zero width.

    >>> [round(b, 3) for b in wilson(25, 25)]
    [0.867, 1.0]
    """
    from scipy.stats import norm  # see mean_ci

    z = float(norm.ppf(0.5 + confidence / 2))
    p, zz = successes / n, z * z / n
    center, half = (p + zz / 2) / (1 + zz), z * math.sqrt(p * (1 - p) / n + zz / (4 * n)) / (1 + zz)
    return (0.0 if successes == 0 else center - half), (1.0 if successes == n else center + half)


def summarize_by_group(
    per_question: pd.DataFrame,
    groups: Mapping[str, str],
    confidence: float = CONFIDENCE,
    n_resamples: int = 2000,
    seed: int = 0,
    method: str = "percentile",
    cache: str | Path | None = None,
) -> pd.DataFrame:
    """`summarize` of each group's questions (groups: qid -> group, e.g.
    Dataset.groups_of_questions), with a `group` column first; groups in first-seen order of
    `groups`. Each group is summarised on its own rows alone, so its numbers equal `summarize` of
    those rows: the best chunking can differ by kind of text, and a group's interval is that of
    its own (fewer) questions. cache: as in `summarize`, each group's own entry."""
    unknown = sorted(set(per_question["qid"]) - set(groups))
    if unknown:
        raise ValueError(f"summarize_by_group: {len(unknown)} qid(s) of per_question have no group, e.g. {unknown[:5]}")
    group = per_question["qid"].map(groups)
    return pd.concat([summarize(per_question[group == g], confidence, n_resamples, seed, method, cache).assign(group=g)
                      [["group", *_keys(per_question), "mean", "ci_low", "ci_high", "n"]]
                      for g in dict.fromkeys(groups.values()) if (group == g).any()], ignore_index=True)


def _at(per_question: pd.DataFrame, metric: str, k: int, budget: int) -> pd.DataFrame:
    """The rows of one metric at one cut-off (k, budget); a table without budgets has budget 0 only."""
    sel = per_question[(per_question["metric"] == metric) & (per_question["k"] == k)]
    return sel[sel["budget"] == budget] if "budget" in sel.columns else sel


def prob_best(per_question: pd.DataFrame, metric: str, k: int, n_resamples: int = 2000, seed: int = 0,
              higher_is_better: bool = True, budget: int = 0) -> pd.Series:
    """The bootstrap probability that each variant (by key, else label) has the best mean `metric`
    at the cut-off (k, budget): budget rows have k = 0 and budget > 0 (see SweepResult).

    Each replicate draws one set of questions (with replacement) and scores every variant on that
    same set, so variants that succeed on the same questions move together, as in a paired test.
    Only questions every variant answered count. A replicate whose best mean is shared splits its
    win evenly. Seeded: the same input gives the same numbers to the last digit."""
    _check_resamples(n_resamples)
    sel = _at(per_question, metric, k, budget)
    if sel.empty:
        raise ValueError(f"prob_best: no rows for metric={metric!r}, k={k}, budget={budget}")
    ident = _keys(sel)[0]
    if sel.duplicated([ident, "qid"]).any():
        raise ValueError(f"prob_best: duplicate qids for one {ident} at metric={metric!r}, k={k}")
    wide = sel.pivot(index="qid", columns=ident, values="value").dropna().sort_index()[sel[ident].unique()]
    if wide.empty:
        raise ValueError(f"prob_best: no question answered by every variant at metric={metric!r}, k={k}")
    return pd.Series(_wins(wide.to_numpy(np.float64), n_resamples, seed, higher_is_better), index=wide.columns,
                     name="p_best")


def _wins(x: np.ndarray, n_resamples: int, seed: int, higher_is_better: bool) -> np.ndarray:
    """prob_best of one cut-off's scores `x`: questions (in qid order, every variant answered) x variants."""
    x = x * (1.0 if higher_is_better else -1.0)
    means = resampled_means(x, n_resamples, seed)  # replicates x variants
    best = means >= means.max(axis=1, keepdims=True) - 1e-12  # equal up to the float rounding of the sums
    return (best / best.sum(axis=1, keepdims=True)).sum(axis=0) / n_resamples


def ranking_ties(per_question: pd.DataFrame, metric: str, k: int, confidence: float = CONFIDENCE,
                 n_resamples: int = 2000, seed: int = 0, budget: int = 0,
                 cache: str | Path | None = None) -> pd.DataFrame:
    """The ranking by mean `metric`@k (best first, ties in first-seen order) and what the
    questions can order in it: for each variant the paired bootstrap interval (`mean_ci`,
    percentile, questions resampled alike for every variant) of its difference to the next one
    down (`next_low`, `next_high`; `apart_from_next` when it excludes 0) and to the top
    (`top_low`, `top_high`; `tied_with_top` when it holds 0, the top itself included).

    Why: a ranking of means orders pairs the questions cannot; a preview names those pairs, and
    the variants tied with its top are the ones a real sweep must confirm. Only questions every
    variant answered count (as in `prob_best`). Columns: [key or variant, rank, mean, next_low,
    next_high, apart_from_next, top_low, top_high, tied_with_top]; the last row has no next.
    cache: as in `summarize`, keyed by the rows at the cut-off, the only ones ranked."""
    sel = _at(per_question, metric, k, budget)
    if cache is not None:
        args = {"metric": metric, "k": int(k), "confidence": confidence, "n_resamples": n_resamples, "seed": seed,
                "budget": int(budget)}
        return _cached(cache, "ranking_ties", sel, args, lambda: ranking_ties(per_question, **args))
    if sel.empty:
        raise ValueError(f"ranking_ties: no rows for metric={metric!r}, k={k}, budget={budget}")
    ident = _keys(sel)[0]
    wide = sel.pivot(index="qid", columns=ident, values="value").dropna().sort_index()[sel[ident].unique()]
    if len(wide) < 2:
        raise ValueError(f"ranking_ties: {len(wide)} question(s) answered by every variant at metric={metric!r}, "
                         f"k={k}; need >= 2")
    sign = -1.0 if lower_is_better(metric) else 1.0
    x = wide.to_numpy(np.float64).T * sign  # variants x questions, higher is better
    order = np.argsort(-x.mean(axis=1), kind="stable")
    x = x[order]
    m = len(x)
    # one call: the m - 1 adjacent differences, then the m differences to the top (0 for the top itself)
    low, high = mean_ci(np.concatenate([x[:-1] - x[1:], x[:1] - x]), confidence, n_resamples, seed)
    next_low, next_high = np.append(low[: m - 1], np.nan), np.append(high[: m - 1], np.nan)
    top_low, top_high = low[m - 1:], high[m - 1:]
    return pd.DataFrame({ident: wide.columns[order], "rank": np.arange(1, m + 1), "mean": x.mean(axis=1) * sign,
                         "next_low": next_low, "next_high": next_high, "apart_from_next": next_low > 0,
                         "top_low": top_low, "top_high": top_high,
                         "tied_with_top": (top_low <= 0) & (top_high >= 0)})


def cannot_order(ties: pd.DataFrame, column: str = "variant") -> list[list[str]]:
    """The runs of adjacent variants in a `ranking_ties` table that no interval separates, each
    of two or more, best first: what "cannot tell apart" lists."""
    runs, run = [], []
    for i, (name, apart) in enumerate(zip(ties[column], ties["apart_from_next"], strict=True)):
        run.append(name)
        if apart or i == len(ties) - 1:
            runs += [run] if len(run) > 1 else []
            run = []
    return runs


def with_prob_best(summary: pd.DataFrame, per_question: pd.DataFrame, n_resamples: int = 2000,
                   seed: int = 0, cache: str | Path | None = None) -> pd.DataFrame:
    """`summary` with a `p_best` column: `prob_best` for every metric at every cut-off (k, and
    budget when the tables have one; lower is better for context tokens, see `lower_is_better`).
    Kept out of `summarize`, whose numbers for one group never depend on the others: P(best)
    does by nature, so it is computed on the whole. One pivot for all cut-offs (a pivot each cost
    most of the time), each cut-off's block then the table prob_best pivots: equal numbers.
    cache: as in `summarize`, keyed by the per-question rows (a warm report reads them back: every
    cut-off's resamples were a tenth of its time)."""
    _check_resamples(n_resamples)
    ident, cut = _keys(per_question)[0], [c for c in ("k", "budget") if c in per_question.columns]
    args = {"n_resamples": n_resamples, "seed": seed}
    p = _cached(cache, "prob_best", per_question, args, lambda: _prob_best_rows(per_question, n_resamples, seed))
    return summary.drop(columns="p_best", errors="ignore").merge(p, on=[ident, "metric", *cut], how="left")


def _prob_best_rows(per_question: pd.DataFrame, n_resamples: int, seed: int) -> pd.DataFrame:
    """with_prob_best's numbers: [key or variant, metric, k, (budget,) p_best], one row per variant and cut-off."""
    ident, cut = _keys(per_question)[0], [c for c in ("k", "budget") if c in per_question.columns]
    at_cut = ["metric", *cut]
    twice = per_question.duplicated([*at_cut, ident, "qid"])
    if twice.any():
        first = per_question[twice].iloc[0]
        metric, k = first["metric"], first["k"]
        raise ValueError(f"prob_best: duplicate qids for one {ident} at metric={metric!r}, k={k}")
    wide = per_question.pivot(index="qid", columns=[*at_cut, ident], values="value").sort_index()
    values, column = wide.to_numpy(np.float64), {c: i for i, c in enumerate(wide.columns)}
    names: dict[tuple, list] = {}  # cut-off -> its variants, both in first-seen order (as groupby and unique)
    for *at, name in per_question[[*at_cut, ident]].drop_duplicates().itertuples(index=False, name=None):
        names.setdefault(tuple(at), []).append(name)
    rows = []
    for at, idents in names.items():
        x = values[:, [column[(*at, n)] for n in idents]]
        x = x[~np.isnan(x).any(axis=1)]
        if not len(x):
            raise ValueError(f"prob_best: no question answered by every variant at metric={at[0]!r}, k={at[1]}")
        rows += [(n, *at, p) for n, p in zip(idents, _wins(x, n_resamples, seed, not lower_is_better(at[0])),
                                            strict=True)]
    return pd.DataFrame(rows, columns=[ident, *at_cut, "p_best"])


def pareto_front(cost: Sequence[float], quality: Sequence[float]) -> list[int]:
    """Indices of the undominated points, cheapest first: no other point costs at most as much
    and scores strictly better (ties in cost keep only the best). The verdict's and the trade-off
    figure's (here, so that the verdict never imports matplotlib)."""
    order = sorted(range(len(cost)), key=lambda i: (cost[i], -quality[i]))
    front, best = [], -np.inf
    for i in order:
        if quality[i] > best:
            front.append(i)
            best = quality[i]
    return front


MATERIAL = 0.05  # a cost within this share of another's is the same cost (pareto_set)


def pareto_set(quality: Sequence[float], costs: np.ndarray, floors: Sequence[float]) -> list[int]:
    """Indices of the variants no other dominates on quality and every cost (columns of `costs`),
    in input order. A cost differs only materially: by more than MATERIAL of the larger and more
    than its column's floor (a token, a hundredth of a second). So a variant that saves a few
    context tokens while spending seconds of model time per question is dominated by one as good
    that spends neither, and no cost is weighed against another: a variant buying quality with
    any cost stays on the front."""
    q = np.asarray(quality, dtype=float)
    c = np.asarray(costs, dtype=float).reshape(len(q), -1)
    floor = np.asarray(floors, dtype=float)
    gap = c[:, None, :] - c[None, :, :]  # gap[a, b, j] = cost j of a minus that of b
    more = gap > np.maximum(floor, MATERIAL * np.maximum(c[:, None, :], c[None, :, :]))  # a costs materially more
    no_worse = (q[:, None] >= q[None, :]) & ~more.any(axis=2)
    dominates = no_worse & ((q[:, None] > q[None, :]) | more.transpose(1, 0, 2).any(axis=2))
    return [i for i in range(len(q)) if not dominates[:, i].any()]


def holm(p_values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm-Bonferroni adjusted p-values, in the input's order.

    Step-down: with p sorted ascending, p_(1) <= ... <= p_(m), the adjusted value of the i-th is
    max over j <= i of min(1, (m - j + 1) * p_(j)). Rejecting where it is <= alpha keeps the chance
    of any false "differs" among the m comparisons <= alpha, under any dependence between them
    (all comparisons with the best share its scores), and rejects at least what Bonferroni does."""
    p = np.asarray(p_values, dtype=np.float64)
    order = np.argsort(p, kind="stable")
    adjusted = np.empty_like(p)
    adjusted[order] = np.minimum(1.0, np.maximum.accumulate((len(p) - np.arange(len(p))) * p[order]))
    return adjusted


def questions_needed(diff: float, sd: float, alpha: float = 0.05, power: float = 0.8) -> float:
    """About how many questions a paired two-sided test at `alpha` needs to detect a mean
    difference `diff` with probability `power`, if per-question differences keep the standard
    deviation `sd`: n = ((z_{1-alpha/2} + z_power) * sd / |diff|)^2, rounded up, at least 2
    (normal approximation; 0.05 and 0.8 give a factor 2.80^2 = 7.85). inf when diff is 0: no
    number of questions separates equal means."""
    from scipy import stats as sps  # see mean_ci

    if diff == 0:
        return math.inf
    z = sps.norm.ppf(1 - alpha / 2) + sps.norm.ppf(power)
    return float(max(2, math.ceil((z * sd / abs(diff)) ** 2)))


def paired_compare(
    per_question: pd.DataFrame,
    a: str,
    b: str,
    metric: str,
    k: int,
    confidence: float = CONFIDENCE,
    n_resamples: int = 9999,
    seed: int = 0,
    method: str = "BCa",
    budget: int = 0,
) -> dict[str, Any]:
    """Variant b against variant a on the questions both answered, at the cut-off (k, budget):
    mean difference b - a, its BCa bootstrap CI, the two-sided p-value of a paired sign-flip
    permutation test (scipy.stats.permutation_test, permutation_type='samples'; exact when
    2**n <= n_resamples), the standard deviation of the per-question differences `sd` and
    `questions_needed` from it."""
    from scipy import stats as sps  # see mean_ci

    _check(confidence, n_resamples)
    sel = _at(per_question, metric, k, budget)
    cols = {}
    for v in (a, b):
        rows = _rows_of(sel, v)
        if rows.empty:
            raise ValueError(f"paired_compare: no rows for variant={v!r}, metric={metric!r}, k={k}")
        if rows["qid"].duplicated().any():
            raise ValueError(f"paired_compare: duplicate qids for variant={v!r}, metric={metric!r}, k={k}")
        cols[v] = rows.set_index("qid")["value"]
    both = pd.concat([cols[a].rename("a"), cols[b].rename("b")], axis=1, join="inner").sort_index()
    if len(both) < 2:
        raise ValueError(f"paired_compare: variants {a!r} and {b!r} share {len(both)} question(s); need >= 2")
    x, y = both["a"].to_numpy(np.float64), both["b"].to_numpy(np.float64)
    d = y - x
    low, high = mean_ci(d[None, :], confidence, n_resamples, seed, method)
    test = sps.permutation_test(
        (x, y),
        lambda u, w, axis: np.mean(w - u, axis=axis),
        permutation_type="samples",
        vectorized=True,
        n_resamples=n_resamples,
        alternative="two-sided",
        rng=np.random.default_rng(seed),
    )
    return {
        "a": a,
        "b": b,
        "metric": metric,
        "k": k,
        "n": len(d),
        "mean_a": float(x.mean()),
        "mean_b": float(y.mean()),
        "diff": float(d.mean()),
        "ci_low": float(low[0]),
        "ci_high": float(high[0]),
        "p_value": float(test.pvalue),
        "sd": float(d.std(ddof=1)),
        "questions_needed": questions_needed(float(d.mean()), float(d.std(ddof=1))),
    }


def against_best(per_question: pd.DataFrame, metric: str = "recall", k: int = 5, n_resamples: int = 2000,
                 seed: int = 0, confidence: float = CONFIDENCE, cache: str | Path | None = None,
                 budget: int = 0) -> pd.DataFrame:
    """Every variant paired against the one with the best mean `metric`@k (the highest; the lowest
    for a cost, see `lower_is_better`), nearest the best first: the difference (variant minus the
    best), its interval at `confidence` and p-value, so a table of means is never read as a ranking
    the data cannot support.

    `p_holm` is the p-value corrected by Holm's step-down over the m - 1 comparisons with the best
    (`holm`): a difference is significant at 0.05 over the whole table when p_holm <= 0.05.
    `questions_needed` says how many questions would make each difference significant on its own
    (`questions_needed`, per comparison at 0.05, not Holm-corrected). cache: as in `summarize`,
    keyed by the rows at metric@k, the only ones compared."""
    sel = _at(per_question, metric, k, budget)
    if cache is not None:
        args = {"metric": metric, "k": int(k), "n_resamples": n_resamples, "seed": seed, "confidence": confidence,
                "budget": int(budget)}
        return _cached(cache, "against_best", sel, args, lambda: against_best(per_question, **args))
    if sel.empty:
        raise ValueError(f"against_best: no rows for metric={metric!r}, k={k}")
    ident = _keys(sel)[0]  # the key when the table has one, else the label
    means = sel.groupby(ident, sort=False)["value"].mean().sort_values(ascending=lower_is_better(metric), kind="stable")
    best = str(means.index[0])
    rows = [paired_compare(sel, best, v, metric, k, confidence=confidence, n_resamples=n_resamples, seed=seed,
                           budget=budget) for v in means.index if v != best]
    cols = ["b", "mean_b", "diff", "ci_low", "ci_high", "p_value", "n", "questions_needed"]
    table = pd.DataFrame(rows, columns=cols).rename(columns={"b": ident, "mean_b": "mean"})
    table.insert(6, "p_holm", holm(table["p_value"]))
    if ident == "key":
        label = dict(zip(sel["key"], sel["variant"], strict=False))
        table.insert(1, "variant", table["key"].map(label))
        table = table.assign(best_key=best)
        best = label[best]
    return table.assign(best=best, metric=metric, k=k)
