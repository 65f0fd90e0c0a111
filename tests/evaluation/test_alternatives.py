"""Evidence as alternatives: every metric of a question is the best over its alternatives, scored for all
questions at once as score_question scores each, and a question without alternatives scores as before."""

from __future__ import annotations

from math import log2

import numpy as np
import pandas as pd
import pytest
from conftest import REPO
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.dataset import Dataset, Hit, Question, Span
from workbench.evaluation import evidence, scoring
from workbench.evaluation.evidence import TokenBounds
from workbench.evaluation.metrics import (
    pack,
    precision_omega,
    score_budgets,
    score_omega,
    score_question,
    score_rankings,
)
from workbench.evaluation.settings import Settings
from workbench.ingest import load_dataset

SQUAD = REPO / "tests" / "data" / "squad_v11_dev"
GOLDEN = REPO / "tests" / "data" / "golden" / "squad_v11_dev_scores.parquet"
SETTINGS = Settings(ks=(1, 3, 5, 10), budgets=(64, 256, 1024))


def windows(ds: Dataset, size: int = 200, step: int = 150) -> list[Span]:
    """Overlapping fixed windows of every document: the spans a variant could return."""
    return [Span(d.doc_id, s, min(s + size, len(d.text))) for d in ds.documents for s in range(0, len(d.text), step)]


def rankings(ds: Dataset, spans: list[Span], depth: int = 12) -> list[list[Hit]]:
    """A ranking per question, the same on any code: a seeded shuffle of the windows with one holding the
    start of the question's first answer put at rank i % 6, so that every metric takes many values."""
    out = []
    for i, q in enumerate(ds.questions):
        order = [spans[j] for j in np.random.default_rng(i).permutation(len(spans))[:depth]]
        first = q.answers[0]
        holding = next(s for s in spans if s.doc_id == first.doc_id and s.start <= first.start < s.end)
        order = [s for s in order if s != holding]
        order.insert(i % 6, holding)
        out.append([Hit(s, 1.0 / (r + 1), r, {"cl100k_base": len(s) // 4 + 1, "o200k_base": len(s) // 5 + 1})
                    for r, s in enumerate(order[:depth])])
    return out


def scores(ds: Dataset) -> pd.DataFrame:
    """Every metric at every cut-off of SQuAD's excerpt, as a sweep scores a variant."""
    spans = windows(ds)
    return scoring.score(ds.questions, rankings(ds, spans), spans, SETTINGS, evidence.token_bounds(ds))


def test_questions_without_alternatives_score_exactly_as_before() -> None:
    """The per-question table of tests/data/squad_v11_dev (130 questions, `alt_answers` read as references
    only) equals, bit for bit, the one the code before alternatives wrote (tests/data/golden/)."""
    ds = load_dataset(SQUAD)
    assert not any(q.alternatives for q in ds.questions)
    pd.testing.assert_frame_equal(scores(ds), pd.read_parquet(GOLDEN), check_exact=True)


def hit(doc: str, start: int, end: int, tokens: int) -> Hit:
    return Hit(Span(doc, start, end), 0.5, 0, {"cl100k_base": tokens, "o200k_base": tokens + 1})


def test_each_metric_is_its_best_alternative_and_costs_stay_what_was_sent() -> None:
    """The code holds a[10, 20), the page b[0, 10); the ranking returns the page first, then part of the code.
    Labelled in the code alone, rank 1 finds nothing; with the page as an alternative, everything."""
    code, page = [Span("a", 10, 20)], [Span("b", 0, 10)]
    ranked = [hit("b", 0, 30, 7), hit("a", 0, 15, 4)]
    alone = {(m, k): v for m, k, v in score_question(code, ranked, [1, 2])}
    both = {(m, k): v for m, k, v in score_question(code, ranked, [1, 2], alternatives=[page])}
    assert (alone["recall", 1], alone["mrr", 2], alone["recall", 2]) == (0.0, 0.5, 0.5)
    assert {m: v for (m, k), v in both.items() if k == 1} == {
        "hit": 1.0, "hit_strict": 1.0, "hit_frac": 1.0, "recall": 1.0, "mrr": 1.0, "ndcg": 1.0, "precision": 10 / 30,
        "iou": 10 / 30, "context_tokens": 7.0, "context_tokens_o200k": 8.0}
    assert (both["recall", 2], both["mrr", 2], both["precision", 2], both["context_tokens", 2]) == (
        1.0, 1.0, 10 / 45, 11.0)  # the page's precision (10 of 45 retrieved), the code's is 5 of 45
    assert both["ndcg", 2] == 1.0 > alone["ndcg", 2] == pytest.approx(0.5 / log2(3))
    q = Question("q", "?", tuple(code), alternatives=(tuple(page),))
    assert score_rankings([q], [ranked], [1, 2])["value"].tolist() == [v for _, _, v in
                                                                      score_question(code, ranked, [1, 2],
                                                                                     alternatives=[page])]
    chunks = [Span("a", 0, 40), Span("b", 0, 20)]
    assert score_omega([q], chunks)["value"].tolist() == [precision_omega(code, chunks, [page])] == [0.5]


SPANS = st.builds(lambda d, s, n: Span(d, s, s + n), st.sampled_from("abc"), st.integers(0, 80), st.integers(1, 40))
EVIDENCE = st.lists(SPANS, min_size=1, max_size=3).map(tuple)
BOUNDS = {d: np.array([0, *range(3, 200, 7), 200]) for d in "abcd"}  # tokens of 7 characters, a short first one
HITS = st.lists(st.builds(lambda sp, t: Hit(Span(*sp), 0.5, 0, {"cl100k_base": t, "o200k_base": t + 2}),
                          st.tuples(st.sampled_from("abd"), st.integers(0, 100), st.integers(1, 160))
                          .filter(lambda x: x[1] < x[2]), st.integers(0, 40)), max_size=7)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(EVIDENCE, st.lists(EVIDENCE, max_size=2)), min_size=1, max_size=5),
       st.lists(HITS, min_size=5, max_size=5), st.lists(st.integers(1, 9), min_size=1, max_size=3), st.booleans(),
       st.lists(SPANS, max_size=10))
def test_scoring_all_questions_at_once_takes_the_best_alternative_as_score_question_does(
        labels, rankings, ks, tokens, chunks) -> None:
    """score_rankings, score_budgets and score_omega (every question at once, vectorised) against the
    definition (score_question and precision_omega with `alternatives`, itself the best of each
    alternative scored alone), to the last bit, questions with and without alternatives mixed."""
    qs = [Question(f"q{i}", "?", answers, alternatives=tuple(alts)) for i, (answers, alts) in enumerate(labels)]
    rankings = rankings[: len(qs)]
    bounds = TokenBounds(BOUNDS) if tokens else None
    want = [v for q, ranked in zip(qs, rankings, strict=True)
            for _, _, v in score_question(q.answers, ranked, ks, token_bounds=bounds, alternatives=q.alternatives)]
    assert score_rankings(qs, rankings, ks, token_bounds=bounds)["value"].tolist() == want
    each = [[v for _, _, v in score_question(alt, rankings[0], ks, token_bounds=bounds)] for alt in qs[0].any_of]
    assert want[: len(each[0])] == [max(vs) for vs in zip(*each, strict=True)]
    got = score_budgets(qs, rankings, [1, 10, 100], "o200k_base", bounds)
    want = []
    for q, ranked in zip(qs, rankings, strict=True):
        for b in [1, 10, 100]:
            packed = pack(ranked, b, "o200k_base")
            row = {m: v for m, _, v in score_question(q.answers, packed, [max(1, len(packed))], token_bounds=bounds,
                                                      alternatives=q.alternatives)}
            want += [row[m] for m in got["metric"].unique()]
    assert got["value"].tolist() == want
    assert score_omega(qs, chunks, bounds)["value"].tolist() == [precision_omega(q.answers, chunks, q.alternatives)
                                                                 for q in qs]
