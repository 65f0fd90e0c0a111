"""One variant's rankings -> its tidy per-question scores, and the hits a result keeps.

Why apart from the sweep: this is what a cached score is a function of (with the rankings), so its
source is part of the score cache's code fingerprint, and an engine running elsewhere calls it alone.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from workbench.dataset import Hit, Question, RankedHits, Span
from workbench.evaluation import evidence, metrics
from workbench.evaluation.settings import Settings

SCORE_COLUMNS = ["qid", "k", "budget", "metric", "value"]
HIT_COLUMNS = ["qid", "rank", "doc_id", "start", "end", "score", "chunk_id"]


def score(questions: Sequence[Question], ranked: Sequence[Sequence[Hit]], spans: Sequence[Span], settings: Settings,
          bounds: evidence.TokenBounds) -> pd.DataFrame:
    """Every metric at every k and budget (rows of one kind of cut-off each, see SweepResult), and
    precision-Ω over the variant's distinct returned `spans`."""
    parts = [metrics.score_rankings(questions, ranked, settings.ks, token_bounds=bounds).assign(budget=0),
             metrics.score_omega(questions, spans, bounds).assign(budget=0)]
    if settings.budgets:
        parts.append(metrics.score_budgets(questions, ranked, settings.budgets, settings.budget_encoding, bounds))
    return pd.concat(parts, ignore_index=True)[SCORE_COLUMNS]


def hits_table(questions: Sequence[Question], ranked: Sequence[Sequence[Hit]], k: int) -> pd.DataFrame:
    """The top k hits of every question, rank counted from 1: what a report draws without an index."""
    top = RankedHits.of(ranked).top(k)
    return pd.DataFrame({
        "qid": metrics.qid_column(questions, top.lengths),
        "rank": (top.rank + 1).astype(np.int32),
        "doc_id": top.doc_id,
        "start": top.start,
        "end": top.end,
        "score": top.score,
        "chunk_id": top.chunk_id,
    }, columns=HIT_COLUMNS)
