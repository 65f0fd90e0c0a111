"""Figures of a SweepResult: quality against k and against equal context budgets, the ranking at
one k, and quality against cost.

Every function returns a fresh matplotlib Figure built without pyplot, so nothing leaks into
global state (safe under Agg, in tests, in widgets and in the notebook alike). Each variant keeps
one colour across panels and across calls: colours follow the variant's position in
`result.variants`, not in the filtered subset, so a redraw with fewer variants repaints nothing.
Variants are identified by key (a label is accepted too, see SweepResult.key_of) and drawn with
their labels.

Every figure also records where each variant is drawn, so `mark(fig, key)` rings it without a
redraw (workbench.figures.draw).

What the figures show (the parameters swept, the groups a line joins, the colours) is computed in
workbench.figures.plotdata, which the report reads without importing matplotlib.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import ScalarFormatter

from workbench.evaluation import stats
from workbench.figures.draw import (
    check_metric,
    error_bars,
    figure_to_png_bytes,
    highlight_key,
    legend_columns,
    mark,
    metric_k,
    metric_name,
    metric_rows,
    panel_axes,
    panel_grid,
    record,
    select_keys,
    variant_markers,
)
from workbench.figures.params import by_model, by_parameter, heatmap
from workbench.figures.plotdata import (
    COST,
    MRR,
    RECALL,
    _budget,
    _pick_k,
    best_by_group,
    has_budgets,
    overview_panels,
)

# the figures of a result, as `wb.plots` offers them (those against parameters drawn in figures/params.py)
__all__ = ["budget_curves", "by_group", "by_model", "by_parameter", "figure_to_png_bytes", "heatmap", "mark",
           "metric_curves", "overview", "variant_markers"]

_WRAP = 32  # characters per line of a variant label on a bar chart axis

if TYPE_CHECKING:
    from workbench.dataset import Dataset
    from workbench.results.result import SweepResult


def _curves(
    ax: Axes, result: SweepResult, metric: str, keys: Sequence[str], colors: dict, highlight: str | None
) -> None:
    """metric against k, one errorbar line per variant (label = variant label)."""
    s = metric_rows(result, metric, keys)
    s = s[s["k"] > 0]
    markers = variant_markers(result.keys)
    for key in keys:
        r = s[s["key"] == key].sort_values("k")
        if r.empty:
            continue
        strong = key == highlight
        record(ax, key, r["k"], r["mean"])
        ax.errorbar(
            r["k"].to_numpy(float), r["mean"].to_numpy(float), yerr=error_bars(r), label=result.label_of(key),
            color=colors[key],
            marker=markers[key], markersize=4, linewidth=3 if strong else 1.5, capsize=3, elinewidth=1, alpha=0.95,
            zorder=3 if strong else 2,
        )
    ax.set_xticks(result.ks)
    ax.set_xlabel("k")
    ax.set_ylabel(f"mean {metric}")
    ax.set_title(f"{metric}@k")
    ax.grid(alpha=0.3)


def _budget_curves(
    ax: Axes, result: SweepResult, metric: str, keys: Sequence[str], colors: dict, highlight: str | None
) -> None:
    """metric against the context budget (log2 axis), one line per variant, its CI as a band."""
    s = metric_rows(result, metric, keys)
    s = s[_budget(s) > 0]
    markers = variant_markers(result.keys)
    for key in keys:
        r = s[s["key"] == key].sort_values("budget")
        if r.empty:
            continue
        strong = key == highlight
        x = r["budget"].to_numpy(float)
        record(ax, key, x, r["mean"])
        ax.fill_between(x, r["ci_low"].to_numpy(float), r["ci_high"].to_numpy(float), color=colors[key],
                        alpha=0.15, linewidth=0)
        ax.plot(x, r["mean"].to_numpy(float), color=colors[key], marker=markers[key], markersize=4,
                linewidth=3 if strong else 1.5, zorder=3 if strong else 2, label=result.label_of(key))
    ax.set_xscale("log", base=2)
    ax.set_xticks(result.budgets)
    ax.xaxis.set_major_formatter(ScalarFormatter())
    encoding = result.provenance.settings.budget_encoding
    ax.set_xlabel(f"context budget\n({encoding} tokens)")  # two lines: a quarter of the report's width
    ax.set_ylabel(f"mean {metric}")
    ax.set_title(f"{metric} at equal budgets")
    ax.grid(alpha=0.3)


def _bars(ax: Axes, rows: pd.DataFrame, colors: dict, highlight: str | None, xlabel: str, number: dict,
          short_ids: bool = False) -> None:
    """Horizontal bars sorted by mean (best on top; ties in sweep order, the first on top), with CI
    whiskers; tick labels carry the variant's legend number (only the number when `short_ids`)."""
    rows = rows.iloc[::-1].sort_values("mean", kind="stable")
    y = np.arange(len(rows))
    keys = list(rows["key"])
    bars = ax.barh(
        y, rows["mean"].to_numpy(float), xerr=error_bars(rows), color=[colors[v] for v in keys], capsize=3,
        edgecolor=["black" if v == highlight else "none" for v in keys], linewidth=2,
    )
    for key, bar in zip(keys, bars.patches, strict=True):
        record(ax, key, bar.get_x(), bar.get_y(), (bar.get_width(), bar.get_height()))
    wrap = textwrap.TextWrapper(_WRAP, break_long_words=False, break_on_hyphens=False)
    ticks = [str(number[k]) if short_ids else wrap.fill(f"{number[k]}  {v}")
             for k, v in zip(keys, rows["variant"], strict=True)]
    ax.set_yticks(y, ticks, fontsize=8)
    ax.set_xlabel(xlabel)
    ax.grid(axis="x", alpha=0.3)


def _tradeoff(
    ax: Axes, result: SweepResult, k: int, keys: Sequence[str], colors: dict, highlight: str | None
) -> None:
    """Context tokens against recall at k: up and to the left is better."""
    cost = metric_rows(result, COST, keys, k).set_index("key")
    rec = metric_rows(result, RECALL, keys, k).set_index("key")
    shown = [v for v in keys if v in cost.index and v in rec.index]
    if not shown:
        ax.text(0.5, 0.5, f"no {COST} / {RECALL} at k={k}", ha="center", va="center", transform=ax.transAxes)
        return
    cost, rec = cost.loc[shown], rec.loc[shown]
    number = _numbers(keys)
    markers = variant_markers(result.keys)
    for v in shown:
        strong = v == highlight
        record(ax, v, cost.at[v, "mean"], rec.at[v, "mean"])
        ax.errorbar(
            cost.at[v, "mean"], rec.at[v, "mean"], xerr=error_bars(cost.loc[[v]]), yerr=error_bars(rec.loc[[v]]),
            color=colors[v], marker=markers[v], markersize=9 if strong else 6, capsize=3, elinewidth=1,
            markeredgecolor="black" if strong else colors[v], zorder=3 if strong else 2,
        )
        ax.annotate(str(number[v]), (cost.at[v, "mean"], rec.at[v, "mean"]), xytext=(5, 4),
                    textcoords="offset points", fontsize=8)
    front = stats.pareto_front(list(cost["mean"]), list(rec["mean"]))
    if front:
        ax.plot(cost["mean"].iloc[front], rec["mean"].iloc[front], "--", color="0.4", linewidth=1, marker="o",
                markersize=15, markerfacecolor="none", label="Pareto front", zorder=1)
        ax.legend(loc="lower right", fontsize=8)
    ax.set_xlabel(f"mean {COST}@{k}\n(cl100k tokens to the LLM)")
    ax.set_ylabel(f"mean {RECALL}@{k}")
    ax.grid(alpha=0.3)


def _numbers(keys: Sequence[str]) -> dict[str, int]:
    """Short names for crowded panels; the legend spells them out."""
    return {v: i + 1 for i, v in enumerate(keys)}


def _legend_text(result: SweepResult, keys: Sequence[str], numbered: bool, short_ids: bool = False) -> list[str]:
    """Labels, numbered labels, or (short_ids) the numbers alone, for a report that prints the
    full labels in a table next to the figure (20 labels do not fit a figure)."""
    if short_ids:
        return [str(n) for n in _numbers(keys).values()]
    return [f"{n}  {result.label_of(v)}" if numbered else result.label_of(v) for v, n in _numbers(keys).items()]


def _legend(fig: Figure, result: SweepResult, keys: Sequence[str], colors: dict, text: Sequence[str]) -> None:
    """One figure legend below the panels, so it never covers data."""
    markers = variant_markers(result.keys)
    handles = [Line2D([], [], color=colors[v], marker=markers[v], linewidth=2) for v in keys]
    fig.legend(handles, text, loc="outside lower center", ncol=legend_columns(text, fig.get_figwidth()), fontsize=8,
               frameon=False)


def overview(
    result: SweepResult, k: int | None = None, variants: Sequence[str] | None = None, highlight: str | None = None,
    short_ids: bool = False, width: float | None = None,
) -> Figure:
    """The panels of `overview_panels`: recall@k curves, MRR@k ranking, and context cost against
    recall@k; a fourth, recall against context budget, when the result has budget rows.

    k defaults to the largest swept k; `variants` restricts the labels drawn; `highlight` draws
    one variant (e.g. the one selected in the widget) bolder; `short_ids` labels variants by
    number only (the caller prints the legend); `width` (inches) lays the panels out to fit it
    (see `panel_grid`), else they stand in one row.
    """
    k = _pick_k(result, k)
    keys, colors = select_keys(result, variants)
    highlight = highlight_key(result, highlight)
    text = _legend_text(result, keys, numbered=True, short_ids=short_ids)
    ratios = [1, 1.1, 1.1, 1] if has_budgets(result) else [1, 1.1, 1.1]
    rows, cols, fig_width = panel_grid(len(ratios), width, 5.6)
    legend_rows = -(-len(text) // legend_columns(text, fig_width))
    row = max(4.8 if rows == 1 else 3.4, 0.3 * len(keys) + 1.8)
    fig = Figure(figsize=(fig_width, row * rows + 0.22 * legend_rows), layout="constrained")
    ax_curve, ax_mrr, ax_cost, *ax_budget = panel_axes(fig, len(ratios), rows, cols,
                                                  **({"width_ratios": ratios} if rows == 1 else {}))
    if ax_budget:
        _budget_curves(ax_budget[0], result, RECALL, keys, colors, highlight)
    _curves(ax_curve, result, RECALL, keys, colors, highlight)
    _bars(ax_mrr, metric_rows(result, MRR, keys, k), colors, highlight, f"mean {MRR}@{k}", _numbers(keys), short_ids)
    _tradeoff(ax_cost, result, k, keys, colors, highlight)
    for ax, (title, _) in zip(fig.axes, overview_panels(result, k), strict=True):
        ax.set_title(title)
    _legend(fig, result, keys, colors, text)
    return fig


def metric_curves(
    result: SweepResult, metric: str, variants: Sequence[str] | None = None, highlight: str | None = None,
    short_ids: bool = False, width: float | None = None,
) -> Figure:
    """Any metric against k, one line per variant; a k-independent metric (k=0 only, e.g.
    precision_omega) is drawn as a ranking instead. `short_ids`: variants by number only;
    `width`: the figure's, in inches (10 else)."""
    check_metric(result, metric)
    keys, colors = select_keys(result, variants)
    highlight = highlight_key(result, highlight)
    rows = metric_rows(result, metric, keys)
    fig = Figure(figsize=(width or 10, max(4.5, 0.3 * len(keys) + 1.5)), layout="constrained")
    (ax,) = panel_axes(fig, 1, 1, 1)
    if (rows["k"] > 0).any():
        _curves(ax, result, metric, keys, colors, highlight)
        _legend(fig, result, keys, colors, _legend_text(result, keys, numbered=False, short_ids=short_ids))
    else:
        _bars(ax, rows, colors, highlight, f"mean {metric}", _numbers(keys), short_ids)
        ax.set_title(f"{metric} (independent of k)")
    return fig


def budget_curves(
    result: SweepResult, metric: str = RECALL, variants: Sequence[str] | None = None, highlight: str | None = None,
    short_ids: bool = False,
) -> Figure:
    """A metric against the context budget, one line per variant with its CI band: variants
    compared on the same number of tokens handed to the LLM, not on the same k."""
    check_metric(result, metric)
    if not (_budget(metric_rows(result, metric, result.keys)) > 0).any():
        raise ValueError(f"metric {metric!r} has no budget rows in the result (swept budgets: {result.budgets})")
    keys, colors = select_keys(result, variants)
    fig = Figure(figsize=(10, max(4.5, 0.3 * len(keys) + 1.5)), layout="constrained")
    _budget_curves(panel_axes(fig, 1, 1, 1)[0], result, metric, keys, colors, highlight_key(result, highlight))
    _legend(fig, result, keys, colors, _legend_text(result, keys, numbered=False, short_ids=short_ids))
    return fig


def by_group(
    result: SweepResult, groups: Dataset | Mapping[str, str], metric: str = RECALL, k: int | None = None,
    variants: Sequence[str] | None = None, table: pd.DataFrame | None = None, width: float | None = None,
    short_ids: bool = False,
) -> Figure:
    """One panel per group of questions (SweepResult.by_group: a Dataset or qid -> group), each
    variant's mean `metric`@k with its CI, best on top and outlined: the best chunking can differ
    by kind of text. Panels share the x axis; each title gives its number of questions.
    `table`: result.by_group(groups) when already computed (its bootstrap is the costly part);
    `width` (inches): panels laid out to fit it (see `panel_grid`), else three a row; `short_ids`:
    the legend by number only (the caller prints the labels)."""
    k = metric_k(result, metric, k)
    keys, colors = select_keys(result, variants)
    table = result.by_group(groups) if table is None else table
    table = table[(table["metric"] == metric) & (table["k"] == k) & (_budget(table) == 0) & table["key"].isin(keys)]
    names = list(dict.fromkeys(table["group"]))
    best = best_by_group(table, metric).set_index("group")["key"]
    rows, cols, fig_width = panel_grid(len(names), width, 4.2, most=3)
    text = _legend_text(result, keys, numbered=True, short_ids=short_ids)
    height = max(2.6, 0.28 * len(keys) + 1.2)
    fig = Figure(figsize=(fig_width, height * rows + 0.22 * -(-len(text) // legend_columns(text, fig_width))),
                 layout="constrained")
    for ax, name in zip(panel_axes(fig, len(names), rows, cols, sharex=True), names, strict=True):
        part = table[table["group"] == name]
        _bars(ax, part, colors, best[name], f"mean {metric_name(metric, k)}", _numbers(keys), short_ids=True)
        ax.set_title(f"{name} ({part['n'].max()} questions)", fontsize=10)
    _legend(fig, result, keys, colors, text)
    return fig


# --- metrics against a swept parameter ------------------------------------------------------------


