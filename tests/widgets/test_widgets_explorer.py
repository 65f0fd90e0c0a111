"""The semantic explorer: its cuts are the strategy's chunks, re-cuts embed nothing, and the
widget draws what the state decided (the fake model of tests/fakemodel.py,
real documents from tests/data/semantic/)."""

from __future__ import annotations

import html
import re
from pathlib import Path

import fakemodel
import numpy as np
import pytest
from conftest import REPO, span_of

from workbench.chunkers import ChunkEnv
from workbench.dataset import Dataset, Document, Question
from workbench.models.embed import Embedder
from workbench.variant import Variant
from workbench.widgets import Explorer, explorer
from workbench.widgets.explorer import cut_figure
from workbench.widgets.explorer_state import ExplorerState

DATA = REPO / "tests" / "data" / "semantic"  # real documents, see tests/data/README.md


@pytest.fixture(scope="module")
def docs() -> Dataset:
    httpx = Document("httpx", "HTTPX README", (DATA / "httpx_readme.md").read_text(encoding="utf-8"), kind="markdown",
                     path="semantic/httpx_readme.md")
    sotu = Document("sotu", "State of the Union 2024", (DATA / "sotu_2024.txt").read_text(encoding="utf-8"))
    q = Question("q-http2", "Does HTTPX support HTTP/2?",
                 (span_of(httpx, "has support for both **HTTP/1.1 and HTTP/2**"),))
    return Dataset("semantic-docs", (httpx, sotu), (q,))


SETTINGS = [  # (percentile, buffer_size, min_size, max_size, sentences)
    (95, 1, 0, 0, "lines+punkt"),
    (50, 0, 0, 0, "llamaindex"),
    (80, 2, 32, 128, "lines+punkt"),
    (70, 1, 64, 0, "llamaindex"),
    (30, 1, 0, 48, "lines+punkt"),
]


@pytest.mark.parametrize("setting", SETTINGS, ids=str)
def test_cut_equals_the_semantic_strategy(docs: Dataset, fake_embedder: Embedder, setting: tuple) -> None:
    percentile, buffer_size, min_size, max_size, sentences = setting
    state = ExplorerState(docs, fake_embedder)
    env = ChunkEnv(embed=fake_embedder.encode)
    for doc in docs.documents:
        state.select(doc.doc_id)
        cut = state.cut(percentile, buffer_size, min_size, max_size, sentences)
        variant = Variant.make("semantic", breakpoint_percentile=percentile, buffer_size=buffer_size,
                               min_size=min_size, max_size=max_size, sentences=sentences)
        assert state.variant() == variant
        assert cut.chunks == variant.chunk(docs.select([doc.doc_id]), env)
        assert cut.count > 1
        assert cut.sizes == [env.tokenizer("cl100k_base").count(c.text) for c in cut.chunks]


def test_recut_never_calls_the_model(docs: Dataset, fake_embedder: Embedder) -> None:
    state = ExplorerState(docs, fake_embedder, "sotu")
    assert not state.has_vectors(2)
    first = state.cut(95, 2)
    assert state.has_vectors(2) and not state.has_vectors(1)
    before = (fake_embedder.stats.embedded, fake_embedder.stats.cached)
    counts = {state.cut(p, 2, lo, hi).count for p, lo, hi in [(50, 0, 0), (80, 16, 0), (95, 0, 64), (10, 8, 96)]}
    assert (fake_embedder.stats.embedded, fake_embedder.stats.cached) == before  # not even a cache lookup
    assert len(counts | {first.count}) > 1  # the re-cuts did change the chunks

    cache_dir = fake_embedder.cache.path.parent.parent
    fresh = fakemodel.embedder(cache_dir)
    again = ExplorerState(docs, fresh, "sotu").cut(95, 2)
    assert again.chunks == first.chunks
    assert fresh.stats.embedded == 0 and fresh.stats.cached == len(first.sentences)
    assert "model" not in fresh.__dict__  # the model was never made


def test_threshold_and_cuts_in_the_figure(docs: Dataset, fake_embedder: Embedder) -> None:
    state = ExplorerState(docs, fake_embedder, "httpx")
    cut = state.cut(85, 1)
    v = state.vectors(1)
    dists = 1 - np.sum(v[:-1] * v[1:], axis=1)  # the vectors are L2-normalised
    np.testing.assert_allclose(cut.semantic.distances, dists, atol=1e-6)
    assert cut.semantic.threshold == pytest.approx(np.percentile(dists, 85), abs=1e-6)
    assert cut.semantic.breakpoints == [i for i, d in enumerate(cut.semantic.distances) if d > cut.semantic.threshold]

    curve = cut_figure(cut).axes[0]
    (threshold,) = [line for line in curve.lines if line.get_gid() == "threshold"]
    assert set(threshold.get_ydata()) == {cut.semantic.threshold}
    (cuts,) = [c for c in curve.collections if c.get_gid() == "cuts"]
    assert [seg[0][0] for seg in cuts.get_segments()] == cut.semantic.breakpoints


def test_moving_the_percentile_recuts_and_redraws(docs: Dataset, fake_embedder: Embedder, tmp_path: Path) -> None:
    ex = explorer(docs, fake_embedder, tmp_path / "store", doc_id="httpx")
    assert isinstance(ex, Explorer) and ex.state.last is not None
    count, plot, text = ex.state.last.count, ex.plot.value, ex.text.value
    assert f"{count} chunks" in text and "color:#b00020" not in ex.message.value
    ex.percentile.value = 40
    assert ex.state.last.count > count
    assert ex.state.variant().kwargs["breakpoint_percentile"] == 40
    assert ex.plot.value != plot and ex.text.value != text
    assert f"{ex.state.last.count} chunks" in ex.text.value

    ex.question.value = "q-http2"  # its evidence is underlined in the text view
    assert "border-bottom: 3px solid" in ex.text.value
    tips = [html.unescape(t) for t in re.findall(r' title="([^"]*)"', ex.text.value)]  # where each chunk is
    assert any(t.endswith("): semantic/httpx_readme.md · Features") for t in tips)
    assert any(t.endswith("): semantic/httpx_readme.md · Release Information > Fixed") for t in tips)


def test_a_bad_setting_is_shown_and_the_last_view_kept(docs: Dataset, fake_embedder: Embedder, tmp_path: Path) -> None:
    ex = explorer(docs, fake_embedder, tmp_path / "store", doc_id="httpx")
    ex.max_size.value = 64
    good = (ex.state.last, ex.plot.value, ex.text.value)
    ex.min_size.value = 128
    # IncompatibleParams is the strategy's ValueError for two parameters that clash
    assert ("IncompatibleParams: semantic: parameter &#x27;min_size&#x27; must be &lt;= max_size = 64"
            in ex.message.value)
    assert ex.state.last is good[0] and (ex.plot.value, ex.text.value) == good[1:]
    ex.min_size.value = 32
    assert "IncompatibleParams" not in ex.message.value and ex.state.variant().kwargs["min_size"] == 32


def test_measure_sweeps_the_setting(docs: Dataset, fake_embedder: Embedder, tmp_path: Path) -> None:
    class Recorder:
        def __init__(self) -> None:
            self.measured: list[Variant] = []

        def measure(self, variants: list[Variant]) -> None:
            self.measured += variants

    sweeper = Recorder()
    ex = explorer(docs, fake_embedder, tmp_path / "store", doc_id="httpx", sweeper=sweeper)
    ex.percentile.value = 60
    ex.measure.click()
    assert sweeper.measured == [ex.state.variant()]

    alone = explorer(docs, fake_embedder, tmp_path / "store", doc_id="httpx")
    alone.measure.click()
    assert "color:#b00020" not in alone.message.value
    for metric, k in (("recall", 5), ("mrr", 10), ("context_tokens", 5)):
        assert metric in alone.scores.value and f"@{k}" in alone.scores.value
