"""Metrics on hand-computed cases (every edge case of docs/metrics.md) and against a brute-force
character-set reference on random spans."""

from __future__ import annotations

from math import log2

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.dataset import Dataset, Document, Hit, Question, Span
from workbench.evaluation.evidence import TokenBounds
from workbench.evaluation.metrics import (
    METRICS,
    OMEGA,
    pack,
    precision_omega,
    score_budgets,
    score_omega,
    score_question,
    score_rankings,
)
from workbench.results.drilldown import drilldown, miss_reason


def hit(doc: str, start: int, end: int, tokens: int = 0) -> Hit:
    return Hit(Span(doc, start, end), 0.5, 0, {"cl100k_base": tokens, "o200k_base": tokens + 1})


def table(evidence, ranked, ks, **kw) -> dict[tuple[str, int], float]:
    return {(m, k): v for m, k, v in score_question(evidence, ranked, ks, **kw)}


def at(t: dict, k: int) -> dict[str, float]:
    return {m: v for (m, kk), v in t.items() if kk == k}


def test_multiple_spans_are_jointly_required():
    # E = a[10,20) + a[30,40), |E| = 20. Ranks: off-document, partial on both, tiny, partial.
    ev = [Span("a", 10, 20), Span("a", 30, 40)]
    ranked = [hit("b", 0, 100, 7), hit("a", 15, 35, 5), hit("a", 0, 12, 3), hit("a", 25, 45, 4)]
    t = table(ev, ranked, [1, 2, 3, 4])
    assert at(t, 1) == {
        "hit": 0.0, "hit_strict": 0.0, "hit_frac": 0.0, "recall": 0.0, "mrr": 0.0, "ndcg": 0.0,
        "precision": 0.0, "iou": 0.0, "context_tokens": 7.0, "context_tokens_o200k": 8.0,
    }  # fmt: skip
    k2 = at(t, 2)  # rank 2 covers [15,20) and [30,35): 10 of 20 chars
    assert (k2["hit"], k2["hit_strict"], k2["hit_frac"], k2["recall"], k2["mrr"]) == (1.0, 0.0, 1.0, 0.5, 0.5)
    assert k2["ndcg"] == pytest.approx(0.5 / log2(3), rel=1e-12)
    assert k2["precision"] == pytest.approx(10 / 120, rel=1e-12)
    assert k2["iou"] == pytest.approx(10 / (120 + 10), rel=1e-12)
    k4 = at(t, 4)  # rank 3 adds [10,12), rank 4 adds [35,40): 17 of 20; [30,40) ⊂ [25,45) but [10,20) in no hit
    assert (k4["recall"], k4["hit_strict"], k4["context_tokens"]) == (0.85, 0.0, 19.0)
    assert k4["ndcg"] == pytest.approx(0.5 / log2(3) + 0.1 / log2(4) + 0.25 / log2(5), rel=1e-12)
    assert k4["precision"] == pytest.approx(17 / (100 + 20 + 12 + 20), rel=1e-12)
    assert k4["iou"] == pytest.approx(17 / (152 + 3), rel=1e-12)


def test_span_across_a_chunk_boundary_needs_both_chunks():
    ev = [Span("a", 90, 110)]
    t = table(ev, [hit("a", 100, 200), hit("a", 0, 100)], [1, 2])
    assert at(t, 1)["recall"] == 0.5 and at(t, 1)["ndcg"] == 0.5 and at(t, 1)["iou"] == 10 / 110
    k2 = at(t, 2)
    assert (k2["recall"], k2["hit_frac"], k2["hit_strict"], k2["mrr"]) == (1.0, 1.0, 0.0, 1.0)
    assert k2["ndcg"] == pytest.approx(0.5 + 0.5 / log2(3), rel=1e-12)
    assert (k2["precision"], k2["iou"]) == (0.1, 0.1)


def test_overlapping_hits_count_evidence_once_and_length_twice():
    ev = [Span("a", 50, 70)]
    t = table(ev, [hit("a", 40, 80, 10), hit("a", 45, 75, 8)], [1, 2])
    k1, k2 = at(t, 1), at(t, 2)
    assert (k1["recall"], k1["hit_strict"], k1["ndcg"], k1["precision"], k1["iou"]) == (1.0, 1.0, 1.0, 0.5, 0.5)
    assert (k2["recall"], k2["ndcg"], k2["context_tokens"]) == (1.0, 1.0, 18.0)  # the repeat adds no gain
    assert k2["precision"] == k2["iou"] == 20 / 70  # Chroma: denominators sum retrieved lengths


def test_evidence_longer_than_a_chunk_is_never_strictly_hit():
    ev = [Span("a", 0, 300)]
    t = table(ev, [hit("a", 100, 200), hit("a", 0, 100), hit("a", 500, 600)], [1, 2, 3])
    assert [at(t, k)["hit_frac"] for k in (1, 2, 3)] == [0.0, 1.0, 1.0]
    assert [at(t, k)["hit_strict"] for k in (1, 2, 3)] == [0.0, 0.0, 0.0]
    k3 = at(t, 3)
    assert k3["recall"] == 200 / 300 and k3["precision"] == 200 / 300 and k3["iou"] == 200 / 400
    assert k3["ndcg"] == pytest.approx(1 / 3 + (1 / 3) / log2(3), rel=1e-12)


def test_same_offsets_in_another_document_earn_nothing():
    t = table([Span("a", 0, 10)], [hit("b", 0, 10, 4)], [1])
    got = at(t, 1)
    assert (got.pop("context_tokens"), got.pop("context_tokens_o200k")) == (4.0, 5.0)
    assert got == dict.fromkeys([m for m in METRICS if not m.startswith("context") and m != "recall_tokens"], 0.0)


def test_k_beyond_the_ranking_and_empty_rankings():
    ev = [Span("a", 0, 10)]
    t = table(ev, [hit("a", 0, 20, 6)], [1, 5, 10])
    assert at(t, 1) == at(t, 5) == at(t, 10)
    assert at(t, 10)["precision"] == 0.5 and at(t, 10)["context_tokens"] == 6.0
    empty = at(table(ev, [], [3]), 3)
    assert set(empty.values()) == {0.0} and "recall_tokens" not in empty


def test_hit_strict_needs_every_span_inside_one_hit_each():
    ev = [Span("a", 10, 20), Span("b", 5, 8)]
    t = table(ev, [hit("a", 0, 50), hit("b", 6, 9), hit("b", 0, 8)], [1, 2, 3])
    assert [at(t, k)["hit_strict"] for k in (1, 2, 3)] == [0.0, 0.0, 1.0]
    assert at(t, 2)["recall"] == 12 / 13  # evidence spans in two documents: union over both


def test_hit_frac_threshold_is_inclusive_and_configurable():
    ev, ranked = [Span("a", 0, 10)], [hit("a", 5, 10)]
    assert at(table(ev, ranked, [1]), 1)["hit_frac"] == 1.0  # 0.5 >= 0.5
    assert at(table(ev, ranked, [1], frac_threshold=0.6), 1)["hit_frac"] == 0.0
    with pytest.raises(ValueError, match=r"frac_threshold must be in \(0, 1\]"):
        score_question(ev, ranked, [1], frac_threshold=0)


def test_recall_tokens_counts_tokens_whose_evidence_chars_are_all_retrieved():
    bounds = {"a": np.array([0, 5, 10, 15, 20, 25, 30])}
    # evidence [7,22) touches tokens [5,10) [10,15) [15,20) [20,25); hit [8,20) misses char 7 and 20-21
    t = table([Span("a", 7, 22)], [hit("a", 8, 20)], [1], token_bounds=bounds)
    assert at(t, 1)["recall_tokens"] == 0.5 and at(t, 1)["recall"] == 12 / 15
    # one token [0,5) holding two evidence pieces [0,3) and [4,5): covered only when both are
    bounds = {"a": np.array([0, 5, 10])}
    ev = [Span("a", 0, 3), Span("a", 4, 6)]
    assert at(table(ev, [hit("a", 0, 3)], [1], token_bounds=bounds), 1)["recall_tokens"] == 0.0
    assert at(table(ev, [hit("a", 0, 5)], [1], token_bounds=bounds), 1)["recall_tokens"] == 0.5
    with pytest.raises(KeyError, match="token_bounds: no boundaries for document 'b'"):
        score_question([Span("b", 0, 1)], [], [1], token_bounds=bounds)


def test_bad_arguments_name_the_parameter():
    with pytest.raises(ValueError, match="ks must be a non-empty list of integers >= 1"):
        score_question([Span("a", 0, 1)], [], [0])
    with pytest.raises(ValueError, match="evidence: a question needs at least one answer span"):
        score_question([], [], [1])
    with pytest.raises(ValueError, match="rankings: got 0 rankings for 1 questions"):
        score_rankings([Question("q", "?", (Span("a", 0, 1),))], [], [1])


def test_score_rankings_is_tidy_and_ordered():
    qs = [Question("q1", "?", (Span("a", 0, 10),)), Question("q2", "?", (Span("a", 50, 60),))]
    df = score_rankings(qs, [[hit("a", 0, 10)], []], [3, 1])
    assert list(df.columns) == ["qid", "k", "metric", "value"]
    assert str(df["k"].dtype) == "int64" and str(df["value"].dtype) == "float64"
    n = len(METRICS) - 1  # no recall_tokens without boundaries
    assert len(df) == 2 * 2 * n
    assert df["qid"].tolist() == ["q1"] * 2 * n + ["q2"] * 2 * n
    assert df["k"].tolist()[: 2 * n] == [1] * n + [3] * n
    assert df[(df.qid == "q1") & (df.metric == "mrr")]["value"].tolist() == [1.0, 1.0]
    assert df[(df.qid == "q2")]["value"].sum() == 0.0


def test_precision_omega_hand_cases():
    chunks = [Span("a", 0, 100), Span("a", 100, 200), Span("a", 200, 300)]
    assert precision_omega([Span("a", 90, 110)], chunks) == 20 / 200  # needs both chunks
    assert precision_omega([Span("a", 100, 150)], chunks) == 0.5  # a chunk ending where evidence starts is not needed
    assert precision_omega([Span("a", 60, 70)], [Span("a", 0, 100), Span("a", 50, 150)]) == 10 / 150  # union, not sum
    assert precision_omega([Span("a", 0, 10)], [Span("a", 20, 30)]) == 0.0  # evidence no chunk holds
    assert precision_omega([Span("a", 0, 50), Span("b", 0, 10)], chunks + [Span("b", 0, 40)]) == 60 / 140


def test_score_omega_matches_precision_omega_per_question():
    chunks = [Span("a", 0, 100), Span("a", 80, 180), Span("b", 0, 40), Span("a", 160, 300)]
    qs = [
        Question("q1", "?", (Span("a", 90, 110),)),
        Question("q2", "?", (Span("a", 170, 175), Span("b", 5, 6))),
        Question("q3", "?", (Span("c", 0, 5),)),
    ]
    df = score_omega(qs, chunks)
    assert list(df.columns) == ["qid", "k", "metric", "value"]
    assert set(df["k"]) == {0} and set(df["metric"]) == {OMEGA}
    assert df["value"].tolist() == [precision_omega(q.answers, chunks) for q in qs] == [20 / 180, 6 / 260, 0.0]



@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.builds(lambda d, s, n: Span(d, s, s + n), st.sampled_from("abc"), st.integers(0, 80),
                                   st.integers(1, 40)), min_size=1, max_size=4), min_size=1, max_size=8),
       st.lists(st.builds(lambda d, s, n: Span(d, s, s + n), st.sampled_from("abd"), st.integers(0, 100),
                          st.integers(1, 60)), max_size=12))
def test_score_omega_for_all_questions_at_once_is_precision_omega_of_each(evidences, chunks):
    """All questions scored at once (documents laid end to end, chunks inside others dropped, the
    chunks' union read by cumulative length) against the per-question definition, to the last bit:
    chunks nested, duplicated, touching, overlapping, in documents no evidence is in and back."""
    qs = [Question(f"q{i}", "?", tuple(ev)) for i, ev in enumerate(evidences)]
    want = [precision_omega(q.answers, chunks) for q in qs]
    assert score_omega(qs, chunks)["value"].tolist() == want
    bounds = TokenBounds({d: np.arange(0, 200) for d in "abcd"})  # its evidence memo: the same values
    assert score_omega(qs, chunks, bounds)["value"].tolist() == want
    assert score_omega(qs, chunks[::-1], bounds)["value"].tolist() == want  # chunk order is no input

SPANS = st.builds(lambda d, s, n: Span(d, s, s + n), st.sampled_from("abc"), st.integers(0, 80), st.integers(1, 40))
BOUNDS = {d: np.array([0, *range(3, 200, 7), 200]) for d in "abcd"}  # tokens of 7 characters, a short first one


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(SPANS, min_size=1, max_size=4), min_size=1, max_size=6),
       st.lists(st.lists(st.builds(lambda sp, t: Hit(Span(*sp), 0.5, 0, {"cl100k_base": t, "o200k_base": t + 2}),
                                   st.tuples(st.sampled_from("abd"), st.integers(0, 100), st.integers(1, 160))
                                   .filter(lambda x: x[1] < x[2]), st.integers(0, 40)), max_size=7),
                min_size=6, max_size=6),
       st.lists(st.integers(1, 9), min_size=1, max_size=4), st.booleans())
def test_scoring_every_question_at_once_is_score_question_of_each(evidences, rankings, ks, tokens):
    """score_rankings and score_budgets (every question at once, `_states`) against score_question
    per question and per packed budget, to the last bit: hits nested, duplicated, touching, in
    other documents, rankings shorter than k or empty, evidence of several spans and documents,
    with and without token boundaries."""
    qs = [Question(f"q{i}", "?", tuple(ev)) for i, ev in enumerate(evidences)]
    rankings = rankings[: len(qs)]
    bounds = TokenBounds(BOUNDS) if tokens else None
    want = [v for q, ranked in zip(qs, rankings, strict=True)
            for _, _, v in score_question(q.answers, ranked, ks, token_bounds=bounds)]
    assert score_rankings(qs, rankings, ks, token_bounds=bounds)["value"].tolist() == want
    budgets = [1, 10, 30, 100]
    got = score_budgets(qs, rankings, budgets, "o200k_base", bounds)
    want = []
    for q, ranked in zip(qs, rankings, strict=True):
        for b in budgets:
            packed = pack(ranked, b, "o200k_base")
            row = {m: v for m, _, v in score_question(q.answers, packed, [max(1, len(packed))], token_bounds=bounds)}
            want += [row[m] for m in got["metric"].unique()]
    assert got["value"].tolist() == want


# ---- brute force: the same definitions on explicit character sets --------------------------------


def chars(spans) -> set[tuple[str, int]]:
    return {(s.doc_id, i) for s in spans for i in range(s.start, s.end)}


def brute(evidence, ranked, k):
    top = ranked[:k]
    e = chars(evidence)
    got = chars(h.span for h in top)
    gains, seen = [], set()
    for h in top:
        new = (chars([h.span]) & e) - seen
        seen |= new
        gains.append(len(new) / len(e))
    touching = [i for i, h in enumerate(top, 1) if chars([h.span]) & e]
    retrieved = sum(len(h.span) for h in top)
    return {
        "hit": float(bool(touching)),
        "hit_strict": float(all(any(chars([s]) <= chars([h.span]) for h in top) for s in evidence)),
        "recall": len(e & got) / len(e),
        "mrr": 1 / touching[0] if touching else 0.0,
        "ndcg": sum(g / log2(i + 1) for i, g in enumerate(gains, 1)),
        "precision": len(e & got) / retrieved if retrieved else 0.0,
        "iou": len(e & got) / (retrieved + len(e - got)),
        "context_tokens": float(sum(h.tokens["cl100k_base"] for h in top)),
    }


spans = st.builds(
    lambda d, s, n: Span(d, s, s + n), st.sampled_from("ab"), st.integers(0, 60), st.integers(1, 30)
)
hits = st.builds(lambda s, t: Hit(s, 0.0, 0, {"cl100k_base": t, "o200k_base": t}), spans, st.integers(0, 50))


@settings(max_examples=50, deadline=None)
@given(st.lists(spans, min_size=1, max_size=3), st.lists(hits, max_size=6))
def test_interval_arithmetic_equals_character_sets(evidence, ranked):
    t = table(evidence, ranked, [1, 2, 4, 8])
    for k in (1, 2, 4, 8):
        got, want = at(t, k), brute(evidence, ranked, k)
        for m, v in want.items():
            assert got[m] == pytest.approx(v, rel=1e-12, abs=1e-15), (m, k)
        assert got["ndcg"] <= got["recall"] + 1e-12 and got["iou"] <= got["precision"] + 1e-12
    e = chars(evidence)
    needed = [h.span for h in ranked if chars([h.span]) & e]
    want_omega = len(e & chars(needed)) / len(e | chars(needed))
    assert precision_omega(evidence, [h.span for h in ranked]) == pytest.approx(want_omega, rel=1e-12, abs=1e-15)


# ---- drill-down ---------------------------------------------------------------------------------


@pytest.fixture
def tiny() -> Dataset:
    a = "The refund window is 30 days.  Shipping is free over $50.\nReturns need a receipt." * 2
    return Dataset("tiny", (Document("a", "A", a), Document("b", "B", "Unrelated text about cats.")), ())


def test_drilldown_table(tiny):
    q = Question("q", "refunds?", (Span("a", 4, 28),))  # "refund window is 30 days"
    ranked = [hit("b", 0, 26, 6), hit("a", 0, 16, 4), hit("a", 10, 60, 12)]
    df = drilldown(tiny, q, ranked, k=2, preview=12)
    assert df.columns.tolist() == [
        "rank", "score", "doc_id", "where", "start", "end", "tokens", "touches_evidence", "covered_chars", "text",
    ]  # fmt: skip
    assert df[["rank", "doc_id", "start", "end", "tokens", "touches_evidence", "covered_chars"]].values.tolist() == [
        [1, "b", 0, 26, 6, False, 0],
        [2, "a", 0, 16, 4, True, 12],
    ]
    assert df["text"].tolist() == ["Unrelated t…", "The refund …"]
    full = drilldown(tiny, q, ranked, k=10)
    assert full["covered_chars"].tolist() == [0, 12, 18]  # counted per hit, even when already covered
    assert full["text"][2] == "window is 30 days. Shipping is free over $50. Re"  # whitespace collapsed


def test_miss_reasons(tiny):
    q = Question("q", "refunds?", (Span("a", 4, 28), Span("a", 60, 70)))
    assert miss_reason(q, [], 5) == "nothing retrieved"
    assert miss_reason(q, [hit("b", 0, 26)], 5).startswith("evidence in another document not retrieved")
    assert miss_reason(q, [hit("b", 0, 26), hit("a", 100, 120)], 5) == (
        "retrieved the right document but not the span: 1 hit(s) in the evidence document, nearest 30 chars away"
    )
    assert miss_reason(q, [hit("a", 0, 16)], 5) == "partial coverage: 12 of 34 evidence chars (35%)"
    assert miss_reason(q, [hit("a", 0, 40), hit("a", 50, 80)], 5) == "complete"
    assert miss_reason(q, [hit("b", 0, 5), hit("a", 0, 40), hit("a", 50, 80)], 2).startswith("partial coverage")


def test_drilldown_names_where_each_hit_is():
    from pathlib import Path

    from conftest import REPO, span_of

    from workbench.ingest import READERS

    folder = REPO / "tests" / "data" / "formats"
    pdf, html = (READERS[Path(n).suffix](folder / n, n) for n in ("handbook.pdf", "page.html"))
    ds = Dataset("formats", (pdf, html), ())
    spans = [span_of(html, "allow_credentials"), span_of(pdf, "Every invoice")]
    ranked = [hit(s.doc_id, s.start, s.end) for s in spans]
    df = drilldown(ds, Question("q", "credentials?", spans[:1]), ranked, k=2)
    assert df["where"].tolist() == ["page.html · CORS (Cross-Origin Resource Sharing) > Options",
                                    "handbook.pdf · page 2"]
