"""The Ray engine: a sweep whose uncached texts are embedded on Ray (a local instance, and a cluster
of two nodes that share no cache folder) gives a local run's tables and cached vectors, bit for bit;
the driver writes every cache and never loads the model. Real model, real Ray (few CPUs, no dashboard)."""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
import ray
from conftest import save_cross_encoder
from ray.cluster_utils import Cluster
from test_notebook import write_dataset

from workbench.dataset import Dataset
from workbench.engine import RayEngine, get_engine
from workbench.models.cache import cache_file
from workbench.models.embed import Embedder
from workbench.retrieval.index import IndexStore
from workbench.sweep import SweepResult, sweep
from workbench.variant import Variant, parse_variant

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
    assert result.config["texts_embedded"] == expected.config["texts_embedded"] > 0
    assert vectors.keys() == expected_vectors.keys()
    assert vectors == expected_vectors


def test_bad_address_is_refused_quickly() -> None:
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


def test_sweep_on_a_local_ray_instance_equals_a_local_run(tiny: Dataset, tmp_path: Path) -> None:
    local = local_run(tiny, tmp_path / "local", batch_size=32)  # the default batch, which engine="ray" uses
    result = sweep(tiny, GRID, store=tmp_path / "ray", engine="ray", progress=False)
    assert not ray.is_initialized()  # the instance sweep started is stopped
    assert_same(result, cached_vectors(tmp_path / "ray", Embedder(cache_dir=tmp_path / "ray")), local)


@pytest.fixture(scope="module")
def cluster() -> Iterator[set[str]]:
    """A head that runs nothing and two nodes of one CPU each: every actor lands on one of the two.
    Yields the two nodes' ids."""
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
    nodes = [c.add_node(num_cpus=1) for _ in range(2)]
    ray.init(address=c.address, log_to_driver=False)
    c.wait_for_nodes()
    yield {n.node_id for n in nodes}
    ray.shutdown()
    c.shutdown()


def test_two_node_cluster_sharing_no_cache_equals_a_local_run(tiny: Dataset, tmp_path: Path, cluster: set[str]) -> None:
    local = local_run(tiny, tmp_path / "local", batch_size=BATCH)
    cache = tmp_path / "ray"
    embedder = Embedder(cache_dir=cache, batch_size=BATCH, progress=False, engine=RayEngine())
    result = sweep(tiny, GRID, embedder=embedder, store=cache, progress=False)
    assert "model" not in vars(embedder)  # the driver never loaded the model: the workers computed every vector
    (actors,) = embedder.engine._actors.values()
    where = ray.get([a.__ray_call__.remote(lambda w: (ray.get_runtime_context().get_node_id(), str(w.model.cache_dir)))
                     for a in actors])
    assert {node for node, _ in where} == cluster  # one actor per node, each with its own model
    assert not any(Path(folder).is_relative_to(cache) for _, folder in where)  # no worker opens the driver's cache
    assert_same(result, cached_vectors(cache, embedder), local)
    embedder.engine.close()
    assert ray.is_initialized()  # an engine leaves open a connection it did not make


def test_a_worker_whose_model_differs_is_refused(tmp_path: Path, cluster: set[str]) -> None:
    embedder = Embedder(cache_dir=tmp_path, progress=False, engine=RayEngine(workers=1))
    embedder.fingerprint = "0" * 16  # what no worker's model files give: as if the driver's differed
    with pytest.raises(ValueError, match="rebuilt from its spec has fingerprint .* the spec says '0{16}'"):
        embedder.encode(["a text no cache holds"])
    embedder.engine.close()


def cached_scores(cache: Path, fingerprint: str) -> dict[bytes, bytes]:
    with sqlite3.connect(cache_file(cache, "rerank", fingerprint)) as db:
        return dict(db.execute("SELECT key, v FROM score"))


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
