"""Retrieval stages: a variant's retriever is a tuple of them, run in order over one ChunkIndex.

Every stage has one shape, `fn(queries, rankings, index, depth, **params) -> rankings`, where a
ranking is (scores, row ids) best first, `rankings` is what the stage before produced (None for a
first stage) and `depth` is how many rows the stage's consumer needs (None: all it has). A first
stage (dense, bm25, hybrid) ranks the chunks; a later one (a reranker, auto-merging) reorders or
replaces what it is given and says through `wants` how many candidates it asks of the stage before.
Stages are registered components like chunking strategies: a parameter schema validated when a
variant is made, a version that is part of the variant's key, and the index resources they need
(`needs`, e.g. "bm25": built once per chunking, beside its FAISS index).

This module holds only the specs and the ranking rules; it never imports the index, so a variant
can validate its stages without loading FAISS.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from workbench.params import Param, add_entry, get_entry, resolve
from workbench.retrieval.bm25 import rrf

if TYPE_CHECKING:
    from workbench.retrieval.index import ChunkIndex

Ranking = tuple[np.ndarray, np.ndarray]  # (scores, row ids of the chunk table), best first


@dataclass(frozen=True)
class Queries:
    """The questions of one retrieval call: their texts, their vectors (one row each) and, per
    question, the rows it may rank (its evidence documents' chunks in document mode; None: all)."""

    texts: Sequence[str]
    vectors: np.ndarray
    rows: Sequence[np.ndarray | None]

    def __len__(self) -> int:
        return len(self.texts)

    def subset(self, which: Sequence[int]) -> Queries:
        return Queries([self.texts[i] for i in which], self.vectors[list(which)], [self.rows[i] for i in which])


class StageFn(Protocol):
    def __call__(self, queries: Queries, rankings: list[Ranking] | None, index: ChunkIndex, depth: int | None,
                 **params: Any) -> list[Ranking]: ...


@dataclass(frozen=True)
class Stage:
    name: str
    fn: StageFn
    params: Mapping[str, Param]
    help: str
    first: bool = True  # ranks the chunks itself (else it reorders the rankings of the stage before)
    needs: tuple[str, ...] = ()  # index resources beside the FAISS index: "bm25"
    wants: Callable[[dict[str, Any], int | None], int | None] | None = None  # candidates asked of the stage before
    version: int = 1  # bump when its rankings for the same parameters change: re-keys its variants

    def resolve(self, params: Mapping[str, Any]) -> dict[str, Any]:
        return resolve(f"stage {self.name!r}", self.params, params)


STAGES: dict[str, Stage] = {}
DENSE = "dense"  # the stage of a variant that names none


def stage(name: str, help: str, params: Mapping[str, Param] | None = None,
          **options: Any) -> Callable[[StageFn], StageFn]:
    """Register `fn` as the retrieval stage `name` (options: first, needs, wants, version)."""
    def register(fn: StageFn) -> StageFn:
        add_entry(STAGES, "retrieval stage", name, Stage(name, fn, dict(params or {}), help, **options))
        return fn

    return register


def get_stage(name: str) -> Stage:
    return get_entry(STAGES, "retrieval stage", name)


def first_stages() -> tuple[str, ...]:
    """The stages that can open a retriever (the widgets' and the CLI's retriever choices)."""
    return tuple(name for name, s in STAGES.items() if s.first)


@stage(DENSE, "cosine similarity of the question's and the chunks' embeddings (exact FAISS search)")
def dense(queries: Queries, rankings: list[Ranking] | None, index: ChunkIndex, depth: int | None) -> list[Ranking]:
    return index.dense(queries.vectors, depth, queries.rows)


def _bm25(queries: Queries, index: ChunkIndex) -> list[Ranking]:
    return [index.lexical.ranking(text, rows) for text, rows in zip(queries.texts, queries.rows, strict=True)]


@stage("bm25", "BM25 over the same chunks (bm25s: lowercase words, English stopwords, no stemming); "
       "a chunk sharing no word with the question is not retrieved", needs=("bm25",))
def bm25(queries: Queries, rankings: list[Ranking] | None, index: ChunkIndex, depth: int | None) -> list[Ranking]:
    return _bm25(queries, index)  # the whole ranking: it costs the same as its head


@stage("hybrid", "reciprocal rank fusion of the whole dense and BM25 rankings, 1 / (rrf_k + rank) summed",
       {"rrf_k": Param(60, "the constant k of 1 / (k + rank): larger flattens the weight of the top ranks", lo=1,
                       slider_hi=200)}, needs=("bm25",))
def hybrid(queries: Queries, rankings: list[Ranking] | None, index: ChunkIndex, depth: int | None,
           rrf_k: int) -> list[Ranking]:
    # one question at a time, as the fused dense ranking has always been searched (FAISS's batched
    # and single searches may differ in the last bit of a cosine, which could swap near ties)
    out = []
    for i, (_, lexical) in enumerate(_bm25(queries, index)):
        _, ids = index.dense(queries.vectors[i : i + 1], None, queries.rows[i : i + 1])[0]
        out.append(rrf([ids, lexical], rrf_k))
    return out
