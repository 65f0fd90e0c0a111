"""The Ray engine on a cluster of two nodes that share no cache folder: a sweep's vectors, a worker
whose model differs, chunks cut on the workers, a strategy that embeds unsaid. Apart from
test_engine_ray.py, whose tests check that a sweep stops the Ray instance it started: the cluster's
connection stays open as long as its module runs, so in a random order those tests must not run
while it does."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from test_engine_ray import (
    BATCH,
    GRID,
    Recording,
    assert_chunked_on_workers,
    assert_same,
    cached_vectors,
    chunk_locally,
    local_run,
)

from workbench.dataset import Dataset
from workbench.models.embed import Embedder
from workbench.results.result import SweepResult
from workbench.run.engine import RayEngine
from workbench.run.session import sweep
from workbench.variant import Variant

pytestmark = [pytest.mark.ray, pytest.mark.model]


@pytest.fixture(scope="module")
def chunked_locally(tiny: Dataset, tmp_path_factory: pytest.TempPathFactory) -> tuple[SweepResult, dict]:
    return chunk_locally(tiny, tmp_path_factory.mktemp("chunk-local"))


@pytest.fixture(scope="module")
def cluster() -> Iterator[set[str]]:
    """A head that runs nothing and two nodes of one CPU each: every actor lands on one of the two.
    Yields the two nodes' ids."""
    import ray
    from ray.cluster_utils import Cluster

    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
    nodes = [c.add_node(num_cpus=1) for _ in range(2)]
    ray.init(address=c.address, log_to_driver=False)
    c.wait_for_nodes()
    yield {n.node_id for n in nodes}
    ray.shutdown()
    c.shutdown()


def test_two_node_cluster_sharing_no_cache_equals_a_local_run(tiny: Dataset, tmp_path: Path, cluster: set[str]) -> None:
    import ray

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


def test_chunking_on_a_two_node_cluster_equals_a_local_run(tiny: Dataset, tmp_path: Path, cluster: set[str],
                                                           chunked_locally: tuple[SweepResult, dict]) -> None:
    assert_chunked_on_workers(tiny, tmp_path, chunked_locally)


def test_a_strategy_that_embeds_unsaid_is_refused_on_a_worker(tiny: Dataset, tmp_path: Path,
                                                              cluster: set[str]) -> None:
    from workbench.chunkers import unregister
    from workbench.chunkers.registry import strategy
    from workbench.core.chunk import make_chunk

    @strategy("embeds_unsaid", "one chunk a document, after embedding it", {})
    def embeds_unsaid(doc, env):  # type: ignore[no-untyped-def]
        env.embed([doc.text])
        return [make_chunk(doc, 0, len(doc.text))]

    try:
        refused = "strategy 'embeds_unsaid' embeds .* on a Ray worker.*register it with embeds=True"
        with Recording(chunk_chars=1) as engine, pytest.raises(ValueError, match=refused):
            sweep(tiny, [Variant.make("embeds_unsaid")], store=tmp_path, engine=engine, progress=False)
    finally:
        unregister("embeds_unsaid")
