"""Figures of a SweepResult: quality against k, the ranking at one k, and quality against cost.

Every function returns a fresh matplotlib Figure built without pyplot, so nothing leaks into
global state (safe under Agg, in tests, in widgets and in the notebook alike). Each variant keeps
one colour across panels and across calls: colours follow the variant's position in
`result.variants`, not in the filtered subset, so a redraw with fewer variants repaints nothing.
Variants are identified by key (a label is accepted too, see SweepResult.key_of) and drawn with
their labels.
"""

from __future__ import annotations

import io
import textwrap
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

if TYPE_CHECKING:
    from workbench.sweep import SweepResult

RECALL, MRR, COST = "recall", "mrr", "context_tokens"
_WRAP = 32  # characters per line of a variant label on a bar chart axis


def variant_colors(keys: Sequence[str]) -> dict[str, Any]:
    """One distinct colour per variant: tab10, tab20, then an evenly sampled continuous map."""
    n = len(keys)
    if n <= 10:
        colors = matplotlib.colormaps["tab10"].colors[:n]
    elif n <= 20:
        colors = matplotlib.colormaps["tab20"].colors[:n]
    else:
        colors = matplotlib.colormaps["turbo"](np.linspace(0.05, 0.95, n))
    return dict(zip(keys, colors, strict=True))


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


def _ks(result: SweepResult) -> list[int]:
    ks = result.config.get("ks") or sorted(k for k in result.summary["k"].unique() if k > 0)
    return [int(k) for k in ks]


def _pick_k(result: SweepResult, k: int | None) -> int:
    ks = _ks(result)
    if k is None:
        return ks[-1]
    if k not in ks:
        raise ValueError(f"k must be one of the swept ks {ks}, got {k}")
    return int(k)


def _rows(result: SweepResult, metric: str, keys: Sequence[str], k: int | None = None) -> pd.DataFrame:
    """Summary rows of one metric (at one k, if given) for the variants `keys`."""
    s = result.summary
    s = s[(s["metric"] == metric) & s["key"].isin(keys)]
    if k is not None:
        s = s[s["k"] == k]
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
    for key in keys:
        r = s[s["key"] == key].sort_values("k")
        if r.empty:
            continue
        strong = key == highlight
        ax.errorbar(
            r["k"].to_numpy(float), r["mean"].to_numpy(float), yerr=_err(r), label=result.label_of(key),
            color=colors[key],
            marker="o", markersize=4, linewidth=3 if strong else 1.5, capsize=3, elinewidth=1, alpha=0.95,
            zorder=3 if strong else 2,
        )
    ax.set_xticks(_ks(result))
    ax.set_xlabel("k")
    ax.set_ylabel(f"mean {metric}")
    ax.set_title(f"{metric}@k")
    ax.grid(alpha=0.3)


def _bars(ax: Axes, rows: pd.DataFrame, colors: dict, highlight: str | None, xlabel: str, number: dict) -> None:
    """Horizontal bars sorted by mean (best on top; ties in sweep order, the first on top), with CI
    whiskers; tick labels carry the variant's legend number."""
    rows = rows.iloc[::-1].sort_values("mean", kind="stable")
    y = np.arange(len(rows))
    keys = list(rows["key"])
    ax.barh(
        y, rows["mean"].to_numpy(float), xerr=_err(rows), color=[colors[v] for v in keys], capsize=3,
        edgecolor=["black" if v == highlight else "none" for v in keys], linewidth=2,
    )
    wrap = textwrap.TextWrapper(_WRAP, break_long_words=False, break_on_hyphens=False)
    ax.set_yticks(y, [wrap.fill(f"{number[k]}  {v}") for k, v in zip(keys, rows["variant"], strict=True)], fontsize=8)
    ax.set_xlabel(xlabel)
    ax.grid(axis="x", alpha=0.3)


def pareto_front(cost: Sequence[float], quality: Sequence[float]) -> list[int]:
    """Indices of the undominated points, cheapest first: no other point costs at most as much
    and scores strictly better (ties in cost keep only the best)."""
    order = sorted(range(len(cost)), key=lambda i: (cost[i], -quality[i]))
    front, best = [], -np.inf
    for i in order:
        if quality[i] > best:
            front.append(i)
            best = quality[i]
    return front


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
    for v in shown:
        strong = v == highlight
        ax.errorbar(
            cost.at[v, "mean"], rec.at[v, "mean"], xerr=_err(cost.loc[[v]]), yerr=_err(rec.loc[[v]]),
            color=colors[v], marker="o", markersize=9 if strong else 6, capsize=3, elinewidth=1,
            markeredgecolor="black" if strong else colors[v], zorder=3 if strong else 2,
        )
        ax.annotate(str(number[v]), (cost.at[v, "mean"], rec.at[v, "mean"]), xytext=(5, 4),
                    textcoords="offset points", fontsize=8)
    front = pareto_front(list(cost["mean"]), list(rec["mean"]))
    if front:
        ax.plot(cost["mean"].iloc[front], rec["mean"].iloc[front], "--", color="0.4", linewidth=1, marker="o",
                markersize=15, markerfacecolor="none", label="Pareto front", zorder=1)
        ax.legend(loc="lower right", fontsize=8)
    ax.set_xlabel(f"mean {COST}@{k} (cl100k tokens handed to the LLM)")
    ax.set_ylabel(f"mean {RECALL}@{k}")
    ax.set_title(f"cost vs {RECALL}@{k} (numbers: legend)")
    ax.grid(alpha=0.3)


def _numbers(keys: Sequence[str]) -> dict[str, int]:
    """Short names for crowded panels; the legend spells them out."""
    return {v: i + 1 for i, v in enumerate(keys)}


def _legend_text(result: SweepResult, keys: Sequence[str], numbered: bool) -> list[str]:
    return [f"{n}  {result.label_of(v)}" if numbered else result.label_of(v) for v, n in _numbers(keys).items()]


def _ncol(text: Sequence[str]) -> int:
    """Legend columns that fit the figure width (about 170 characters of 8-point text)."""
    return max(1, min(len(text), 170 // (max(map(len, text)) + 8)))


def _legend(fig: Figure, keys: Sequence[str], colors: dict, text: Sequence[str]) -> None:
    """One figure legend below the panels, so it never covers data."""
    handles = [Line2D([], [], color=colors[v], marker="o", linewidth=2) for v in keys]
    fig.legend(handles, text, loc="outside lower center", ncol=_ncol(text), fontsize=8, frameon=False)


def overview(
    result: SweepResult, k: int | None = None, variants: Sequence[str] | None = None, highlight: str | None = None
) -> Figure:
    """Three panels: recall@k curves, MRR@k ranking, and context cost against recall@k.

    k defaults to the largest swept k; `variants` restricts the labels drawn; `highlight` draws
    one variant (e.g. the one selected in the widget) bolder.
    """
    k = _pick_k(result, k)
    keys, colors = _select(result, variants)
    highlight = _key(result, highlight)
    text = _legend_text(result, keys, numbered=True)
    legend_rows = -(-len(text) // _ncol(text))
    fig = Figure(figsize=(17, max(4.8, 0.3 * len(keys) + 1.8) + 0.22 * legend_rows), layout="constrained")
    ax_curve, ax_mrr, ax_cost = fig.subplots(1, 3, width_ratios=[1, 1.1, 1.1])
    _curves(ax_curve, result, RECALL, keys, colors, highlight)
    _bars(ax_mrr, _rows(result, MRR, keys, k), colors, highlight, f"mean {MRR}@{k}", _numbers(keys))
    ax_mrr.set_title(f"{MRR}@{k} (best on top)")
    _tradeoff(ax_cost, result, k, keys, colors, highlight)
    _legend(fig, keys, colors, text)
    return fig


def metric_curves(
    result: SweepResult, metric: str, variants: Sequence[str] | None = None, highlight: str | None = None
) -> Figure:
    """Any metric against k, one line per variant; a k-independent metric (k=0 only, e.g.
    precision_omega) is drawn as a ranking instead."""
    if metric not in set(result.summary["metric"]):
        raise ValueError(f"metric {metric!r} not in the result; known: {sorted(set(result.summary['metric']))}")
    keys, colors = _select(result, variants)
    highlight = _key(result, highlight)
    rows = _rows(result, metric, keys)
    fig = Figure(figsize=(10, max(4.5, 0.3 * len(keys) + 1.5)), layout="constrained")
    ax = fig.subplots()
    if (rows["k"] > 0).any():
        _curves(ax, result, metric, keys, colors, highlight)
        _legend(fig, keys, colors, _legend_text(result, keys, numbered=False))
    else:
        _bars(ax, rows, colors, highlight, f"mean {metric}", _numbers(keys))
        ax.set_title(f"{metric} (independent of k)")
    return fig


def figure_to_png_bytes(fig: Figure, dpi: int = 100) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()
