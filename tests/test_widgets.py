"""The interactive panel driven programmatically, on a real tiny sweep."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import pytest

from workbench.chunkers import STRATEGIES
from workbench.dataset import Dataset
from workbench.embed import Embedder
from workbench.sweep import SweepResult, sweep
from workbench.variant import Variant
from workbench.widgets import CONTROLLED, Panel, combine, panel, tunable_strategies

KS = (1, 3)
BASE = [Variant.make("fixed", size=16), Variant.make("fixed", size=48)]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("widgets")


@pytest.fixture(scope="module")
def base(tiny: Dataset, embedder: Embedder, store: Path) -> SweepResult:
    return sweep(tiny, BASE, ks=KS, embedder=embedder, store=store, progress=False)


def labels(r: SweepResult) -> list[str]:
    return list(r.variants["variant"])


def test_controls_drive_measurements_and_redraws(
    tiny: Dataset, embedder: Embedder, store: Path, base: SweepResult
) -> None:
    p = panel(tiny, embedder, store, result=base)
    assert isinstance(p, Panel) and p.ks == KS and p.k.value == 3
    assert p.compared == labels(base)
    first = p.plot.value
    assert first[:8] == b"\x89PNG\r\n\x1a\n" and p.draws == 1
    default = Variant.make("fixed").label  # the controls start at the strategy's defaults
    assert p.selected == default and labels(p.result) == [*labels(base), default]
    assert not p.params["size"].disabled and p.params["breakpoint_percentile"].disabled

    p.params["size"].value = 32  # a new variant: measured, merged, drawn
    new = Variant.make("fixed", size=32).label
    assert p.selected == new and labels(p.result)[-1] == new and p.draws == 2
    assert new in p.message.value and p.plot.value != first

    measured, embedded = len(p.result.variants), embedder.stats.embedded
    p.k.value = 1  # only a redraw
    p.params["size"].value = 16  # already in the result: a filter and a redraw
    assert p.draws == 4 and p.selected == BASE[0].label
    assert len(p.result.variants) == measured and embedder.stats.embedded == embedded


def test_invalid_parameters_show_the_message_not_a_traceback(tiny: Dataset, embedder: Embedder, store: Path) -> None:
    p = panel(tiny, embedder, store, ks=KS)
    p.params["size"].value = 32
    selected, draws, picture = p.selected, p.draws, p.plot.value
    p.params["overlap"].value = 32
    assert "overlap" in p.message.value and "[0, 32)" in p.message.value
    assert "Traceback" not in p.message.value
    assert (p.selected, p.draws, p.plot.value) == (selected, draws, picture)  # the last good view stays
    p.params["overlap"].value = 8
    assert p.selected == Variant.make("fixed", size=32, overlap=8).label and p.draws == draws + 1


def test_add_and_remove_variants_from_the_comparison(tiny: Dataset, embedder: Embedder, store: Path) -> None:
    p = panel(tiny, embedder, store, ks=KS)
    assert p.compared == []
    p.add.click()
    p.params["size"].value = 48
    assert p.compared == [Variant.make("fixed").label] and p.selected == BASE[1].label
    p.add.click()
    p.add.click()  # twice: still once
    assert p.compared == [Variant.make("fixed").label, BASE[1].label]
    p.remove.click()
    assert p.compared == [Variant.make("fixed").label] and p.draws == 5


def test_irrelevant_controls_are_disabled_for_every_strategy(tiny: Dataset, embedder: Embedder, store: Path) -> None:
    names = tunable_strategies()
    assert names[0] == "fixed" and {"recursive", "semantic"} <= set(names)
    assert all(set(STRATEGIES[n].params) & set(CONTROLLED) for n in names)
    p = panel(tiny, embedder, store, ks=KS)
    for name in names[1:]:
        p.strategy.value = name
        assert p.selected is not None and p.selected.startswith(name), p.message.value
        schema = STRATEGIES[name].params
        assert {c: not w.disabled for c, w in p.params.items()} == {c: c in schema for c in CONTROLLED}


def test_a_result_from_other_data_is_refused(tiny: Dataset, embedder: Embedder, store: Path, base: SweepResult) -> None:
    other = SweepResult(base.per_question, base.summary, base.variants, base.config | {"dataset_fingerprint": "0" * 16})
    with pytest.raises(ValueError, match="dataset_fingerprint"):
        panel(tiny, embedder, store, result=other)


def test_combine_keeps_first_measurement_and_refuses_mismatches(tiny: Dataset, embedder: Embedder, store: Path,
                                                                base: SweepResult) -> None:
    new = Variant.make("fixed", size=24)
    extra = sweep(tiny, [BASE[1], new], ks=KS, embedder=embedder, store=store, progress=False)
    both = combine([base, extra])
    assert labels(both) == [*labels(base), new.label]
    assert len(both.summary) == len(base.summary) + len(extra.summary) // 2
    assert len(both.config["grid"]) == 3
    kept = both.summary[both.summary.variant == BASE[1].label]
    assert kept.equals(base.summary[base.summary.variant == BASE[1].label])
    other = SweepResult(extra.per_question, extra.summary, extra.variants, extra.config | {"ks": [1, 5]})
    with pytest.raises(ValueError, match="different ks"):
        combine([base, other])
