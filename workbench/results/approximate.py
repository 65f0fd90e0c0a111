"""What approximate search costs, read from a result: each variant searched by an approximate index beside
the same variant searched exactly.

Why: a team deploys the verdict's chunking in a database whose index (pgvector's HNSW, FAISS IVF) trades
recall for speed. A variant searched that way has `index` and `ann_recall` in its row (the share of exact
search's top k its top k keeps: workbench.retrieval.pgvector, workbench.retrieval.ann); when the result also
holds its exact twin (the same chunks, searched by exact dense search: `fixed:size=256` beside
`fixed:size=256+pgvector`), the two are compared on the same questions, paired, so what the approximation
costs on the metric is measured with its interval, not guessed from ann_recall.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import pandas as pd

from workbench.evaluation import stats
from workbench.models.choose import variant_key
from workbench.variant import DENSE_ONLY

if TYPE_CHECKING:
    from workbench.results.result import SweepResult

COLUMNS = ["key", "variant", "index", "ann_recall", "mean", "exact_key", "exact", "exact_mean", "diff", "ci_low",
           "ci_high", "p_value"]


def exact_twin(result: SweepResult, key: str) -> str:
    """The result key of the same variant with exact dense search as its first stage (and the same model)."""
    v = result.variant(key)
    twin = replace(v, stages=(DENSE_ONLY[0], *v.stages[1:]))
    return twin.key + key[len(variant_key(key)):]


def approximation(result: SweepResult, metric: str = "recall", k: int | None = None) -> pd.DataFrame:
    """One row per variant searched approximately, in sweep order: what searched it (`index`), `ann_recall`,
    its mean metric@k (default: `default_k`) and, when the result holds its exact twin, the twin's mean and
    the paired difference (approximate minus exact) with its interval at the result's confidence and its
    p-value (stats.paired_compare); those columns empty otherwise. Empty when nothing was approximate."""
    k = result.default_k if k is None else k
    v = result.variants
    if "ann_recall" not in v:
        return pd.DataFrame(columns=COLUMNS)
    rows = []
    means = result.ranking(metric, k).set_index("key")["mean"]
    for key, label, index, kept in zip(v["key"], v["variant"], v["index"], v["ann_recall"], strict=True):
        if pd.isna(kept):
            continue
        row = {"key": key, "variant": label, "index": index, "ann_recall": kept, "mean": means[key]}
        twin = exact_twin(result, key)
        if twin in means.index:
            compared = stats.paired_compare(result.per_question, twin, key, metric, k, result.confidence)
            row |= {"exact_key": twin, "exact": result.label_of(twin), "exact_mean": means[twin],
                    **{c: compared[c] for c in ("diff", "ci_low", "ci_high", "p_value")}}
        rows.append(row)
    return pd.DataFrame(rows, columns=COLUMNS)
