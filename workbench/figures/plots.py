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
    Label,
    check_metric,
    crowded,
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
    place_labels,
    record,
    select_keys,
    variant_markers,
)
from workbench.figures.params import by_model, by_parameter, heatmap
from workbench.figures.plotdata import (
    COST,
    CROWDED,
    GREY,
    MRR,
    RECALL,
    _budget,
    _pick_k,
    best_by_group,
    chunkings,
    has_budgets,
    overview_panels,
)
from workbench.figures.race import race

# the figures of a result, as `wb.plots` offers them (those against parameters drawn in figures/params.py, a
# search's race in figures/race.py)
__all__ = ["budget_curves", "by_group", "by_model", "by_parameter", "figure_to_png_bytes", "heatmap", "mark",
           "metric_curves", "overview", "race", "variant_markers"]

_WRAP = 32  # characters per line of a variant label on a bar chart axis

if TYPE_CHECKING:
    from workbench.dataset import Dataset
    from workbench.results.result import SweepResult


def _curves(
    ax: Axes, result: SweepResult, metric: str, keys: Sequence[str], colors: dict, highlight: str | None,
    labels: list[Label] | None = None,
) -> None:
    """metric against k, one errorbar line per variant (label = variant label). `labels`: a
    crowded figure's, to which each line in colour adds its number at its end (the grey ones are
    drawn thin, beneath, without their intervals)."""
    s = metric_rows(result, metric, keys)
    s = s[s["k"] > 0]
    markers = variant_markers(result.keys)
    number = _numbers(keys)
    for key in keys:
        r = s[s["key"] == key].sort_values("k")
        if r.empty:
            continue
        strong = key == highlight
        x, y = r["k"].to_numpy(float), r["mean"].to_numpy(float)
        record(ax, key, x, y)
        if colors[key] == GREY:
            ax.plot(x, y, color=GREY, linewidth=2.5 if strong else 1, zorder=1, label=result.label_of(key))
            continue
        ax.errorbar(
            x, y, yerr=error_bars(r), label=result.label_of(key), color=colors[key],
            marker=markers[key], markersize=4, linewidth=3 if strong else 1.5, capsize=3, elinewidth=1, alpha=0.95,
            zorder=3 if strong else 2,
        )
        if labels is not None:
            labels.append(Label(ax, x[-1], y[-1], str(number[key]), colors[key]))
    ax.set_xticks(result.ks)
    ax.set_xlabel("k")
    ax.set_ylabel(f"mean {metric}")
    ax.set_title(f"{metric}@k")
    ax.grid(alpha=0.3)
    if labels is not None:
        _room_right(ax)


def _budget_curves(
    ax: Axes, result: SweepResult, metric: str, keys: Sequence[str], colors: dict, highlight: str | None,
    labels: list[Label] | None = None,
) -> None:
    """metric against the context budget (log2 axis), one line per variant, its CI as a band;
    `labels` as in `_curves` (a grey line has no band)."""
    s = metric_rows(result, metric, keys)
    s = s[_budget(s) > 0]
    markers = variant_markers(result.keys)
    number = _numbers(keys)
    for key in keys:
        r = s[s["key"] == key].sort_values("budget")
        if r.empty:
            continue
        strong = key == highlight
        x, y = r["budget"].to_numpy(float), r["mean"].to_numpy(float)
        record(ax, key, x, y)
        if colors[key] == GREY:
            ax.plot(x, y, color=GREY, linewidth=2.5 if strong else 1, zorder=1, label=result.label_of(key))
            continue
        ax.fill_between(x, r["ci_low"].to_numpy(float), r["ci_high"].to_numpy(float), color=colors[key],
                        alpha=0.15, linewidth=0)
        ax.plot(x, y, color=colors[key], marker=markers[key], markersize=4,
                linewidth=3 if strong else 1.5, zorder=3 if strong else 2, label=result.label_of(key))
        if labels is not None:
            labels.append(Label(ax, x[-1], y[-1], str(number[key]), colors[key]))
    ax.set_xscale("log", base=2)
    ax.set_xticks(result.budgets)
    ax.xaxis.set_major_formatter(ScalarFormatter())
    encoding = result.provenance.settings.budget_encoding
    ax.set_xlabel(f"context budget\n({encoding} tokens)")  # two lines: a quarter of the report's width
    ax.set_ylabel(f"mean {metric}")
    ax.set_title(f"{metric} at equal budgets")
    ax.grid(alpha=0.3)
    if labels is not None:
        _room_right(ax)


def _room_right(ax: Axes, share: float = 0.15) -> None:
    """Widen the x axis by `share` on the right (on a log axis, of its decades): room for the labels
    at the lines' ends."""
    lo, hi = ax.get_xlim()
    ax.set_xlim(lo, hi * (hi / lo) ** share if ax.get_xscale() == "log" else hi + share * (hi - lo))


def _bars(ax: Axes, rows: pd.DataFrame, colors: dict, highlight: str | None, xlabel: str, number: dict,
          short_ids: bool = False, shared: Mapping[str, tuple[str, list[str]]] | None = None) -> None:
    """Horizontal bars sorted by mean (best on top; ties in sweep order, the first on top), with CI
    whiskers; tick labels carry the variant's legend number (only the number when `short_ids`).
    `shared`: a bar's key -> its name and the variants it stands for, when one bar is several
    variants' (a chunking's, see plotdata.chunkings): it is recorded for each and numbered by all,
    in the colour of the first of them not grey."""
    rows = rows.iloc[::-1].sort_values("mean", kind="stable")
    y = np.arange(len(rows))
    keys = list(rows["key"])
    bar_of = {key: (name, [key]) for key, name in zip(keys, rows["variant"], strict=True)} | dict(shared or {})
    members = [bar_of[key][1] for key in keys]
    bars = ax.barh(
        y, rows["mean"].to_numpy(float), xerr=error_bars(rows), capsize=3, linewidth=2,
        color=[next((colors[m] for m in these if colors[m] != GREY), GREY) for these in members],
        edgecolor=["black" if highlight in these else "none" for these in members],
    )
    for these, bar in zip(members, bars.patches, strict=True):
        for key in these:
            record(ax, key, bar.get_x(), bar.get_y(), (bar.get_width(), bar.get_height()))
    wrap = textwrap.TextWrapper(_WRAP, break_long_words=False, break_on_hyphens=False)
    numbers = [", ".join(str(number[m]) for m in these) for these in members]
    ticks = numbers if short_ids else [wrap.fill(f"{n}  {bar_of[key][0]}")
                                       for n, key in zip(numbers, keys, strict=True)]
    ax.set_yticks(y, ticks, fontsize=8)
    ax.set_xlabel(xlabel)
    ax.grid(axis="x", alpha=0.3)


def _tradeoff(
    ax: Axes, result: SweepResult, k: int, keys: Sequence[str], colors: dict, highlight: str | None,
    labels: list[Label] | None = None,
) -> None:
    """Context tokens against recall at k: up and to the left is better. Each point numbered; in a
    crowded figure (`labels`) only those in colour, placed later where no label overlaps another,
    and the grey ones drawn small, beneath, without their intervals."""
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
        x, y = cost.at[v, "mean"], rec.at[v, "mean"]
        record(ax, v, x, y)
        if colors[v] == GREY:
            ax.plot(x, y, color=GREY, marker="o", markersize=6 if strong else 4, zorder=1)
            continue
        ax.errorbar(
            x, y, xerr=error_bars(cost.loc[[v]]), yerr=error_bars(rec.loc[[v]]),
            color=colors[v], marker=markers[v], markersize=9 if strong else 6, capsize=3, elinewidth=1,
            markeredgecolor="black" if strong else colors[v], zorder=3 if strong else 2,
        )
        if labels is None:
            ax.annotate(str(number[v]), (x, y), xytext=(5, 4), textcoords="offset points", fontsize=8)
        else:
            labels.append(Label(ax, x, y, str(number[v]), colors[v]))
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


def _legend_text(result: SweepResult, keys: Sequence[str], colors: dict, numbered: bool,
                 short_ids: bool = False) -> list[str]:
    """Labels, numbered labels, or (short_ids) the numbers alone, for a report that prints the
    full labels in a table next to the figure (20 labels do not fit a figure); in a crowded figure
    only those in colour, then one entry for the grey rest."""
    number = _numbers(keys)
    named = [v for v in keys if colors[v] != GREY]
    text = [str(number[v]) if short_ids else f"{number[v]}  {result.label_of(v)}" if numbered else result.label_of(v)
            for v in named]
    rest = len(keys) - len(named)
    return text + [f"grey: the other {rest}"] * bool(rest)


def _legend(fig: Figure, result: SweepResult, keys: Sequence[str], colors: dict, text: Sequence[str]) -> None:
    """One figure legend below the panels, so it never covers data (`_legend_text`'s entries)."""
    markers = variant_markers(result.keys)
    handles = [Line2D([], [], color=colors[v], marker=markers[v], linewidth=2) for v in keys if colors[v] != GREY]
    handles += [Line2D([], [], color=GREY, linewidth=2)] * (len(text) - len(handles))
    fig.legend(handles, text, loc="outside lower center", ncol=legend_columns(text, fig.get_figwidth()), fontsize=8,
               frameon=False)


def _bar_height(bars: int, short_ids: bool, pitch: float = 0.3) -> float:
    """Inches for a panel of this many bars, `pitch` each (room for a label on two lines); half
    that over CROWDED bars labelled by number alone, as the report draws them."""
    return pitch * bars / (2 if short_ids and bars > CROWDED else 1)


def overview(
    result: SweepResult, k: int | None = None, variants: Sequence[str] | None = None, highlight: str | None = None,
    short_ids: bool = False, width: float | None = None,
) -> Figure:
    """The panels of `overview_panels`: recall@k curves, MRR@k ranking, and context cost against
    recall@k; a fourth, recall against context budget, when the result has budget rows.

    k defaults to the largest swept k; `variants` restricts the labels drawn; `highlight` draws
    one variant (e.g. the one selected in the widget) bolder; `short_ids` labels variants by
    number only (the caller prints the legend); `width` (inches) lays the panels out to fit it
    (see `panel_grid`), else they stand in one row. Over CROWDED variants, the TOP best (by
    recall at the default k) are drawn in colour and numbered at their points, the rest in grey.
    """
    k = _pick_k(result, k)
    keys, colors = select_keys(result, variants)
    highlight = highlight_key(result, highlight)
    labels: list[Label] | None = [] if crowded(keys) else None
    text = _legend_text(result, keys, colors, numbered=True, short_ids=short_ids)
    ratios = [1, 1.1, 1.1, 1] if has_budgets(result) else [1, 1.1, 1.1]
    rows, cols, fig_width = panel_grid(len(ratios), width, 5.6)
    legend_rows = -(-len(text) // legend_columns(text, fig_width))
    bars = _bar_height(len(keys), short_ids) + 1.8
    # every row as tall as its bars need, when they stand in a row of their own
    heights = [max(4.8 if rows == 1 else 3.4, bars if r == 1 // cols else 0) for r in range(rows)]
    fig = Figure(figsize=(fig_width, sum(heights) + 0.22 * legend_rows), layout="constrained")
    ax_curve, ax_mrr, ax_cost, *ax_budget = panel_axes(fig, len(ratios), rows, cols, height_ratios=heights,
                                                  **({"width_ratios": ratios} if rows == 1 else {}))
    if ax_budget:
        _budget_curves(ax_budget[0], result, RECALL, keys, colors, highlight, labels)
    _curves(ax_curve, result, RECALL, keys, colors, highlight, labels)
    _bars(ax_mrr, metric_rows(result, MRR, keys, k), colors, highlight, f"mean {MRR}@{k}", _numbers(keys), short_ids)
    _tradeoff(ax_cost, result, k, keys, colors, highlight, labels)
    for ax, (title, _) in zip(fig.axes, overview_panels(result, k), strict=True):
        ax.set_title(title)
    _legend(fig, result, keys, colors, text)
    place_labels(fig, labels or [])
    return fig


def metric_curves(
    result: SweepResult, metric: str, variants: Sequence[str] | None = None, highlight: str | None = None,
    short_ids: bool = False, width: float | None = None,
) -> Figure:
    """Any metric against k, one line per variant; a k-independent metric (k=0 only, e.g.
    precision_omega) is drawn as a ranking instead, one bar per chunking (plotdata.chunkings: such
    a metric is the chunks', whatever retrieves them). `short_ids`: variants by number only;
    `width`: the figure's, in inches (10 else). Crowded as `overview`."""
    check_metric(result, metric)
    keys, colors = select_keys(result, variants)
    highlight = highlight_key(result, highlight)
    rows = metric_rows(result, metric, keys)
    if (rows["k"] > 0).any():
        labels: list[Label] | None = [] if crowded(keys) else None
        text = _legend_text(result, keys, colors, numbered=False, short_ids=short_ids)
        fig = Figure(figsize=(width or 10, max(4.5, 0.3 * len(text) + 1.5)), layout="constrained")
        _curves(panel_axes(fig, 1, 1, 1)[0], result, metric, keys, colors, highlight, labels)
        _legend(fig, result, keys, colors, text)
        place_labels(fig, labels or [])
        return fig
    shared = {members[0]: (name, members) for name, members in chunkings(result, keys)}
    fig = Figure(figsize=(width or 10, max(4.5, _bar_height(len(shared), short_ids) + 1.5)), layout="constrained")
    (ax,) = panel_axes(fig, 1, 1, 1)
    _bars(ax, rows[rows["key"].isin(shared)], colors, highlight, f"mean {metric}", _numbers(keys), short_ids, shared)
    ax.set_title(f"{metric} (independent of k)" + "\none bar per chunking" * (len(shared) < len(keys)))
    return fig


def budget_curves(
    result: SweepResult, metric: str = RECALL, variants: Sequence[str] | None = None, highlight: str | None = None,
    short_ids: bool = False,
) -> Figure:
    """A metric against the context budget, one line per variant with its CI band: variants
    compared on the same number of tokens handed to the LLM, not on the same k. Crowded as `overview`."""
    check_metric(result, metric)
    if not (_budget(metric_rows(result, metric, result.keys)) > 0).any():
        raise ValueError(f"metric {metric!r} has no budget rows in the result (swept budgets: {result.budgets})")
    keys, colors = select_keys(result, variants)
    labels: list[Label] | None = [] if crowded(keys) else None
    text = _legend_text(result, keys, colors, numbered=False, short_ids=short_ids)
    fig = Figure(figsize=(10, max(4.5, 0.3 * len(text) + 1.5)), layout="constrained")
    _budget_curves(panel_axes(fig, 1, 1, 1)[0], result, metric, keys, colors, highlight_key(result, highlight),
                   labels)
    _legend(fig, result, keys, colors, text)
    place_labels(fig, labels or [])
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
    text = _legend_text(result, keys, colors, numbered=True, short_ids=short_ids)
    height = max(2.6, _bar_height(len(keys), True, 0.28) + 1.2)
    fig = Figure(figsize=(fig_width, height * rows + 0.22 * -(-len(text) // legend_columns(text, fig_width))),
                 layout="constrained")
    for ax, name in zip(panel_axes(fig, len(names), rows, cols, sharex=True), names, strict=True):
        part = table[table["group"] == name]
        _bars(ax, part, colors, best[name], f"mean {metric_name(metric, k)}", _numbers(keys), short_ids=True)
        ax.set_title(f"{name} ({part['n'].max()} questions)", fontsize=10)
    _legend(fig, result, keys, colors, text)
    return fig


# --- metrics against a swept parameter ------------------------------------------------------------


