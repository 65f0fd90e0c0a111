"""The registry of retrieval stages: what a variant's retriever may name (the stages themselves,
dense, bm25 and hybrid, are in workbench/retrieval/stages.py, which fills it on import).

A variant's retriever is a tuple of stages, run in order over one ChunkIndex.

Every stage has one shape, `fn(queries, rankings, index, depth, **params) -> rankings`, where a
ranking is (scores, row ids) best first, `rankings` is what the stage before produced (None for a
first stage) and `depth` is how many rows the stage's consumer needs (None: all it has). A first
stage (dense, bm25, hybrid) ranks the chunks; a later one (a reranker, auto-merging) reorders or
replaces what it is given and says through `wants` how many candidates it asks of the stage before.
Stages are registered components like chunking strategies: a parameter schema validated when a
variant is made, a version that is part of the variant's key, and the index resources they need
(`needs`, e.g. "bm25": built once per chunking, beside its FAISS index).

This module holds only the specs, so a variant (a layer below retrieval) validates its stages
without importing it; a stage sees the index through `Index`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from workbench.core.params import Param, add_entry, get_entry, resolve

Ranking = tuple[np.ndarray, np.ndarray]  # (scores, row ids of the chunk table), best first


class Index(Protocol):
    """What a stage may use of a variant's index (retrieval.index.ChunkIndex): its dense search
    and the resources its `needs` attached."""

    lexical: Any  # retrieval.bm25.LexicalIndex, for stages that need "bm25"
    rerankers: Any  # models.rerank.Rerankers, for stages that need "rerankers"
    pgvector: Any  # retrieval.pgvector.PgIndex, for stages that need "pgvector"
    chunks: Sequence[Any]  # chunkers.Chunk per row, for stages that read the spans (auto_merge)

    def dense(self, vectors: np.ndarray, depth: int | None,
              rows: Sequence[np.ndarray | None]) -> list[Ranking]: ...


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
    def __call__(self, queries: Queries, rankings: list[Ranking] | None, index: Index, depth: int | None,
                 **params: Any) -> list[Ranking]: ...


@dataclass(frozen=True)
class Stage:
    name: str
    fn: StageFn
    params: Mapping[str, Param]
    help: str
    first: bool = True  # ranks the chunks itself (else it reorders the rankings of the stage before)
    needs: tuple[str, ...] = ()  # index resources beside the FAISS index: "bm25", "rerankers", "pgvector"
    models: tuple[str, ...] = ()  # parameters naming a model, whose fingerprint keys the scores (a reranker)
    embeds: bool = True  # ranks by the chunks' vectors (so a chunk longer than the model's window ranks by its head)
    wants: Callable[[dict[str, Any], int | None], int | None] | None = None  # candidates asked of the stage before
    version: int = 1  # bump when its rankings for the same parameters change: re-keys its variants
    check: Callable[[dict[str, Any]], None] | None = None  # cross-parameter rules, run when a variant is made

    def resolve(self, params: Mapping[str, Any]) -> dict[str, Any]:
        return resolve(f"stage {self.name!r}", self.params, params, self.check)


STAGES: dict[str, Stage] = {}
DENSE = "dense"  # the stage of a variant that names none


def stage(name: str, help: str, params: Mapping[str, Param] | None = None,
          **options: Any) -> Callable[[StageFn], StageFn]:
    """Register `fn` as the retrieval stage `name` (options: first, needs, models, embeds, wants, version, check)."""
    def register(fn: StageFn) -> StageFn:
        add_entry(STAGES, "retrieval stage", name, Stage(name, fn, dict(params or {}), help, **options))
        return fn

    return register


def get_stage(name: str) -> Stage:
    return get_entry(STAGES, "retrieval stage", name)


def first_stages() -> tuple[str, ...]:
    """The stages that can open a retriever (the widgets' and the CLI's retriever choices)."""
    return tuple(name for name, s in STAGES.items() if s.first)
