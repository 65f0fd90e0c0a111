"""Rerankers and the rerank stage, with a real (tiny, randomly initialised) CrossEncoder that this
test builds and saves itself: no cross-encoder ships its weights on PyPI, and nothing may download.
Its scores mean nothing; what is checked is that the stage orders exactly by them, caches them and
keys the scores by the model's files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import save_cross_encoder

import workbench as wb
from workbench.dataset import Dataset
from workbench.evaluation.score_cache import ScoreCache
from workbench.evaluation.settings import Settings
from workbench.models.embed import Embedder
from workbench.models.rerank import CrossEncoderReranker
from workbench.retrieval.index import IndexStore, embed_texts


def predict(folder: Path, pairs: list[tuple[str, str]]) -> np.ndarray:
    from sentence_transformers import CrossEncoder

    return np.asarray(CrossEncoder(str(folder), local_files_only=True).predict([list(p) for p in pairs]))


def test_scores_are_the_cross_encoders_and_are_computed_once(cross_encoder: Path, tmp_path: Path) -> None:
    pairs = [("How long does a refund take?", "Refunds are paid within five days."),
             ("How long does a refund take?", "The Voyager probes were launched in 1977."),
             ("Do prices include VAT?", "Refunds are paid within five days.")]
    first = CrossEncoderReranker(cross_encoder, cache_dir=tmp_path, batch_size=2)
    got = first.score(pairs + pairs[:1])
    np.testing.assert_allclose(got[:3], predict(cross_encoder, pairs), rtol=1e-5, atol=1e-6)
    assert got[3] == got[0] and first.stats.scored == 3 and first.stats.cached == 1
    again = CrossEncoderReranker(cross_encoder, cache_dir=tmp_path)  # a new process's view: the cache file
    np.testing.assert_array_equal(again.score(pairs), got[:3])
    assert again.stats.scored == 0 and again.stats.cached == 3 and "model" not in again.__dict__  # never loaded


def test_a_hub_name_or_no_model_is_refused_when_the_variant_is_made() -> None:
    with pytest.raises(ValueError, match="not a local cross-encoder folder.*hub names"):
        wb.parse_variant("fixed:size=64+rerank:model=cross-encoder/ms-marco-MiniLM-L-6-v2")
    with pytest.raises(ValueError, match="parameter 'model' must name a local CrossEncoder folder"):
        wb.parse_variant("fixed:size=64+rerank")


def test_the_stage_orders_the_first_stages_top_n_by_the_rerankers_scores(
        tiny: Dataset, embedder: Embedder, cross_encoder: Path, tmp_path: Path) -> None:
    n = 4
    plain = wb.parse_variant("fixed:size=60,overlap=0,unit=chars")
    reranked = wb.parse_variant(f"fixed:size=60,overlap=0,unit=chars+rerank:model={cross_encoder},n={n}")
    store = IndexStore(tmp_path)
    first = wb.rankings(tiny, plain, k=10, embedder=embedder, store=store)
    second = wb.rankings(tiny, reranked, k=10, embedder=embedder, store=store)
    chunks = store.get(plain, tiny, embedder).chunks
    texts = embed_texts(chunks)
    for q, before, after in zip(tiny.questions, first, second, strict=True):
        head = [h.chunk_id for h in before[:n]]
        oracle = predict(cross_encoder, [(q.question, texts[r]) for r in head])
        assert [h.chunk_id for h in after[:n]] == [head[i] for i in np.argsort(-oracle, kind="stable")]
        assert [h.chunk_id for h in after[n:]] == [h.chunk_id for h in before[n:]]  # the rest keep their order


def test_a_sweep_reports_rerank_seconds_and_a_rerun_scores_no_pair(
        tiny: Dataset, embedder: Embedder, cross_encoder: Path, tmp_path: Path) -> None:
    grid = [wb.parse_variant("fixed:size=60,overlap=0,unit=chars"),
            wb.parse_variant(f"fixed:size=60,overlap=0,unit=chars+rerank:model={cross_encoder},n=5")]
    result = wb.sweep(tiny, grid, embedder=embedder, store=tmp_path / "cache", ks=(1, 3), progress=False)
    seconds = result.variants.set_index("retriever")["rerank_seconds_per_question"]
    assert seconds.drop("dense").notna().all() and seconds.drop("dense").gt(0).all() and seconds.isna()["dense"]
    store = IndexStore(tmp_path / "cache")
    (tmp_path / "cache" / "scores").rename(tmp_path / "old-scores")  # measure again from the pair cache alone
    again = wb.sweep(tiny, grid, embedder=embedder, store=store, ks=(1, 3), progress=False)
    assert store.rerankers.get(str(cross_encoder)).stats.scored == 0
    assert again.per_question.equals(result.per_question) and again.hits.equals(result.hits)


def test_a_changed_reranker_never_serves_its_old_scores(tiny: Dataset, tmp_path: Path) -> None:
    folder = save_cross_encoder(tmp_path / "ce", seed=1)
    variant = wb.parse_variant(f"fixed:size=12+rerank:model={folder}")
    cache = ScoreCache(tmp_path, tiny, "model", Settings())
    before = cache.path(variant)
    save_cross_encoder(folder, seed=2)
    assert cache.path(variant) != before and cache.path(variant).parent == before.parent
