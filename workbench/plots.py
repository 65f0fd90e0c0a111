"""Figures of a SweepResult: quality against k and against equal context budgets, the ranking at
one k, and quality against cost.

Every function returns a fresh matplotlib Figure built without pyplot, so nothing leaks into
global state (safe under Agg, in tests, in widgets and in the notebook alike). Each variant keeps
one colour across panels and across calls: colours follow the variant's position in
`result.variants`, not in the filtered subset, so a redraw with fewer variants repaints nothing.
Variants are identified by key (a label is accepted too, see SweepResult.key_of) and drawn with
their labels.

Every figure also records where each variant is drawn (axes and data coordinates of its points,
bars and cells), so `mark(fig, key)` can add a highlight on top without rebuilding the figure:
that is what makes scrubbing through measured variants cheap (see widgets/render.py).

What the figures show (the parameters swept, the groups a line joins, the colours) is computed in
workbench.plotdata, which the report reads without importing matplotlib.
"""

from __future__ import annotations

import io
import textwrap
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.colors import Normalize
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle
from matplotlib.ticker import ScalarFormatter

from workbench.evaluation import stats
from workbench.plotdata import (
    COST,
    MRR,
    RECALL,
    _axis_label,
    _budget,
    _check_param,
    _compared,
    _groups,
    _is_size,
    _pick_k,
    _values,
    _with_param,
    best_by_group,
    has_budgets,
    models_of,
    overview_panels,
    swept_parameters,
    variant_colors,
)
from workbench.variant import short_value

if TYPE_CHECKING:
    from workbench.dataset import Dataset
    from workbench.sweep import SweepResult

PANEL_WIDTH = 2.9  # inches: the narrowest a panel is drawn in a figure given a width
_WRAP = 32  # characters per line of a variant label on a bar chart axis
MARKERS = ("o", "s", "^", "D", "v", "P", "X")


@dataclass(frozen=True)
class _Spot:
    """Where one variant is drawn: points (x, y arrays) or one box (x, y = lower left, w, h), in
    the data coordinates of the axes. The axes are held weakly: a strong reference would keep the
    figure, the key of the record, alive for ever."""

    ax: weakref.ref[Axes]
    x: np.ndarray
    y: np.ndarray
    box: tuple[float, float] | None = None  # (width, height) for a bar or a cell


# figure -> key -> spots; weak, so a figure nobody holds is freed with its record
_SPOTS: weakref.WeakKeyDictionary[Figure, dict[str, list[_Spot]]] = weakref.WeakKeyDictionary()


def _record(ax: Axes, key: str, x: Any, y: Any, box: tuple[float, float] | None = None) -> None:
    xs, ys = np.atleast_1d(np.asarray(x, dtype=float)), np.atleast_1d(np.asarray(y, dtype=float))
    spot = _Spot(weakref.ref(ax), xs, ys, box)
    _SPOTS.setdefault(ax.figure, {}).setdefault(key, []).append(spot)


def mark(fig: Figure, key: str) -> list[Artist]:
    """Highlight one variant (by key) on a figure made by this module: a hollow black ring at each
    of its points, a black outline round each of its bars and cells. The artists are added to the
    figure and returned (remove them with `a.remove()`); nothing else changes, not even the axes
    limits, so drawing only them over a cached background gives the same picture as a full draw.
    A variant the figure does not show gets no artists."""
    if fig not in _SPOTS:
        raise ValueError("mark: this figure was not made by workbench.plots (nothing recorded)")
    artists: list[Artist] = []
    for spot in _SPOTS[fig].get(key, []):
        if spot.box is None:
            a: Artist = Line2D(spot.x, spot.y, linestyle="none", marker="o", markersize=13, markerfacecolor="none",
                               markeredgecolor="black", markeredgewidth=2)
        else:
            a = Rectangle((spot.x[0], spot.y[0]), *spot.box, fill=False, edgecolor="black", linewidth=2.5)
        a.set(zorder=10, clip_on=False, in_layout=False)
        spot.ax().add_artist(a)  # not add_line/add_patch: those would grow the data limits
        artists.append(a)
    return artists


def variant_markers(keys: Sequence[str]) -> dict[str, str]:
    """A marker per variant, cycling, so neighbours in the legend differ in shape as well as colour."""
    return {key: MARKERS[i % len(MARKERS)] for i, key in enumerate(keys)}


def _select(result: SweepResult, variants: Sequence[str] | None) -> tuple[list[str], dict[str, Any]]:
    """The keys to draw (in sweep order) and the colour of every variant of the result, by key."""
    order = result.keys
    colors = variant_colors(order)
    if variants is None:
        return order, colors
    if not variants:
        raise ValueError("variants is empty: nothing to plot")
    wanted = {result.key_of(v) for v in variants}
    return [v for v in order if v in wanted], colors


def _key(result: SweepResult, highlight: str | None) -> str | None:
    return None if highlight is None else result.key_of(highlight)


def _check_metric(result: SweepResult, metric: str) -> None:
    if metric not in set(result.summary["metric"]):
        raise ValueError(f"metric {metric!r} not in the result; known: {sorted(set(result.summary['metric']))}")


def _rows(result: SweepResult, metric: str, keys: Sequence[str], k: int | None = None) -> pd.DataFrame:
    """Summary rows of one metric (at one k, if given; never a budget row then) for the variants `keys`."""
    s = result.summary
    s = s[(s["metric"] == metric) & s["key"].isin(keys)]
    if k is not None:
        s = s[(s["k"] == k) & (_budget(s) == 0)]
    return s


def _err(rows: pd.DataFrame) -> np.ndarray:
    """Asymmetric error bar lengths from the CI, never negative (matplotlib refuses those)."""
    lo = (rows["mean"] - rows["ci_low"]).to_numpy(dtype=float)
    hi = (rows["ci_high"] - rows["mean"]).to_numpy(dtype=float)
    return np.clip(np.vstack([lo, hi]), 0, None)


def _curves(
    ax: Axes, result: SweepResult, metric: str, keys: Sequence[str], colors: dict, highlight: str | None
) -> None:
    """metric against k, one errorbar line per variant (label = variant label)."""
    s = _rows(result, metric, keys)
    s = s[s["k"] > 0]
    markers = variant_markers(result.keys)
    for key in keys:
        r = s[s["key"] == key].sort_values("k")
        if r.empty:
            continue
        strong = key == highlight
        _record(ax, key, r["k"], r["mean"])
        ax.errorbar(
            r["k"].to_numpy(float), r["mean"].to_numpy(float), yerr=_err(r), label=result.label_of(key),
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
    s = _rows(result, metric, keys)
    s = s[_budget(s) > 0]
    markers = variant_markers(result.keys)
    for key in keys:
        r = s[s["key"] == key].sort_values("budget")
        if r.empty:
            continue
        strong = key == highlight
        x = r["budget"].to_numpy(float)
        _record(ax, key, x, r["mean"])
        ax.fill_between(x, r["ci_low"].to_numpy(float), r["ci_high"].to_numpy(float), color=colors[key],
                        alpha=0.15, linewidth=0)
        ax.plot(x, r["mean"].to_numpy(float), color=colors[key], marker=markers[key], markersize=4,
                linewidth=3 if strong else 1.5, zorder=3 if strong else 2, label=result.label_of(key))
    ax.set_xscale("log", base=2)
    ax.set_xticks(result.budgets)
    ax.xaxis.set_major_formatter(ScalarFormatter())
    encoding = result.config.get("budget_encoding", "cl100k_base")
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
        y, rows["mean"].to_numpy(float), xerr=_err(rows), color=[colors[v] for v in keys], capsize=3,
        edgecolor=["black" if v == highlight else "none" for v in keys], linewidth=2,
    )
    for key, bar in zip(keys, bars.patches, strict=True):
        _record(ax, key, bar.get_x(), bar.get_y(), (bar.get_width(), bar.get_height()))
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
    cost = _rows(result, COST, keys, k).set_index("key")
    rec = _rows(result, RECALL, keys, k).set_index("key")
    shown = [v for v in keys if v in cost.index and v in rec.index]
    if not shown:
        ax.text(0.5, 0.5, f"no {COST} / {RECALL} at k={k}", ha="center", va="center", transform=ax.transAxes)
        return
    cost, rec = cost.loc[shown], rec.loc[shown]
    number = _numbers(keys)
    markers = variant_markers(result.keys)
    for v in shown:
        strong = v == highlight
        _record(ax, v, cost.at[v, "mean"], rec.at[v, "mean"])
        ax.errorbar(
            cost.at[v, "mean"], rec.at[v, "mean"], xerr=_err(cost.loc[[v]]), yerr=_err(rec.loc[[v]]),
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


def _ncol(text: Sequence[str], width: float) -> int:
    """Legend columns that fit a figure `width` inches wide (about 14 characters of 8-point text
    an inch, a marker and a gap taking 8 more per column)."""
    return max(1, min(len(text), int(14 * width) // (max(map(len, text)) + 8)))


def _panels(n: int, width: float | None, panel: float, most: int | None = None) -> tuple[int, int, float]:
    """(rows, columns, figure width in inches) of n panels: one row (at most `most` a row) of
    `panel` inches each; or, in a figure `width` inches wide, as many a row as fit at PANEL_WIDTH
    (on a phone's width, one: the panels stack and stay legible)."""
    cols = min(n, most or n)
    if width is not None:
        cols = max(1, min(cols, int(width // PANEL_WIDTH)))
    return -(-n // cols), cols, panel * cols + 0.5 if width is None else width


def _axes(fig: Figure, n: int, rows: int, cols: int, **grid: Any) -> list[Axes]:
    """n panels on a rows x cols grid, the unused cells of the last row removed. Each y axis
    prints its numbers in full (no "+2.5e3" offset nor "1e6" factor above the axis, one to read
    as a tick), so its title stays at the top of the panel: matplotlib would otherwise measure
    every axis again, for each title, at each layout pass and each draw, to lift the title over
    such a text (a sixth of the time a figure takes to save), and there is none to lift it over."""
    axes = list(np.ravel(fig.subplots(rows, cols, squeeze=False, **grid)))
    for ax in axes[n:]:
        fig.delaxes(ax)
    for ax in axes[:n]:
        ax.ticklabel_format(axis="y", style="plain", useOffset=False)
        ax.set_title("", y=1.0)  # a given y: later titles are placed there, not moved
    return axes[:n]


def _legend(fig: Figure, result: SweepResult, keys: Sequence[str], colors: dict, text: Sequence[str]) -> None:
    """One figure legend below the panels, so it never covers data."""
    markers = variant_markers(result.keys)
    handles = [Line2D([], [], color=colors[v], marker=markers[v], linewidth=2) for v in keys]
    fig.legend(handles, text, loc="outside lower center", ncol=_ncol(text, fig.get_figwidth()), fontsize=8,
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
    (see `_panels`), else they stand in one row.
    """
    k = _pick_k(result, k)
    keys, colors = _select(result, variants)
    highlight = _key(result, highlight)
    text = _legend_text(result, keys, numbered=True, short_ids=short_ids)
    ratios = [1, 1.1, 1.1, 1] if has_budgets(result) else [1, 1.1, 1.1]
    rows, cols, fig_width = _panels(len(ratios), width, 5.6)
    legend_rows = -(-len(text) // _ncol(text, fig_width))
    row = max(4.8 if rows == 1 else 3.4, 0.3 * len(keys) + 1.8)
    fig = Figure(figsize=(fig_width, row * rows + 0.22 * legend_rows), layout="constrained")
    ax_curve, ax_mrr, ax_cost, *ax_budget = _axes(fig, len(ratios), rows, cols,
                                                  **({"width_ratios": ratios} if rows == 1 else {}))
    if ax_budget:
        _budget_curves(ax_budget[0], result, RECALL, keys, colors, highlight)
    _curves(ax_curve, result, RECALL, keys, colors, highlight)
    _bars(ax_mrr, _rows(result, MRR, keys, k), colors, highlight, f"mean {MRR}@{k}", _numbers(keys), short_ids)
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
    _check_metric(result, metric)
    keys, colors = _select(result, variants)
    highlight = _key(result, highlight)
    rows = _rows(result, metric, keys)
    fig = Figure(figsize=(width or 10, max(4.5, 0.3 * len(keys) + 1.5)), layout="constrained")
    (ax,) = _axes(fig, 1, 1, 1)
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
    _check_metric(result, metric)
    if not (_budget(_rows(result, metric, result.keys)) > 0).any():
        raise ValueError(f"metric {metric!r} has no budget rows in the result (swept budgets: {result.budgets})")
    keys, colors = _select(result, variants)
    fig = Figure(figsize=(10, max(4.5, 0.3 * len(keys) + 1.5)), layout="constrained")
    _budget_curves(_axes(fig, 1, 1, 1)[0], result, metric, keys, colors, _key(result, highlight))
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
    `width` (inches): panels laid out to fit it (see `_panels`), else three a row; `short_ids`:
    the legend by number only (the caller prints the labels)."""
    k = _metric_k(result, metric, k)
    keys, colors = _select(result, variants)
    table = result.by_group(groups) if table is None else table
    table = table[(table["metric"] == metric) & (table["k"] == k) & (_budget(table) == 0) & table["key"].isin(keys)]
    names = list(dict.fromkeys(table["group"]))
    best = best_by_group(table, metric).set_index("group")["key"]
    rows, cols, fig_width = _panels(len(names), width, 4.2, most=3)
    text = _legend_text(result, keys, numbered=True, short_ids=short_ids)
    height = max(2.6, 0.28 * len(keys) + 1.2)
    fig = Figure(figsize=(fig_width, height * rows + 0.22 * -(-len(text) // _ncol(text, fig_width))),
                 layout="constrained")
    for ax, name in zip(_axes(fig, len(names), rows, cols, sharex=True), names, strict=True):
        part = table[table["group"] == name]
        _bars(ax, part, colors, best[name], f"mean {_metric_name(metric, k)}", _numbers(keys), short_ids=True)
        ax.set_title(f"{name} ({part['n'].max()} questions)", fontsize=10)
    _legend(fig, result, keys, colors, text)
    return fig


def figure_to_png_bytes(fig: Figure, dpi: int = 100) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


# --- metrics against a swept parameter ------------------------------------------------------------


def _metric_k(result: SweepResult, metric: str, k: int | None) -> int:
    """k for a metric measured at each k; 0 for a k-independent one (e.g. precision_omega)."""
    _check_metric(result, metric)
    ks = set(result.summary.loc[result.summary["metric"] == metric, "k"])
    return _pick_k(result, k) if ks - {0} else 0


def _metric_name(metric: str, k: int) -> str:
    return f"{metric}@{k}" if k else metric


def _categories(values: pd.Series) -> list[Any]:
    """The values of a parameter that is not a number (tokenizer, unit, a switch), in sweep order,
    to be placed at 0, 1, 2...; [] for a numeric parameter, drawn on its own scale."""
    numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)
    return [] if numeric else list(dict.fromkeys(values))


def by_parameter(
    result: SweepResult,
    param: str,
    k: int | None = None,
    metrics: Sequence[str] = (RECALL, MRR, COST),
    variants: Sequence[str] | None = None,
    highlight: str | None = None,
    width: float | None = None,
) -> Figure:
    """Metrics against one swept parameter: a panel per metric, one line per combination of the
    other things that vary (strategy, other parameters, modifiers), the confidence interval as a
    band. Variants without `param`, and those no other variant differs from in `param` alone (a
    lone point compares nothing), are left out; the title says how many. Sizes spanning a factor
    of 4 or more get a log2 axis. `width` (inches): panels laid out to fit it, else in one row."""
    _check_param(result, param)
    keys, _ = _select(result, variants)
    rows, missing = _with_param(result, keys, [param])
    groups = _compared(_groups(result, rows, [param]), param)
    drawn = rows["key"].isin({key for _, part in groups for key in part["key"]})
    rows, alone = rows[drawn], int((~drawn).sum())
    colors, markers = variant_colors([name for name, _ in groups]), variant_markers([name for name, _ in groups])
    categories = _categories(_values(rows, param))
    pos = {v: float(i) for i, v in enumerate(categories)} if categories else None
    values = _values(rows, param).map(pos) if pos else rows[param].astype(float)
    log2 = (not pos and _is_size(result, param) and len(values) and values.min() > 0
            and values.max() >= 4 * values.min())
    rows_of_panels, cols, fig_width = _panels(len(metrics), width, 5.2)
    fig = Figure(figsize=(fig_width, (4.6 if rows_of_panels == 1 else 3.4) * rows_of_panels), layout="constrained")
    axes = _axes(fig, len(metrics), rows_of_panels, cols)
    for ax, metric in zip(axes, metrics, strict=True):
        mk = _metric_k(result, metric, k)
        means = _rows(result, metric, keys, mk).set_index("key")
        for name, part in groups:
            part = part[part["key"].isin(means.index)]
            x = (_values(part, param).map(pos) if pos else part[param]).to_numpy(float)
            part, x = part.iloc[np.argsort(x, kind="stable")], np.sort(x, kind="stable")
            r = means.loc[part["key"]]
            ax.fill_between(x, r["ci_low"].to_numpy(float), r["ci_high"].to_numpy(float), color=colors[name],
                            alpha=0.2, linewidth=0)
            ax.plot(x, r["mean"].to_numpy(float), marker=markers[name], color=colors[name], label=name)
            for key, xi, yi in zip(part["key"], x, r["mean"], strict=True):
                _record(ax, key, xi, yi)
        if log2:
            ax.set_xscale("log", base=2)
            ax.xaxis.set_major_formatter(ScalarFormatter())
        if pos:
            ax.set_xticks(list(pos.values()), [short_value(v) for v in pos])
        elif values.nunique() <= 12:
            ax.set_xticks(sorted(values.unique()))
        ax.set_xlabel(_axis_label(result, param, rows["key"]))
        ax.set_ylabel(f"mean {_metric_name(metric, mk)}")
        ax.set_title(f"{_metric_name(metric, mk)} vs {param}")
        ax.grid(alpha=0.3)
    left_out = [f"{missing} variant(s) without {param}"] * bool(missing) + [
        f"{alone} that differ from every other in more than {param}"] * bool(alone)
    if left_out:  # wrapped to the figure (about 11 characters of 10-point text an inch)
        fig.suptitle(textwrap.fill(f"Left out: {', '.join(left_out)}", int(11 * fig_width)), fontsize=10)
    if groups:
        names = [name for name, _ in groups]
        handles = [Line2D([], [], color=colors[n], marker=markers[n]) for n in names]
        fig.legend(handles, names, loc="outside lower center", ncol=_ncol(names, fig_width), fontsize=8,
                   frameon=False)
    _mark_static(fig, result, highlight)
    return fig


def _mark_static(fig: Figure, result: SweepResult, highlight: str | None) -> None:
    if highlight is not None:
        mark(fig, result.key_of(highlight))


def heatmap(
    result: SweepResult,
    x: str,
    y: str,
    metric: str = RECALL,
    k: int | None = None,
    variants: Sequence[str] | None = None,
    highlight: str | None = None,
    strategy: str | None = None,
    width: float | None = None,
) -> Figure:
    """One metric's mean over a grid of two parameters (e.g. size x overlap): each cell says the
    mean and, below, the half-width of its interval; combinations not measured stay blank. One
    panel per strategy (and per value of anything else that varies), one shared colour bar;
    `strategy` keeps one; `width` (inches): panels laid out to fit it, else in one row."""
    for p in (x, y):
        _check_param(result, p)
    mk = _metric_k(result, metric, k)
    keys, _ = _select(result, variants)
    rows, _ = _with_param(result, keys, [x, y])
    if strategy is not None:
        if strategy not in set(rows["strategy"]):
            raise ValueError(f"strategy {strategy!r} has no variants with both {x} and {y}; "
                             f"those that do: {sorted(set(rows['strategy']))}")
        rows = rows[rows["strategy"] == strategy]
    if rows.empty:
        raise ValueError(f"no variant has both parameters {x!r} and {y!r}")
    summary = _rows(result, metric, rows["key"], mk).set_index("key")
    rows = rows[rows["key"].isin(summary.index)]
    groups = _groups(result, rows, [x, y])
    name = _metric_name(metric, mk)
    norm = Normalize(summary["mean"].min(), summary["mean"].max())
    rows_of_panels, cols, fig_width = _panels(len(groups), width, 5.5)
    bar = 0.5 * (width is None)  # room for the colour bar
    fig = Figure(figsize=(fig_width + bar, 4.4 * rows_of_panels), layout="constrained")
    axes = _axes(fig, len(groups), rows_of_panels, cols)
    digits = 0 if summary["mean"].abs().max() >= 10 else 2
    for ax, (title, part) in zip(axes, groups, strict=True):
        xs, ys = sorted(part[x].unique()), sorted(part[y].unique())
        grid = np.full((len(ys), len(xs)), np.nan)
        for key, xv, yv in zip(part["key"], part[x], part[y], strict=True):
            i, j = ys.index(yv), xs.index(xv)
            mean, lo, hi = summary.loc[key, ["mean", "ci_low", "ci_high"]]
            grid[i, j] = mean
            dark = norm(mean) < 0.5
            ax.text(j, i, f"{mean:.{digits}f}", ha="center", va="center", fontsize=10,
                    color="white" if dark else "black")
            ax.text(j, i - 0.25, f"±{(hi - lo) / 2:.{digits}f}", ha="center", va="center", fontsize=7,
                    color="white" if dark else "black")
            _record(ax, key, j - 0.5, i - 0.5, (1.0, 1.0))
        image = ax.imshow(np.ma.masked_invalid(grid), norm=norm, cmap="viridis", origin="lower", aspect="auto")
        ax.set_xticks(range(len(xs)), [short_value(v) for v in xs])
        ax.set_yticks(range(len(ys)), [short_value(v) for v in ys])
        ax.set_xlabel(_axis_label(result, x, part["key"]))
        ax.set_ylabel(_axis_label(result, y, part["key"]))
        ax.set_title(f"{name}: {title}")
    fig.colorbar(image, ax=list(axes), label=f"mean {name}")
    _mark_static(fig, result, highlight)
    return fig


def by_model(
    result: SweepResult,
    param: str | None = None,
    metric: str = RECALL,
    k: int | None = None,
    width: float | None = None,
) -> Figure:
    """Which chunking for which model: one panel per model, `metric` against `param` (default: the
    first swept size), one line per chunking (strategy and whatever else varies), the interval as a
    band, the best point of each panel starred; panels share the y axis, so models compare too."""
    models = models_of(result)
    if len(models) < 2:
        raise ValueError(f"by_model needs a result of two models or more, got {models}")
    param = param or next((p for p in swept_parameters(result) if _is_size(result, p)), None)
    if param is None:
        raise ValueError(f"no chunk size swept to draw against; pass param= one of {result.grid_params}")
    _check_param(result, param)
    mk = _metric_k(result, metric, k)
    means = _rows(result, metric, result.keys, mk).set_index("key")
    rows, _ = _with_param(result, result.keys, [param])
    rows_of_panels, cols, fig_width = _panels(len(models), width, 4.2)
    fig = Figure(figsize=(fig_width, 3.8 * rows_of_panels), layout="constrained")
    axes = _axes(fig, len(models), rows_of_panels, cols, sharey=True)
    names = [n for n, _ in _groups(result, rows, [param, "model"])]
    colors, markers = variant_colors(names), variant_markers(names)
    for ax, model in zip(axes, models, strict=True):
        mine = rows[rows["model"] == model]
        best = means.loc[mine["key"], "mean"].agg("idxmin" if stats.lower_is_better(metric) else "idxmax")
        for name, part in _groups(result, mine, [param, "model"]):
            part = part.iloc[np.argsort(part[param].to_numpy(float), kind="stable")]
            r, x = means.loc[part["key"]], part[param].to_numpy(float)
            ax.fill_between(x, r["ci_low"].to_numpy(float), r["ci_high"].to_numpy(float), color=colors[name],
                            alpha=0.2, linewidth=0)
            ax.plot(x, r["mean"].to_numpy(float), marker=markers[name], color=colors[name], label=name)
            for key, xi, yi in zip(part["key"], x, r["mean"], strict=True):
                _record(ax, key, xi, yi)
        ax.plot([rows.set_index("key").loc[best, param]], [means.loc[best, "mean"]], marker="*", markersize=16,
                color="gold", markeredgecolor="black", linestyle="none")
        ax.set_title(model)
        ax.set_xlabel(_axis_label(result, param, rows["key"]))
        ax.set_ylabel(f"mean {_metric_name(metric, mk)}")
        ax.grid(alpha=0.3)
    handles = [Line2D([], [], color=colors[n], marker=markers[n]) for n in names]
    fig.legend(handles, names, loc="outside lower center", ncol=_ncol(names, fig_width), fontsize=8, frameon=False)
    fig.suptitle(f"Which chunking for which model: {_metric_name(metric, mk)} vs {param} (★ each model's best)")
    return fig
