"""Metrics against the swept parameters: one parameter (`by_parameter`), two (`heatmap`), the
embedding model (`by_model`). Same conventions as workbench.figures.plots.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.colors import Normalize
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import ScalarFormatter

from workbench.core.params import short_value
from workbench.evaluation import stats
from workbench.figures.plotdata import (
    COST,
    GREY,
    MRR,
    RECALL,
    _axis_label,
    _check_param,
    _compared,
    _groups,
    _is_size,
    _values,
    _with_param,
    group_colors,
    models_of,
    swept_parameters,
    value_categories,
)

if TYPE_CHECKING:
    from workbench.results.result import SweepResult
from workbench.figures.draw import (
    legend_columns,
    mark_highlight,
    metric_k,
    metric_name,
    metric_rows,
    panel_axes,
    panel_grid,
    record,
    select_keys,
    variant_markers,
)

_TITLE = 28  # characters a line of a panel's title (12 points) in a panel of PANEL_WIDTH


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
    keys, _ = select_keys(result, variants)
    rows, missing = _with_param(result, keys, [param])
    groups = _compared(_groups(result, rows, [param]), param)
    drawn = rows["key"].isin({key for _, part in groups for key in part["key"]})
    rows, alone = rows[drawn], int((~drawn).sum())
    colors, markers = group_colors(result, groups), variant_markers([name for name, _ in groups])
    categories = value_categories(_values(rows, param))
    pos = {v: float(i) for i, v in enumerate(categories)} if categories else None
    values = _values(rows, param).map(pos) if pos else rows[param].astype(float)
    log2 = (not pos and _is_size(result, param) and len(values) and values.min() > 0
            and values.max() >= 4 * values.min())
    rows_of_panels, cols, fig_width = panel_grid(len(metrics), width, 5.2)
    fig = Figure(figsize=(fig_width, (4.6 if rows_of_panels == 1 else 3.4) * rows_of_panels), layout="constrained")
    axes = panel_axes(fig, len(metrics), rows_of_panels, cols)
    for ax, metric in zip(axes, metrics, strict=True):
        mk = metric_k(result, metric, k)
        means = metric_rows(result, metric, keys, mk).set_index("key")
        for name, part in groups:
            part = part[part["key"].isin(means.index)]
            x = (_values(part, param).map(pos) if pos else part[param]).to_numpy(float)
            part, x = part.iloc[np.argsort(x, kind="stable")], np.sort(x, kind="stable")
            _line(ax, part["key"], x, means.loc[part["key"]], name, colors[name], markers[name])
        if log2:
            ax.set_xscale("log", base=2)
            ax.xaxis.set_major_formatter(ScalarFormatter())
        if pos:
            ax.set_xticks(list(pos.values()), [short_value(v) for v in pos])
        elif values.nunique() <= 12:
            ax.set_xticks(sorted(values.unique()))
        ax.set_xlabel(_axis_label(result, param, rows["key"]))
        ax.set_ylabel(f"mean {metric_name(metric, mk)}")
        ax.set_title("\n".join(textwrap.wrap(f"{metric_name(metric, mk)} vs {param}", _TITLE)))
        ax.grid(alpha=0.3)
    left_out = [f"{missing} variant(s) without {param}"] * bool(missing) + [
        f"{alone} that differ from every other in more than {param}"] * bool(alone)
    if left_out:  # wrapped to the figure (about 11 characters of 10-point text an inch)
        fig.suptitle(textwrap.fill(f"Left out: {', '.join(left_out)}", int(11 * fig_width)), fontsize=10)
    if groups:
        _legend(fig, [name for name, _ in groups], colors, markers)
    mark_highlight(fig, result, highlight)
    return fig


def _line(ax: Axes, keys: pd.Series, x: np.ndarray, rows: pd.DataFrame, name: str, color: str, marker: str) -> None:
    """One line of variants (`rows`: their summary rows, in the order of `x`) with its interval as
    a band; a GREY one (plotdata.group_colors) thin, beneath, without its band."""
    y = rows["mean"].to_numpy(float)
    if color == GREY:
        ax.plot(x, y, color=GREY, linewidth=1, zorder=1, label=name)
    else:
        ax.fill_between(x, rows["ci_low"].to_numpy(float), rows["ci_high"].to_numpy(float), color=color, alpha=0.2,
                        linewidth=0)
        ax.plot(x, y, marker=marker, color=color, label=name)
    for key, xi, yi in zip(keys, x, y, strict=True):
        record(ax, key, xi, yi)


def _legend(fig: Figure, names: Sequence[str], colors: Mapping[str, str], markers: Mapping[str, str]) -> None:
    """The lines' names below the panels: those in colour, then one entry for the GREY rest."""
    named = [n for n in names if colors[n] != GREY]
    handles = [Line2D([], [], color=colors[n], marker=markers[n]) for n in named]
    text = named + [f"grey: the other {len(names) - len(named)}"] * (len(named) < len(names))
    handles += [Line2D([], [], color=GREY)] * (len(text) - len(named))
    fig.legend(handles, text, loc="outside lower center", ncol=legend_columns(text, fig.get_figwidth()), fontsize=8,
               frameon=False)


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
    mk = metric_k(result, metric, k)
    keys, _ = select_keys(result, variants)
    rows, _ = _with_param(result, keys, [x, y])
    if strategy is not None:
        if strategy not in set(rows["strategy"]):
            raise ValueError(f"strategy {strategy!r} has no variants with both {x} and {y}; "
                             f"those that do: {sorted(set(rows['strategy']))}")
        rows = rows[rows["strategy"] == strategy]
    if rows.empty:
        raise ValueError(f"no variant has both parameters {x!r} and {y!r}")
    summary = metric_rows(result, metric, rows["key"], mk).set_index("key")
    rows = rows[rows["key"].isin(summary.index)]
    groups = _groups(result, rows, [x, y])
    name = metric_name(metric, mk)
    norm = Normalize(summary["mean"].min(), summary["mean"].max())
    rows_of_panels, cols, fig_width = panel_grid(len(groups), width, 5.5)
    bar = 0.5 * (width is None)  # room for the colour bar
    fig = Figure(figsize=(fig_width + bar, 4.4 * rows_of_panels), layout="constrained")
    axes = panel_axes(fig, len(groups), rows_of_panels, cols)
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
            record(ax, key, j - 0.5, i - 0.5, (1.0, 1.0))
        image = ax.imshow(np.ma.masked_invalid(grid), norm=norm, cmap="viridis", origin="lower", aspect="auto")
        ax.set_xticks(range(len(xs)), [short_value(v) for v in xs])
        ax.set_yticks(range(len(ys)), [short_value(v) for v in ys])
        ax.set_xlabel(_axis_label(result, x, part["key"]))
        ax.set_ylabel(_axis_label(result, y, part["key"]))
        ax.set_title(f"{name}: {title}")
    fig.colorbar(image, ax=list(axes), label=f"mean {name}")
    mark_highlight(fig, result, highlight)
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
    mk = metric_k(result, metric, k)
    means = metric_rows(result, metric, result.keys, mk).set_index("key")
    rows, _ = _with_param(result, result.keys, [param])
    rows_of_panels, cols, fig_width = panel_grid(len(models), width, 4.2)
    fig = Figure(figsize=(fig_width, 3.8 * rows_of_panels), layout="constrained")
    axes = panel_axes(fig, len(models), rows_of_panels, cols, sharey=True)
    lines = _groups(result, rows, [param, "model"])
    names = [n for n, _ in lines]
    colors, markers = group_colors(result, lines), variant_markers(names)
    for ax, model in zip(axes, models, strict=True):
        mine = rows[rows["model"] == model]
        best = means.loc[mine["key"], "mean"].agg("idxmin" if stats.lower_is_better(metric) else "idxmax")
        for name, part in _groups(result, mine, [param, "model"]):
            part = part.iloc[np.argsort(part[param].to_numpy(float), kind="stable")]
            _line(ax, part["key"], part[param].to_numpy(float), means.loc[part["key"]], name, colors[name],
                  markers[name])
        ax.plot([rows.set_index("key").loc[best, param]], [means.loc[best, "mean"]], marker="*", markersize=16,
                color="gold", markeredgecolor="black", linestyle="none")
        ax.set_title(model)
        ax.set_xlabel(_axis_label(result, param, rows["key"]))
        ax.set_ylabel(f"mean {metric_name(metric, mk)}")
        ax.grid(alpha=0.3)
    _legend(fig, names, colors, markers)
    fig.suptitle(f"Which chunking for which model: {metric_name(metric, mk)} vs {param} (★ each model's best)")
    return fig
