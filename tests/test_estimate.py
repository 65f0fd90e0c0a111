"""The estimate a cold sweep prints first: what it will embed (counted, not guessed) and the time at a measured rate."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from workbench.dataset import Dataset
from workbench.estimate import estimate, padded_word_pieces
from workbench.models.embed import Embedder
from workbench.sweep import sweep
from workbench.variant import Variant, parse_variant


def test_padding_is_counted_as_the_model_batches_texts() -> None:
    assert padded_word_pieces([3, 1, 2, 5], batch=2) == 2 * 2 + 2 * 5  # sorted, each batch as long as its longest
    assert padded_word_pieces([], batch=2) == 0


def test_a_cold_grid_counts_the_texts_the_sweep_then_embeds(tiny: Dataset, tmp_path: Path) -> None:
    embedder = Embedder(cache_dir=tmp_path, progress=False)
    grid = [parse_variant(v) for v in ("fixed:size=24", "fixed:size=24+bm25", "recursive:size=32+header")]
    est = estimate(tiny, grid, ks=(1, 3), embedder=embedder, store=tmp_path)
    assert (est.variants, est.builds, est.token_passes, est.approximate) == (3, 2, 0, False)  # bm25 shares an entry
    assert embedder.stats.embedded == est.sampled > 0  # the rate is measured on real texts, which are kept
    assert est.rate > 0 and est.seconds == est.word_pieces / est.rate > 0
    result = sweep(tiny, grid, ks=(1, 3), embedder=embedder, store=tmp_path, progress=False)
    assert result.config["texts_embedded"] == est.texts  # what is left to embed is what the sweep embeds
    assert f"{est.texts:,} texts to embed" in est.line() and f"measured on {est.sampled - 1} of them" in est.line()
    for ks in ((1, 3), (1, 2)):  # scores cached, or only the index entries and vectors
        fresh = Embedder(cache_dir=tmp_path, progress=False)
        warm = estimate(tiny, grid, ks=ks, embedder=fresh, store=tmp_path)
        assert warm.cached and warm.line() == "estimate: all cached, nothing to embed"
        assert "model" not in vars(fresh)  # a warm grid never loads the model to say so


def test_semantic_late_and_preview_count_their_model_passes(tiny: Dataset, tmp_path: Path) -> None:
    embedder = Embedder(cache_dir=tmp_path, progress=False)
    grid = [parse_variant("semantic:breakpoint_percentile=50"), parse_variant("fixed:size=24+late")]
    est = estimate(tiny, grid, embedder=embedder, store=tmp_path)
    assert est.approximate and "about" in est.line()  # semantic's cuts wait on vectors: counted from placeholders
    assert (est.token_passes, est.token_pass_documents) == (1, len(tiny.documents))  # +late reads each document
    embedded = sweep(tiny, grid, embedder=embedder, store=tmp_path, progress=False).config["texts_embedded"]
    assert abs(embedded - est.texts) <= embedded // 4

    preview = estimate(tiny, grid, preview=True, embedder=embedder, store=tmp_path)
    assert (preview.texts, preview.builds, preview.token_passes) == (0, 0, 1)  # the questions are cached
    assert preview.rate > 0 and "token pass" in preview.measured and "not kept" in preview.measured
    result = sweep(tiny, grid, preview=True, embedder=embedder, store=tmp_path, progress=False)
    assert result.config["token_pass_documents"] == len(tiny.documents)
    assert estimate(tiny, grid, preview=True, embedder=embedder, store=tmp_path).cached


def test_a_bad_grid_is_refused_before_any_work(tiny: Dataset, tmp_path: Path) -> None:
    embedder = Embedder(cache_dir=tmp_path, progress=False)
    with pytest.raises(ValueError, match="duplicate variants in the grid"):
        estimate(tiny, [parse_variant("fixed:size=8"), parse_variant("fixed:size=8,overlap=0")], embedder=embedder,
                 store=tmp_path)
    assert embedder.stats.embedded == 0 and "model" not in vars(embedder)


def test_context_generations_are_estimated_and_llm_chunkers_are_not_chunked(
        tiny: Dataset, llm_cache: Callable[[str], Path], embedder: Embedder) -> None:
    """+context: the contexts its build will write, counted on its chunks by the store's LLM (a
    sample generated and kept); an LLM chunker is named, not run (it would generate everything)."""
    from workbench.retrieval.index import IndexStore

    store = IndexStore(llm_cache("estimate-context"))
    ctx = Variant.make("fixed", size=48, contextual={"max_tokens": 6})
    cold = estimate(tiny, [ctx, Variant.make("llm_chunk", max_size=64)], embedder=embedder, store=store)
    chunks = len(store.get(Variant.make("fixed", size=48), tiny, embedder).chunks)
    (g,) = cold.generations
    assert (g.items, g.to_generate + g.sampled) == (chunks, chunks) and g.sampled >= 2 and not cold.cached
    assert cold.unestimated == 1 and "1 indexes chunked by an LLM" in cold.line() and "chunk-context v1" in cold.line()
    assert store.llm(ctx).stats.generated == g.sampled  # the sample only: llm_chunk generated nothing
    sweep(tiny, [ctx], ks=(1, 3), embedder=embedder, store=store, progress=False)
    assert store.llm(ctx).stats.generated == chunks  # the sweep made the rest, the sample served from the cache
    assert estimate(tiny, [ctx], embedder=embedder, store=store).cached
