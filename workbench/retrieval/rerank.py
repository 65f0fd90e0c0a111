"""The `rerank` stage: the stage before ranks, a reranker (workbench.models.rerank) rescores its
top `n` chunks against the question, and those n come first in the reranker's order; the rest
keep the first stage's order after them (each given the last reranked score, so scores stay finite
and best first), so a cut-off k > n still finds k chunks. The reranker reads what the index holds
for a chunk (its embedded text, header included), as BM25 does. Every question's pairs are scored
in one batched call. The default reranker is the bundled LLM as a yes/no judge, since it is the
one that works offline out of the box; a cross-encoder folder is the better choice when you have one."""

from __future__ import annotations

from typing import Any

import numpy as np

from workbench.core.params import Param
from workbench.core.stages import Index, Queries, Ranking, stage
from workbench.models.rerank import LLM_SPEC, reranker_fingerprint
from workbench.retrieval.index import embed_texts


def _check(params: dict[str, Any]) -> None:
    """The reranker is a local model, before any chunk is embedded."""
    reranker_fingerprint(params["model"])


@stage("rerank", "a reranker rescores the top `n` chunks of the stage before, question and chunk read together "
       "(slower, usually sharper than a cosine): the LLM as a yes/no judge, or a cross-encoder",
       {"model": Param(LLM_SPEC, f"the reranker: {LLM_SPEC!r} (the bundled LLM judges: P(yes) from its logits), "
                       "a .gguf file or causal-LM folder (that LLM judges), or a local sentence-transformers "
                       "CrossEncoder folder", label=True),
        "n": Param(50, "candidates of the stage before that the reranker rescores", lo=1, slider_hi=200,
                   unit="chunks")},
       first=False, needs=("rerankers",), models=("model",), check=_check,
       wants=lambda params, depth: None if depth is None else max(params["n"], depth))
def rerank(queries: Queries, rankings: list[Ranking] | None, index: Index, depth: int | None,
           model: str, n: int) -> list[Ranking]:
    texts = embed_texts(index.chunks)
    heads = [ids[:n] for _, ids in rankings or []]
    pairs = [(q, texts[i]) for q, head in zip(queries.texts, heads, strict=True) for i in head]
    scores = index.rerankers.get(model).score(pairs)
    out, at = [], 0
    for (_, ids), head in zip(rankings or [], heads, strict=True):
        s, at = scores[at : at + len(head)], at + len(head)
        order = np.argsort(-s, kind="stable")  # ties keep the first stage's order
        tail = ids[len(head):]
        floor = s.min() if len(s) else 0.0
        out.append((np.concatenate([s[order], np.full(len(tail), floor)]).astype(np.float32),
                    np.concatenate([head[order], tail]).astype(np.int64)))
    return out
