"""What every figure of this package shares: where each variant is drawn (so `mark` can ring it
without a redraw), markers, panel grids, the rows of a metric, error bars, labels placed beside
their points without overlapping, and PNG bytes.

Every figure records where each variant is drawn (axes and data coordinates of its points, bars
and cells), so `mark(fig, key)` can add a highlight on top without rebuilding the figure: that is
what makes scrubbing through measured variants cheap (see widgets/render.py).
"""

from __future__ import annotations

import io
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle
from matplotlib.patheffects import withStroke
from matplotlib.transforms import Bbox

from workbench.figures.plotdata import (
    CROWDED,
    _budget,
    _pick_k,
    figure_colors,
)

if TYPE_CHECKING:
    from workbench.results.result import SweepResult


PANEL_WIDTH = 2.9  # inches: the narrowest a panel is drawn in a figure given a width
LABEL_REACH = (5, 9, 15, 22, 30, 40, 52)  # points from its point at which a direct label is tried, nearest first
LABEL_DIRECTIONS = 16  # directions tried at each reach


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


def record(ax: Axes, key: str, x: Any, y: Any, box: tuple[float, float] | None = None) -> None:
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
        raise ValueError("mark: this figure was not made by workbench.figures.plots (nothing recorded)")
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


def select_keys(result: SweepResult, variants: Sequence[str] | None) -> tuple[list[str], dict[str, Any]]:
    """The keys to draw (in sweep order) and the colour of every variant of the result, by key
    (plotdata.figure_colors: over CROWDED keys, the best few in colour and the rest grey)."""
    keys = result.keys
    if variants is not None:
        if not variants:
            raise ValueError("variants is empty: nothing to plot")
        wanted = {result.key_of(v) for v in variants}
        keys = [v for v in keys if v in wanted]
    return keys, figure_colors(result, keys)


def crowded(keys: Sequence[str]) -> bool:
    """Whether a figure of these variants takes the crowded rendition (plotdata.CROWDED)."""
    return len(keys) > CROWDED


@dataclass(frozen=True)
class Label:
    """A direct label to place beside its point (data coordinates of `ax`) once the figure is laid out."""

    ax: Axes
    x: float
    y: float
    text: str
    color: Any


def place_labels(fig: Figure, labels: Sequence[Label]) -> None:
    """Write each label beside its point where its box overlaps no label placed before it, no point
    recorded in its panel (`record`) and nothing outside the panel: the nearest free spot of
    LABEL_REACH x LABEL_DIRECTIONS (the least crowded when none is free), joined to its point by a
    thin line when not next to it. The figure is laid out first, so the boxes are where they are
    drawn; the labels stay out of the layout, so it keeps them where they are placed."""
    if not labels:
        return
    fig.draw_without_rendering()
    scale = fig.dpi / 72  # pixels a point
    taken: dict[Axes, list[Bbox]] = {}
    for label in labels:
        ax = label.ax
        if ax not in taken:  # every point drawn in the panel, as a box a marker wide, and its legend
            points = [xy for spots in _SPOTS[fig].values() for s in spots if s.ax() is ax and s.box is None
                      for xy in ax.transData.transform(np.column_stack([s.x, s.y]))]
            taken[ax] = [Bbox.from_bounds(x - 4 * scale, y - 4 * scale, 8 * scale, 8 * scale) for x, y in points]
            taken[ax] += [ax.get_legend().get_window_extent()] if ax.get_legend() else []
        probe = _annotate(label, (0, 0), line=False)
        size = probe.get_window_extent().size
        probe.remove()
        at = ax.transData.transform((label.x, label.y))
        reach, box = _free_spot(at, size, ax.get_window_extent(), taken[ax], scale)
        _annotate(label, tuple((box.p0 + size / 2 - at) / scale), line=reach > LABEL_REACH[1])
        taken[ax].append(box)


def _annotate(label: Label, offset: tuple[float, float], line: bool) -> Artist:
    """The label's text, centred `offset` points from its point, with a line to it if `line`; over
    everything else, haloed in white, so a line drawn through it does not hide it."""
    return label.ax.annotate(label.text, (label.x, label.y), xytext=offset, textcoords="offset points", fontsize=8,
                             fontweight="bold", color=label.color, ha="center", va="center", in_layout=False, zorder=5,
                             path_effects=[withStroke(linewidth=2.5, foreground="white")],
                             arrowprops={"arrowstyle": "-", "color": label.color, "linewidth": 0.6, "shrinkA": 1,
                                         "shrinkB": 4} if line else None)


def _free_spot(at: np.ndarray, size: np.ndarray, frame: Bbox, taken: Sequence[Bbox], scale: float,
               ) -> tuple[float, Bbox]:
    """(reach, box) of the nearest box `size` pixels wide around `at` that overlaps nothing `taken`
    and stays in `frame`, east first then anticlockwise; the one overlapping least when none does."""
    best: tuple[int, float, Bbox] | None = None
    for reach in LABEL_REACH:
        for angle in np.linspace(0, 2 * np.pi, LABEL_DIRECTIONS, endpoint=False):
            centre = at + np.array([np.cos(angle), np.sin(angle)]) * (reach * scale + size / 2)
            box = Bbox.from_bounds(*(centre - size / 2), *size)
            inside = frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1
            crowd = sum(box.overlaps(b) for b in taken) + (len(taken) + 1) * (not inside)
            if crowd == 0:
                return reach, box
            if best is None or crowd < best[0]:
                best = (crowd, reach, box)
    assert best is not None
    return best[1], best[2]


def highlight_key(result: SweepResult, highlight: str | None) -> str | None:
    return None if highlight is None else result.key_of(highlight)


def check_metric(result: SweepResult, metric: str) -> None:
    if metric not in set(result.summary["metric"]):
        raise ValueError(f"metric {metric!r} not in the result; known: {sorted(set(result.summary['metric']))}")


def metric_rows(result: SweepResult, metric: str, keys: Sequence[str], k: int | None = None) -> pd.DataFrame:
    """Summary rows of one metric (at one k, if given; never a budget row then) for the variants `keys`."""
    s = result.summary
    s = s[(s["metric"] == metric) & s["key"].isin(keys)]
    if k is not None:
        s = s[(s["k"] == k) & (_budget(s) == 0)]
    return s


def error_bars(rows: pd.DataFrame) -> np.ndarray:
    """Asymmetric error bar lengths from the CI, never negative (matplotlib refuses those)."""
    lo = (rows["mean"] - rows["ci_low"]).to_numpy(dtype=float)
    hi = (rows["ci_high"] - rows["mean"]).to_numpy(dtype=float)
    return np.clip(np.vstack([lo, hi]), 0, None)


def legend_columns(text: Sequence[str], width: float) -> int:
    """Legend columns that fit a figure `width` inches wide (about 14 characters of 8-point text
    an inch, a marker and a gap taking 8 more per column)."""
    return max(1, min(len(text), int(14 * width) // (max(map(len, text)) + 8)))


def panel_grid(n: int, width: float | None, panel: float, most: int | None = None) -> tuple[int, int, float]:
    """(rows, columns, figure width in inches) of n panels: one row (at most `most` a row) of
    `panel` inches each; or, in a figure `width` inches wide, as many a row as fit at PANEL_WIDTH
    (on a phone's width, one: the panels stack and stay legible)."""
    cols = min(n, most or n)
    if width is not None:
        cols = max(1, min(cols, int(width // PANEL_WIDTH)))
    return -(-n // cols), cols, panel * cols + 0.5 if width is None else width


def panel_axes(fig: Figure, n: int, rows: int, cols: int, **grid: Any) -> list[Axes]:
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


def figure_to_png_bytes(fig: Figure, dpi: int = 100) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


def metric_k(result: SweepResult, metric: str, k: int | None) -> int:
    """k for a metric measured at each k; 0 for a k-independent one (e.g. precision_omega)."""
    check_metric(result, metric)
    ks = set(result.summary.loc[result.summary["metric"] == metric, "k"])
    return _pick_k(result, k) if ks - {0} else 0


def metric_name(metric: str, k: int) -> str:
    return f"{metric}@{k}" if k else metric


def mark_highlight(fig: Figure, result: SweepResult, highlight: str | None) -> None:
    if highlight is not None:
        mark(fig, result.key_of(highlight))
