"""Preview mode with the real model and FAISS: pooled vectors, the token cache, marking, confirming."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import REPO

import workbench.retrieval.preview
from workbench.chunkers import register_function, unregister
from workbench.core.chunk import make_chunk
from workbench.dataset import Dataset
from workbench.evaluation import stats
from workbench.ingest import load_dataset
from workbench.models.embed import Embedder
from workbench.models.late import late_vectors
from workbench.results.combine import combine
from workbench.retrieval.preview import TokenCache, preview_index, preview_inputs, token_cache, token_embedder
from workbench.run.session import sweep, sweep_steps
from workbench.variant import Variant

VARIANTS = [
    Variant.make("fixed", size=64),
    Variant.make("semantic", breakpoint_percentile=90.0),
    Variant.make("recursive", size=128, retriever="hybrid"),
]


@pytest.fixture(scope="module")
def general() -> Dataset:
    """Three real documents (about 5,000 word pieces: several model windows) and 20 questions."""
    return load_dataset(REPO / "tests" / "data" / "chroma_general")


@pytest.fixture
def token_passes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the texts whose token embeddings are asked for (each call appends its count)."""
    calls: list[int] = []
    run = Embedder.token_embeddings

    def counting(self: Embedder, texts):
        calls.append(len(texts))
        return run(self, texts)

    monkeypatch.setattr(Embedder, "token_embeddings", counting)
    return calls


def unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


def test_pooled_vector_is_the_mean_of_the_cached_tokens_overlapping_the_chunk(general, embedder, tmp_path):
    cache = token_cache(general, embedder, tmp_path)
    doc = max(general.documents, key=lambda d: len(d.text))
    chunks = [make_chunk(doc, 1000, 1700), make_chunk(doc, len(doc.text) - 900, len(doc.text))]
    pooled = cache.vectors_of(chunks, embedder)

    enc = embedder.tokenizer(doc.text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
    first, stop = cache.rows[doc.doc_id]
    assert stop - first == len(enc["input_ids"])  # one cached vector per content token
    tokens = np.asarray(cache.vectors[first:stop], dtype=np.float64)
    for chunk, vec in zip(chunks, pooled, strict=True):
        picked = [i for i, (a, b) in enumerate(enc["offset_mapping"]) if a < chunk.end and b > chunk.start]
        assert len(picked) > 50
        assert np.abs(unit(tokens[picked].mean(axis=0)) - vec).max() < 1e-5
    # the cache holds the document-context pass of late chunking, rounded to float16
    assert np.abs(late_vectors(general.docs, chunks, embedder) - pooled).max() < 3e-3

    # a chunk longer than the model window: its real embedding sees its first tokens only, so does the preview
    long = make_chunk(doc, 500, 4500)
    seen = [i for i, (a, b) in enumerate(enc["offset_mapping"]) if a < long.end and b > long.start][:200]
    assert seen[-1] - seen[0] == 199 and enc["offset_mapping"][seen[-1]][1] < long.end
    assert np.abs(unit(tokens[seen].mean(axis=0)) - cache.vectors_of([long], embedder, window=200)[0]).max() < 1e-5
    assert np.abs(cache.vectors_of([long], embedder) - cache.vectors_of([long], embedder, window=200)).max() > 0.01


@pytest.mark.model
def test_the_token_pass_of_a_model_on_onnxruntime_runs_on_its_int8_export(general, tmp_path):
    """The cached token rows are the int8 model's (to float16 rounding), not the float model's, and
    the cache is named by the int8 model; pooled vectors keep the float model's direction. A torch
    embedder keeps its own pass. int8 scales activations per batch, and the pass runs one window
    per batch, so each document's rows are those of a pass over that document alone."""
    onnx = Embedder(cache_dir=tmp_path, progress=False, backend="onnx")
    twin = token_embedder(onnx)
    assert (twin.backend, twin.model_fingerprint, twin.cache_dir, twin.batch_size) == (
        "onnx-int8", onnx.model_fingerprint, tmp_path, 1)
    cache = token_cache(general, onnx, tmp_path)
    assert cache.path.name.endswith(f"{twin.fingerprint}-t2") and twin.fingerprint != onnx.fingerprint
    texts = {d: doc.text for d, doc in general.docs.items()}
    int8 = {d: tokens.vecs.copy() for d in texts for _, tokens in twin.token_embeddings({d: texts[d]})}
    float_ = {d: tokens.vecs.copy() for d, tokens in onnx.token_embeddings(texts)}
    for d in texts:
        rows = np.asarray(cache.tokens(d).vecs)
        assert np.allclose(rows, int8[d], rtol=2e-3, atol=2e-3)
        assert np.abs(rows - float_[d]).max() > 0.05
    doc = max(general.documents, key=lambda d: len(d.text))
    chunks = [make_chunk(doc, 1000, 1700), make_chunk(doc, 2500, 2800)]
    cosines = (late_vectors(general.docs, chunks, onnx) * cache.vectors_of(chunks, onnx)).sum(axis=1)
    assert (cosines > 0.98).all()  # quantized, yet the same direction
    torch = Embedder(cache_dir=tmp_path, progress=False, backend="torch")
    assert token_embedder(torch) is torch


@pytest.mark.model
def test_preview_sweep_is_marked_cached_and_never_stored_as_real(general, tmp_path, token_passes):
    kw = {"ks": (1, 5), "budgets": (), "store": tmp_path, "progress": False}
    first = sweep(general, VARIANTS, embedder=Embedder(cache_dir=tmp_path, progress=False), preview=True, **kw)
    assert token_passes == [len(general.documents)]  # one pass over the corpus for every variant
    assert first.preview is True and first.variants["preview"].tolist() == [True] * len(VARIANTS)
    assert not (tmp_path / "index").exists()  # nothing in the IndexStore
    assert len(list((tmp_path / "tokens").iterdir())) == 1

    token_passes.clear()
    again = Embedder(cache_dir=tmp_path, progress=False)
    second = sweep(general, VARIANTS, embedder=again, preview=True, **kw)
    assert token_passes == [] and again.stats.embedded == 0
    assert "model" not in again.__dict__  # the weights were never even loaded
    assert second.summary["mean"].tolist() == first.summary["mean"].tolist()

    real = sweep(general, VARIANTS, embedder=again, **kw)
    assert real.variants["built"].all()  # every real index built now: none was left by the previews
    assert not real.variants["preview"].any() and not real.preview and "preview" not in real.provenance.config()
    with pytest.raises(ValueError, match="preview"):
        combine([first, real])

    best = first.top(2, metric="recall", k=5)
    recall = first.summary.query("metric == 'recall' and k == 5").set_index("key")["mean"]
    assert len(best) == 2 and all(isinstance(v, Variant) for v in best)
    assert recall[best[0].key] >= recall[best[1].key] >= recall.drop([v.key for v in best]).max()
    tokens = first.summary.query("metric == 'context_tokens' and k == 5").set_index("key")["mean"]
    assert first.top(1, metric="context_tokens", k=5)[0].key == tokens.idxmin() != tokens.idxmax()  # a cost: lowest


def test_one_cache_for_the_grid_builds_what_a_fresh_cache_per_variant_builds(general, embedder, tmp_path):
    """A TokenCache keeps one chunk environment per document, and pools each list of texts once, across
    variants: the semantic variants share their sentence groups, so the second gets the first's vectors."""
    grid = [Variant.make("semantic", breakpoint_percentile=p) for p in (70.0, 95.0)] + [
        Variant.make("sentence", size=128, overlap=1), Variant.make("fixed", size=64)]
    shared = token_cache(general, embedder, tmp_path)
    for v in grid:
        built = preview_index(v, general, embedder, shared)
        alone = preview_index(v, general, embedder, TokenCache(shared.path))
        assert built.chunks == alone.chunks and len(built.chunks) > 10
        n = built.index.ntotal
        assert np.array_equal(built.index.reconstruct_n(0, n), alone.index.reconstruct_n(0, n))
        pd.testing.assert_frame_equal(built.returned_tokens, alone.returned_tokens)
        assert {k: x for k, x in built.cost.items() if k != "seconds"} == \
               {k: x for k, x in alone.cost.items() if k != "seconds"}
    assert len(shared._envs) == len(general.documents)
    semantic = [preview_index(v, general, embedder, shared).chunks for v in grid[:2]]
    assert semantic[0] != semantic[1]  # the percentile still moves the cuts


@pytest.mark.model
def test_bad_arguments_are_refused(tiny, tmp_path: Path):
    with pytest.raises(TypeError, match="preview"):
        sweep(tiny, VARIANTS, store=tmp_path, preview="yes")
    assert not (tmp_path / "tokens").exists()  # refused before the token pass
    result = sweep(tiny, VARIANTS[:1], ks=(5,), budgets=(), store=tmp_path, progress=False, preview=True,
                   embedder=Embedder(cache_dir=tmp_path, progress=False))
    with pytest.raises(ValueError, match="n must be"):
        result.top(0)
    with pytest.raises(ValueError, match="'nope' at k=5"):
        result.top(1, metric="nope")
    with pytest.raises(ValueError, match="'recall' at k=3"):
        result.top(1, k=3)


@pytest.mark.model
def test_preview_says_which_neighbours_its_questions_cannot_order(general, tmp_path):
    """Two near-identical chunkings are named as not separable, a clearly worse one is ordered
    below them, and only the two are tied with the top (what the CLI confirms); the same seed
    gives the same table, another seed other intervals."""
    near, same, poor = (Variant.make("fixed", size=256), Variant.make("fixed", size=250), Variant.make("fixed", size=8))
    result = sweep(general, [poor, near, same], ks=(5,), budgets=(), store=tmp_path, progress=False, preview=True,
                   embedder=Embedder(cache_dir=tmp_path, progress=False))
    ties = result.ties()
    recall = result.summary.query("metric == 'recall' and k == 5").set_index("key")["mean"]
    assert ties["key"].tolist() == recall.sort_values(ascending=False, kind="stable").index.tolist()
    assert ties["key"].iloc[-1] == poor.key and recall[poor.key] < recall.drop(poor.key).min() - 0.2
    assert ties["apart_from_next"].tolist() == [False, True, False]  # the last has no next
    assert ties["next_low"].iloc[0] <= 0 <= ties["next_high"].iloc[0] and ties["next_low"].iloc[1] > 0
    assert set(ties.loc[ties["tied_with_top"], "key"]) == {near.key, same.key}
    assert stats.cannot_order(ties) == [ties["variant"].iloc[:2].tolist()]
    pd.testing.assert_frame_equal(result.ties(), ties)
    other = result.ties(seed=1)
    assert other["key"].tolist() == ties["key"].tolist() and not other["top_high"].equals(ties["top_high"])


@pytest.mark.model
def test_indexes_built_while_the_model_runs_are_those_built_after_it(general, tmp_path):
    """preview_inputs chunks and pools variants on this thread while the token pass and the question
    pass run on another: what it hands over must be what the one-thread path builds, bit for bit, and
    the questions must count in the embedder's stats, never in an index's."""
    grid = [Variant.make("fixed", size=64), Variant.make("sentence", size=128, overlap=1),
            Variant.make("semantic", breakpoint_percentile=90.0),
            Variant.make("recursive", size=128, retriever="hybrid")]
    embedder = Embedder(cache_dir=tmp_path / "a", progress=False)
    qvecs, cache, built, meanwhile = preview_inputs(general, grid, embedder, tmp_path / "a",
                                                    meanwhile=threading.current_thread)
    assert meanwhile is threading.current_thread()  # the caller's own work ran on its own thread
    assert cache.computed and built and set(built) <= {v.chunking_key for v in grid}  # the first ones, at least
    assert embedder.stats.embedded == len({q.question for q in general.questions})

    alone = Embedder(cache_dir=tmp_path / "b", progress=False)
    assert np.array_equal(qvecs, alone.encode([q.question for q in general.questions]))
    after = token_cache(general, alone, tmp_path / "b")
    for v in grid:
        if v.chunking_key not in built:
            continue
        got, want = built[v.chunking_key], preview_index(v, general, alone, after)
        assert got.chunks == want.chunks and len(got.chunks) > 10
        n = want.index.ntotal
        assert np.array_equal(got.index.reconstruct_n(0, n), want.index.reconstruct_n(0, n))
        pd.testing.assert_frame_equal(got.returned_tokens, want.returned_tokens)
        assert (got.lexical is None) == (want.lexical is None)
        assert {k: x for k, x in got.cost.items() if k != "seconds"} == \
               {k: x for k, x in want.cost.items() if k != "seconds"}
        assert got.cost["texts_embedded"] == 0


@pytest.mark.model
def test_a_variant_that_fails_while_the_model_runs_fails_in_its_turn(general, tmp_path):
    """A variant whose chunking fails during the passes is not the sweep's first error: the
    variants before it are still measured and yielded, then it fails, named."""
    calls: list[str] = []
    register_function("nothing_here", lambda text: calls.append(text) or [])
    grid = [Variant.make("fixed", size=64), Variant.make("nothing_here")]
    steps = sweep_steps(general, grid, embedder=Embedder(cache_dir=tmp_path, progress=False), store=tmp_path,
                        progress=False, preview=True, ks=(5,), budgets=())
    try:
        first = next(steps)
        assert first.variants["chunks"].iloc[0] > 10
        with pytest.raises(ValueError, match="produced no chunks") as e:
            next(steps)
        assert "while sweeping variant nothing_here()" in e.value.__notes__[0]
        assert len(calls) <= 2 * len(general.documents)  # at most once ahead, then in its turn
    finally:
        unregister("nothing_here")


@pytest.mark.model  # the token pass may load the model on its thread before the interrupt reaches it
def test_an_interrupted_preview_stops_its_token_pass(general, tmp_path, monkeypatch):
    """Ctrl-C while the token pass runs on the other thread reaches the caller at once, and the pass
    stops at its next document instead of running on unseen: no token cache is published."""
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(workbench.retrieval.preview, "preview_chunks", interrupted)
    embedder = Embedder(cache_dir=tmp_path, progress=False)
    with pytest.raises(KeyboardInterrupt):
        preview_inputs(general, VARIANTS, embedder, tmp_path)
    for thread in threading.enumerate():  # the passes' thread ends by itself
        if thread.name.startswith("workbench-model-passes"):
            thread.join(timeout=120)
    tokens = tmp_path / "tokens"
    assert tokens.exists() and list(tokens.iterdir()) == []  # begun, then stopped and cleaned away


@pytest.mark.model
def test_a_preview_holds_a_bounded_number_of_chunks_ahead(general, tmp_path, monkeypatch):
    """What is built ahead of its turn is bounded (PREFETCH_CHUNKS): past it, the variants wait for
    their turn, as they did before the passes overlapped any."""
    monkeypatch.setattr(workbench.retrieval.preview, "PREFETCH_CHUNKS", 1)
    embedder = Embedder(cache_dir=tmp_path, progress=False)
    _, _, built, _ = preview_inputs(general, VARIANTS, embedder, tmp_path)
    assert list(built) == [VARIANTS[0].key]


@pytest.mark.model
def test_the_retrievers_of_a_chunking_share_one_preview_index_and_score_as_alone(general, tmp_path, monkeypatch):
    """A grid crossed with retrievers chunks and pools each chunking once (a header is another chunking:
    it changes what BM25 reads), and every variant scores what its preview alone scores."""
    grid = [*(Variant.make("fixed", size=64, retriever=r) for r in ("dense", "bm25", "hybrid")),
            *(Variant.make("recursive", size=128, contextual_header=h, retriever="hybrid") for h in (False, True))]
    chunked: list[str] = []
    run = workbench.retrieval.preview.preview_chunks

    def counting(variant, *args):
        chunked.append(variant.chunking_key)
        return run(variant, *args)

    monkeypatch.setattr(workbench.retrieval.preview, "preview_chunks", counting)
    together = sweep(general, grid, store=tmp_path, progress=False, preview=True)
    assert sorted(chunked) == sorted({v.chunking_key for v in grid})  # 3 chunkings, each chunked once
    alone = combine([sweep(general, [v], store=tmp_path, progress=False, preview=True) for v in grid])
    at = ["key", "metric", "k", "budget"]
    pd.testing.assert_series_equal(together.summary.set_index(at)["mean"].sort_index(),
                                   alone.summary.set_index(at)["mean"].sort_index())
    assert together.summary.query("metric == 'recall' and k == 5")["mean"].nunique() > 1  # the retrievers differ
