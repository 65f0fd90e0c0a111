"""A sweep as one self-contained HTML file: figures, score tables, index cost and provenance.

The file must open offline, years later, on any machine: figures are embedded PNGs (never widget
JavaScript, never a CDN), styles are inline, and every piece of text is escaped, since variant
labels and dataset names come from users. The file is streamed into a temporary file and renamed
over the target, so a failure half-way (a figure that cannot render, a full disk) leaves the
previous report untouched.

tables.py holds the tables (DataFrames), figures.py the default figures and their cache, html.py
the page, cuts.py "Where the cuts fall", health.py "Chunk health"; this module writes them out.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from workbench.core.io import atomic_write
from workbench.dataset import Dataset
from workbench.figures import plotdata
from workbench.report import cuts, health, probes
from workbench.report.cuts import CUT_QUESTIONS
from workbench.report.figures import (
    FIGURE_WIDTH,
    NARROW_WIDTH,
    default_figures,
    default_pngs,
    describe_figure,
    one_content_key,
)
from workbench.report.html import reproduce_code, write_page
from workbench.report.tables import compact_table, p_best_table, summary_table, variants_table
from workbench.results.verdict import Verdict, verdict
from workbench.retrieval.index import IndexStore

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from workbench.results.answers import Answers
    from workbench.results.result import SweepResult

__all__ = ["CUT_QUESTIONS", "FIGURE_WIDTH", "NARROW_WIDTH", "compact_table", "default_figures", "default_pngs",
           "describe_figure", "export", "p_best_table", "reproduce_code", "summary_table", "variants_table",
           "write_report"]


def write_report(
    result: SweepResult,
    path: str | Path,
    figures: Mapping[str, Figure | bytes] | None = None,
    title: str = "Chunking workbench report",
    dpi: int = 100,
    dataset: Dataset | None = None,
    narrow: Mapping[str, Figure | bytes] | None = None,
    answers: Answers | None = None,
    judged: Verdict | None = None,
    figure_cache: Path | None = None,
    audit: pd.DataFrame | None = None,
) -> Path:
    """Write the report to `path` (atomically) and return it. Figures are matplotlib figures or
    PNG bytes already rendered; they default to `default_figures`. `narrow`: some of them drawn
    again for a phone's width (NARROW_WIDTH, panels stacked), shown on a narrow screen; by default
    the default figures' when `figures` is None too, else none (a figure of your own is shown at
    its one width). With the dataset, "Where the cuts fall" draws the chunks the best and the
    runner-up retrieved (the hits the sweep kept); without it that section says why it is left
    out. With `answers` (workbench.results.answers.evaluate of this result), an "Answer quality" section.
    `judged`: this result's verdict when the caller has it already (the CLI prints it too), else
    computed here. `figure_cache`: the folder of figures drawn before (see `default_pngs`), for the
    by-group figure. `audit`: the chunk audit of the variants (Session.audit), shown as "Chunk health";
    without it that section says how to get one. With the dataset, questions marked `probe` beside
    others are ranked apart ("Probe questions against yours"). Nothing is chunked, embedded or searched."""
    if figures is None:
        swept = plotdata.swept_parameters(result)  # once for both widths
        figures = default_figures(result, swept=swept)
        narrow = default_figures(result, NARROW_WIDTH, swept) if narrow is None else narrow
    v = judged if judged is not None else verdict(result) if "recall" in set(result.summary["metric"]) else None
    why = cuts.missing(result, v, dataset)
    cut = cuts.left_out(why) if why else cuts.section(result, v, dataset)
    best, k = (v.best, v.k or result.default_k) if v is not None else (None, result.default_k)

    def write(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8") as out:
            write_page(out, result, figures, narrow or {}, title, dpi, v, cut, dataset, answers, figure_cache,
                       health.section(audit, dataset, best), probes.section(result, dataset, k, best))

    return atomic_write(path, write)


def export(
    result: SweepResult,
    folder: str | Path,
    figures: Mapping[str, Figure] | None = None,
    dataset: Dataset | None = None,
    store: IndexStore | str | Path | None = None,
    answers: Answers | None = None,
    judged: Verdict | None = None,
    audit: pd.DataFrame | None = None,
) -> dict[str, Path]:
    """Everything a run produced, in one folder: the tidy tables (SweepResult.save, and
    Answers.save when `answers` is given), each figure as a PNG, and report.html (see write_report
    for dataset, answers, judged and audit; the default figures come with their narrow renditions, given ones
    without). The store, if given, keeps the default and by-group figures drawn (see `default_pngs`). Returns
    the paths by name."""
    with one_content_key():  # the figure cache's key of the result, found once for every figure
        return _export(result, Path(folder), figures, dataset, store, answers, judged, audit)


def _export(result: SweepResult, folder: Path, figures: Mapping[str, Figure] | None, dataset: Dataset | None,
            store: IndexStore | str | Path | None, answers: Answers | None, judged: Verdict | None,
            audit: pd.DataFrame | None) -> dict[str, Path]:
    paths = result.save(folder) | (answers.save(folder) if answers is not None else {})
    narrow: dict[str, bytes] = {}
    root = None if store is None else (store if isinstance(store, IndexStore) else IndexStore(store)).root
    cache = None if root is None else root / "figures"
    if figures is not None:  # Figures: matplotlib is imported already
        from workbench.figures import plots

        images = {name: plots.figure_to_png_bytes(fig, dpi=120) for name, fig in figures.items()}  # rendered once
    else:  # drawn, or read back from the store's figure cache when drawn before from the same content
        swept = plotdata.swept_parameters(result)  # once for both widths
        images, narrow = default_pngs(result, 120, cache, swept=swept), default_pngs(result, 120, cache, NARROW_WIDTH,
                                                                                      swept)
    for name, png in images.items():
        paths[f"{name}.png"] = atomic_write(folder / f"{name}.png", lambda p, png=png: Path(p).write_bytes(png))
    paths["report"] = write_report(result, folder / "report.html", images, dataset=dataset, narrow=narrow,
                                   answers=answers, judged=judged, figure_cache=cache, audit=audit)
    return paths
