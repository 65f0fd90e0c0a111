"""A CI gate for a chosen chunking: each variant of a run against the same variant of a baseline
run, paired on the questions both answered, and a verdict a CI job can exit on.

Why paired and why two thresholds: a drop counts only when it is real (its confidence interval
lies below zero, the per-question differences' BCa interval of evaluation.stats.paired_compare)
and large enough to matter (more than `max_drop`), so a noisy run never fails a build and a tiny
real drop can be allowed on purpose. Variants are matched by key (strategy, parameters, stages),
never by label.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from workbench.evaluation import metrics, stats

if TYPE_CHECKING:
    from workbench.results.result import SweepResult

STATUSES = ("drop", "ok", "better", "new", "missing")  # "drop" and "missing" fail the gate
DEFAULT_MAX_DROP = 0.02  # the largest real drop of the metric (absolute) the gate lets pass


def compare(baseline: SweepResult, current: SweepResult, metric: str = "recall", k: int | None = None,
            max_drop: float = DEFAULT_MAX_DROP, confidence: float | None = None) -> pd.DataFrame:
    """One row per variant of either run: [variant, key, status, n, baseline, current, diff, ci_low,
    ci_high, p_value]. status: "drop" when the interval of current - baseline lies below 0 and the
    drop exceeds `max_drop`; "better" when it lies above 0; "ok" otherwise; "new" (only in the
    current run) and "missing" (only in the baseline, so it could not be checked). k and confidence
    default to the current run's (SweepResult.default_k, SweepResult.confidence).

    >>> table = compare(SweepResult.load("results/baseline"), result)  # doctest: +SKIP
    >>> failed(table)  # doctest: +SKIP
    """
    k = current.default_k if k is None else k
    confidence = current.confidence if confidence is None else confidence
    if metric not in metrics.METRICS:
        raise ValueError(f"metric must be one of {list(metrics.METRICS)}, got {metric!r}")
    if not 0 <= max_drop < 1:
        raise ValueError(f"max_drop must be in [0, 1), got {max_drop!r}")
    for name, run in (("baseline", baseline), ("current", current)):
        if k not in run.ks:
            raise ValueError(f"k={k} was not swept in the {name} run (its ks: {run.ks})")
    sign = -1 if stats.lower_is_better(metric) else 1  # a drop of a cost is a rise
    old, new = baseline.keys, current.keys
    rows = []
    for key in dict.fromkeys([*new, *old]):
        label = current.label_of(key) if key in new else baseline.label_of(key)
        row = {"variant": label, "key": key}
        if key not in old or key not in new:
            rows.append(row | {"status": "new" if key in new else "missing"})
            continue
        pair = pd.concat([baseline.per_question[baseline.per_question["key"] == key].assign(key="baseline"),
                          current.per_question[current.per_question["key"] == key].assign(key="current")])
        c = stats.paired_compare(pair, "baseline", "current", metric, k, confidence=confidence)
        diff, low, high = (sign * c[x] for x in ("diff", "ci_low", "ci_high"))
        low, high = min(low, high), max(low, high)
        status = "drop" if high < 0 and -diff > max_drop else "better" if low > 0 else "ok"
        rows.append(row | {"status": status, "n": c["n"], "baseline": c["mean_a"], "current": c["mean_b"],
                           "diff": c["diff"], "ci_low": c["ci_low"], "ci_high": c["ci_high"],
                           "p_value": c["p_value"]})
    columns = ["variant", "key", "status", "n", "baseline", "current", "diff", "ci_low", "ci_high", "p_value"]
    return pd.DataFrame(rows, columns=columns)


def failed(table: pd.DataFrame) -> bool:
    """Whether the gate fails: a real drop over the threshold, or a baseline variant not measured."""
    return bool(table["status"].isin(["drop", "missing"]).any())
