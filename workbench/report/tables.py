"""The report's tables as DataFrames: score cells 'mean [ci_low, ci_high]', P(best), and the
variants with their parameters as the user wrote them. No markup here: html.py renders them."""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

import pandas as pd

from workbench.core.params import short_value
from workbench.evaluation import metrics, stats
from workbench.figures import plotdata

if TYPE_CHECKING:
    from workbench.results.result import SweepResult

METRIC_ORDER = (*metrics.METRICS, metrics.OMEGA)
COMPACT = ("recall", "hit", "mrr", "ndcg", metrics.OMEGA, "context_tokens")  # the scores table, at the verdict's k
DASH = "\u2014"  # a parameter the variant's strategy does not have
IDENTITY = ("variant", "strategy", "contextual_header", "late", "retriever")  # what a variant is
# what an index-time LLM (an LLM chunker's, +context's) generated: shown beside the context cost
MODEL_COST = ("index_tokens_generated", "index_llm_seconds")
FIRST = ("variant", "chunks", "truncated_chunks", *MODEL_COST, "seconds")  # what a variants table reader wants first


def _ordered_metrics(present: set[str]) -> list[str]:
    return [m for m in METRIC_ORDER if m in present] + sorted(present - set(METRIC_ORDER))


def cell(mean: float, lo: float, hi: float, digits: int) -> str:
    """'0.62 [0.57, 0.67]'; the mean alone when there is no interval (e.g. a single question)."""
    if pd.isna(lo) or pd.isna(hi):
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def _cells(s: pd.DataFrame) -> list[str]:
    """`cell` of every summary row: whole context tokens, two digits for scores."""
    return [cell(m, lo, hi, 0 if met.startswith("context_tokens") else 2)
            for m, lo, hi, met in zip(s["mean"], s["ci_low"], s["ci_high"], s["metric"], strict=True)]


def summary_table(result: SweepResult) -> pd.DataFrame:
    """One row per variant (sweep order); columns (metric, @k) holding 'mean [ci_low, ci_high]'."""
    return _by_metric_and_k(result, result.summary, _cells(result.summary))


def p_best_table(result: SweepResult, ranked: pd.DataFrame | None = None) -> pd.DataFrame:
    """summary_table's layout holding P(best) (stats.with_prob_best; fewer context tokens is better).
    `ranked`: that summary with its p_best column, when already computed."""
    s = stats.with_prob_best(result.summary, result.per_question) if ranked is None else ranked
    return _by_metric_and_k(result, s, [f"{p:.2f}" for p in s["p_best"]])


def _by_metric_and_k(result: SweepResult, s: pd.DataFrame, cells: list[str]) -> pd.DataFrame:
    """One cell per summary row of `s`, pivoted to one row per variant, columns (metric, @k)."""
    budget = s["budget"] if "budget" in s.columns else pd.Series(0, index=s.index)
    at = s.assign(cell=cells, at=[f"@{k}" if k > 0 else f"{b} tokens" if b > 0 else "any k"
                                  for k, b in zip(s["k"], budget, strict=True)])
    table = at.pivot(index="variant", columns=["metric", "at"], values="cell")
    columns = [(m, a) for m in _ordered_metrics(set(s["metric"]))
               for a in sorted({a for mm, a in table.columns if mm == m}, key=_k_order)]
    order = [v for v in result.labels if v in table.index]
    return table.loc[order, columns].rename_axis(index=None, columns=["metric", "k"])


def _k_order(at: str) -> tuple[int, int]:
    """'any k' first, then '@k' by k, then 'B tokens' by budget."""
    if at.startswith("@"):
        return 1, int(at[1:])
    return (2, int(at.split()[0])) if at.endswith(" tokens") else (0, 0)


def compact_table(result: SweepResult, k: int, metric: str = "recall",
                  ranked: pd.DataFrame | None = None) -> pd.DataFrame:
    """The metrics a reader compares first (COMPACT, those the result holds), at one k, one row
    per variant in sweep order, 'mean [ci_low, ci_high]' cells, and after `metric`@k the
    bootstrap probability that each variant has the best `metric`@k (stats.prob_best; taken
    from `ranked`, the summary with its p_best column, when already computed)."""
    s = result.summary
    names = [m for m in COMPACT if m in set(s["metric"])]
    rows = s[s["metric"].isin(names) & s["k"].isin([k, metrics.OMEGA_K]) & (s.get("budget", 0) == 0)]
    cells = rows.assign(cell=_cells(rows),
                        column=[f"{m}@{kk}" if kk else m for m, kk in zip(rows["metric"], rows["k"], strict=True)])
    table = cells.pivot(index="variant", columns="column", values="cell")
    columns = [c for m in names for c in (f"{m}@{k}", m) if c in table.columns]
    table = table.loc[[v for v in result.labels if v in table.index], columns].rename_axis(index=None, columns=None)
    if f"{metric}@{k}" in table.columns:
        if ranked is None:
            p = stats.prob_best(result.per_question, metric, k).rename(index=result.label_of)
        else:
            at = ranked[(ranked["metric"] == metric) & (ranked["k"] == k) & (ranked.get("budget", 0) == 0)]
            p = at.set_index("variant")["p_best"]
        table.insert(table.columns.get_loc(f"{metric}@{k}") + 1, "P(best)", [f"{p[v]:.2f}" for v in table.index])
    return table


def variants_table(result: SweepResult) -> pd.DataFrame:
    """The variants table with its columns grouped: what a reader looks for first (FIRST: the
    label, chunks with the truncated ones beside them, the model cost, this run's seconds), the rest of what a
    variant is, its parameters (from the grid), the rest of the index cost, and the cache key last."""
    v = result.variants
    first = [c for c in FIRST if c in v]
    identity = [c for c in IDENTITY if c in v and c not in first]
    params = [p for p in result.grid_params if p not in identity]  # retriever is a grid parameter too
    rest = [c for c in v if c not in {*first, *identity, *params, "key"}]
    return v[first + identity + params + rest + (["key"] if "key" in v else [])]


def variants_text(result: SweepResult, k: int | None = None) -> pd.DataFrame:
    """variants_table as text the way the user wrote it (see _param_text), with each variant's
    mean context tokens@k (what it costs the LLM) before the model cost and seconds when k is given."""
    table = variants_table(result)
    params = set(result.grid_params) | {*IDENTITY, "key"}
    shown = pd.DataFrame({c: [(_param_text if c in params else _cost_text)(x) for x in table[c]] for c in table})
    s = result.summary
    cost = s[(s["metric"] == "context_tokens") & (s["k"] == k) & (s.get("budget", 0) == 0)].set_index("key")["mean"]
    if k is not None and not cost.empty:
        where = next((shown.columns.get_loc(c) for c in (*MODEL_COST, "seconds") if c in shown), len(shown.columns))
        means = [cost.get(key, math.nan) for key in table["key"]]
        shown.insert(where, f"context tokens@{k}", [_cost_text(m if math.isnan(m) else round(m)) for m in means])
    return shown


def _param_text(value: Any) -> str:
    """A parameter as the user wrote it: 128 not 128.0, separators as their JSON strings, a dash
    where the strategy has no such parameter."""
    if isinstance(value, (list, tuple)):
        return json.dumps(list(value), ensure_ascii=False) if value else "none"
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return DASH
    if isinstance(value, bool):
        return "yes" if value else "no"
    return short_value(value)


def _cost_text(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return _param_text(value)
    if isinstance(value, float) and math.isnan(value):
        return DASH
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.1f}"


def race_exits(race: pd.DataFrame) -> pd.DataFrame:
    """A search's race (SweepResult.race) round by round, indexed by "round. stage": the documents it
    was scored on, the candidates that entered it (and of them new, the leader's neighbours), those
    that went on and finished, and last those that left it counted by why (plotdata.exit_kind, the most first)."""
    rows = plotdata.race_points(race)
    out = []
    for r in plotdata.race_rounds(race).itertuples(index=False):
        left = rows[(rows["round"] == r.round) & (rows["status"] == "dropped")]
        kinds = left["reason"].fillna("").map(plotdata.exit_kind).value_counts()
        out.append({"round": f"{r.round}. {r.stage}", "documents": f"{r.documents:,}",
                    "entered": f"{r.entered}" + (f" (+{r.new} new)" if r.new else ""),
                    "went on": str(int(((rows["round"] == r.round) & ~rows["last"]).sum())),
                    "finished": str(r.final) if r.final else DASH,
                    "left, by why": "; ".join(f"{n}: {kind or 'no reason given'}" for kind, n in kinds.items())
                    or DASH})
    return pd.DataFrame(out).set_index("round").rename_axis(None)
