"""The race of a search (workbench.run.search) as a figure: each candidate's score through the rounds
it was scored in, where it left and which finished.

Why a figure: a search of hundreds of candidates ends with a few; the race shows what it threw away,
when and how close it came, so that a user can judge whether the budget was enough. With 300
candidates most leave after the preview: their lines would hide the finalists, so every candidate
is a faint grey line and a grey x where it left, and only the finalists are coloured (the TOP best
numbered at their last point and named in the legend below, the winner drawn boldest). Each
candidate's points are recorded (draw.record), so `mark` rings a variant as on the other figures.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from workbench.figures.draw import Label, legend_columns, metric_name, panel_axes, place_labels, record
from workbench.figures.plotdata import _LEAD, GREY, TOP, race_finalists, race_points, race_rounds, race_title

STAR = "\u2605 "  # before the winner's name in the legend
EXIT = "0.35"  # the x where a dropped candidate left: darker than the faint lines it ends
SPREAD = 0.12  # rounds: how far either side of its round a candidate scored there alone is drawn


def race(table: pd.DataFrame, width: float | None = None) -> Figure:
    """The race (SweepResult.race) `width` inches wide (8 else): x the rounds (stage, documents,
    candidates), y the metric's mean (the preview's corrected score); one faint line per candidate,
    a grey x where a dropped one left, the finalists in colour, the best TOP numbered and named in
    the legend (the winner, the best, first and boldest). ValueError on an empty race."""
    if table is None or table.empty:
        raise ValueError("no race to draw: only a search's result (workbench.run.search) has one")
    rows = race_points(table)
    rounds = race_rounds(table)
    finalists = race_finalists(table)
    colors = dict(zip(finalists["key"], (*_LEAD[:TOP], *[GREY] * max(0, len(finalists) - TOP)), strict=False))
    named = list(finalists["key"][:TOP])
    text = [f"{i}  {STAR * (i == 1)}{label}" for i, label in enumerate(finalists["variant"][:TOP], 1)]
    others = len(finalists) - len(named)
    text += [f"grey \u25cf: the other {others} finalists"] * bool(others)
    text += [f"x: left the race ({int(rounds['dropped'].sum())})"]
    width = width or 8.0
    legend_rows = -(-len(text) // legend_columns(text, width))
    fig = Figure(figsize=(width, 4.2 + 0.22 * legend_rows), layout="constrained")
    (ax,) = panel_axes(fig, 1, 1, 1)

    # a candidate dropped in the one round it was scored in (most leave after the preview) has no line:
    # spread across its round, evenly in a fixed shuffle, so that hundreds of them show how many sat where
    alone = (rows.groupby("key")["round"].transform("size") == 1) & (rows["status"] == "dropped")
    rng = np.random.default_rng(0)
    x = rows["round"].to_numpy(float)
    for _, part in rows[alone].groupby("round"):
        x[part.index] += rng.permutation(np.linspace(-1, 1, len(part))) * SPREAD * min(1.0, len(part) / 40)
    rows = rows.assign(x=x)
    paths = []
    for key, own in rows.groupby("key", sort=False):
        x, y = own["x"].to_numpy(float), own["score"].to_numpy(float)
        record(ax, key, x, y)
        if key not in colors and len(own) > 1:
            paths.append(np.column_stack([x, y]))
    ax.add_collection(LineCollection(paths, colors=GREY, linewidths=0.8, alpha=0.5, zorder=1))
    left = rows[rows["last"] & (rows["status"] == "dropped")]
    ax.scatter(left["x"], left["score"], marker="x", s=18, linewidths=0.9, color=EXIT, alpha=0.7, zorder=2)

    labels = []
    for i, key in reversed(list(enumerate(finalists["key"]))):  # the winner drawn last, on top
        own = rows[rows["key"] == key]
        x, y = own["x"].to_numpy(float), own["score"].to_numpy(float)
        winner = i == 0
        ax.plot(x, y, color=colors[key], marker="*" if winner else "o", markersize=13 if winner else 5,
                markeredgecolor="black" if winner else colors[key], linewidth=2.6 if winner else 1.4,
                zorder=4 if winner else 3)
        if key in named:
            labels.append(Label(ax, x[-1], y[-1], str(i + 1), colors[key]))

    ax.set_xticks(rounds["round"], [f"{r.stage}\n{r.documents:,} documents\n{r.entered} candidates"
                                    for r in rounds.itertuples(index=False)], fontsize=8)
    lo, hi = rounds["round"].min(), rounds["round"].max()
    ax.set_xlim(lo - 0.25, hi + 0.35)  # room for the numbers beside the last points
    ax.autoscale_view(scalex=False)
    ax.set_ylabel(f"mean {metric_name(str(rows['metric'].iloc[0]), int(rows['k'].iloc[0]))}\n(preview: corrected)")
    ax.set_title(f"The search's race\n{race_title(rounds)}")
    ax.grid(axis="y", alpha=0.3)
    handles = [Line2D([], [], color=colors[key], marker="*" if key == named[0] else "o", linewidth=2)
               for key in named]
    handles += [Line2D([], [], color=GREY, marker="o", linewidth=2)] * bool(others)
    handles.append(Line2D([], [], color=EXIT, marker="x", linestyle="none"))
    fig.legend(handles, text, loc="outside lower center", ncol=legend_columns(text, width), fontsize=8,
               frameon=False)
    place_labels(fig, labels)
    return fig
