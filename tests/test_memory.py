"""A sweep holds one variant's index at a time: memory must not grow with the number of variants
beyond the result tables (bench/scale.md measures the tables)."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable
from pathlib import Path

from workbench.dataset import Dataset
from workbench.models.embed import Embedder
from workbench.retrieval.ann import Ann
from workbench.retrieval.index import ChunkIndex, IndexStore
from workbench.run.session import sweep, sweep_steps
from workbench.variant import Variant, grid

GRID = grid("fixed", size=[24, 32, 48])


class RecordingStore(IndexStore):
    """An IndexStore that keeps a weak reference to every index it hands out."""

    def __init__(self, root: Path):
        super().__init__(root)
        self.handed: list[weakref.ref[ChunkIndex]] = []

    def get(self, variant: Variant, dataset: Dataset, embedder: Embedder, ann: Ann | None = None,
            stop: Callable[[], bool] | None = None) -> ChunkIndex:
        index = super().get(variant, dataset, embedder, ann, stop)
        self.handed.append(weakref.ref(index))
        return index


def alive(store: RecordingStore) -> int:
    gc.collect()
    return sum(ref() is not None for ref in store.handed)


def test_each_step_releases_its_index_before_the_caller_gets_it(tiny: Dataset, fake_embedder: Embedder,
                                                                 tmp_path: Path) -> None:
    store = RecordingStore(tmp_path)
    kept = []  # held like `sweep` and the sweeper panel hold them
    for step in sweep_steps(tiny, GRID, ks=(1, 3), embedder=fake_embedder, store=store, progress=False):
        kept.append(step)
        assert len(store.handed) == len(kept)  # a cold cache: every variant loads or builds its index
        assert alive(store) == 0


def test_sweep_result_holds_no_index(tiny: Dataset, fake_embedder: Embedder, tmp_path: Path) -> None:
    store = RecordingStore(tmp_path)
    result = sweep(tiny, GRID, ks=(1, 3), embedder=fake_embedder, store=store, progress=False)
    assert len(store.handed) == len(GRID) and len(result.keys) == len(GRID)
    assert alive(store) == 0
