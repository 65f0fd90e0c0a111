"""Scores of a measured variant are loaded, not recomputed, and never served for another setting."""

from __future__ import annotations

import shutil
from pathlib import Path

import fakemodel
import pandas as pd

from workbench.dataset import Dataset
from workbench.evaluation.score_cache import ScoreCache
from workbench.evaluation.settings import Settings
from workbench.retrieval.index import IndexStore
from workbench.run.session import sweep
from workbench.variant import Variant, grid

GRID = [*grid("fixed", size=[24, 48]), Variant.make("fixed", size=24, retriever="bm25")]


def run(data: Dataset, cache: Path, ks: tuple[int, ...] = (1, 3)) -> tuple:
    embedder = fakemodel.embedder(cache)  # the score cache works alike for every model
    result = sweep(data, GRID, ks=ks, embedder=embedder, store=IndexStore(cache), progress=False, budgets=(64,))
    return result, embedder


def test_a_warm_sweep_reads_scores_without_index_or_model(tiny: Dataset, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first, _ = run(tiny, cache)
    shutil.rmtree(cache / "index")  # the scores alone answer a repeated sweep
    second, embedder = run(tiny, cache)
    pd.testing.assert_frame_equal(first.per_question, second.per_question)
    pd.testing.assert_frame_equal(first.summary, second.summary)
    assert not (cache / "index").exists() and embedder.stats.embedded == embedder.stats.cached == 0
    kept = ["chunks", "chars", "tokens_embedded", "overlap_chars", "truncated_chunks"]
    pd.testing.assert_frame_equal(first.variants[kept], second.variants[kept])
    assert first.variants["built"].all() and not second.variants["built"].any()


def test_another_setting_or_changed_code_scores_again(tiny: Dataset, tmp_path: Path, monkeypatch) -> None:
    cache = tmp_path / "cache"
    run(tiny, cache)
    other, _ = run(tiny, cache, ks=(2,))  # new ks: scored from the (loaded) indexes, not from the old table
    assert set(other.per_question["k"]) - {0} == {2}
    assert not other.variants["built"].any()
    folders = {p.name for p in (cache / "scores").iterdir()}
    assert len(folders) == 2

    monkeypatch.setattr("workbench.evaluation.score_cache.code_fingerprint", lambda: "edited-metrics")
    again, _ = run(tiny, cache)
    assert len({p.name for p in (cache / "scores").iterdir()}) == 3  # an edit to scoring code never reads old numbers
    entry = ScoreCache(cache, tiny, again.provenance.models[0].fingerprint, Settings(ks=(1, 3), budgets=(64,)))
    assert all(entry.get(v) is not None for v in GRID)
    assert entry.get(Variant.make("fixed", size=96)) is None
