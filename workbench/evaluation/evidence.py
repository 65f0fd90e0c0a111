"""A question's evidence as the metrics read it: its answer spans merged into character intervals
per document, with interval arithmetic, and (for recall_tokens) the tokens they touch.

Why apart from the metrics: every metric and every variant reads the same prepared evidence, so it
is prepared once per question (TokenBounds keeps it) and laid out as flat arrays for scoring all
questions at once (EvidenceTable). A question with alternatives is one set of evidence per alternative,
scored alike and then the best taken (metrics.py), so the arrays hold alternatives, not questions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from workbench.dataset import Dataset, Question, Span

Intervals = list[tuple[int, int]]  # sorted, disjoint, non-empty half-open [start, end)


def merge(intervals: Iterable[tuple[int, int]]) -> Intervals:
    """Union of intervals as sorted disjoint ones (touching intervals merge; empty ones vanish)."""
    out: Intervals = []
    for s, e in sorted(intervals):
        if e <= s:
            continue
        if out and s <= out[-1][1]:
            if e > out[-1][1]:
                out[-1] = (out[-1][0], e)
        else:
            out.append((s, e))
    return out


def total(intervals: Intervals) -> int:
    return sum(e - s for s, e in intervals)


def clip(intervals: Intervals, start: int, end: int) -> Intervals:
    """The parts of `intervals` inside [start, end) (positive length only)."""
    return [(max(s, start), min(e, end)) for s, e in intervals if s < end and e > start]


def overlap(a: Intervals, b: Intervals) -> int:
    """|a ∩ b| for two sorted disjoint interval lists (two-pointer sweep)."""
    i = j = n = 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        n += max(0, hi - lo)
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return n


def by_doc(spans: Iterable[Span]) -> dict[str, Intervals]:
    """Spans grouped per document and merged: the character set they cover."""
    raw: dict[str, list[tuple[int, int]]] = {}
    for s in spans:
        raw.setdefault(s.doc_id, []).append((s.start, s.end))
    return {d: merge(iv) for d, iv in raw.items()}


def evidence_intervals(evidence: Sequence[Span]) -> dict[str, Intervals]:
    if not evidence:
        raise ValueError("evidence: a question needs at least one answer span")
    for s in evidence:
        if not 0 <= s.start < s.end:
            raise ValueError(f"evidence: span {s} must satisfy 0 <= start < end")
    return by_doc(evidence)


class EvidenceTokens:
    """Evidence tokens of one question and, per token, its evidence characters.

    A token (from a tokenizer's char boundaries) is an evidence token if it overlaps the evidence;
    it counts as covered when all of its evidence characters are retrieved. Built once per
    question, so each k costs a few searchsorted calls."""

    def __init__(self, ev: Mapping[str, Intervals], bounds: Mapping[str, np.ndarray]):
        self.pieces: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self.n = 0
        for doc, ivs in ev.items():
            if doc not in bounds:
                raise KeyError(f"token_bounds: no boundaries for document {doc!r}")
            b = np.asarray(bounds[doc])
            ids, lo, hi = [], [], []
            for s, e in ivs:
                first = int(np.searchsorted(b, s, side="right")) - 1
                last = int(np.searchsorted(b, e, side="left"))  # tokens first .. last-1 overlap [s, e)
                for t in range(first, last):
                    a, z = max(int(b[t]), s), min(int(b[t + 1]), e)
                    if z > a:
                        ids.append(t)
                        lo.append(a)
                        hi.append(z)
            self.pieces[doc] = tuple(np.array(x, dtype=np.int64) for x in (ids, lo, hi))
            self.n += len(set(ids))

    def recall(self, covered: Mapping[str, Intervals]) -> float:
        hit = 0
        for doc, (ids, lo, hi) in self.pieces.items():
            cov = covered.get(doc, [])
            if not cov or not len(ids):
                continue
            cs = np.array([s for s, _ in cov])
            ce = np.array([e for _, e in cov])
            j = np.searchsorted(cs, lo, side="right") - 1
            inside = (j >= 0) & (ce[np.maximum(j, 0)] >= hi)
            missing = set(ids[~inside].tolist())
            hit += len(set(ids.tolist()) - missing)
        return hit / self.n if self.n else 0.0


class Evidence:
    """One question's evidence prepared for scoring: its spans, their union per document, its
    length in characters and, given token boundaries, its evidence tokens."""

    def __init__(self, evidence: Sequence[Span], bounds: Mapping[str, np.ndarray] | None):
        self.spans = tuple(evidence)
        self.by_doc = evidence_intervals(self.spans)
        self.length = sum(total(v) for v in self.by_doc.values())
        self.tokens = None if bounds is None else EvidenceTokens(self.by_doc, bounds)

    def recall_tokens(self, covered: Mapping[str, Intervals], covered_len: int) -> float:
        """EvidenceTokens.recall, answered without it when nothing or everything is covered."""
        if not covered_len:
            return 0.0
        if covered_len == self.length and self.tokens.n:
            return 1.0
        return self.tokens.recall(covered)


class TokenBounds(dict[str, np.ndarray]):
    """doc_id -> token boundaries (the `token_bounds` of score_question), which also keeps each
    question's prepared evidence once found: a sweep scores the same questions for every variant."""

    def __init__(self, bounds: Mapping[str, np.ndarray]):
        super().__init__(bounds)
        self._evidence: dict[tuple[Span, ...], Evidence] = {}
        self._questions: Sequence[Question] | None = None  # the last questions `prepared` was asked for
        self._prepared: list[Evidence] = []
        self._table: EvidenceTable | None = None

    def evidence(self, evidence: Sequence[Span]) -> Evidence:
        key = tuple(evidence)
        if key not in self._evidence:
            self._evidence[key] = Evidence(key, self)
        return self._evidence[key]

    def prepared(self, questions: Sequence[Question]) -> list[Evidence]:
        """Each alternative's prepared evidence (`prepare_all`), kept for the same questions (the same
        sequence, as a sweep scores its dataset's questions for every variant)."""
        if questions is not self._questions:
            self._questions, self._table = questions, None
            self._prepared = [self.evidence(alt) for q in questions for alt in q.any_of]
        return self._prepared

    def evidence_table(self, questions: Sequence[Question]) -> EvidenceTable:
        """The questions' evidence as flat arrays, kept as `prepared` is."""
        prepared = self.prepared(questions)
        if self._table is None:
            self._table = EvidenceTable(prepared, owners(questions))
        return self._table


def owners(questions: Sequence[Question]) -> np.ndarray | None:
    """The question of each alternative, in order, where some question has alternatives; None where
    each has one, so that such questions are scored as they always were, with nothing to reduce."""
    if not any(q.alternatives for q in questions):
        return None
    return np.repeat(np.arange(len(questions)), [len(q.any_of) for q in questions])


class EvidenceTable:
    """The evidence of many questions as flat arrays: what score_omega and `_states` read to score
    every question at once. Each prepared evidence is one "question" here: a question's, or, where
    `owner` is given, one alternative's, `owner` naming its question (alternatives of one question
    consecutive). Rows are the merged evidence intervals (question, doc, start, end); `span_*` the
    answer spans as given (hit_strict); with token boundaries, `piece_*` each evidence token's evidence
    characters within one row, ordered by token (`piece_token`)."""

    def __init__(self, prepared: Sequence[Evidence], owner: np.ndarray | None = None):
        self.owner = owner
        rows = [(i, doc, s, e) for i, ev in enumerate(prepared) for doc, ivs in ev.by_doc.items() for s, e in ivs]
        question, doc, start, end = zip(*rows, strict=True) if rows else ((), (), (), ())
        self.question = np.array(question, dtype=np.int64)
        self.doc = np.array(doc, dtype=object)
        self.start, self.end = np.array(start, dtype=np.int64), np.array(end, dtype=np.int64)
        self.length = np.array([ev.length for ev in prepared], dtype=np.int64)  # |E| per question
        spans = [(i, a.doc_id, a.start, a.end) for i, ev in enumerate(prepared) for a in ev.spans]
        self.span_question = np.array([x[0] for x in spans], dtype=np.int64)
        self.span_doc = np.array([x[1] for x in spans], dtype=object)
        self.span_start = np.array([x[2] for x in spans], dtype=np.int64)
        self.span_end = np.array([x[3] for x in spans], dtype=np.int64)
        self.tokens = bool(prepared) and prepared[0].tokens is not None
        if self.tokens:
            self._pieces(prepared)

    def _pieces(self, prepared: Sequence[Evidence]) -> None:
        """The evidence token pieces of EvidenceTokens, each with its row and its token's number
        (tokens numbered across all questions, a token of two rows of one question once)."""
        row, token, lo, hi, n = [], [], [], [], []
        first_row, tokens_before = 0, 0
        for ev in prepared:
            n.append(ev.tokens.n)
            for doc, ivs in ev.by_doc.items():
                ids, a, z = ev.tokens.pieces[doc]
                starts = np.array([s for s, _ in ivs], dtype=np.int64)
                row.append(first_row + np.searchsorted(starts, a, side="right") - 1)
                distinct, which = np.unique(ids, return_inverse=True)
                token.append(tokens_before + which)
                lo.append(a)
                hi.append(z)
                first_row += len(ivs)
                tokens_before += len(distinct)
        order = np.argsort(np.concatenate(token), kind="stable") if token else np.zeros(0, dtype=np.int64)
        self.piece_row, self.piece_token, self.piece_lo, self.piece_hi = (
            np.concatenate(x)[order] if x else np.zeros(0, dtype=np.int64) for x in (row, token, lo, hi))
        self.token_question = np.repeat(np.arange(len(n)), n)
        self.n_tokens = np.array(n, dtype=np.int64)  # distinct evidence tokens per question


def prepare(evidence: Sequence[Span], token_bounds: Mapping[str, np.ndarray] | None) -> Evidence:
    if isinstance(token_bounds, TokenBounds):
        return token_bounds.evidence(evidence)
    return Evidence(evidence, token_bounds)


def prepare_all(questions: Sequence[Question], token_bounds: Mapping[str, np.ndarray] | None) -> list[Evidence]:
    """Every alternative's prepared evidence, questions in order (one each, but for alternatives)."""
    if isinstance(token_bounds, TokenBounds):
        return token_bounds.prepared(questions)
    return [Evidence(alt, token_bounds) for q in questions for alt in q.any_of]


def evidence_table(questions: Sequence[Question], token_bounds: Mapping[str, np.ndarray] | None) -> EvidenceTable:
    """The questions' evidence table, kept by a TokenBounds between calls."""
    if isinstance(token_bounds, TokenBounds):
        return token_bounds.evidence_table(questions)
    return EvidenceTable(prepare_all(questions, token_bounds), owners(questions))


def best(values: np.ndarray, owner: np.ndarray | None) -> np.ndarray:
    """Each question's best value (along the first axis) over its alternatives' rows; `values` as it is
    when each question has one (`owner` None)."""
    if owner is None:
        return values
    return np.maximum.reduceat(values, np.flatnonzero(np.diff(owner, prepend=-1)), axis=0)


def token_bounds(dataset: Dataset, tokenizer: str = "cl100k_base") -> TokenBounds:
    """Token boundaries of every document, the input of "recall_tokens" (compute once per dataset)."""
    from workbench.core.tokens import get_tokenizer

    tok = get_tokenizer(tokenizer)
    return TokenBounds({d.doc_id: tok.boundaries(d.text) for d in dataset.documents})
