"""What a sweep says, in two or three sentences a team lead can act on, computed, never written.

The verdict names the best variant on a primary metric (recall@k by default; for a cost the
lowest mean is best, see stats.lower_is_better), how much better it is than the runner-up and
whether the data can tell them apart (a paired bootstrap interval of the difference that holds 0
means "tied"), what it costs in context tokens and index size next to the cheapest variant the
data cannot tell from it, and the Pareto set of quality against context cost. It reads only the
tidy tables of a SweepResult, like plots and the report.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import pandas as pd

from workbench.evaluation import metrics, stats
from workbench.plots import pareto_front

if TYPE_CHECKING:
    from workbench.sweep import SweepResult

COST = "context_tokens"
SAME_COST = 0.95  # a tied variant within 5% of the best's context tokens is no cheaper alternative


@dataclass(frozen=True)
class Verdict:
    """The computed verdict. Variants are keys; `table` has one row per variant, best first:
    [key, variant, mean, ci_low, ci_high, p_best, diff, diff_low, diff_high, p_value, p_holm,
    questions_needed, tied, context_tokens, chunks, tokens_embedded, pareto]; diff* compare each
    variant with the best (paired, see stats.against_best), p_best is stats.prob_best.

    `tied` means the paired interval of the difference holds 0, one comparison on its own, like
    p_value. Holm's p_holm corrects for the m - 1 comparisons together and is never below
    p_value, so a variant "worse" by its interval may still have p_holm > 0.05: read "worse" as
    "worse on these questions", p_holm <= 0.05 as "worse even counting every comparison made"."""

    metric: str
    k: int
    best: str
    runner_up: str | None
    tied: tuple[str, ...]  # variants whose paired difference to the best holds 0 (best excluded)
    cheapest: str  # the fewest context tokens among the best and those tied with it
    pareto: tuple[str, ...]  # undominated on (context tokens, metric), cheapest first
    table: pd.DataFrame

    def row(self, key: str) -> pd.Series:
        return self.table.set_index("key").loc[key]

    def sentences(self) -> list[str]:
        """Two or three sentences, plain text (the report adds links and markup)."""
        at = f"{self.metric}@{self.k}"
        b = self.row(self.best)
        most = "lowest" if stats.lower_is_better(self.metric) else "highest"
        first = (f"{b['variant']} has the {most} {at}: {b['mean']:.3f} [{b['ci_low']:.3f}, {b['ci_high']:.3f}], "
                 f"best in {b['p_best']:.0%} of bootstrap resamples of the questions.")
        out = [first]
        if self.runner_up is None:
            return [*out, "It is the only variant measured, so nothing is compared."]
        r = self.row(self.runner_up)
        lead, low, high = (0.0 - r[c] for c in ("diff", "diff_high", "diff_low"))  # 0.0 -: no "-0.000"
        gap = (f"{lead:+.3f} over the runner-up {r['variant']} (paired interval "
               f"[{low:+.3f}, {high:+.3f}], p = {r['p_value']:.3g})")
        if self.tied:
            n = len(self.tied)
            others = f" and {n - 1} other variant{'s' if n > 2 else ''}" if n > 1 else ""
            out.append(f"It is tied with {r['variant']}{others}: {gap}, an interval that holds 0, so these "
                       f"questions cannot tell them apart. {_separate(r['questions_needed'])}")
        else:
            out.append(f"It beats every other variant: {gap}.")
        c = self.row(self.cheapest)
        if self.cheapest != self.best and c[COST] > SAME_COST * b[COST]:
            out.append(f"The variants it ties with cost about the same: {c[COST]:,.0f} context tokens@{self.k} at "
                       f"the least against its {b[COST]:,.0f}.")
        elif self.cheapest != self.best:
            out.append(f"{c['variant']}, tied with it, sends {c[COST]:,.0f} context tokens@{self.k} instead of "
                       f"{b[COST]:,.0f} ({c[COST] / b[COST]:.0%}) and indexes {c['chunks']:,.0f} chunks instead of "
                       f"{b['chunks']:,.0f}.")
        else:
            out.append(f"It is also the cheapest of the variants it ties with: {b[COST]:,.0f} context tokens@{self.k}.")
        return out


def _separate(n: float) -> str:
    """How many questions would tell the best from the runner-up, in words."""
    if n == float("inf"):
        return "Their means are equal, so no number of questions would separate them."
    return f"About {n:,.0f} questions would separate them at this difference (paired test at 0.05, power 0.8)."


def verdict(result: SweepResult, metric: str = "recall", k: int | None = None, n_resamples: int = 2000) -> Verdict:
    """The verdict on `metric`@k (k defaults to metrics.default_k of the swept ks)."""
    pq = result.per_question
    if metric not in set(pq["metric"]):
        raise ValueError(f"metric {metric!r} not in the result; known: {sorted(set(pq['metric']))}")
    k = metrics.default_k(result.config.get("ks") or pq["k"].unique()) if k is None else int(k)
    means = result.summary[(result.summary["metric"] == metric) & (result.summary["k"] == k)]
    if means.empty:
        raise ValueError(f"no {metric}@{k} in the result; swept ks: {sorted(set(pq['k']) - {0})}")
    lower = stats.lower_is_better(metric)
    table = means[["key", "variant", "mean", "ci_low", "ci_high"]].sort_values("mean", ascending=lower, kind="stable")
    p_best = stats.prob_best(pq, metric, k, n_resamples, higher_is_better=not lower)
    table = table.assign(p_best=table["key"].map(p_best))
    best = str(table["key"].iloc[0])
    compared = ["key", "diff", "ci_low", "ci_high", "p_value", "p_holm", "questions_needed"]
    pairs = (stats.against_best(pq, metric, k, n_resamples=n_resamples) if len(table) > 1
             else pd.DataFrame(columns=compared))
    pairs = pairs[compared].rename(columns={"ci_low": "diff_low", "ci_high": "diff_high"})
    cost = result.summary[(result.summary["metric"] == COST) & (result.summary["k"] == k)].set_index("key")["mean"]
    index = result.variants.set_index("key")[["chunks", "tokens_embedded"]]
    table = table.merge(pairs, on="key", how="left").assign(
        tied=lambda t: (t["diff_low"] <= 0) & (t["diff_high"] >= 0),
        context_tokens=lambda t: t["key"].map(cost),
    ).join(index, on="key")
    table.loc[table["key"] == best, ["diff", "diff_low", "diff_high"]] = 0.0
    front = pareto_front(list(table[COST]), list(table["mean"] * (-1 if lower else 1)))
    table["pareto"] = [i in front for i in range(len(table))]
    tied = tuple(table.loc[table["tied"] & (table["key"] != best), "key"])
    near = table[table["key"].isin({best, *tied})]
    cheapest = str(near.sort_values([COST, "mean"], ascending=[True, False], kind="stable")["key"].iloc[0])
    return Verdict(metric, k, best, str(table["key"].iloc[1]) if len(table) > 1 else None, tied, cheapest,
                   tuple(table["key"].iloc[front]), table.reset_index(drop=True))
