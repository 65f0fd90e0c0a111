"""The interactive panel driven programmatically, on a real tiny sweep."""

from __future__ import annotations

import html
from dataclasses import replace
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import fakemodel
import ipywidgets as w
import pytest

from workbench.chunkers import STRATEGIES, register_function
from workbench.core.params import Param
from workbench.dataset import Dataset
from workbench.evaluation.metrics import DEFAULT_K
from workbench.figures.draw import figure_to_png_bytes
from workbench.figures.plots import overview
from workbench.models.embed import Embedder
from workbench.results.result import SweepResult
from workbench.run.session import sweep
from workbench.variant import Variant
from workbench.widgets import Panel, Sweeper, control, panel, read

KS = (1, 3)
BASE = [Variant.make("fixed", size=16), Variant.make("fixed", size=48)]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("widgets")


def shows(p: Panel, k: int, variants: list[str], highlight: str) -> bool:
    """The panel's picture is the overview of exactly `variants` at k with `highlight` in bold."""
    return p.plot.value == figure_to_png_bytes(overview(p.result, k=k, variants=variants, highlight=highlight))


@pytest.fixture(scope="module")
def base(tiny: Dataset, embedder: Embedder, store: Path) -> SweepResult:
    return sweep(tiny, BASE, ks=KS, embedder=embedder, store=store, progress=False)


def test_controls_drive_measurements_and_redraws(
    tiny: Dataset, embedder: Embedder, store: Path, base: SweepResult
) -> None:
    p = panel(tiny, embedder, store, result=base)
    assert isinstance(p, Panel) and p.ks == KS and p.k.value == 3
    assert p.compared == base.keys
    first = p.plot.value
    assert first[:8] == b"\x89PNG\r\n\x1a\n"
    default = Variant.make("fixed").key  # the controls start at the strategy's defaults
    assert p.selected == default and p.result.keys == [*base.keys, default]
    assert shows(p, 3, [*base.keys, default], default)
    assert set(p.params) == set(STRATEGIES["fixed"].params)
    assert isinstance(p.params["size"], w.IntSlider) and isinstance(p.params["unit"], w.Dropdown)
    # A drag measures once, on release:
    assert not (p.params["size"].continuous_update or p.params["overlap"].continuous_update or p.k.continuous_update)

    p.params["size"].value = 32  # a new variant: measured, merged, drawn
    new = Variant.make("fixed", size=32).key
    assert p.selected == new and p.result.keys[-1] == new and shows(p, 3, [*base.keys, new], new)
    assert html.escape(p.result.label_of(new)) in p.message.value and p.plot.value != first

    measured, embedded = len(p.result.variants), embedder.stats.embedded
    p.k.value = 1  # only a redraw
    assert shows(p, 1, [*base.keys, new], new)
    p.params["size"].value = 16  # already in the result: a filter and a redraw
    assert p.selected == BASE[0].key and shows(p, 1, base.keys, BASE[0].key)
    assert len(p.result.variants) == measured and embedder.stats.embedded == embedded


def test_invalid_parameters_show_the_message_not_a_traceback(tiny: Dataset, embedder: Embedder, store: Path) -> None:
    p = panel(tiny, embedder, store, ks=KS)
    p.params["size"].value = 32
    selected, picture = p.selected, p.plot.value
    p.params["overlap"].value = 32
    assert "overlap" in p.message.value and "[0, 32)" in p.message.value
    assert "Traceback" not in p.message.value
    assert (p.selected, p.plot.value) == (selected, picture)  # the last good view stays
    p.params["overlap"].value = 8
    assert p.selected == Variant.make("fixed", size=32, overlap=8).key and shows(p, 3, [p.selected], p.selected)


@pytest.fixture
def halves() -> str:
    """A user strategy registered for one test (conftest's registry fixture removes it after)."""
    register_function("halves", lambda text: [text[: len(text) // 2], text[len(text) // 2:]])
    return "halves"


def test_every_registered_strategy_is_offered_with_its_own_controls(
    tiny: Dataset, embedder: Embedder, store: Path, halves: str
) -> None:
    p = panel(tiny, embedder, store, ks=KS)
    assert list(p.strategy.options) == list(STRATEGIES)
    assert {"fixed", "recursive", "semantic", "parent_child", "sentence_window", "halves"} <= set(p.strategy.options)

    p.strategy.value = "parent_child"
    schema = STRATEGIES["parent_child"].params
    assert list(p.params) == list(schema) and list(p.param_box.children) == list(p.params.values())
    assert {n: c.value for n, c in p.params.items()} == {n: q.default for n, q in schema.items()}
    assert p.params["child_size"].tooltip == schema["child_size"].help
    assert p.params["parent"].options == ("fixed", "window", "section")
    assert p.selected == Variant.make("parent_child").key and p.plot.value

    picture = p.plot.value
    p.params["parent"].value = "window"  # a new variant of the new strategy: measured and drawn
    assert p.selected == Variant.make("parent_child", parent="window").key
    assert p.plot.value != picture and shows(p, 3, [p.selected], p.selected)

    p.strategy.value = halves  # no parameters: still selectable, measured and drawn
    assert p.params == {} and p.param_box.children == () and p.result.label_of(p.selected) == "halves()"
    assert shows(p, 3, [p.selected], p.selected)


def test_controls_follow_the_schema() -> None:
    percentile = control("breakpoint_percentile", STRATEGIES["semantic"].params["breakpoint_percentile"])
    assert isinstance(percentile, w.FloatSlider) and (percentile.min, percentile.max, percentile.value) == (0, 100, 95)
    assert not percentile.continuous_update and percentile.tooltip.startswith("percentile of adjacent")
    unbounded = control("size", Param(256, "chunk size"))
    assert isinstance(unbounded, w.IntSlider) and (unbounded.min, unbounded.max) == (0, 1024)
    assert control("window", Param(3, "sentences", lo=1, hi=6)).max == 6
    assert control("window", STRATEGIES["sentence_window"].params["window"]).max == 10  # a count, not a size
    assert isinstance(control("flag", Param(False, "a switch")), w.Checkbox)
    assert isinstance(control("name", Param("x", "free text")), w.Text)
    seps = Param((), "separators")
    box = control("seps", seps)
    assert box.value == "[]"
    box.value = '["\\n\\n", ". "]'
    assert read("seps", seps, box) == ["\n\n", ". "]
    box.value = "[oops"
    with pytest.raises(ValueError, match="parameter 'seps' must be JSON"):
        read("seps", seps, box)


def test_modifiers_make_their_variants_and_refuse_to_combine(tiny: Dataset, embedder: Embedder, store: Path) -> None:
    p = panel(tiny, embedder, store, ks=KS)
    p.params["size"].value = 48
    p.header.value = True
    assert p.selected == Variant.make("fixed", size=48, contextual_header=True).key
    assert p.result.label_of(p.selected).endswith("+header")
    selected, picture = p.selected, p.plot.value
    p.late.value = True  # both at once: Variant.make refuses, the panel says why
    assert "contextual_header and late cannot be combined" in p.message.value
    assert (p.selected, p.plot.value) == (selected, picture)
    p.header.value = False
    assert p.selected == Variant.make("fixed", size=48, late=True).key
    assert p.result.label_of(p.selected).endswith("+late")
    assert shows(p, 3, [p.selected], p.selected)


def test_add_and_remove_variants_from_the_comparison(tiny: Dataset, fake_embedder: Embedder, store: Path) -> None:
    """On a model other than the bundled one, whose rows carry its hash after the variant key."""
    p = panel(tiny, fake_embedder, store, ks=KS)
    first, sized = fakemodel.key(Variant.make("fixed")), [fakemodel.key(v) for v in BASE]
    assert p.compared == []
    p.add.click()
    p.params["size"].value = 48
    assert p.compared == [first] and p.selected == sized[1]
    p.add.click()
    p.add.click()  # twice: still once
    assert p.compared == [first, sized[1]]
    p.remove.click()
    assert p.compared == [first]
    p.params["size"].value = 16  # the removed variant is no longer drawn next to the selected one
    assert shows(p, 3, [first, sized[0]], sized[0])


def test_a_result_from_other_data_is_refused(tiny: Dataset, embedder: Embedder, store: Path, base: SweepResult) -> None:
    elsewhere = base.provenance.with_(dataset=replace(base.provenance.dataset, fingerprint="0" * 16))
    other = SweepResult(base.per_question, base.summary, base.variants, elsewhere)
    with pytest.raises(ValueError, match="the result was measured on"):
        panel(tiny, embedder, store, result=other)


def test_controls_carry_their_units(tiny: Dataset, embedder: Embedder, store: Path, base: SweepResult) -> None:
    """One name per concept: "overlap" counts tokens in one strategy and sentences in another."""
    p = panel(tiny, embedder, store, result=base)
    assert p.params["size"].description == "size (tokens)" and p.params["overlap"].description == "overlap (tokens)"
    p.params["unit"].value = "chars"
    assert p.params["size"].description == "size (chars)"
    p.strategy.value = "sentence"
    assert p.params["overlap"].description == "overlap (sentences)"


def test_the_panel_and_the_sweeper_start_at_the_one_default_k(tiny: Dataset, embedder: Embedder, store: Path) -> None:
    """Both read metrics.DEFAULT_K when it was swept (the panel once took the largest k)."""
    ks = (1, 3, DEFAULT_K, 10)
    assert panel(tiny, embedder, store, ks=ks).k.value == DEFAULT_K == Sweeper(tiny, embedder, store, ks=ks).k.value
    assert panel(tiny, embedder, store, ks=KS).k.value == 3  # not swept: the largest swept k


def test_the_panel_shows_the_chunk_count_and_warns_of_truncated_chunks(
    long_log: Dataset, embedder: Embedder, tmp_path: Path
) -> None:
    p = panel(long_log, embedder, tmp_path, ks=(1,))
    p.params["size"].value = 300  # above the model's 256 word pieces
    row = p.result.variants.set_index("key").loc[p.selected]
    assert row["truncated_chunks"] > 1
    assert f"{row['chunks']} chunks, {row['truncated_chunks']} longer than the model's window" in p.message.value
    assert "Warning: 1 of 1 variants embed chunks longer than" in p.warning.value
    p.params["size"].value = 64
    assert "0 longer than the model's window" in p.message.value and p.warning.value == ""
