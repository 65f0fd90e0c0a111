"""Metrics against swept parameters, heatmaps, and cheap highlighting, on a real tiny sweep."""

from __future__ import annotations

import gc
import io
from pathlib import Path

import crowd
import matplotlib

matplotlib.use("Agg")

import fakemodel
import numpy as np
import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PolyCollection
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.image import AxesImage
from matplotlib.lines import Line2D
from PIL import Image

from workbench.dataset import Dataset
from workbench.figures import draw, plotdata, plots
from workbench.models.embed import Embedder
from workbench.results.result import SweepResult
from workbench.run.session import sweep
from workbench.variant import Variant, grid
from workbench.widgets.render import Picture

# size 6 with overlap 6 is refused by `grid`: a missing combination for the heatmap
FIXED = grid("fixed", size=[6, 12, 24, 48], overlap=[0, 6])
SIZE12 = next(fakemodel.key(v) for v in FIXED if v.kwargs == v.kwargs | {"size": 12, "overlap": 0})
SEMANTIC = Variant.make("semantic", breakpoint_percentile=80, max_size=24)


@pytest.fixture(scope="module")
def result(tiny: Dataset, fake_embedder: Embedder, tmp_path_factory: pytest.TempPathFactory) -> SweepResult:
    store = tmp_path_factory.mktemp("plots-params")
    return sweep(tiny, [*FIXED, SEMANTIC], ks=(1, 3, 5), embedder=fake_embedder, store=store, progress=False)


def summary_of(result: SweepResult, metric: str, k: int) -> pd.DataFrame:
    s = result.summary
    return s[(s.metric == metric) & (s.k == k)].set_index("key")


def param_of(result: SweepResult, name: str) -> pd.Series:
    return result.variants.set_index("key")[name]


def lines(ax: matplotlib.axes.Axes) -> list[Line2D]:
    return [line for line in ax.get_lines() if line.get_label() and not line.get_label().startswith("_")]


def test_swept_parameters_puts_sizes_first(result: SweepResult) -> None:
    # the grid lists parameters alphabetically (overlap, size, ...); the size comes first anyway,
    # and the semantic variant's single percentile is not swept
    assert plotdata.swept_parameters(result) == ["size", "overlap"]
    one = SweepResult(result.per_question, result.summary, result.variants.iloc[[0]], result.provenance)
    assert plotdata.swept_parameters(one) == []


def test_by_parameter_lines_are_the_means_with_ci_bands(result: SweepResult) -> None:
    fig = plots.by_parameter(result, "size", k=3)
    assert [ax.get_title() for ax in fig.axes] == ["recall@3 vs size", "mrr@3 vs size", "context_tokens@3 vs size"]
    assert fig.axes[0].get_xlabel() == "size (tokens)"
    assert fig.get_suptitle() == "Left out: 1 variant(s) without size"
    size, overlap = param_of(result, "size"), param_of(result, "overlap")
    for ax, metric in zip(fig.axes, ("recall", "mrr", "context_tokens"), strict=True):
        means = summary_of(result, metric, 3)
        drawn = lines(ax)
        assert [line.get_label() for line in drawn] == ["fixed, overlap=0", "fixed, overlap=6"]
        bands = [c for c in ax.collections if isinstance(c, PolyCollection)]
        assert len(bands) == len(drawn)
        for line, band, ov in zip(drawn, bands, (0, 6), strict=True):
            keys = sorted((k for k in overlap.index if overlap[k] == ov), key=lambda k: size[k])
            np.testing.assert_allclose(line.get_xdata(), size[keys])
            np.testing.assert_allclose(line.get_ydata(), means.loc[keys, "mean"])
            xy = band.get_paths()[0].vertices
            for key in keys:
                at = xy[np.isclose(xy[:, 0], size[key]), 1]
                assert at.min() == pytest.approx(means.at[key, "ci_low"])
                assert at.max() == pytest.approx(means.at[key, "ci_high"])


def test_by_parameter_one_line_per_other_value_and_k_free_metrics(result: SweepResult) -> None:
    fig = plots.by_parameter(result, "overlap", metrics=("precision_omega",))
    (ax,) = fig.axes
    assert ax.get_title() == "precision_omega vs overlap"
    assert ax.get_xlabel() == "overlap (tokens)"
    # size 6 has overlap 0 alone (6 with 6 is refused): a lone point compares no overlap
    assert [line.get_label() for line in lines(ax)] == [f"fixed, size={s}" for s in (12, 24, 48)]
    assert fig.get_suptitle().replace("\n", " ") == ("Left out: 1 variant(s) without overlap, 1 that differ from "
                                                      "every other in more than overlap")  # wrapped to 5.7 in
    omega = summary_of(result, "precision_omega", 0)
    for line in lines(ax):
        size = int(line.get_label().rsplit("=", 1)[1])
        keys = [fakemodel.key(v) for v in FIXED if v.kwargs["size"] == size]
        np.testing.assert_allclose(line.get_ydata(), omega.loc[keys, "mean"])
    with pytest.raises(ValueError, match="parameter 'nope' is not a parameter"):
        plots.by_parameter(result, "nope")


def test_heatmap_cells_are_the_means_and_missing_ones_blank(result: SweepResult) -> None:
    fig = plots.heatmap(result, "size", "overlap", metric="mrr", k=5)
    ax = fig.axes[0]
    (image,) = [a for a in ax.get_children() if isinstance(a, AxesImage)]
    cells = image.get_array()
    means = summary_of(result, "mrr", 5)
    assert cells.shape == (2, 4)  # overlap 0, 6 x size 6, 12, 24, 48
    for v in FIXED:
        i, j = (0, 6).index(v.kwargs["overlap"]), (6, 12, 24, 48).index(v.kwargs["size"])
        assert cells[i, j] == pytest.approx(means.at[fakemodel.key(v), "mean"])
    assert cells.mask[1, 0] and np.isnan(cells.data[1, 0])  # size 6, overlap 6: never measured
    assert len(fig.axes) == 2  # the heatmap and its colour bar
    texts = [t.get_text() for t in ax.texts]
    assert f"{means.at[fakemodel.key(FIXED[0]), 'mean']:.2f}" in texts
    with pytest.raises(ValueError, match="strategy 'semantic' has no variants with both size and overlap"):
        plots.heatmap(result, "size", "overlap", strategy="semantic")
    with pytest.raises(ValueError, match="metric 'nope' not in the result"):
        plots.heatmap(result, "size", "overlap", metric="nope")
    marked = plots.heatmap(result, "size", "overlap", highlight=FIXED[0].label)
    assert [p.get_xy() for p in marked.axes[0].patches if not p.get_fill()] == [(-0.5, -0.5)]


def test_mark_rings_each_point_and_outlines_each_bar_and_cell(result: SweepResult) -> None:
    key = SIZE12
    recall = summary_of(result, "recall", 5)
    fig = plots.by_parameter(result, "size", metrics=("recall", "mrr"))
    rings = plots.mark(fig, key)
    assert [r.axes for r in rings] == fig.axes[:2]
    assert list(rings[0].get_xdata()) == [12] and rings[0].get_ydata()[0] == pytest.approx(recall.at[key, "mean"])

    cells = plots.mark(plots.heatmap(result, "size", "overlap"), key)
    assert [c.get_xy() for c in cells] == [(0.5, -0.5)] and cells[0].get_width() == 1  # column 1, row 0

    over = plots.overview(result)
    marks = plots.mark(over, key)
    on = {over.axes.index(m.axes): m for m in marks}  # one mark per panel; budget rows make a fourth
    assert sorted(on) == [0, 1, 2, 3]
    curve, bar, point = on[0], on[1], on[2]
    np.testing.assert_allclose(curve.get_xdata(), [1, 3, 5])
    np.testing.assert_allclose(curve.get_ydata(), result.summary.query("key == @key and metric == 'recall' and k > 0")
                               .sort_values("k")["mean"])
    (patch,) = [p for p in over.axes[1].patches if p is not bar and p.get_bbox().bounds == bar.get_bbox().bounds]
    assert to_rgba(patch.get_facecolor()) == to_rgba(plotdata.variant_colors(result.keys)[key])
    assert point.get_xdata()[0] == pytest.approx(summary_of(result, "context_tokens", 5).at[key, "mean"])
    assert plots.mark(fig, fakemodel.key(SEMANTIC)) == []  # not drawn against size: nothing to mark
    with pytest.raises(ValueError, match="not made by workbench.figures.plots"):
        plots.mark(Figure(), key)


def test_the_record_of_a_figure_goes_with_it(result: SweepResult) -> None:
    gc.collect()  # figures of earlier tests
    before = len(draw._SPOTS)
    fig = plots.by_parameter(result, "overlap")
    assert len(draw._SPOTS) == before + 1
    del fig
    gc.collect()
    assert len(draw._SPOTS) == before


def pixels(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGBA")).astype(int)


@pytest.mark.parametrize("build", [plots.overview, lambda r: plots.by_parameter(r, "size"),
                                   lambda r: plots.heatmap(r, "size", "overlap")])
def test_picture_changes_only_the_marked_pixels_and_equals_a_full_draw(result: SweepResult, build) -> None:
    key = SIZE12
    picture = Picture(build(result), dpi=60)
    picture.png(fakemodel.key(FIXED[-1]))  # another variant first: its marks must not stay behind
    plain, marked = pixels(picture.png(None)), pixels(picture.png(key))
    assert picture.png(key) is picture.png(key)  # cached
    changed = np.argwhere((plain != marked).any(axis=2))
    assert len(changed)
    # where the marks are drawn, in pixels (Agg rows count from the top)
    fig = picture.fig
    marks = plots.mark(fig, key)
    renderer = picture.canvas.get_renderer()
    boxes = [a.get_window_extent(renderer).padded(2) for a in marks]
    height = plain.shape[0]
    inside = [any(b.contains(col + 0.5, height - row - 0.5) for b in boxes) for row, col in changed]
    assert all(inside)
    # a full render of a fresh figure with the same marks gives exactly the same pixels
    fresh = build(result)
    fresh.set_dpi(60)
    plots.mark(fresh, key)
    FigureCanvasAgg(fresh).draw()
    np.testing.assert_array_equal(np.asarray(fresh.canvas.buffer_rgba()), marked)


def test_by_parameter_groups_strategies_that_lack_a_parameter(result: SweepResult) -> None:
    """A text parameter that one strategy lacks (NaN among strings, as in a mixed-strategy result)
    still groups: one line more, named after the missing value."""
    unit = ["chars", float("nan"), *result.variants["unit"][2:]]  # two values and a blank among sized variants
    mixed = SweepResult(result.per_question, result.summary, result.variants.assign(unit=unit), result.provenance)
    fig = plots.by_parameter(mixed, "size", k=3)
    assert len(fig.axes) >= 3


def test_a_text_parameter_is_drawn_at_category_positions(result: SweepResult) -> None:
    """tokenizer (text) swept: its values sit at 0, 1 with their names as ticks (the trade-offs
    notebook sweeps cl100k against the model's own tokenizer)."""
    def with_model(t: pd.DataFrame) -> pd.DataFrame:  # each variant again, as if cut in the model's tokens
        return pd.concat([t, t.assign(key=t["key"] + "-model", variant=t["variant"] + " model")], ignore_index=True)

    variants = with_model(result.variants)
    variants.loc[len(result.variants):, "tokenizer"] = "model"
    mixed = SweepResult(with_model(result.per_question), with_model(result.summary), variants, result.provenance)
    assert "tokenizer" in plotdata.swept_parameters(mixed)
    ax = plots.by_parameter(mixed, "tokenizer", k=3).axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["cl100k_base", "model"]
    assert {x for line in ax.get_lines() for x in line.get_xdata()} <= {0.0, 1.0}


def subset(result: SweepResult, variants: list[Variant]) -> SweepResult:
    keys = {fakemodel.key(v) for v in variants}
    grid = tuple(g for g in result.provenance.grid if fakemodel.key(Variant.from_spec(g)) in keys)
    return SweepResult(*(t[t["key"].isin(keys)] for t in (result.per_question, result.summary, result.variants)),
                       result.provenance.with_(grid=grid))


def at(size: int, overlap: int) -> Variant:
    return Variant.make("fixed", size=size, overlap=overlap)


def test_variants_that_differ_in_two_parameters_at_once_compare_neither(result: SweepResult) -> None:
    both = subset(result, [at(12, 0), at(24, 6)])  # size and overlap differ together
    assert plotdata.swept_parameters(both) == []
    assert lines(plots.by_parameter(both, "size").axes[0]) == []
    three = subset(result, [at(12, 0), at(24, 0), at(24, 6)])
    assert plotdata.swept_parameters(three) == ["size", "overlap"]
    by_size = plots.by_parameter(three, "size", k=3)
    (line,) = lines(by_size.axes[0])
    assert line.get_label() == "fixed, overlap=0" and list(line.get_xdata()) == [12, 24]
    assert by_size.get_suptitle() == "Left out: 1 that differ from every other in more than size"
    (line,) = lines(plots.by_parameter(three, "overlap", k=3).axes[0])
    assert line.get_label() == "fixed, size=24" and list(line.get_xdata()) == [0, 6]


RETRIEVERS = [Variant.make("fixed", size=12, **kw) for kw in (
    {}, {"retriever": "bm25"}, {"retriever": "hybrid"}, {"retriever": "hybrid", "rrf_k": 30},
    {"contextual_header": True}, {"contextual_header": True, "retriever": "bm25"})] + [
    Variant.make("recursive", size=40), Variant.make("recursive", size=80)]


def test_the_retriever_is_its_stages_and_legends_name_only_what_sets_a_line_apart(
        tiny: Dataset, fake_embedder: Embedder, tmp_path: Path) -> None:
    """by_retriever places each variant at its stages with their parameters (hybrid with rrf_k=60
    on one line with dense and bm25, not apart); a header is named as the modifier it is, and a
    default every recursive variant shares (custom_separators=()) is not named."""
    r = sweep(tiny, RETRIEVERS, ks=(1, 3), embedder=fake_embedder, store=tmp_path, progress=False)
    assert plotdata.swept_parameters(r) == ["size", "retriever", "rrf_k"]
    ax = plots.by_parameter(r, "retriever", k=3).axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["dense", "bm25", "hybrid", "hybrid(rrf_k=30)"]
    assert [(line.get_label(), list(line.get_xdata())) for line in lines(ax)] == [
        ("fixed", [0, 1, 2, 3]), ("fixed, contextual header", [0, 1])]
    assert [line.get_label() for line in lines(plots.by_parameter(r, "size").axes[0])] == ["recursive"]


def test_a_figure_given_a_phone_width_stacks_its_panels_and_its_texts_stay_inside(result: SweepResult) -> None:
    """At 4 in (the report's narrow rendition) the panels stand one a row, the same width, and the
    title saying what was left out wraps inside the figure instead of running off it."""
    for fig in (plots.by_parameter(result, "overlap", width=4.0), plots.overview(result, short_ids=True, width=4.0)):
        assert fig.get_figwidth() == 4.0
        canvas = FigureCanvasAgg(fig)
        canvas.draw()
        renderer = canvas.get_renderer()
        boxes = [ax.get_window_extent(renderer) for ax in fig.axes]
        assert len({round(b.x0) for b in boxes}) == 1 and len({round(b.y0) for b in boxes}) == len(boxes)
        page = fig.bbox
        for text in [*fig.texts, *(lg for lg in fig.legends)]:
            box = text.get_window_extent(renderer)
            assert page.x0 - 1 <= box.x0 and box.x1 <= page.x1 + 1, text


def test_forty_variants_against_a_parameter_colour_the_lines_of_the_best_and_grey_the_rest() -> None:
    """Against the retriever, 40 variants make 14 lines (one per chunking): over 12, the lines that
    hold the 8 best variants by recall@5 are in colour and named, the others grey and counted; every
    variant can still be marked."""
    forty = crowd.forty()
    fig = plots.by_parameter(forty, "retriever")
    for ax in fig.axes:
        assert 1 < len(crowd.colours_drawn(ax)) <= plotdata.TOP
    recall = fig.axes[0]
    coloured = [line for line in lines(recall) if to_rgba(line.get_color()) != to_rgba(plotdata.GREY)]
    for key in forty.ranking()["key"][: plotdata.TOP]:  # each on a line in colour
        (ring, *_) = plots.mark(fig, key)
        at = (ring.get_xdata()[0], ring.get_ydata()[0])
        assert any(at in zip(line.get_xdata(), line.get_ydata(), strict=True) for line in coloured)
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend == [line.get_label() for line in coloured] + [f"grey: the other {14 - len(coloured)}"]
    assert all(len(plots.mark(fig, key)) == 3 for key in forty.keys)
