"""The retrieval stages: dense, bm25 and hybrid, registered in workbench.core.stages (see there for
their one shape). A new stage is one function here, or in a module of its own, with `@stage(...)`.
"""

from __future__ import annotations

from workbench.core.params import Param
from workbench.core.stages import DENSE, Index, Queries, Ranking, stage
from workbench.retrieval.bm25 import rrf


@stage(DENSE, "cosine similarity of the question's and the chunks' embeddings (exact FAISS search)")
def dense(queries: Queries, rankings: list[Ranking] | None, index: Index, depth: int | None) -> list[Ranking]:
    return index.dense(queries.vectors, depth, queries.rows)


def _bm25(queries: Queries, index: Index) -> list[Ranking]:
    return [index.lexical.ranking(text, rows) for text, rows in zip(queries.texts, queries.rows, strict=True)]


@stage("bm25", "BM25 over the same chunks (bm25s: lowercase words, English stopwords, no stemming); "
       "a chunk sharing no word with the question is not retrieved", needs=("bm25",), embeds=False)
def bm25(queries: Queries, rankings: list[Ranking] | None, index: Index, depth: int | None) -> list[Ranking]:
    return _bm25(queries, index)  # the whole ranking: it costs the same as its head


@stage("hybrid", "reciprocal rank fusion of the whole dense and BM25 rankings, 1 / (rrf_k + rank) summed",
       {"rrf_k": Param(60, "the constant k of 1 / (k + rank): larger flattens the weight of the top ranks", lo=1,
                       slider_hi=200)}, needs=("bm25",))
def hybrid(queries: Queries, rankings: list[Ranking] | None, index: Index, depth: int | None,
           rrf_k: int) -> list[Ranking]:
    # one question at a time, as the fused dense ranking has always been searched (FAISS's batched
    # and single searches may differ in the last bit of a cosine, which could swap near ties)
    out = []
    for i, (_, lexical) in enumerate(_bm25(queries, index)):
        _, ids = index.dense(queries.vectors[i : i + 1], None, queries.rows[i : i + 1])[0]
        out.append(rrf([ids, lexical], rrf_k))
    return out
