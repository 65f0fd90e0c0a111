"""Retrieval metrics from exact character spans: pure functions of labels and rankings.

Every metric compares the spans a ranking returns (`Hit.span`, what the LLM would read) with the
question's evidence (the union of its answer spans) by character offsets, never by chunk ids, so
one set of labels scores every chunking variant on the same footing. A question with alternatives
gets, metric by metric, the best of its alternatives' values. Formulas, edge cases and the
reasons behind each choice are in docs/metrics.md; tests pin every one with hand-computed cases.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from math import log2

import numpy as np
import pandas as pd

from workbench.dataset import Hit, Question, RankedHits, Span
from workbench.evaluation.evidence import (
    Evidence,
    EvidenceTable,
    Intervals,
    TokenBounds,
    best,
    by_doc,
    clip,
    evidence_intervals,
    evidence_table,
    merge,
    overlap,
    prepare,
    total,
)

# Per-k metrics, in output (and display) order. "recall_tokens" is emitted only when token
# boundaries are given.
METRICS = (
    "recall",
    "recall_tokens",
    "hit",
    "hit_strict",
    "hit_frac",
    "mrr",
    "ndcg",
    "precision",
    "iou",
    "context_tokens",
    "context_tokens_o200k",
)
OMEGA = "precision_omega"  # k-independent: reported with k = OMEGA_K
OMEGA_K = 0
DEFAULT_KS = (1, 3, 5, 10)  # the cut-offs a sweep scores when none are given
DEFAULT_K = 5  # the cut-off a figure, a table or a verdict uses when none is chosen
FRAC_THRESHOLD = 0.5  # hit_frac: the share of the evidence characters a ranking must cover
DEFAULT_BUDGETS = (256, 512, 1024, 2048, 4096)  # context budgets (tokens) a sweep scores when none are given
BUDGET_ENCODINGS = ("cl100k_base", "o200k_base")  # the tokenizers a budget can be counted in (Hit.tokens)
# Metrics scored at each budget, in output order ("recall_tokens" only with token boundaries);
# "context_tokens" is what was actually sent, counted in the budget's encoding.
BUDGET_METRICS = ("recall", "recall_tokens", "hit", "precision", "iou")


@dataclass(frozen=True)
class MetricAt:
    """A metric at one cut-off: `k` chunks (k > 0), an equal context `budget` in tokens (k = 0,
    budget > 0), or neither (precision_omega). What a verdict is on, and how a user names it.

    >>> MetricAt.parse("recall@budget=1024")
    MetricAt(name='recall', k=0, budget=1024)
    >>> MetricAt.parse("mrr@10").label
    'mrr@10'
    """

    name: str = "recall"
    k: int | None = None  # None: the result's default cut-off (SweepResult.default_k)
    budget: int = 0

    def __post_init__(self) -> None:
        if self.name not in (*METRICS, OMEGA):
            raise ValueError(f"metric: {self.name!r} is not a metric; known: {[*METRICS, OMEGA]}")
        at_budgets = (*BUDGET_METRICS, "context_tokens", "context_tokens_o200k")  # and the context sent
        if self.budget and self.name not in at_budgets:
            raise ValueError(f"metric: {self.name!r} is not scored at a context budget; those that are: "
                             f"{list(at_budgets)}")
        if self.budget < 0 or (self.k is not None and self.k < 0) or (self.budget and self.k):
            raise ValueError(f"metric: a cut-off is k > 0 or a budget > 0, not both; got k={self.k}, "
                             f"budget={self.budget}")

    @classmethod
    def parse(cls, text: str) -> MetricAt:
        """"recall", "recall@5", "recall@budget=1024" (ValueError naming what is wrong)."""
        name, _, at = str(text).strip().partition("@")
        try:
            if not at:
                return cls(name)
            if at.startswith("budget="):
                return cls(name, 0, int(at.removeprefix("budget=")))
            return cls(name, int(at))
        except ValueError as e:
            if "metric:" in str(e):
                raise
            raise ValueError(f"metric: {text!r} is not METRIC, METRIC@K or METRIC@budget=TOKENS, e.g. recall@5 "
                             "or recall@budget=1024") from None

    def at(self, k: int) -> MetricAt:
        """This metric at `k` when no cut-off was given (a budget stays as it is)."""
        return self if self.k is not None or self.budget else MetricAt(self.name, k)

    @property
    def label(self) -> str:
        """recall@5, recall@1,024 tokens, precision_omega."""
        if self.budget:
            return f"{self.name}@{self.budget:,} tokens"
        return f"{self.name}@{self.k}" if self.k else self.name

    def rows(self, table: pd.DataFrame) -> pd.DataFrame:
        """The rows of a result's per_question or summary table at this cut-off (k must be set)."""
        budget = table["budget"] if "budget" in table.columns else 0
        return table[(table["metric"] == self.name) & (table["k"] == (self.k or 0)) & (budget == self.budget)]


def default_k(ks: Iterable[int]) -> int:
    """DEFAULT_K when it was swept, else the largest swept k."""
    ks = sorted(k for k in ks if k > 0)
    if not ks:
        raise ValueError("no cut-off k > 0 was swept")
    return DEFAULT_K if DEFAULT_K in ks else ks[-1]


def string_column(values: Sequence[str], at: np.ndarray) -> pd.api.extensions.ExtensionArray:
    """values[at] as a pandas str column, each distinct value converted once: built from repeated
    Python strings, a column converts every row, several times slower on a table of thousands of
    questions."""
    return pd.array(list(values), dtype="str").take(at)


def qid_column(questions: Sequence[Question], repeats: int | np.ndarray) -> pd.api.extensions.ExtensionArray:
    """Each question's qid repeated `repeats` times (a number, or one per question), in order."""
    return string_column([q.qid for q in questions], np.repeat(np.arange(len(questions)), repeats))


def _check_ks(ks: Sequence[int]) -> list[int]:
    if not ks or any(isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1 for k in ks):
        raise ValueError(f"ks must be a non-empty list of integers >= 1, got {list(ks)!r}")
    return sorted({int(k) for k in ks})


def _check_threshold(frac_threshold: float) -> None:
    if not 0 < frac_threshold <= 1:
        raise ValueError(f"frac_threshold must be in (0, 1], got {frac_threshold!r}")


def _names(tokens: bool) -> tuple[str, ...]:
    """The metrics of one cut-off, in the order score_question emits them."""
    head = ("hit", "hit_strict", "hit_frac", "recall")
    tail = ("mrr", "ndcg", "precision", "iou", "context_tokens", "context_tokens_o200k")
    return (*head, "recall_tokens", *tail) if tokens else (*head, *tail)


def _values(ev: Evidence, ranked: Sequence[Hit], ks: list[int], frac_threshold: float) -> list[float]:
    """The values of score_question, flat: for each k (ascending), one per `_names` metric."""
    spans, by_doc, ev_len = ev.spans, ev.by_doc, ev.length
    tokens = ev.tokens is not None
    contained = [False] * len(spans)
    n_contained = 0
    covered: dict[str, Intervals] = {}
    covered_len = first_touch = retrieved_len = tok = tok_o200k = 0
    dcg = 0.0
    out: list[float] = []

    def emit() -> None:
        recall = covered_len / ev_len
        out.extend((float(first_touch > 0), float(n_contained == len(spans)), float(recall >= frac_threshold),
                    recall))
        if tokens:
            out.append(ev.recall_tokens(covered, covered_len))
        out.extend((1.0 / first_touch if first_touch else 0.0, dcg,
                    covered_len / retrieved_len if retrieved_len else 0.0,
                    covered_len / (retrieved_len + ev_len - covered_len), float(tok), float(tok_o200k)))

    pending = iter(ks)
    k = next(pending, None)
    for rank, hit in enumerate(ranked[: ks[-1]], 1):
        span = hit.span
        doc, start, end = span.doc_id, span.start, span.end
        retrieved_len += end - start
        tok += hit.tokens["cl100k_base"]
        tok_o200k += hit.tokens["o200k_base"]
        piece = clip(by_doc[doc], start, end) if doc in by_doc else None
        if piece:
            first_touch = first_touch or rank
            covered[doc] = merge(covered.get(doc, []) + piece)
            newly = sum(total(v) for v in covered.values()) - covered_len
            covered_len += newly
            dcg += newly / ev_len / log2(rank + 1)
            for i, e in enumerate(spans):
                if not contained[i] and e.doc_id == doc and start <= e.start and e.end <= end:
                    contained[i] = True
                    n_contained += 1
        while k is not None and k == rank:
            emit()
            k = next(pending, None)
    while k is not None:  # k beyond the end of the ranking: nothing more is retrieved
        emit()
        k = next(pending, None)
    return out


def score_question(
    evidence: Sequence[Span],
    ranked: Sequence[Hit],
    ks: Sequence[int],
    *,
    frac_threshold: float = FRAC_THRESHOLD,
    token_bounds: Mapping[str, np.ndarray] | None = None,
    alternatives: Sequence[Sequence[Span]] = (),
) -> list[tuple[str, int, float]]:
    """(metric, k, value) for every k in ascending order and every metric in METRICS order.

    `ranked` may be shorter than k (the missing ranks retrieve nothing). `token_bounds` maps
    doc_id -> sorted char offsets of token starts plus len(text) (Tokenizer.boundaries); when
    given, "recall_tokens" is added. With `alternatives` (other sets of evidence, any one of which
    answers the question), each value is the best of `evidence`'s and the alternatives', metric by
    metric and k by k."""
    ks = _check_ks(ks)
    _check_threshold(frac_threshold)
    ev = prepare(evidence, token_bounds)
    names = _names(ev.tokens is not None)
    values = _values(ev, ranked, ks, frac_threshold)
    for alternative in alternatives:
        values = list(map(max, values, _values(prepare(alternative, token_bounds), ranked, ks, frac_threshold)))
    return [(m, k, values[i * len(names) + j]) for i, k in enumerate(ks) for j, m in enumerate(names)]


def score_rankings(
    questions: Sequence[Question],
    rankings: Sequence[Sequence[Hit]],
    ks: Sequence[int],
    *,
    frac_threshold: float = FRAC_THRESHOLD,
    token_bounds: Mapping[str, np.ndarray] | None = None,
) -> pd.DataFrame:
    """Tidy scores [qid, k, metric, value]: questions in input order, then k, then METRICS order.

    score_question's values to the last bit, for all questions at once (`_states`)."""
    if len(questions) != len(rankings):
        raise ValueError(f"rankings: got {len(rankings)} rankings for {len(questions)} questions")
    ks = _check_ks(ks)
    _check_threshold(frac_threshold)
    names = _names(token_bounds is not None)
    states = _states(evidence_table(questions, token_bounds), rankings, ks[-1], frac_threshold)
    values = np.stack([states[m][:, ks] for m in names], axis=2)  # questions x ks x names
    per_question = len(ks) * len(names)
    return pd.DataFrame(
        {
            "qid": qid_column(questions, per_question),
            "k": np.tile(np.repeat(np.array(ks, dtype=np.int64), len(names)), len(questions)),
            "metric": string_column(names, np.tile(np.arange(len(names)), len(ks) * len(questions))),
            "value": values.ravel(),
        }
    )


def _states(table: EvidenceTable, rankings: Sequence[Sequence[Hit]], depth: int,
            frac_threshold: float) -> dict[str, np.ndarray]:
    """Every per-k metric of every question after each rank: name -> (questions x depth + 1)
    array, column r the value of score_question at k = r (column 0: nothing retrieved).

    Why it equals `_values`: each evidence row is cut at every clipped hit's ends into segments,
    and a segment is covered from the first rank whose hit holds it, so the covered length after
    rank r sums the segments covered by then; a token piece is covered when every segment under
    it is, a token when its pieces are. Sums run rank by rank in `_values`' order, so floats agree
    to the bit. Alternatives (`table.owner`) are scored as questions of their own, each with its
    question's ranking, and every value is then the best of its question's (`evidence.best`)."""
    hits = RankedHits.of(rankings).top(depth)
    hits = hits if table.owner is None else hits.take(table.owner)
    nq = len(table.length)
    codes, _ = pd.factorize(np.concatenate([table.doc, table.span_doc, hits.doc_id]))
    row_doc, span_doc = codes[: len(table.doc)], codes[len(table.doc) : len(table.doc) + len(table.span_doc)]
    hq, hj = hits.question, hits.rank
    hdoc, hs, he, tok, tok_o200k = (np.zeros((nq, depth), dtype=np.int64) for _ in range(5))
    hdoc -= 1  # no hit at that rank
    hdoc[hq, hj] = codes[len(table.doc) + len(table.span_doc) :]
    hs[hq, hj] = hits.start
    he[hq, hj] = hits.end
    tok[hq, hj] = hits.sizes("cl100k_base")
    tok_o200k[hq, hj] = hits.sizes("o200k_base")
    ranks = np.arange(1, depth + 1)
    never = depth + 1

    # rows x ranks: which hits touch each evidence row, clipped to it
    q, s, e = table.question, table.start[:, None], table.end[:, None]
    Hs, He = hs[q], he[q]
    touch = (hdoc[q] == row_doc[:, None]) & (s < He) & (e > Hs)
    cs, ce = np.where(touch, np.maximum(Hs, s), s), np.where(touch, np.minimum(He, e), s)
    cuts = np.sort(np.concatenate([s, e, cs, ce], axis=1), axis=1)
    lo, hi = cuts[:, :-1], cuts[:, 1:]  # the segments of each row
    seg_first = np.full(lo.shape, never, dtype=np.int64)
    for j in range(depth - 1, -1, -1):  # the earliest rank wins
        seg_first[touch[:, j, None] & (cs[:, j, None] <= lo) & (hi <= ce[:, j, None])] = j + 1
    covered = _by_rank(np.broadcast_to(q[:, None], lo.shape), seg_first, hi - lo, nq, depth).astype(np.int64)

    first_touch = np.full(nq, never, dtype=np.int64)
    np.minimum.at(first_touch, q, np.where(touch.any(axis=1), touch.argmax(axis=1) + 1, never))
    sq = table.span_question
    holds = ((hdoc[sq] == span_doc[:, None]) & (hs[sq] <= table.span_start[:, None])
             & (table.span_end[:, None] <= he[sq]))
    all_held = np.zeros(nq, dtype=np.int64)  # the rank by which every answer span sits in one hit
    np.maximum.at(all_held, sq, np.where(holds.any(axis=1), holds.argmax(axis=1) + 1, never))

    zero = np.zeros((nq, 1), dtype=np.int64)
    retrieved = np.concatenate([zero, np.cumsum(np.where(hdoc >= 0, he - hs, 0), axis=1)], axis=1)
    length = table.length[:, None]
    dcg = np.zeros((nq, depth + 1))
    for r in range(1, depth + 1):
        dcg[:, r] = dcg[:, r - 1] + (covered[:, r] - covered[:, r - 1]) / table.length / log2(r + 1)
    at = np.concatenate([[0], ranks])[None, :]
    recall = covered / length
    out = {
        "hit": (first_touch[:, None] <= at).astype(np.float64),
        "hit_strict": (all_held[:, None] <= at).astype(np.float64),
        "hit_frac": (recall >= frac_threshold).astype(np.float64),
        "recall": recall,
        "mrr": np.where(first_touch[:, None] <= at, 1.0 / first_touch[:, None], 0.0),
        "ndcg": dcg,
        "precision": np.divide(covered, retrieved, out=np.zeros(covered.shape), where=retrieved > 0),
        "iou": covered / (retrieved + length - covered),
        "context_tokens": np.concatenate([zero, np.cumsum(tok, axis=1)], axis=1).astype(np.float64),
        "context_tokens_o200k": np.concatenate([zero, np.cumsum(tok_o200k, axis=1)], axis=1).astype(np.float64),
    }
    if table.tokens:
        out["recall_tokens"] = _recall_tokens(table, lo, hi, seg_first, nq, depth)
    return {m: best(v, table.owner) for m, v in out.items()}


def _by_rank(question: np.ndarray, first: np.ndarray, weight: np.ndarray, nq: int, depth: int) -> np.ndarray:
    """Per question, the total weight of the items first covered by rank r, for r = 0..depth."""
    slots = depth + 2  # ranks 0..depth, then never
    sums = np.bincount((question * slots + first).ravel(), weights=np.ravel(weight), minlength=nq * slots)
    return np.cumsum(sums.reshape(nq, slots), axis=1)[:, : depth + 1]


def _recall_tokens(table: EvidenceTable, lo: np.ndarray, hi: np.ndarray, seg_first: np.ndarray, nq: int,
                   depth: int) -> np.ndarray:
    """recall_tokens after each rank: a piece is covered by the rank its last segment is, a token
    by the rank of its last piece. (A segment of no length inside a piece is covered whenever the
    segments either side of it are: the hits covering those hold its point.)"""
    if not len(table.piece_row):
        return np.zeros((nq, depth + 1))
    rel_lo, rel_hi = lo - lo[:, :1], hi - lo[:, :1]  # offsets in their row
    stride = int(rel_hi.max()) + 1
    base = np.arange(len(lo))[:, None] * stride
    row_start = lo[table.piece_row, 0]
    p_lo = table.piece_row * stride + table.piece_lo - row_start
    p_hi = table.piece_row * stride + table.piece_hi - row_start
    a = np.searchsorted((base + rel_hi).ravel(), p_lo, side="right")  # the first segment ending after lo
    b = np.searchsorted((base + rel_lo).ravel(), p_hi, side="left")  # past the last segment starting before hi
    piece_first = np.maximum.reduceat(np.append(seg_first.ravel(), 0), np.ravel(np.column_stack([a, b])))[::2]
    starts = np.flatnonzero(np.diff(table.piece_token, prepend=-1))  # pieces are ordered by token
    token_first = np.maximum.reduceat(piece_first, starts)
    held = _by_rank(table.token_question, token_first, np.ones(len(token_first)), nq, depth)
    n = table.n_tokens[:, None]
    return np.divide(held, n, out=np.zeros(held.shape), where=n > 0)


def pack(ranked: Sequence[Hit], budget: int, encoding: str = "cl100k_base") -> list[Hit]:
    """The units handed to the LLM under a budget of `budget` tokens: the ranking in order until
    the next unit would exceed the budget. That unit is dropped whole, not cut, and packing stops
    there (no smaller unit further down jumps the queue): a retriever returns whole units, and a
    later unit ranked lower should not displace the order the ranking chose."""
    used = 0
    for n, hit in enumerate(ranked):
        used += hit.tokens[encoding]
        if used > budget:
            return list(ranked[:n])
    return list(ranked)


def check_budgets(budgets: Sequence[int], encoding: str) -> list[int]:
    if not budgets or any(isinstance(b, bool) or not isinstance(b, int | np.integer) or b < 1 for b in budgets):
        raise ValueError(f"budgets must be a non-empty list of integers >= 1 (tokens), got {list(budgets)!r}")
    if encoding not in BUDGET_ENCODINGS:
        raise ValueError(f"budget encoding must be one of {BUDGET_ENCODINGS}, got {encoding!r}")
    return sorted({int(b) for b in budgets})


def score_budgets(
    questions: Sequence[Question],
    rankings: Sequence[Sequence[Hit]],
    budgets: Sequence[int],
    encoding: str = "cl100k_base",
    token_bounds: Mapping[str, np.ndarray] | None = None,
) -> pd.DataFrame:
    """Tidy scores at equal context budgets [qid, k=0, budget, metric, value]: questions in input
    order, then budget, then BUDGET_METRICS order and the context tokens sent.

    Each budget scores the packed prefix (`pack`) with the per-k metrics at k = its length, so
    the definitions are those of score_question. Rankings are deduplicated units (a parent is one
    unit, counted once) and must be deep enough to fill the largest budget."""
    budgets = check_budgets(budgets, encoding)
    if len(questions) != len(rankings):
        raise ValueError(f"rankings: got {len(rankings)} rankings for {len(questions)} questions")
    sent = "context_tokens" if encoding == "cl100k_base" else "context_tokens_o200k"
    names = [m for m in (*BUDGET_METRICS, sent) if m in _names(token_bounds is not None)]
    # every packed context is a prefix of the ranking (`pack`): its length is how many leading
    # units fit, and the prefix is scored as the first that many ranks
    hits = RankedHits.of(rankings)
    used = np.full((len(hits), int(hits.lengths.max(initial=0))), np.inf)
    total = np.cumsum(hits.sizes(encoding))
    before = np.concatenate([[0], total])[hits.bounds[:-1]]  # tokens of the questions before each one
    used[hits.question, hits.rank] = total - np.repeat(before, hits.lengths)
    fits = (used[:, :, None] <= np.array(budgets)[None, None, :]).sum(axis=1)  # questions x budgets
    states = _states(evidence_table(questions, token_bounds), hits, max(1, int(fits.max(initial=0))), FRAC_THRESHOLD)
    values = np.stack([np.take_along_axis(states[m], fits, axis=1) for m in names], axis=2)  # q x budgets x names
    per_question = len(budgets) * len(names)
    return pd.DataFrame(
        {
            "qid": qid_column(questions, per_question),
            "k": np.zeros(len(questions) * per_question, dtype=np.int64),
            "budget": np.tile(np.repeat(np.array(budgets, dtype=np.int64), len(names)), len(questions)),
            "metric": string_column(names, np.tile(np.arange(len(names)), len(budgets) * len(questions))),
            "value": values.ravel(),
        }
    )


def precision_omega(evidence: Sequence[Span], chunk_spans: Sequence[Span],
                    alternatives: Sequence[Sequence[Span]] = ()) -> float:
    """Chroma's precision-Ω: |E ∩ C| / |E ∪ C|, C = union of every chunk that overlaps the evidence E.

    The best precision any retriever could reach with this chunking (it retrieves exactly the
    chunks it needs, and nothing else); k-independent. Overlapping chunks count once (a union).
    With `alternatives`, the best of `evidence`'s and theirs."""
    if alternatives:
        return max(precision_omega(e, chunk_spans) for e in (evidence, *alternatives))
    ev = evidence_intervals(evidence)
    needed = by_doc(c for c in chunk_spans if clip(ev.get(c.doc_id, []), c.start, c.end))
    inter = sum(overlap(ev[d], needed[d]) for d in needed)
    union = sum(total(v) for v in ev.values()) + sum(total(v) for v in needed.values()) - inter
    return inter / union


def score_omega(questions: Sequence[Question], chunk_spans: Sequence[Span],
                token_bounds: Mapping[str, np.ndarray] | None = None) -> pd.DataFrame:
    """Precision-Ω of every question as tidy rows [qid, k=OMEGA_K, metric=OMEGA, value]: the value of
    precision_omega to the last bit, for all questions at once (`_omega_all`).

    `chunk_spans` are all the spans the variant can return (Chunk.returned); a TokenBounds as
    `token_bounds` keeps the questions' prepared evidence between calls (as in score_rankings). A
    question with alternatives gets the best of theirs."""
    table = evidence_table(questions, token_bounds if isinstance(token_bounds, TokenBounds) else None)
    return pd.DataFrame({"qid": [q.qid for q in questions], "k": OMEGA_K, "metric": OMEGA,
                         "value": best(_omega_all(table, chunk_spans), table.owner)})


def _omega_all(table: EvidenceTable, chunk_spans: Sequence[Span]) -> np.ndarray:
    """Precision-Ω of every question of `table`, in numpy over all of them.

    Why it holds: documents are laid end to end on one line, so a chunk or an interval is a pair of
    integers. A chunk inside another changes no C (the outer one overlaps the evidence whenever
    the inner one does), so only the others are kept; their ends then rise with their starts.
    |E ∩ C| is |E ∩ U|, U the union of all chunks (a chunk covering an evidence character overlaps
    the evidence). The chunks overlapping [s, e) are one run lo..hi-1 of the sorted chunks, and the
    characters of [start_lo, end_hi-1) that any chunk covers are exactly those the run covers, so |C|
    is U's length over the union of those ranges: differences of U's cumulative length (`covered`)."""
    n_questions = len(table.length)
    if not len(chunk_spans) or not len(table.start):
        return np.zeros(n_questions)
    m = len(chunk_spans)
    starts = np.fromiter((c.start for c in chunk_spans), dtype=np.int64, count=m)
    ends = np.fromiter((c.end for c in chunk_spans), dtype=np.int64, count=m)
    codes, _ = pd.factorize(np.concatenate([np.array([c.doc_id for c in chunk_spans], dtype=object), table.doc]))
    extent = np.zeros(codes.max() + 1, dtype=np.int64)
    np.maximum.at(extent, codes, np.concatenate([ends, table.end]))
    at = np.concatenate([[0], np.cumsum(extent + 1)[:-1]])[codes]  # each document's place on the line
    starts, ends = starts + at[:m], ends + at[:m]
    order = np.lexsort((-ends, starts))  # by start, the longest first
    s_, e_ = starts[order], ends[order]
    outside = e_ > np.concatenate([[-1], np.maximum.accumulate(e_)[:-1]])  # inside no earlier chunk
    s_, e_ = s_[outside], e_[outside]
    n = len(s_)
    first = np.concatenate([[True], s_[1:] > e_[:-1]])  # a chunk that starts a piece of U
    u_start, u_end = s_[first], e_[np.concatenate([first[1:], [True]])]
    u_before = np.concatenate([[0], np.cumsum(u_end - u_start)])

    def covered(x: np.ndarray) -> np.ndarray:
        """|U ∩ [0, x)| on the line."""
        j = np.searchsorted(u_start, x, side="right") - 1
        jj = np.maximum(j, 0)
        return np.where(j < 0, 0, u_before[jj] + np.clip(x - u_start[jj], 0, u_end[jj] - u_start[jj]))

    s, e = table.start + at[m:], table.end + at[m:]
    inter = np.bincount(table.question, weights=covered(e) - covered(s), minlength=n_questions)
    lo, hi = np.searchsorted(e_, s, side="right"), np.searchsorted(s_, e, side="left")  # the run lo..hi-1
    run = hi > lo
    a, b = s_[np.minimum(lo, n - 1)], e_[np.maximum(hi - 1, 0)]
    ranges = np.bincount(table.question[run], minlength=n_questions)
    single = run & (ranges[table.question] == 1)
    needed = np.bincount(table.question[single], weights=(covered(b) - covered(a))[single], minlength=n_questions)
    several = np.flatnonzero(run & (ranges[table.question] > 1))  # rows of questions whose ranges may overlap
    for rows in np.split(several, np.flatnonzero(np.diff(table.question[several])) + 1) if len(several) else ():
        merged = np.array(merge(zip(a[rows].tolist(), b[rows].tolist(), strict=True)), dtype=np.int64)
        needed[table.question[rows[0]]] = (covered(merged[:, 1]) - covered(merged[:, 0])).sum()
    return inter / (table.length + needed - inter)


