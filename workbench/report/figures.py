"""The report's default figures: which are drawn, at one width, with their titles and captions,
as PNGs, and the figure cache that reads a figure back when it was drawn before from the same
content (a hash of the scores, the variants, the config and the drawing code)."""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from workbench.core.io import atomic_write, source_fingerprint
from workbench.evaluation import metrics
from workbench.figures import plotdata
from workbench.results.provenance import Computed

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from workbench.results.result import SweepResult

EXTRA_FIGURES = ("hit", "ndcg", "iou", "precision_omega")  # drawn by default next to the overview
FIGURE_WIDTH = 12.0  # inches: every default figure has this width, so all show at one size
NARROW_WIDTH = 4.0  # inches: each figure again for a phone, panels stacked (shown below html.NARROW_PX)

_CURVES = {  # metric -> (title, what to look for)
    "hit": ("Share of questions with some evidence in the top k",
            "Curves that reach the top at small k answer more questions with fewer chunks."),
    "ndcg": ("How high the evidence ranks (nDCG@k)",
             "A curve above another at small k puts the evidence nearer the top of the list."),
    "iou": ("How much of what is retrieved is evidence (IoU@k)",
            "It falls as k grows, since more text comes back; higher means less noise sent to the LLM."),
    metrics.OMEGA: ("Precision if exactly the evidence's chunks were retrieved (precision-\u03a9)",
                    "Low bars mean the chunks holding the answer carry much other text: smaller chunks score higher."),
}


def describe_figure(result: SweepResult, name: str) -> tuple[str, str]:
    """The title and the one-line caption (what to look for) of a figure of `default_figures`;
    a figure of another name is titled by its name."""
    k = result.default_k
    keys = result.keys
    many = len(keys) > plotdata.CROWDED
    if name == "overview":  # one sentence per panel drawn, from the list the overview draws
        panels = " ".join(f"{title}: {hint}." for title, hint in plotdata.overview_panels(result, k))
        return ("Recall, ranking and cost at a glance",
                f"{panels}{_crowded(result, many, len(keys), plotdata.TOP)} Numbers: the variant table above.")
    if name == metrics.OMEGA:
        title, caption = _CURVES[name]
        bars = plotdata.chunkings(result, keys)
        top = set(plotdata.top_keys(result, keys))
        shared = (" One bar per chunking: the variants numbered on a bar differ in the retriever alone, which "
                  "leaves their chunks as they are.") * (len(bars) < len(keys))
        coloured = sum(bool(top & set(members)) for _, members in bars)
        return title, caption + shared + _crowded(result, many, len(bars), coloured, "bars")
    if name in _CURVES:
        title, caption = _CURVES[name]
        return title, caption + _crowded(result, many, len(keys), plotdata.TOP)
    if name == "by_model":
        return ("Which chunking for which model",
                "One panel per embedding model; the star is each model's best variant. A size that wins for one "
                "model may not for another: pick the chunking with the model you will deploy.")
    if name.startswith("by_"):
        param = name[3:]
        drawn = plotdata.parameter_lines(result, param)
        coloured = sum(c != plotdata.GREY for c in plotdata.group_colors(result, drawn).values())
        lines = _crowded(result, len(drawn) > plotdata.CROWDED, len(drawn), coloured, "lines")
        if plotdata.is_categorical(result, param):
            return (f"Recall, MRR and context cost for each {param}",
                    f"Each {param} is a category, not a point on a scale: a line joins the variants that differ in "
                    f"{param} alone (one per combination of what else varies), so what it shows is which {param} "
                    "scores higher for the same chunking, not a trend between them; the band is the confidence "
                    f"interval.{lines}")
        return (f"Recall, MRR and context cost against {param}",
                f"Look for the {param} where recall levels off while context tokens keep rising; the band is the "
                f"confidence interval, one line per combination of what else varies.{lines}")
    if name.startswith("heatmap_"):
        return (f"recall@{k} over two parameters",
                "Brighter cells score higher; \u00b1 is half the interval, so cells closer than that are not told "
                "apart.")
    return name, ""


def _crowded(result: SweepResult, crowded: bool, drawn: int, coloured: int, held: str = "") -> str:
    """The sentence a caption adds when its figure is `crowded` (over plotdata.CROWDED variants, or
    lines): `coloured` of the `drawn` variants (or `held`: lines, bars) in colour, the rest grey."""
    if not crowded:
        return ""
    ranked = plotdata.RECALL in set(result.summary["metric"])
    best = f"the {plotdata.TOP} {f'best variants by recall@{result.default_k}' if ranked else 'first variants'}"
    holding = f"the {coloured} {held} that hold " if held else ""
    return f" In colour: {holding}{best}; grey: the other {drawn - coloured}."


def _figure_makers(result: SweepResult, width: float, swept: Sequence[str] | None = None,
                   ) -> dict[str, Callable[[], Figure | None]]:
    """The default figures, by name, each as the call that draws it `width` inches wide; `swept`:
    plotdata.swept_parameters(result) when the caller has it (it costs more than the figures' list)."""
    present = set(result.summary["metric"])
    makers = {"overview": partial(_draw, "overview", result, short_ids=True, width=width)} | {
        m: partial(_draw, "metric_curves", result, m, short_ids=True, width=width) for m in EXTRA_FIGURES
        if m in present
    }
    swept = plotdata.swept_parameters(result) if swept is None else list(swept)
    makers |= {f"by_{p}": partial(_draw, "by_parameter", result, p, width=width) for p in swept}
    if len(plotdata.models_of(result)) > 1:
        makers["by_model"] = partial(_drawable, "by_model", result, width=width)
    if len(swept) == 2:
        makers[f"heatmap_{swept[0]}_{swept[1]}"] = partial(_drawable, "heatmap", result, swept[0], swept[1],
                                                           width=width)
    return makers


def _draw(name: str, *args: Any, **kwargs: Any) -> Figure:
    """plots.<name>(*args, **kwargs), plots (and so matplotlib) imported only when a figure is
    drawn: a report whose figures are all in the figure cache never imports it."""
    from workbench.figures import plots

    return getattr(plots, name)(*args, **kwargs)


def _drawable(name: str, *args: Any, **kwargs: Any) -> Figure | None:
    """The figure, or None when there is nothing to draw (no variant has both parameters; no size swept)."""
    try:
        return _draw(name, *args, **kwargs)
    except ValueError:
        return None


def default_figures(result: SweepResult, width: float = FIGURE_WIDTH, swept: Sequence[str] | None = None,
                    ) -> dict[str, Figure]:
    """The overview, the curves of a few other metrics that the result holds, the metrics against
    each swept parameter (`swept`: plotdata.swept_parameters, computed when None) and, when two are
    swept, their heatmap; variants by number, all `width` inches wide."""
    drawn = {name: make() for name, make in _figure_makers(result, width, swept).items()}
    return {name: fig for name, fig in drawn.items() if fig is not None}


# the content keys found while `one_content_key` is in force: result's id -> (the result, its key)
_KEYS: ContextVar[dict[int, tuple[SweepResult, str]] | None] = ContextVar("figure_content_keys", default=None)


@contextmanager
def one_content_key() -> Iterator[None]:
    """Within it, each result's content key (`_content_key`) is found once, not once per call that
    reads the figure cache (both widths of the default figures and of the by-group figure: a hash of
    every per-question score each time). For a caller that does not change the result meanwhile, as
    `report.export` does not."""
    token = _KEYS.set({})
    try:
        yield
    finally:
        _KEYS.reset(token)


def _content_key(result: SweepResult) -> str:
    """What the default figures are drawn from: the per-question scores, the variants (this run's
    seconds and cache counts aside), the provenance (its date, counts and command aside) and the drawing
    code (every module of workbench.figures that draws them, this module, matplotlib). Found once per
    result within `one_content_key`."""
    found = _KEYS.get()
    if found is not None and id(result) in found and found[id(result)][0] is result:
        return found[id(result)][1]
    key = _hash_content(result)
    if found is not None:
        found[id(result)] = (result, key)  # the result held: its id cannot be another's meanwhile
    return key


def _hash_content(result: SweepResult) -> str:
    h = hashlib.sha256()
    h.update(pd.util.hash_pandas_object(result.per_question, index=False).to_numpy().tobytes())
    # a re-run from the caches differs only in what this run spent: no figure draws it
    ran = [c for c in ("seconds", "built", "texts_embedded") if c in result.variants.columns]
    h.update(result.variants.drop(columns=ran).to_csv(index=False).encode())
    # nor what it computed, when, or the command that ran it (its --out): none of it is drawn
    drawn = result.provenance.with_(computed=Computed(), date="", command=None).config()
    h.update(json.dumps(drawn, sort_keys=True, default=str).encode())
    if result.race is not None:  # a search's race, which the race figure draws
        h.update(result.race.to_csv(index=False).encode())
    # their files: importing them imports matplotlib
    drawing = [Path(importlib.util.find_spec(f"workbench.figures.{m}").origin)
               for m in ("plots", "draw", "params", "race")]
    h.update(source_fingerprint(*drawing, plotdata, sys.modules[__name__]).encode())
    h.update(importlib.metadata.version("matplotlib").encode())
    return h.hexdigest()


def default_pngs(result: SweepResult, dpi: int = 120, cache: str | Path | None = None,
                 width: float = FIGURE_WIDTH, swept: Sequence[str] | None = None) -> dict[str, bytes]:
    """The default figures `width` inches wide as PNG bytes (`swept` as in default_figures). With a
    cache folder, a figure drawn before from the same content (`_content_key`) is read back instead
    of drawn: a re-run renders only what changed."""
    key = _content_key(result) if cache is not None else ""
    out = {}
    for name, make in _figure_makers(result, width, swept).items():
        png = _cached_png(cache, f"{key}{name}{dpi}{width}", make, dpi)
        if png is not None:
            out[name] = png
    return out


def _cached_png(cache: str | Path | None, content: str, make: Callable[[], Figure | None], dpi: int) -> bytes | None:
    """The figure `make` draws as PNG, read back from `cache` when drawn before from the same
    `content` (and written there when drawn now); None when it has nothing to draw."""
    path = Path(cache) / f"{hashlib.sha256(content.encode()).hexdigest()[:32]}.png" if cache else None
    if path is not None and path.exists():
        return path.read_bytes()
    fig = make()
    if fig is None:
        return None
    from workbench.figures import plots  # imported by make() already

    png = plots.figure_to_png_bytes(fig, dpi=dpi)
    if path is not None:
        atomic_write(path, lambda p: Path(p).write_bytes(png))
    return png


def by_group_png(result: SweepResult, groups: Mapping[str, str], table: pd.DataFrame, metric: str, k: int,
                 dpi: int, width: float = FIGURE_WIDTH, cache: str | Path | None = None) -> bytes:
    """plots.by_group of `table` (result.by_group at one metric and k), `width` inches wide, as PNG;
    variants by number, as in the other figures. With a cache folder, read back when drawn before
    from the same content (as `default_pngs`; the groups and the table are part of it)."""
    content = "" if cache is None else (
        f"{_content_key(result)}by_group{json.dumps(dict(groups), sort_keys=True)}{metric}{k}{dpi}{width}"
        + table.to_csv(index=False))
    png = _cached_png(cache, content, partial(_draw, "by_group", result, groups, metric, k, table=table,
                                             width=width, short_ids=True), dpi)
    assert png is not None  # plots.by_group always draws
    return png


def race_png(result: SweepResult, dpi: int, width: float = FIGURE_WIDTH, cache: str | Path | None = None) -> bytes:
    """The race of a search's result (workbench.figures.race) `width` inches wide, as PNG; read back
    from `cache` when drawn before from the same content (as `default_pngs`; the race is part of it)."""
    content = "" if cache is None else f"{_content_key(result)}race{dpi}{width}"
    png = _cached_png(cache, content, partial(_draw, "race", result.race, width=width), dpi)
    assert png is not None  # a race always draws
    return png
