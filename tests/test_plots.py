"""Figures of a real tiny sweep: panel structure, error bars, colours, k handling, Pareto front."""

from __future__ import annotations

import io
import re
from dataclasses import replace

import matplotlib

matplotlib.use("Agg")

import crowd
import matplotlib.image
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_rgba
from matplotlib.container import BarContainer, ErrorbarContainer
from matplotlib.text import Text

from workbench.dataset import Dataset
from workbench.evaluation import stats
from workbench.figures import plotdata, plots
from workbench.models.embed import Embedder
from workbench.results.result import SweepResult
from workbench.run.session import sweep
from workbench.variant import Variant

VARIANTS = [Variant.make("fixed", size=12), Variant.make("fixed", size=24, overlap=6), Variant.make("fixed", size=48)]
LABELS = [v.label for v in VARIANTS]


@pytest.fixture(scope="module")
def result(tiny: Dataset, fake_embedder: Embedder, tmp_path_factory: pytest.TempPathFactory) -> SweepResult:
    store = tmp_path_factory.mktemp("plots")
    return sweep(tiny, VARIANTS, ks=(1, 3, 5), embedder=fake_embedder, store=store, progress=False)


def at(result: SweepResult, metric: str, k: int) -> pd.DataFrame:
    s = result.summary
    return s[(s.metric == metric) & (s.k == k)].set_index("variant")


def errorbars(ax: matplotlib.axes.Axes) -> list[ErrorbarContainer]:
    return [c for c in ax.containers if isinstance(c, ErrorbarContainer)]


def test_overview_has_three_panels_with_one_errorbar_line_per_variant(result: SweepResult) -> None:
    fig = plots.overview(result)
    assert len(fig.axes) == 4  # the fourth, recall at equal context budgets: tests/evaluation/test_budgets.py
    curves, mrr, cost, _ = fig.axes
    lines = errorbars(curves)
    assert [c.get_label() for c in lines] == LABELS
    recall = result.summary[(result.summary.metric == "recall") & (result.summary.k > 0)]
    for c, label in zip(lines, LABELS, strict=True):
        assert c.has_yerr
        line, _, bars = c.lines
        mine = recall[recall.variant == label].sort_values("k")
        np.testing.assert_allclose(line.get_xdata(), [1, 3, 5])
        np.testing.assert_allclose(line.get_ydata(), mine["mean"])
        # each error bar spans [ci_low, ci_high] at its k
        segments = bars[0].get_segments()
        np.testing.assert_allclose([s[:, 1].min() for s in segments], mine["ci_low"])
        np.testing.assert_allclose([s[:, 1].max() for s in segments], mine["ci_high"])
    assert "@5" in mrr.get_title() and "@5" in cost.get_title()  # k defaults to the largest swept k


def test_mrr_bars_are_sorted_with_ci_whiskers(result: SweepResult) -> None:
    """Best on top; variants tied on the mean keep sweep order, the first on top."""
    for k in (1, 5):
        mrr = plots.overview(result, k=k).axes[1]
        (bars,) = [c for c in mrr.containers if isinstance(c, BarContainer)]
        means = at(result, "mrr", k)["mean"]
        top_down = sorted(LABELS, key=lambda v: (-means[v], LABELS.index(v)))
        ticks = [t.get_text().replace("\n", " ").split("  ", 1)[1] for t in mrr.get_yticklabels()]
        assert ticks == top_down[::-1]  # bars are listed from the bottom up
        np.testing.assert_allclose([p.get_width() for p in bars.patches], means[top_down[::-1]])
        assert bars.errorbar is not None and bars.errorbar.has_xerr


def test_tied_bars_keep_sweep_order() -> None:
    """A hand-made tie: three variants, the last two equal; the earlier one sits higher."""
    rows = pd.DataFrame({"key": ["a", "b", "c"], "variant": ["A", "B", "C"], "metric": "mrr", "k": 1,
                         "mean": [0.2, 0.5, 0.5], "ci_low": [0.1, 0.4, 0.4], "ci_high": [0.3, 0.6, 0.6], "n": 9})
    fig = matplotlib.figure.Figure()
    ax = fig.subplots()
    plots._bars(ax, rows, {"a": "r", "b": "g", "c": "b"}, None, "mrr", {"a": 1, "b": 2, "c": 3})
    assert [t.get_text() for t in ax.get_yticklabels()] == ["1  A", "3  C", "2  B"]


def test_cost_panel_places_each_variant_at_its_means_with_both_cis(result: SweepResult) -> None:
    cost_ax = plots.overview(result, k=3).axes[2]
    points = errorbars(cost_ax)
    assert len(points) == len(LABELS)
    cost, recall = at(result, "context_tokens", 3), at(result, "recall", 3)
    for c, label in zip(points, LABELS, strict=True):
        assert c.has_xerr and c.has_yerr
        line = c.lines[0]
        assert line.get_xdata()[0] == pytest.approx(cost.at[label, "mean"])
        assert line.get_ydata()[0] == pytest.approx(recall.at[label, "mean"])
    # bigger chunks hand more tokens to the LLM at the same k
    assert cost.at[LABELS[0], "mean"] < cost.at[LABELS[2], "mean"]


def test_a_variant_keeps_its_colour_across_panels_and_subsets(result: SweepResult) -> None:
    full = plots.overview(result)
    line_color = {c.get_label(): to_rgba(c.lines[0].get_color()) for c in errorbars(full.axes[0])}
    (bars,) = [c for c in full.axes[1].containers if isinstance(c, BarContainer)]
    ticks = [t.get_text().replace("\n", " ").split("  ", 1)[1] for t in full.axes[1].get_yticklabels()]
    for label, patch in zip(ticks, bars.patches, strict=True):
        assert to_rgba(patch.get_facecolor()) == line_color[label]
    assert len(set(line_color.values())) == len(LABELS)
    subset = plots.overview(result, variants=[LABELS[2]])
    (only,) = errorbars(subset.axes[0])
    assert only.get_label() == LABELS[2] and to_rgba(only.lines[0].get_color()) == line_color[LABELS[2]]


def test_highlighted_variant_is_drawn_bolder(result: SweepResult) -> None:
    fig = plots.overview(result, highlight=LABELS[1])
    widths = {c.get_label(): c.lines[0].get_linewidth() for c in errorbars(fig.axes[0])}
    assert widths[LABELS[1]] > widths[LABELS[0]] == widths[LABELS[2]]


def test_bad_k_and_unknown_variants_are_refused(result: SweepResult) -> None:
    with pytest.raises(ValueError, match=r"k must be one of the swept ks \[1, 3, 5\], got 10"):
        plots.overview(result, k=10)
    with pytest.raises(ValueError, match="not in the result"):
        plots.overview(result, variants=["fixed(size=999)"])
    with pytest.raises(ValueError, match="empty"):
        plots.overview(result, variants=[])
    with pytest.raises(ValueError, match="metric 'nope' not in the result"):
        plots.metric_curves(result, "nope")


def test_pareto_front_hand_computed() -> None:
    # (cost, quality): A(1, .5) B(2, .4) C(3, .7) D(4, .7) E(1, .3): B is beaten by A, D by C, E by A
    assert stats.pareto_front([1, 2, 3, 4, 1], [0.5, 0.4, 0.7, 0.7, 0.3]) == [0, 2]
    assert stats.pareto_front([5], [0.1]) == [0]


def test_metric_curves_lines_per_variant_and_k_independent_bars(result: SweepResult) -> None:
    fig = plots.metric_curves(result, "ndcg")
    assert len(fig.axes) == 1 and [c.get_label() for c in errorbars(fig.axes[0])] == LABELS
    omega = plots.metric_curves(result, "precision_omega").axes[0]
    (bars,) = [c for c in omega.containers if isinstance(c, BarContainer)]
    expected = at(result, "precision_omega", 0)["mean"].sort_values()
    np.testing.assert_allclose([p.get_width() for p in bars.patches], expected)


def test_figures_stay_out_of_pyplot_and_render_to_png(result: SweepResult) -> None:
    before = plt.get_fignums()
    fig = plots.overview(result)
    assert plt.get_fignums() == before  # no global figure registry, nothing to close
    png = plots.figure_to_png_bytes(fig, dpi=40)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    height, width, _ = matplotlib.image.imread(io.BytesIO(png)).shape
    assert abs(width - fig.get_figwidth() * 40) <= 1 and abs(height - fig.get_figheight() * 40) <= 1


def test_fifteen_long_labels_keep_the_legend_off_the_data(result: SweepResult) -> None:
    """A 15-variant result (the real rows relabelled): the legend, of the 8 best (in colour) and
    one entry for the grey rest, sits below every panel."""
    names = {v: f"semantic(breakpoint_percentile={90 + i}, buffer_size=1)+header+late" for i, v in enumerate(LABELS)}
    many = [f"{names[v]} #{j}" for j in range(5) for v in LABELS]

    def copies(t: pd.DataFrame) -> pd.DataFrame:
        return pd.concat([t.assign(variant=t.variant.map(names) + f" #{j}", key=t.key + f"-{j}") for j in range(5)],
                         ignore_index=True)

    big = SweepResult(copies(result.per_question), copies(result.summary), copies(result.variants), result.provenance)
    fig = plots.overview(big)
    assert len(errorbars(fig.axes[0])) == plotdata.TOP and len(fig.axes[0].get_lines()) > 15
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    (legend,) = fig.legends
    box = legend.get_window_extent(renderer)
    top = set(plotdata.top_keys(big, big.keys))
    texts = [t.get_text() for t in legend.get_texts()]
    assert [t.split("  ", 1)[1] for t in texts[:-1]] == [m for m, key in zip(many, big.keys, strict=True) if key in top]
    assert texts[-1] == "grey: the other 7"
    for ax in fig.axes:
        assert not box.overlaps(ax.get_window_extent(renderer))


def cielab(rgb: np.ndarray) -> np.ndarray:
    """sRGB in [0, 1] to CIELAB (D65), the space where distance approximates perceived difference."""
    linear = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    xyz = linear @ np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]).T
    t = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(t > (6 / 29) ** 3, np.cbrt(t), t / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.stack([116 * f[:, 1] - 16, 500 * (f[:, 0] - f[:, 1]), 200 * (f[:, 1] - f[:, 2])], axis=1)


@pytest.mark.parametrize("n", [14, 20])
def test_many_variants_get_colours_far_apart(n: int) -> None:
    """Any two of 14 (or 20) variants differ by a CIE76 delta E of 25 or more (tab20's pale twins: 17),
    and neighbours in the legend differ in marker too."""
    keys = [f"v{i}" for i in range(n)]
    lab = cielab(np.array([to_rgba(c)[:3] for c in plotdata.variant_colors(keys).values()]))
    distance = np.linalg.norm(lab[:, None] - lab[None], axis=2)[np.triu_indices(n, 1)]
    assert distance.min() >= 25
    markers = list(plots.variant_markers(keys).values())
    assert all(a != b for a, b in zip(markers, markers[1:], strict=False))


def test_the_palette_begins_with_tab10_and_every_colour_is_a_hex_string() -> None:
    """plotdata spells tab10 out (it must not import matplotlib): the same colours, in order, and
    over 20 variants (turbo) hex strings too, which the report's legend writes as they are."""
    from matplotlib.colors import to_hex

    from workbench.figures.plotdata import PALETTE

    assert PALETTE[:10] == tuple(to_hex(c) for c in matplotlib.colormaps["tab10"].colors)
    for n in (3, 20, 25):
        colors = plotdata.variant_colors([f"v{i}" for i in range(n)]).values()
        assert all(re.fullmatch("#[0-9a-f]{6}", c) for c in colors)


def test_a_panel_prints_large_close_numbers_in_full_and_keeps_its_title_above_its_ticks(result: SweepResult) -> None:
    """Context tokens of 1,000,000 and 1,000,004: no offset or factor text over the axis (which
    the title, fixed at the top of the panel, could cover), and the title clear of every tick label."""
    fig = plots.metric_curves(result, "recall", width=4.0)
    ax = fig.axes[0]
    ax.set_ylim(1_000_000, 1_000_004)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    assert ax.yaxis.get_offset_text().get_text() == ""
    labels = [t for t in ax.get_yticklabels() if t.get_text()]
    assert labels and all(t.get_text().replace(".", "").replace(",", "").isdigit() for t in labels)
    assert any(t.get_text().startswith("1000000") for t in labels)
    title = ax.title.get_window_extent(renderer)
    assert title.ymin >= ax.get_window_extent(renderer).ymax
    assert not any(title.overlaps(t.get_window_extent(renderer)) for t in labels)


def x_texts_overlapping(fig: matplotlib.figure.Figure) -> list[tuple[str, str]]:
    """Pairs of x-axis texts (tick labels and axis labels of every panel) whose drawn boxes overlap."""
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    def drawn(ax: matplotlib.axes.Axes) -> list[matplotlib.text.Text]:  # tick labels outside the view are not
        lo, hi = sorted(ax.get_xlim())
        return [t for t in ax.get_xticklabels() if lo <= t.get_position()[0] <= hi] + [ax.xaxis.label]

    texts = [t for ax in fig.axes for t in drawn(ax) if t.get_visible() and t.get_text()]
    boxes = [t.get_window_extent(renderer) for t in texts]
    return [(texts[i].get_text(), texts[j].get_text()) for i in range(len(texts)) for j in range(i + 1, len(texts))
            if boxes[i].overlaps(boxes[j])]


@pytest.mark.parametrize("width", [None, 12.0, 10.0])
def test_overview_x_labels_never_run_into_each_other(result: SweepResult, width: float | None) -> None:
    """Drawn as is, at the report's width (12 in, where the cost and budget labels collided at k=10) and
    narrower."""
    fig = plots.overview(result, short_ids=True)
    if width:
        fig.set_size_inches(width, fig.get_size_inches()[1])
    assert x_texts_overlapping(fig) == []


def test_overview_panels_are_what_is_drawn(result: SweepResult) -> None:
    """overview_panels names each panel drawn, in order, with what to look for (the report's caption)."""
    fig = plots.overview(result)
    panels = plots.overview_panels(result)
    assert [ax.get_title() for ax in fig.axes] == [title for title, _ in panels]
    assert len(panels) == 4 and all(len(hint.split()) >= 3 for _, hint in panels)
    no_budgets = SweepResult(result.per_question, result.summary[result.summary.budget == 0], result.variants,
                             result.provenance.with_(settings=replace(result.provenance.settings, budgets=())))
    assert len(plots.overview(no_budgets).axes) == len(plots.overview_panels(no_budgets)) == 3


@pytest.fixture(scope="module")
def forty() -> SweepResult:
    return crowd.forty()


def boxes_of(fig: matplotlib.figure.Figure, ax: matplotlib.axes.Axes) -> list[matplotlib.transforms.Bbox]:
    """Where each text written in a panel (a direct label) is drawn, its leader line left out."""
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return [Text.get_window_extent(t, canvas.get_renderer()) for t in ax.texts]


@pytest.mark.parametrize("width", [12.0, 4.0])  # the report's widths
def test_forty_variants_show_the_best_eight_in_colour_labelled_and_the_rest_grey(forty: SweepResult,
                                                                                  width: float) -> None:
    """The trial's 39-variant overview was 39 colours no one could tell apart, its cost labels ran into
    each other and its budget panel was one smear of bands: now the 8 best by recall@5 (the verdict's
    metric) are in colour, each numbered beside its points where no label covers another, the rest grey,
    and every variant, grey or not, can still be marked."""
    fig = plots.overview(forty, short_ids=True, width=width)
    curves, mrr, cost, budgets = fig.axes
    best = list(forty.ranking()["key"][: plotdata.TOP])
    number = {key: str(n) for n, key in enumerate(forty.keys, 1)}
    for ax in fig.axes:
        assert len(crowd.colours_drawn(ax)) <= plotdata.TOP, ax.get_title()
    assert {c.get_label() for c in errorbars(curves)} == {forty.label_of(key) for key in best}
    for ax in (curves, cost, budgets):
        assert sorted(t.get_text() for t in ax.texts) == sorted(number[key] for key in best), ax.get_title()
        boxes = boxes_of(fig, ax)
        frame = ax.get_window_extent()
        assert not [(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:] if a.overlaps(b)], ax.get_title()
        assert all(frame.x0 <= b.x0 and b.x1 <= frame.x1 and frame.y0 <= b.y0 and b.y1 <= frame.y1 for b in boxes)
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend == [number[key] for key in forty.keys if key in best] + ["grey: the other 32"]
    for key in forty.keys:
        assert len(plots.mark(fig, key)) == 4, forty.label_of(key)  # a point, a bar, a point, a line


def test_forty_variants_keep_a_bar_per_chunking_for_a_metric_of_the_chunks_alone(forty: SweepResult) -> None:
    """precision_omega is the chunks': the trial drew the same bar once per retriever. Now one bar per
    chunking, numbered by every variant that shares it, each of them marked on it."""
    fig = plots.metric_curves(forty, "precision_omega", short_ids=True)
    (ax,) = fig.axes
    (bars,) = [c for c in ax.containers if isinstance(c, BarContainer)]
    chunkings = {v.chunking_key for v in crowd.VARIANTS}
    assert len(bars.patches) == len(chunkings) == 14
    number = {v.key: str(n) for n, v in enumerate(crowd.VARIANTS, 1)}
    shared = {c: ", ".join(number[v.key] for v in crowd.VARIANTS if v.chunking_key == c) for c in chunkings}
    assert sorted(t.get_text() for t in ax.get_yticklabels()) == sorted(shared.values())
    omega = forty.summary.query("metric == 'precision_omega'").set_index("key")["mean"]
    for v in crowd.VARIANTS:
        (ring,) = plots.mark(fig, v.key)
        (bar,) = [p for p in bars.patches if p.get_bbox().bounds == ring.get_bbox().bounds]
        assert bar.get_width() == pytest.approx(omega[v.chunking_key])
    assert "one bar per chunking" in ax.get_title()
    gone = forty.provenance.with_(grid=({"strategy": "gone", "params": {}}, *forty.provenance.grid))
    again = SweepResult(forty.per_question, forty.summary, forty.variants, gone)
    assert len(plotdata.chunkings(again, again.keys)) == 14  # a spec this version cannot make is passed over
