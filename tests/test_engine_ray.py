"""The Ray engine: a sweep whose uncached texts are embedded on Ray (a local instance here, a cluster
of two nodes in test_engine_ray_cluster.py) gives a local run's tables and cached vectors, bit for bit;
the driver writes every cache and never loads the model; so do LLM generations made on Ray (the
bundled SmolLM2, a few tokens each), and chunks cut on the workers (a corpus above the engine's
chunk_chars): entries, tables and hits are a local run's. Real models, real Ray (few CPUs, no dashboard)."""

from __future__ import annotations

import json
import sqlite3
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pandas as pd
import pytest
from conftest import save_cross_encoder, write_dataset

from workbench.dataset import Dataset
from workbench.models.cache import cache_file
from workbench.models.embed import Embedder
from workbench.models.llm import LLM, Prompt, Stopped
from workbench.results.result import SweepResult
from workbench.retrieval.index import IndexStore
from workbench.run.engine import CHUNK_CHARS, RayEngine, get_engine
from workbench.run.session import sweep
from workbench.variant import Variant, parse_variant

# Ray is imported by the tests that use it: collecting this file (every run's, the fast tier's too) imports none.
pytestmark = pytest.mark.ray  # and `model` where a test embeds, reranks or generates
GRID = [parse_variant(v) for v in ("fixed:size=16", "fixed:size=48,overlap=16", "recursive:size=64+hybrid")]
BATCH = 1  # texts per model call: an engine batch is 8 calls, 8 texts, so a variant makes several


def cached_vectors(cache: Path, embedder: Embedder) -> dict[bytes, bytes]:
    """Every row of the embedding cache, as stored: equal dicts are equal to the last bit."""
    with sqlite3.connect(cache_file(cache, "embeddings", embedder.fingerprint)) as db:
        return dict(db.execute("SELECT key, v FROM vec"))


def local_run(dataset: Dataset, cache: Path, batch_size: int) -> tuple[SweepResult, dict[bytes, bytes]]:
    embedder = Embedder(cache_dir=cache, batch_size=batch_size, progress=False)
    return sweep(dataset, GRID, embedder=embedder, store=cache, progress=False), cached_vectors(cache, embedder)


def assert_same(result: SweepResult, vectors: dict[bytes, bytes], local: tuple[SweepResult, dict]) -> None:
    expected, expected_vectors = local
    for table in ("per_question", "summary", "hits"):
        pd.testing.assert_frame_equal(getattr(result, table), getattr(expected, table), check_exact=True)
    assert result.provenance.computed.texts_embedded == expected.provenance.computed.texts_embedded > 0
    assert vectors.keys() == expected_vectors.keys()
    assert vectors == expected_vectors


def test_bad_address_is_refused_quickly() -> None:
    import ray

    with pytest.raises(ConnectionError, match="no Ray cluster answers at address '127.0.0.1:1'"):
        get_engine("ray", "127.0.0.1:1")
    with pytest.raises(ValueError, match='address must be "auto", "HOST:PORT"'):
        get_engine("ray", "headnode")
    with pytest.raises(ValueError, match="address and workers are for engine='ray'"):
        get_engine("local", "127.0.0.1:6379")
    assert not ray.is_initialized()


def test_cli_names_the_option(tiny: Dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:

    from workbench.cli import main

    data = write_dataset(tiny, tmp_path / "data")
    base = ["sweep", "--data", str(data), "--out", str(tmp_path / "out"), "--cache", str(tmp_path / "c")]
    with pytest.raises(SystemExit, match="error: --address: no Ray cluster answers at address '127.0.0.1:1'"):
        main([*base, "--engine", "ray", "--address", "127.0.0.1:1"])
    with pytest.raises(SystemExit, match="error: --address: address and workers are for engine='ray'"):
        main([*base, "--address", "127.0.0.1:1"])
    monkeypatch.setitem(sys.modules, "ray", None)  # as if the extra were not installed
    with pytest.raises(SystemExit, match=r'error: --engine: engine=.ray. needs Ray, an optional extra: pip install '
                                         r'"workbench\[ray\]"'):
        main([*base, "--engine", "ray"])
    assert not (tmp_path / "out").exists()


@pytest.mark.model
def test_sweep_on_a_local_ray_instance_equals_a_local_run(tiny: Dataset, tmp_path: Path) -> None:
    import ray

    local = local_run(tiny, tmp_path / "local", batch_size=32)  # the default batch, which engine="ray" uses
    result = sweep(tiny, GRID, store=tmp_path / "ray", engine="ray", progress=False)
    assert not ray.is_initialized()  # the instance sweep started is stopped
    assert_same(result, cached_vectors(tmp_path / "ray", Embedder(cache_dir=tmp_path / "ray")), local)


CHUNK_GRID = [parse_variant(v) for v in ("recursive:size=24,tokenizer=model+header", "sentence:size=20",
                                         "parent_child:child_size=12,parent_size=40+hybrid", "semantic")]


class Recording(RayEngine):
    """A RayEngine that records what it chunked and each set of actors it made: a model loaded on every worker."""

    def __init__(self, chunk_chars: int = CHUNK_CHARS) -> None:
        super().__init__(chunk_chars=chunk_chars)
        self.chunked: list[tuple[str, int]] = []  # (what, batches)
        self.loads: list[str | None] = []  # the class of each set of actors' model (None: actors without one)

    def apply(self, fn: Callable, batches: list, what: str) -> Iterator:
        self.chunked.append((what, len(batches)))
        return super().apply(fn, batches, what)

    def _pool(self, key: str) -> object:
        if key not in self._pools:
            spec = json.loads(key)
            self.loads.append(spec and spec["type"].rpartition(".")[2])
        return super()._pool(key)


def chunk_tables(store: Path) -> dict[str, pd.DataFrame]:
    """Every index entry's chunk table (spans, embed_text, heading, parents, token counts), by entry."""
    return {f.parent.name: pd.read_parquet(f) for f in sorted((store / "index").glob("*/chunks.parquet"))}


def assert_chunked_on_workers(tiny: Dataset, tmp_path: Path, local: tuple[SweepResult, dict]) -> None:
    """A sweep of CHUNK_GRID whose chunking runs on the workers (but semantic's, which embeds in the driver)
    gives the local run's chunk tables, tables and hits, bit for bit."""
    with Recording(chunk_chars=1) as engine:  # every corpus on the workers, one document a batch
        result = sweep(tiny, CHUNK_GRID, store=tmp_path / "ray", engine=engine, progress=False)
    assert engine.chunked == [(f"chunking {v.chunking.label}", len(tiny.documents)) for v in CHUNK_GRID[:3]]
    expected, expected_chunks = local
    chunks = chunk_tables(tmp_path / "ray")
    assert len(chunks) == len(CHUNK_GRID) and chunks.keys() == expected_chunks.keys()
    for entry, table in chunks.items():
        pd.testing.assert_frame_equal(table, expected_chunks[entry], check_exact=True)
    for table in ("per_question", "summary", "hits"):
        pd.testing.assert_frame_equal(getattr(result, table), getattr(expected, table), check_exact=True)


def chunk_locally(tiny: Dataset, store: Path) -> tuple[SweepResult, dict]:
    """CHUNK_GRID swept without Ray: what chunking on the workers must give."""
    return sweep(tiny, CHUNK_GRID, store=store, progress=False), chunk_tables(store)


@pytest.fixture(scope="module")
def chunked_locally(tiny: Dataset, tmp_path_factory: pytest.TempPathFactory) -> tuple[SweepResult, dict]:
    return chunk_locally(tiny, tmp_path_factory.mktemp("chunk-local"))


@pytest.mark.model
def test_chunking_on_a_local_ray_instance_equals_a_local_run(tiny: Dataset, tmp_path: Path,
                                                             chunked_locally: tuple[SweepResult, dict]) -> None:
    import ray

    assert_chunked_on_workers(tiny, tmp_path, chunked_locally)
    assert not ray.is_initialized()


def cached_scores(cache: Path, fingerprint: str) -> dict[bytes, bytes]:
    with sqlite3.connect(cache_file(cache, "rerank", fingerprint)) as db:
        return dict(db.execute("SELECT key, v FROM score"))


@pytest.mark.model
def test_reranking_on_ray_equals_a_local_run(tiny: Dataset, tmp_path: Path) -> None:
    """`+rerank` by a cross-encoder (random weights, built by the test: none ships on PyPI) with
    engine="ray": the pairs are scored by the workers in the batches a local run makes, so the
    reranked tables and the cached scores are the local ones, bit for bit."""
    folder = save_cross_encoder(tmp_path / "ce", seed=3)
    grid = [Variant.make("fixed", size=16, retrieval=["hybrid", ("rerank", {"model": str(folder), "n": 6})])]
    local = sweep(tiny, grid, store=tmp_path / "local", progress=False)
    given = IndexStore(tmp_path / "ray")
    with RayEngine() as engine:
        result = sweep(tiny, grid, store=given, engine=engine, progress=False)
        assert any("CrossEncoderReranker" in spec for spec in engine._actors)  # the workers scored the pairs
    assert given.rerankers.engine is None  # the store given is left as it was
    for table in ("per_question", "summary", "hits"):
        pd.testing.assert_frame_equal(getattr(result, table), getattr(local, table), check_exact=True)
    reranker = IndexStore(tmp_path / "local").rerankers.get(str(folder))
    scores = cached_scores(tmp_path / "ray", reranker.fingerprint)
    assert len(scores) > len(tiny.questions) and scores == cached_scores(tmp_path / "local", reranker.fingerprint)


SUMMARY = Prompt("ray-summary", 1, "Document: {document}\n\nIn a few words, what does it say about {topic}?")
TOPICS = [{"document": d, "topic": t} for d in ("Refunds take five days. Prices include VAT.",
                                                 "The Voyager probes were launched in 1977 and carry a record.")
          for t in ("money", "time", "space")]


@pytest.mark.model
def test_generation_on_ray_equals_a_local_run(llm_cache: Callable[[str], Path], tmp_path: Path) -> None:
    """Batches of 2: without `shared` each batch is a job, with it each document's two batches are one
    job whose worker reads the document's prefix itself; either way the texts are a local run's."""
    with RayEngine() as engine:
        for shared in (None, "document"):
            local = LLM(cache_dir=llm_cache("gen-local"), batch_size=2, progress=False)
            expected = local.generate(SUMMARY, TOPICS, max_tokens=8, shared=shared)
            cache = tmp_path / f"ray-{shared}"
            llm = LLM(cache_dir=cache, batch_size=2, progress=False, engine=engine)
            made = llm.generate(SUMMARY, TOPICS, max_tokens=8, shared=shared)
            assert [(g.text, g.prompt_tokens, g.generated_tokens) for g in made] == \
                [(g.text, g.prompt_tokens, g.generated_tokens) for g in expected]
            assert len({g.text for g in made}) > 1 and llm.stats.generated == len(TOPICS)
            assert "_local" not in vars(llm)  # the driver never loaded the model: the workers generated
            again = LLM(cache_dir=cache, batch_size=2, progress=False, engine=engine)
            assert [g.text for g in again.generate(SUMMARY, TOPICS, max_tokens=8, shared=shared)] == \
                [g.text for g in made] and (again.stats.generated, again.stats.cached) == (0, len(TOPICS))
        assert any("workbench.models.llm.LLM" in spec for spec in engine._actors)
        stopping = LLM(cache_dir=tmp_path / "stop", batch_size=2, progress=False, engine=engine)
        asked: list[int] = []
        with pytest.raises(Stopped, match="stopped after 2 of 6 generations"):  # asked before each batch's result
            stopping.generate(SUMMARY, TOPICS, max_tokens=8, stop=lambda: asked.append(1) or len(asked) > 1)
        assert sum(stopping.cached(SUMMARY, TOPICS, 8)) == stopping.stats.generated == 2


def cached_generations(cache: Path) -> dict[bytes, tuple[str, int, int]]:
    """The +context generations of a cache folder: text and token counts (their seconds differ run to run)."""
    (file,) = (cache / "generations").glob("*.sqlite")
    with sqlite3.connect(file) as db:
        rows = {k: json.loads(v) for k, v in db.execute("SELECT key, v FROM json")}
    return {k: (r["text"], r["prompt_tokens"], r["generated_tokens"]) for k, r in rows.items()}


@pytest.mark.model
def test_a_context_sweep_on_ray_equals_a_local_run(tiny: Dataset, llm_cache: Callable[[str], Path],
                                                   tmp_path: Path) -> None:
    """+context with engine="ray": the chunks' contexts are generated by the workers (each document's
    chunks one job, its prefix read there), and the tables and the cached contexts are a local run's.
    The workers load the LLM once and then the embedder once, not each again for every variant."""
    grid = [Variant.make("fixed", size=48, contextual={"max_tokens": 8}, retriever="hybrid"),
            Variant.make("fixed", size=64, contextual={"max_tokens": 8})]
    local_cache = llm_cache("context-local")
    local = sweep(tiny, grid, store=local_cache, progress=False)
    with Recording() as engine:
        result = sweep(tiny, grid, store=tmp_path / "ray", engine=engine, progress=False)
    assert engine.loads == ["LLM", "Embedder"]  # every variant's contexts first, then the questions and chunks
    assert not (tmp_path / "ray" / "models").exists()  # the driver never converted, so never loaded, the model
    for table in ("per_question", "summary", "hits"):
        pd.testing.assert_frame_equal(getattr(result, table), getattr(local, table), check_exact=True)
    generations = cached_generations(tmp_path / "ray")
    assert len(generations) > len(tiny.docs) and generations == cached_generations(local_cache)
