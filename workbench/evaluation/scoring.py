"""One variant's rankings -> its tidy per-question scores, and the hits a result keeps.

Why apart from the sweep: this is what a cached score is a function of (with the rankings), so its
source is part of the score cache's code fingerprint, and an engine running elsewhere calls it alone.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from workbench.dataset import Hit, Question, Span
from workbench.evaluation import metrics
from workbench.evaluation.settings import Settings

SCORE_COLUMNS = ["qid", "k", "budget", "metric", "value"]
HIT_COLUMNS = ["qid", "rank", "doc_id", "start", "end", "score", "chunk_id"]


def score(questions: Sequence[Question], ranked: Sequence[Sequence[Hit]], spans: Sequence[Span], settings: Settings,
          bounds: metrics.TokenBounds) -> pd.DataFrame:
    """Every metric at every k and budget (rows of one kind of cut-off each, see SweepResult), and
    precision-Ω over the variant's distinct returned `spans`."""
    parts = [metrics.score_rankings(questions, ranked, settings.ks, token_bounds=bounds).assign(budget=0),
             metrics.score_omega(questions, spans, bounds).assign(budget=0)]
    if settings.budgets:
        parts.append(metrics.score_budgets(questions, ranked, settings.budgets, settings.budget_encoding, bounds))
    return pd.concat(parts, ignore_index=True)[SCORE_COLUMNS]


def hits_table(questions: Sequence[Question], ranked: Sequence[Sequence[Hit]], k: int) -> pd.DataFrame:
    """The top k hits of every question, rank counted from 1: what a report draws without an index."""
    top = [hits[:k] for hits in ranked]
    lengths = np.fromiter(map(len, top), dtype=np.int64, count=len(top))
    flat = [h for hits in top for h in hits]
    n = len(flat)
    first = np.repeat(np.cumsum(lengths) - lengths, lengths)  # each hit's question's first row
    return pd.DataFrame({
        "qid": metrics.qid_column(questions, lengths),
        "rank": (np.arange(n) - first + 1).astype(np.int32),
        "doc_id": np.array([h.span.doc_id for h in flat], dtype=object),
        "start": np.fromiter((h.span.start for h in flat), dtype=np.int64, count=n),
        "end": np.fromiter((h.span.end for h in flat), dtype=np.int64, count=n),
        "score": np.fromiter((h.score for h in flat), dtype=np.float64, count=n),
        "chunk_id": np.fromiter((h.chunk_id for h in flat), dtype=np.int64, count=n),
    }, columns=HIT_COLUMNS)
