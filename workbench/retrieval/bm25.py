"""BM25 over a variant's chunks (bm25s), and reciprocal rank fusion of two rankings.

Tokens: bm25s's tokenizer, i.e. lowercase runs of 2+ word characters (regex `(?u)\\b\\w\\w+\\b`,
as scikit-learn's CountVectorizer) with bm25s's English stopwords removed and no stemming; chunks
and questions go through the same function. Scores: bm25s's defaults, the Lucene variant with
k1 = 1.5 and b = 0.75:
    idf(t) = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))
    score(q, d) = sum over query tokens t of idf(t) * tf(t, d) / (tf(t, d) + k1 * (1 - b + b * |d| / avgdl))
The index is saved as bm25s's numpy arrays (np.save, allow_pickle=False) and JSON files.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import bm25s

# bm25s is imported where it is used: it brings scipy.sparse and numba-backed code, slow to import,
# which a dense-only or fully cached sweep never needs.

STOPWORDS = "en"


def tokenize(texts: Sequence[str]) -> list[list[str]]:
    """The tokens BM25 matches on, for chunks and questions alike."""
    import bm25s

    return bm25s.tokenize(list(texts), stopwords=STOPWORDS, return_ids=False, show_progress=False)


class LexicalIndex:
    """A BM25 index over the texts of a variant's chunks, one row per chunk (the FAISS row order)."""

    def __init__(self, model: bm25s.BM25):
        self.model = model

    @classmethod
    def build(cls, texts: Sequence[str]) -> LexicalIndex:
        import bm25s

        model = bm25s.BM25()
        vocab: dict[str, int] = {}
        ids = [[vocab.setdefault(t, len(vocab)) for t in tokens] for tokens in tokenize(texts)]
        model.index(bm25s.tokenization.Tokenized(ids=ids, vocab=vocab), show_progress=False)
        return cls(model)

    def save(self, folder: Path) -> None:
        self.model.save(str(folder), show_progress=False)  # numpy arrays without pickle, JSON vocab

    @classmethod
    def load(cls, folder: Path) -> LexicalIndex:
        import bm25s

        return cls(bm25s.BM25.load(str(folder), allow_pickle=False, show_progress=False))

    def scores(self, question: str) -> np.ndarray:
        """BM25 score of every chunk for one question (0 where no token matches)."""
        vocab = self.model.vocab_dict
        ids = [vocab[t] for t in tokenize([question])[0] if t in vocab]
        if not ids:
            return np.zeros(self.model.scores["num_docs"], dtype=np.float32)
        return self.model.get_scores_from_ids(ids)

    def ranking(self, question: str, rows: Sequence[int] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(scores, row ids) of the chunks that match at least one token, best first (ties by row),
        among `rows` if given: a chunk sharing no token with the question is not retrieved."""
        scores = self.scores(question)
        ids = np.arange(len(scores)) if rows is None else np.asarray(rows, dtype=np.int64)
        ids = ids[scores[ids] > 0]
        ids = ids[np.argsort(-scores[ids], kind="stable")]
        return scores[ids], ids


def rrf(rankings: Sequence[Sequence[int]], rrf_k: int) -> tuple[np.ndarray, np.ndarray]:
    """Reciprocal rank fusion: score(d) = sum over rankings holding d of 1 / (rrf_k + rank), rank
    counted from 1; returns (scores, ids) best first, ties in order of first appearance."""
    fused: dict[int, float] = {}
    for ranking in rankings:
        for rank, i in enumerate(ranking, start=1):
            fused[int(i)] = fused.get(int(i), 0.0) + 1.0 / (rrf_k + rank)
    ids = np.fromiter(fused, dtype=np.int64, count=len(fused))
    scores = np.fromiter(fused.values(), dtype=np.float64, count=len(fused))
    order = np.argsort(-scores, kind="stable")
    return scores[order], ids[order]
