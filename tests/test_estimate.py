"""The estimate a cold sweep prints first: what it will embed (counted, not guessed) and the time at a measured rate."""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from workbench.chunkers import ChunkEnv
from workbench.chunkers.llm import MODEL, LLMChunkWarning
from workbench.core.chunk import Chunk
from workbench.dataset import Dataset, Document
from workbench.models.embed import Embedder
from workbench.models.onnx import bf16_units
from workbench.retrieval import index
from workbench.retrieval.index import IndexStore
from workbench.retrieval.preview import token_embedder
from workbench.run.estimate import SUGGEST_BACKEND_S, Estimate, window_lengths
from workbench.run.session import Session, sweep
from workbench.variant import Variant, parse_variant


def estimated(dataset: Dataset, variants: list[Variant], *, embedder: Embedder, store: Path,
              **changes: Any) -> Estimate:
    """What a session of the one model says of sweeping `variants`, as the CLI prints it."""
    return Session(dataset, cache=store, embedder=embedder, **changes).estimate(variants)[embedder.name]


def test_padding_is_counted_as_the_model_runs_its_passes() -> None:
    torch = Embedder(batch_size=2, backend="torch", cache_dir=None)
    assert torch.padded_word_pieces([3, 1, 2, 5]) == 2 * 2 + 2 * 5  # sorted, each batch as long as its longest
    assert torch.padded_word_pieces([]) == 0
    onnx = Embedder(batch_size=32, backend="onnx", cache_dir=None, threads=2)  # passes of PASS_TOKENS at most
    assert onnx.padded_word_pieces([10] * 4 + [200]) == 4 * 10 + 200  # not five rows padded to 200
    assert Embedder(batch_size=32, backend="onnx", cache_dir=None, threads=1).padded_word_pieces([10] * 4 + [200]) \
        == 5 * 200  # one worker: passes of a batch


@pytest.mark.model
def test_no_backend_is_suggested_to_a_torch_embedder(tiny: Dataset, tmp_path: Path) -> None:
    torch = Embedder(cache_dir=tmp_path, backend="torch", progress=False)  # its own cache: something to embed
    est = estimated(tiny, [parse_variant("fixed:size=24")], embedder=torch, store=tmp_path)
    assert est.word_pieces > 0 and est.faster_backend == ""


@pytest.mark.model
def test_a_cold_grid_counts_the_texts_the_sweep_then_embeds(tiny: Dataset, tmp_path: Path) -> None:
    embedder = Embedder(cache_dir=tmp_path, progress=False)
    grid = [parse_variant(v) for v in ("fixed:size=24", "fixed:size=24+bm25", "recursive:size=32+header")]
    est = estimated(tiny, grid, ks=(1, 3), embedder=embedder, store=tmp_path)
    assert (est.variants, est.builds, est.token_passes, est.approximate) == (3, 2, 0, False)  # bm25 shares an entry
    assert embedder.stats.embedded == est.sampled > 0  # the rate is measured on real texts, which are kept
    assert est.rate > 0 and est.embed_seconds == est.word_pieces / est.rate > 0
    assert est.chunk_seconds == 0 and est.seconds == est.embed_seconds  # the builds take the chunks it cut
    result = sweep(tiny, grid, ks=(1, 3), embedder=embedder, store=tmp_path, progress=False)
    assert result.provenance.computed.texts_embedded == est.texts  # what is left to embed is what the sweep embeds
    assert f"{est.texts:,} texts to embed" in est.line() and f"measured on {est.sampled - 1} of them" in est.line()
    # a minute of embedding or more names the bfloat16 backend where this CPU has the units for it
    assert est.faster_backend == ("openvino-bf16" if bf16_units() else "")
    assert "bfloat16" not in est.line()  # seconds: nothing to suggest
    slow = dataclasses.replace(est, rate=est.word_pieces / SUGGEST_BACKEND_S)
    assert ("--backend openvino-bf16" in slow.line()) == bf16_units()
    for ks in ((1, 3), (1, 2)):  # scores cached, or only the index entries and vectors
        fresh = Embedder(cache_dir=tmp_path, progress=False)
        warm = estimated(tiny, grid, ks=ks, embedder=fresh, store=tmp_path)
        assert warm.cached and warm.line() == "estimate: all cached, nothing to embed"
        assert "model" not in vars(fresh)  # a warm grid never loads the model to say so


@pytest.mark.model
def test_the_chunks_an_estimate_cut_are_built_without_chunking_again(tiny: Dataset, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    grid = [parse_variant(v) for v in ("fixed:size=24", "recursive:size=32+header",
                                       "semantic:breakpoint_percentile=90")]
    cut: list[str] = []
    chunk = Variant.chunk
    monkeypatch.setattr(Variant, "chunk", lambda self, *a, **kw: cut.append(self.strategy) or chunk(self, *a, **kw))

    def swept(cache: Path) -> tuple[Estimate, Session]:
        session = Session(tiny, cache=cache, embedder=Embedder(cache_dir=cache, progress=False), ks=(1, 3))
        est = session.estimate(grid)[session.embedder.name]
        cut.clear()
        session.sweep(grid)
        return est, session

    est, session = swept(tmp_path / "kept")
    assert cut == ["semantic"]  # its cuts follow vectors the estimate had placeholders for: cut again
    assert 0 < est.chunk_seconds  # semantic's chunking alone, which the sweep takes again
    monkeypatch.setattr(index, "KEPT_CHARS", 0)  # nothing kept: every build chunks
    again, fresh = swept(tmp_path / "fresh")
    assert sorted(cut) == sorted(v.strategy for v in grid) and again.chunk_seconds > 0
    for v in grid:  # the same chunks, every field, whether kept or cut by the build
        assert session.store.stored_chunks(v, tiny, session.embedder) == fresh.store.stored_chunks(
            v, tiny, fresh.embedder)


@pytest.mark.model
def test_semantic_late_and_preview_count_their_model_passes(tiny: Dataset, tmp_path: Path) -> None:
    embedder = Embedder(cache_dir=tmp_path, progress=False)
    grid = [parse_variant("semantic:breakpoint_percentile=50"), parse_variant("fixed:size=24+late")]
    est = estimated(tiny, grid, embedder=embedder, store=tmp_path)
    assert est.approximate and "about" in est.line()  # semantic's cuts wait on vectors: counted from placeholders
    assert (est.token_passes, est.token_pass_documents) == (1, len(tiny.documents))  # +late reads each document
    embedded = sweep(tiny, grid, embedder=embedder, store=tmp_path, progress=False).provenance.computed.texts_embedded
    assert abs(embedded - est.texts) <= embedded // 4

    preview = estimated(tiny, grid, preview=True, embedder=embedder, store=tmp_path)
    assert (preview.texts, preview.builds, preview.token_passes) == (0, 0, 1)  # the questions are cached
    assert preview.rate > 0 and "token pass" in preview.measured and "not kept" in preview.measured
    result = sweep(tiny, grid, preview=True, embedder=embedder, store=tmp_path, progress=False)
    assert result.provenance.computed.token_pass_documents == len(tiny.documents)
    assert estimated(tiny, grid, preview=True, embedder=embedder, store=tmp_path).cached



@pytest.mark.model
def test_a_preview_times_its_token_pass_on_the_model_that_runs_it(tiny: Dataset, tmp_path: Path) -> None:
    """A cold preview embeds the questions on the model and runs its token pass on the int8 export:
    two rates, each measured on its own model, and the pass's word pieces at the pass's batch (one
    window each: no padding)."""
    embedder = Embedder(cache_dir=tmp_path, progress=False)
    grid = [parse_variant("fixed:size=24"), parse_variant("recursive:size=32")]
    est = estimated(tiny, grid, preview=True, embedder=embedder, store=tmp_path)
    assert est.texts > 0 and est.token_passes == 1 and est.rate > 0 and est.pass_rate > 0
    twin = token_embedder(embedder)
    windows = [n for d in tiny.documents for n in window_lengths(twin, [d.text])]
    assert est.pass_word_pieces == sum(windows) < est.word_pieces
    assert est.embed_seconds == pytest.approx((est.word_pieces - sum(windows)) / est.rate
                                              + sum(windows) / est.pass_rate)
    assert "for the token pass" in est.line() and "the token pass's over the start of" in est.measured
    real = estimated(tiny, [parse_variant("fixed:size=24+late")], embedder=embedder, store=tmp_path)
    assert real.token_passes == 1 and real.pass_rate is None  # +late's pass runs on the model itself

def test_a_bad_grid_is_refused_before_any_work(tiny: Dataset, tmp_path: Path) -> None:
    embedder = Embedder(cache_dir=tmp_path, progress=False)
    with pytest.raises(ValueError, match="duplicate variants in the grid"):
        estimated(tiny, [parse_variant("fixed:size=8"), parse_variant("fixed:size=8,overlap=0")], embedder=embedder,
                 store=tmp_path)
    assert embedder.stats.embedded == 0 and "model" not in vars(embedder)


def test_context_generations_are_estimated_and_unknown_ones_are_not_chunked(
        tiny: Dataset, llm_cache: Callable[[str], Path], embedder: Embedder) -> None:
    """+context: the contexts its build will write, counted on its chunks by the store's LLM (a
    sample generated and kept); a chunker that names an LLM but says nothing of what it will ask is
    named, not run (it would generate everything)."""
    from workbench.chunkers.registry import strategy

    @strategy("asks_unsaid", "a chunker asking an LLM it does not describe", {"model": MODEL}, models=("model",))
    def asks_unsaid(doc: Document, env: ChunkEnv, *, model: str) -> list[Chunk]:
        raise AssertionError("chunked by the estimate")  # chunking it would generate

    store = IndexStore(llm_cache("estimate-context"))
    ctx = Variant.make("fixed", size=48, contextual={"max_tokens": 6})
    cold = estimated(tiny, [ctx, Variant.make("asks_unsaid")], embedder=embedder, store=store)
    chunks = len(store.get(Variant.make("fixed", size=48), tiny, embedder).chunks)
    (g,) = cold.generations
    assert (g.items, g.to_generate + g.sampled) == (chunks, chunks) and g.sampled >= 2 and not cold.cached
    assert cold.unestimated == 1 and "(1 indexes not estimated)" in cold.line()
    assert "chunk-context v1" in cold.line()
    assert store.llm(ctx).stats.generated == g.sampled  # the sample only
    sweep(tiny, [ctx], ks=(1, 3), embedder=embedder, store=store, progress=False)
    assert store.llm(ctx).stats.generated == chunks  # the sweep made the rest, the sample served from the cache
    assert estimated(tiny, [ctx], embedder=embedder, store=store).cached


def test_llm_chunkers_are_estimated_on_what_they_will_ask(
        tiny: Dataset, llm_cache: Callable[[str], Path], embedder: Embedder) -> None:
    """propositions: exactly the passages its build asks about; llm_chunk: each document's first
    window exactly, the windows after it between the bounds its line gives."""

    store = IndexStore(llm_cache("estimate-llm-chunkers"))
    props = Variant.make("propositions", passage_size=48, max_tokens=3)
    windows = Variant.make("llm_chunk", window=4, max_tokens=3, max_size=64)
    cold = estimated(tiny, [props, windows], embedder=embedder, store=store)
    assert cold.unestimated == 0 and "not estimated" not in cold.line()
    p, w = cold.generations
    assert (p.prompt, w.prompt) == ("propositions v1", "llm-chunk v1") and not (p.cached or w.cached)
    for variant, g in ((props, p), (windows, w)):  # what each build then asks its LLM
        env = ChunkEnv(llm_cache_dir=store.root)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LLMChunkWarning)  # 3 tokens: some answers are unusable, counted
            variant.chunk(tiny, env)
        stats = env.llm("llm").stats
        asked = stats.generated + stats.cached
        if g is p:  # every passage known before: the estimate's sample is cached, the rest generated now
            assert asked == p.items and stats.generated == p.to_generate and p.later == (0, 0)
        else:  # the first window of each document, then as many as the answers lead to, within the bounds
            assert w.items == len(tiny.documents) and stats.cached == w.sampled == w.items
            assert w.items + w.later[0] <= asked <= w.items + w.later[1] and w.later[1] > w.later[0]
            assert f"then {w.later[0]:,} to {w.later[1]:,} more whose prompts wait on the answers" in cold.line()


def test_variants_that_generate_nothing_cost_no_generation_estimate(tiny: Dataset, tmp_path: Path) -> None:

    store = IndexStore(tmp_path)
    fresh = Embedder(cache_dir=tmp_path, progress=False)
    plain = [Variant.make("fixed", size=24), Variant.make("recursive", size=32, contextual_header=True)]
    assert Session(tiny, cache=store, embedder=fresh).generation_estimates(plain) == ((), 0)
    assert "tokenizer" not in vars(fresh) and "model" not in vars(fresh)  # not even the chunks were looked at


def test_a_rerank_stage_is_estimated_on_its_measured_rate_and_counts_nothing_once_scored(
        tiny: Dataset, tmp_path: Path, cross_encoder: Path) -> None:
    store = IndexStore(tmp_path)
    session = Session(tiny, cache=store, embedder=Embedder(cache_dir=tmp_path, progress=False))
    reranked = [parse_variant(f"fixed:size=24+rerank:model={cross_encoder},n={n}") for n in (3, 5)]
    (est,) = session.estimate(reranked).values()
    (rerank,) = est.reranks
    assert (rerank.variants, rerank.pairs) == (2, len(tiny.questions) * (3 + 5))
    assert rerank.rate > 0 and f"at most {rerank.pairs:,} pairs for 2 variants" in est.line()
    session.sweep(reranked)
    (after,) = session.estimate(reranked).values()
    assert after.cached and after.reranks == ()
