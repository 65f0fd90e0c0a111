"""Running a variant's retrieval stages: rankings deep enough for every cut-off and budget.

Why a module of its own: the depth rule (how many chunks to rank, and when to rank deeper) shapes
every stored score, so it lives in one place that the score cache's code fingerprint covers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from workbench.core.stages import Queries, Ranking, get_stage
from workbench.dataset import Hit, Question, RankedHits
from workbench.retrieval.index import ChunkIndex
from workbench.variant import DENSE_ONLY, StageSpec


def queries(index: ChunkIndex, questions: Sequence[Question], vectors: np.ndarray, mode: str) -> Queries:
    """The questions as one retrieval call: in document mode each may rank only its evidence documents' chunks."""
    rows = [index.rows_of(q) for q in questions] if mode == "document" else [None] * len(questions)
    return Queries([q.question for q in questions], vectors, rows)


def run_stages(stages: Sequence[StageSpec], qs: Queries, index: ChunkIndex, depth: int) -> list[Ranking]:
    """The last stage's rankings, `depth` rows deep at most; each earlier stage is asked for what
    the next one `wants` (a reranker of the top n asks for n)."""
    depths: list[int | None] = [depth]
    for name, params, _ in reversed(stages[1:]):
        wants = get_stage(name).wants
        depths.insert(0, wants(dict(params), depths[0]) if wants else depths[0])
    rankings: list[Ranking] | None = None
    for (name, params, _), d in zip(stages, depths, strict=True):
        rankings = get_stage(name).fn(qs, rankings, index, d, **dict(params))
    assert rankings is not None
    return rankings


def retrieve(index: ChunkIndex, stages: Sequence[StageSpec], qs: Queries, k: int) -> Sequence[list[Hit]]:
    """Top-k distinct returned units per question. Rankings start k deep (4k when parents may
    collapse several chunks into one unit) and questions whose ranking was cut at that depth
    before k units were found are ranked again 4 times deeper. When no two rows return the same
    unit, a ranking's first k rows are its hits: all of them at once, as columns (RankedHits)."""
    todo, depth = list(range(len(qs))), k * 4 if index.has_parents else k
    if index.distinct:
        return index.top_hits(run_stages(stages, qs, index, depth), k)
    out: list[list[Hit]] = [[] for _ in range(len(qs))]
    while todo:
        ranked = run_stages(stages, qs if len(todo) == len(qs) else qs.subset(todo), index, depth)
        again = []
        for i, ranking in zip(todo, ranked, strict=True):
            out[i] = index.hits(ranking, k)
            if len(out[i]) < k and len(ranking[1]) == depth:  # cut before k units: there may be more
                again.append(i)
        todo, depth = again, depth * 4
    return out


def search(index: ChunkIndex, questions: Sequence[Question], vectors: np.ndarray, k: int,
           stages: Sequence[StageSpec] = DENSE_ONLY, mode: str = "corpus") -> Sequence[list[Hit]]:
    """Top-k hits of every question by `stages` (a variant's, default dense), e.g. to drill down."""
    return retrieve(index, stages, queries(index, questions, vectors, mode), k)


def ranked_for(index: ChunkIndex, stages: Sequence[StageSpec], qs: Queries, ks: Sequence[int],
               budgets: Sequence[int], encoding: str) -> Sequence[list[Hit]]:
    """Rankings deep enough for the largest k and to fill the largest budget: the first depth is
    a guess from the mean unit size, doubled until every ranking holds more than the budget or
    is exhausted (shorter than the depth asked)."""
    depth = max(ks)
    if budgets:
        mean_tokens = max(1.0, float(index.returned_tokens[encoding].mean()))
        depth = max(depth, math.ceil(budgets[-1] / mean_tokens) + 1)
    while True:
        ranked = retrieve(index, stages, qs, depth)
        hits = RankedHits.of(ranked)
        if not budgets or ((hits.lengths < depth) | (hits.totals(encoding) > budgets[-1])).all():
            return ranked
        depth *= 2
