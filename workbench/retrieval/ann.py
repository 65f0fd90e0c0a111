"""Approximate nearest-neighbour search (FAISS IVF or HNSW) for corpora too big to search exactly.

Why a threshold: up to `above` chunks exact search is fast enough and exact, so an index that small
stays flat and its rankings are the exact ones to the last bit; above it, the approximate index
answers instead. It is built from the exact entry's vectors (no model pass) and saved in a subfolder
of that entry named by what the build depends on, `ann-ivf-nlist256-seed0` or `ann-hnsw-m32-efc40`;
the search-time parameters (nprobe, efSearch) change no stored byte, so they are set on load and name
the scores instead (Settings.ann). Builds are deterministic: IVF trains its k-means with `seed`, and
HNSW inserts on one thread (FAISS's parallel insertion orders the graph by thread timing; its level
draws use FAISS's fixed seed). What the approximation costs is measured, never assumed: `recall`
is the share of the exact top-k the approximate top-k keeps, which a sweep shows as `ann_recall`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import faiss

KINDS = ("ivf", "hnsw")
_INTS = ("above", "nlist", "nprobe", "m", "ef_construction", "ef_search", "seed")


@dataclass(frozen=True)
class Ann:
    """An approximate index for entries of more than `above` chunks; validated when made.

    >>> Ann.parse("ivf:nlist=64,nprobe=8,above=1000").name(5000)
    'ivf(nlist=64,nprobe=8)'
    """

    kind: str = "hnsw"  # one of KINDS
    above: int = 100_000  # chunks up to which search stays exact (flat)
    nlist: int = 0  # IVF: inverted lists; 0 takes 4 * sqrt(chunks), at most the chunks
    nprobe: int = 16  # IVF: lists searched per query
    m: int = 32  # HNSW: neighbours per node
    ef_construction: int = 40  # HNSW: candidates kept while inserting
    ef_search: int = 64  # HNSW: candidates kept while searching (at least the depth searched)
    seed: int = 0  # IVF: k-means seed

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"ann: kind must be one of {KINDS}, got {self.kind!r}")
        for name in _INTS:
            value = getattr(self, name)
            low = 0 if name in ("above", "nlist", "seed") else 1
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"ann: {name} must be an int >= {low}, got {value!r}")

    @classmethod
    def parse(cls, text: str) -> Ann:
        """`kind` or `kind:name=value,...` (the CLI's --ann), e.g. "hnsw:m=16,ef_search=128,above=50000"."""
        kind, _, rest = text.partition(":")
        values: dict[str, int] = {}
        for item in filter(None, rest.split(",")):
            name, eq, value = item.partition("=")
            if name not in _INTS or not eq:
                raise ValueError(f"ann: {item!r} is not name=value with a name of {list(_INTS)}")
            try:
                values[name] = int(value)
            except ValueError:
                raise ValueError(f"ann: {name} must be an int, got {value!r}") from None
        return cls(kind, **values)

    @classmethod
    def from_spec(cls, spec: dict) -> Ann:
        """An Ann from `spec()` (a result's config)."""
        return cls(**{f.name: spec[f.name] for f in fields(cls) if f.name in spec})

    def spec(self) -> dict:
        return asdict(self)

    def applies(self, chunks: int) -> bool:
        return chunks > self.above

    def lists(self, chunks: int) -> int:
        return min(chunks, self.nlist or max(1, round(4 * math.sqrt(chunks))))

    def folder(self, chunks: int) -> str:
        """The subfolder of an index entry holding this approximate index: its build parameters."""
        if self.kind == "ivf":
            return f"ann-ivf-nlist{self.lists(chunks)}-seed{self.seed}"
        return f"ann-hnsw-m{self.m}-efc{self.ef_construction}"

    def name(self, chunks: int) -> str:
        """What searches an entry of `chunks` chunks (the variants table's `index`): its parameters, or "flat"."""
        if not self.applies(chunks):
            return "flat"
        if self.kind == "ivf":
            return f"ivf(nlist={self.lists(chunks)},nprobe={self.nprobe})"
        return f"hnsw(m={self.m},ef_construction={self.ef_construction},ef_search={self.ef_search})"

    def build(self, vectors: np.ndarray) -> faiss.Index:
        """The approximate inner-product index over L2-normalised vectors (scores are cosines)."""
        import faiss  # FAISS loads when an index is searched or built: a warm sweep reads its scores back

        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        n, dim = vectors.shape
        if self.kind == "ivf":
            index = faiss.IndexIVFFlat(faiss.IndexFlatIP(dim), dim, self.lists(n), faiss.METRIC_INNER_PRODUCT)
            index.cp.seed = self.seed
            index.train(vectors)
            index.add(vectors)
        else:
            index = faiss.IndexHNSWFlat(dim, self.m, faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efConstruction = self.ef_construction
            threads = faiss.omp_get_max_threads()
            faiss.omp_set_num_threads(1)  # one insertion order, so one graph (see the module docstring)
            try:
                index.add(vectors)
            finally:
                faiss.omp_set_num_threads(threads)
        return self.prepare(index)

    def prepare(self, index: faiss.Index) -> faiss.Index:
        """Set the search-time parameters on a built or loaded index."""
        if self.kind == "ivf":
            index.nprobe = self.nprobe
        else:
            index.hnsw.efSearch = self.ef_search
        return index

    def params(self, selector: faiss.IDSelector) -> faiss.SearchParameters:
        """Search parameters restricted to `selector` (FAISS wants the index's own kind)."""
        import faiss  # see build

        if self.kind == "ivf":
            return faiss.SearchParametersIVF(sel=selector, nprobe=self.nprobe)
        return faiss.SearchParametersHNSW(sel=selector, efSearch=self.ef_search)


def recall(approximate: faiss.Index, exact: faiss.Index, vectors: np.ndarray, k: int) -> float:
    """Mean over the query vectors of |approximate top-k & exact top-k| / k."""
    k = min(k, exact.ntotal)
    _, found = approximate.search(vectors, k)
    _, truth = exact.search(vectors, k)
    return overlap(list(found), truth)


def overlap(found: Sequence[np.ndarray], truth: np.ndarray) -> float:
    """Mean over the queries of |found top-k & exact top-k| / k, k the width of `truth`: how much of exact
    search an approximate search keeps (FAISS pads what it did not find with -1)."""
    k = truth.shape[1]
    return float(np.mean([len(set(f[f >= 0].tolist()) & set(t.tolist())) / k
                          for f, t in zip(found, truth, strict=True)]))
