"""The race of a search drawn (workbench.figures.race): what it draws matches the race table, at a
realistic 300 candidates (tests/crowd.py's race), without a model."""

from __future__ import annotations

import crowd
import matplotlib
import numpy as np
import pandas as pd
import pytest

matplotlib.use("Agg")

from matplotlib.collections import LineCollection, PathCollection

from workbench.figures import plotdata
from workbench.figures.plots import mark, race


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return crowd.race(crowd.forty())


def test_the_race_draws_each_exit_each_finalist_and_the_rounds_as_the_table_says(table: pd.DataFrame) -> None:
    fig = race(table)
    (ax,) = fig.axes
    assert ax.get_title() == "The search's race\ncandidates per round: 300 \u2192 30 \u2192 5"
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert ticks == ["preview\n20 documents\n300 candidates", "real\n20 documents\n30 candidates",
                     "whole corpus\n40 documents\n5 candidates"]
    (exits,) = [c for c in ax.collections if isinstance(c, PathCollection)]
    dropped = table[table["status"] == "dropped"]
    assert len(exits.get_offsets()) == len(dropped) == 270 + 25 + 1  # one x per candidate, where it left
    assert sorted(np.round(exits.get_offsets()[:, 0])) == sorted(dropped["round"])
    (faint,) = [c for c in ax.collections if isinstance(c, LineCollection)]
    assert len(faint.get_segments()) == 30 - 4  # every candidate past the preview, but the finalists
    finals = plotdata.race_finalists(table)
    lines = [line for line in ax.get_lines() if len(line.get_xdata()) == 3]
    assert len(lines) == len(finals) == 4
    assert [line.get_marker() for line in lines][-1] == "*"  # the winner, drawn last and boldest
    assert max(line.get_linewidth() for line in lines) == lines[-1].get_linewidth()
    numbers = sorted(t.get_text() for t in ax.texts)
    assert numbers == ["1", "2", "3", "4"]
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend[0] == f"1  \u2605 {finals['variant'][0]}" and legend[-1] == "x: left the race (296)"
    assert mark(fig, finals["key"][0]) and mark(fig, dropped["key"].iloc[0])  # every candidate can be ringed


def test_the_race_counts_new_candidates_and_groups_exits_by_why(table: pd.DataFrame) -> None:
    new = table[table["round"] == 2].head(2).assign(key=["n1", "n2"], variant=["a", "b"], status="dropped",
                                                    reason="past the budget after the preview")
    rounds = plotdata.race_rounds(pd.concat([table, new], ignore_index=True))
    assert list(rounds["entered"]) == [300, 32, 5] and list(rounds["new"]) == [0, 2, 0]
    assert plotdata.race_title(rounds) == "candidates per round: 300 \u2192 32 (+2 new) \u2192 5"
    assert plotdata.exit_kind("below the calibrated tied set (corrected 0.5, best 0.9)") == \
        "below the calibrated tied set"


def test_a_result_without_a_race_has_no_race_figure() -> None:
    with pytest.raises(ValueError, match="only a search's result"):
        race(crowd.forty().race)
