"""Our metrics against independent references: LlamaIndex's HitRate/MRR/NDCG, the textbook nDCG,
and Chroma's precision-Ω and FixedTokenChunker (re-implemented in bench/chroma_metrics.py), on real
chunks of the bundled chroma_small data; and ranx's hit_rate/MRR/nDCG/recall on real sweeps."""

from __future__ import annotations

import itertools
from math import log2
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO
from hypothesis import given, settings
from hypothesis import strategies as st
from llama_index.core.evaluation.retrieval.metrics import MRR, NDCG, HitRate
from ranx import Qrels, Run, evaluate

from bench.chroma_metrics import chroma_locate, chroma_omega, chroma_split
from workbench.chunkers import ChunkEnv, run_strategy
from workbench.core.chunk import Chunk
from workbench.dataset import Dataset, Hit, Span
from workbench.evaluation.metrics import score_omega, score_question
from workbench.ingest import load_dataset
from workbench.models.embed import Embedder
from workbench.retrieval.index import IndexStore
from workbench.retrieval.search import search
from workbench.run.session import sweep
from workbench.variant import Variant, parse_variant

DATA = REPO / "data" / "chroma_small"
KS = (1, 3, 5, 10)


@pytest.fixture(scope="module")
def speech() -> Dataset:
    return load_dataset(DATA).select(doc_ids=["state_of_the_union"])


def chunk(dataset: Dataset, size: int, overlap: int) -> list[Chunk]:
    params = {"size": size, "overlap": overlap, "unit": "tokens", "tokenizer": "cl100k_base"}
    return [c for d in dataset.documents for c in run_strategy("fixed", params, d, ChunkEnv())]


def as_hits(chunks: list[Chunk], order) -> list[Hit]:
    no_tokens = {"cl100k_base": 0, "o200k_base": 0}
    return [Hit(chunks[i].returned, 1.0 / (r + 1), int(i), no_tokens) for r, i in enumerate(order)]


def overlapping_ids(evidence, chunks: list[Chunk]) -> list[str]:
    """LlamaIndex's expected_ids: the chunks whose returned span overlaps the evidence."""
    return [
        str(i)
        for i, c in enumerate(chunks)
        if any(c.doc_id == e.doc_id and c.start < e.end and e.start < c.end for e in evidence)
    ]


def test_hit_and_mrr_equal_llamaindex(speech):
    """Our hit@k is HitRate and our mrr@k is MRR (default, non-granular modes) on ids, when
    expected_ids are the chunks overlapping the evidence and retrieved_ids the top-k chunk ids."""
    chunks = chunk(speech, 100, 20)
    rng = np.random.default_rng(0)
    hits_seen = 0
    for q in speech.questions:
        order = rng.permutation(len(chunks))[:10]
        ranked = as_hits(chunks, order)
        ours = {(m, k): v for m, k, v in score_question(q.answers, ranked, KS)}
        expected = overlapping_ids(q.answers, chunks)
        for k in KS:
            retrieved = [str(h.chunk_id) for h in ranked[:k]]
            assert ours["hit", k] == HitRate().compute(expected_ids=expected, retrieved_ids=retrieved).score
            assert ours["mrr", k] == MRR().compute(expected_ids=expected, retrieved_ids=retrieved).score
        hits_seen += ours["hit", 10] > 0
    assert 10 < hits_seen < len(speech.questions)  # both outcomes were exercised


def test_ndcg_equals_llamaindex_when_relevance_is_binary(speech):
    """With one evidence span that is exactly one chunk (no overlap between chunks), every hit
    covers all or none of the evidence: our graded nDCG reduces to LlamaIndex's binary NDCG with
    one expected id (IDCG = 1)."""
    chunks = chunk(speech, 50, 0)
    rng = np.random.default_rng(1)
    for target in rng.choice(len(chunks), size=40, replace=False):
        evidence = [chunks[target].span]
        order = rng.permutation(len(chunks))[:10]
        if rng.random() < 0.7:  # put the target at a random rank most of the time
            order = np.insert(order[order != target], rng.integers(0, 10), target)[:10]
        ranked = as_hits(chunks, order)
        ours = {(m, k): v for m, k, v in score_question(evidence, ranked, KS)}
        for k in KS:
            retrieved = [str(h.chunk_id) for h in ranked[:k]]
            ref = NDCG().compute(expected_ids=[str(target)], retrieved_ids=retrieved).score
            assert ours["ndcg", k] == pytest.approx(ref, rel=1e-12)


def textbook_ndcg(evidence, ranked, k, ideal) -> float:
    """Järvelin & Kekäläinen: DCG@k = sum rel_i / log2(i + 1), nDCG = DCG / IDCG, where rel_i is
    the share of the evidence characters first retrieved at rank i."""
    ev = {(e.doc_id, i) for e in evidence for i in range(e.start, e.end)}
    seen: set = set()
    dcg = 0.0
    for i, h in enumerate(ranked[:k], 1):
        new = {(h.span.doc_id, j) for j in range(h.span.start, h.span.end)} & ev - seen
        seen |= new
        dcg += len(new) / len(ev) / log2(i + 1)
    return dcg / ideal


span = st.builds(lambda s, n: Span("a", s, s + n), st.integers(0, 40), st.integers(1, 25))


@settings(max_examples=50, deadline=None)
@given(st.lists(span, min_size=1, max_size=2), st.lists(span, min_size=1, max_size=4))
def test_ndcg_is_textbook_with_ideal_dcg_one(evidence, spans):
    """IDCG = 1 is the best DCG any ranking of any spans can reach: checked by brute force over
    every ordering of the candidate hits plus one span holding all the evidence."""
    hits = [Hit(s, 0.0, i, {"cl100k_base": 0, "o200k_base": 0}) for i, s in enumerate(spans)]
    ours = {(m, k): v for m, k, v in score_question(evidence, hits, KS)}
    for k in KS:
        assert ours["ndcg", k] == pytest.approx(textbook_ndcg(evidence, hits, k, ideal=1.0), rel=1e-12, abs=1e-15)
    whole = Span("a", min(e.start for e in evidence), max(e.end for e in evidence))
    pool = [*hits, Hit(whole, 0.0, -1, {"cl100k_base": 0, "o200k_base": 0})]
    best = max(textbook_ndcg(evidence, list(p), 4, ideal=1.0) for p in itertools.permutations(pool))
    assert best == pytest.approx(1.0, rel=1e-12)
    assert max(textbook_ndcg(evidence, list(p), 4, ideal=1.0) for p in itertools.permutations(hits)) <= 1 + 1e-12


def test_precision_omega_and_fixed_chunker_match_chroma_definitions(speech):
    """One small config on one corpus: Chroma's FixedTokenChunker yields exactly our chunk texts,
    their precision-Ω (strict overlap) on our chunks equals ours per question, and their whole
    pipeline (text search to place chunks, touching chunks counted) stays within 0.5 point."""
    doc = speech.documents[0]
    ours = chunk(speech, 100, 50)
    theirs = chroma_split(doc.text, 100, 50)
    assert [c.text for c in ours] == theirs

    mine = score_omega(speech.questions, [c.returned for c in ours])["value"].to_numpy()
    spans = [(c.start, c.end) for c in ours]
    excerpts = [[(a.start, a.end) for a in q.answers] for q in speech.questions]
    assert [chroma_omega(ex, spans, touching=False) for ex in excerpts] == mine.tolist()

    placed = [chroma_locate(doc.text, t) for t in theirs]
    assert all(p is not None for p in placed)
    pipeline = np.mean([chroma_omega(ex, [(s, e) for s, e, _ in placed]) for ex in excerpts])
    assert abs(pipeline - mine.mean()) < 0.005
    assert 0.1 < mine.mean() < 0.5  # ~100-token chunks around ~40-token excerpts


# --- ranx -------------------------------------------------------------------------------------
# Relevance at the character-span level: a returned unit (Hit.span, a parent counted once) is
# relevant to a question when it shares at least one character with the question's evidence;
# the question's qrels are all the units of that variant (ChunkIndex.spans) overlapping it, with
# relevance 1. Under that definition our hit@k is ranx's hit_rate@k and our mrr@k is ranx's
# mrr@k, always. Our nDCG is graded (the share of evidence characters first covered at each rank,
# IDCG = 1) and our recall counts characters, so ranx's ndcg@k and recall@k (binary, over units)
# coincide with ours only when a single unit overlaps the evidence and holds all of it.

RANX_GRID = ("fixed:size=48,overlap=16", "recursive:size=64", "langchain_recursive:chunk_size=64,chunk_overlap=16",
             "parent_child:child_size=32,child=fixed,parent_size=128")


def unit_id(s: Span) -> str:
    return f"{s.doc_id}:{s.start}:{s.end}"


def ranx_scores(dataset: Dataset, variant: Variant, embedder: Embedder, store: IndexStore, ks) -> tuple[dict, dict]:
    """ranx's per-question scores of the variant's rankings, and which questions have a single
    relevant unit holding all their evidence."""
    index = store.get(variant, dataset, embedder)
    ranked = search(index, dataset.questions, embedder.encode([q.question for q in dataset.questions]), max(ks))
    qrels, single = {}, {}
    for q in dataset.questions:
        units = [s for s in index.spans if any(s.doc_id == a.doc_id and s.start < a.end and a.start < s.end
                                                for a in q.answers)]
        qrels[q.qid] = {unit_id(s): 1 for s in units}
        single[q.qid] = len(qrels[q.qid]) == 1 and all(units[0].start <= a.start and a.end <= units[0].end
                                                       for a in q.answers)
    run = Run({q.qid: {unit_id(h.span): float(len(r) - i) for i, h in enumerate(r)}
               for q, r in zip(dataset.questions, ranked, strict=True)})
    names = [f"{m}@{k}" for m in ("hit_rate", "mrr", "ndcg", "recall") for k in ks]
    evaluate(Qrels(qrels), run, names)
    return run.scores, single


@pytest.mark.parametrize("data", ["tiny", "chroma_small"])
def test_hit_mrr_ndcg_recall_equal_ranx_on_a_real_sweep(data, request, embedder: Embedder, tmp_path: Path):
    dataset = request.getfixturevalue(data)
    if data == "chroma_small":
        dataset = dataset.select(doc_ids=["state_of_the_union"], max_questions=30)
    variants = [parse_variant(v) for v in RANX_GRID]
    store = IndexStore(tmp_path)
    result = sweep(dataset, variants, ks=KS, embedder=embedder, store=store, progress=False, budgets=())
    pq = result.per_question
    ours = pq[pq.k > 0].set_index(["key", "qid", "metric", "k"])["value"]
    compared = coinciding = 0
    for v in variants:
        theirs, single = ranx_scores(dataset, v, embedder, store, KS)
        for q in dataset.questions:
            for k in KS:
                assert ours[v.key, q.qid, "hit", k] == theirs[f"hit_rate@{k}"][q.qid], (v.label, q.qid, k)
                assert ours[v.key, q.qid, "mrr", k] == theirs[f"mrr@{k}"][q.qid], (v.label, q.qid, k)
                if single[q.qid]:
                    assert ours[v.key, q.qid, "ndcg", k] == theirs[f"ndcg@{k}"][q.qid], (v.label, q.qid, k)
                    assert ours[v.key, q.qid, "recall", k] == theirs[f"recall@{k}"][q.qid], (v.label, q.qid, k)
                compared += 1
            coinciding += single[q.qid]
    assert compared == len(variants) * len(dataset.questions) * len(KS)
    assert 0 < coinciding < len(variants) * len(dataset.questions)  # both cases exercised
    mrr = pq[(pq.metric == "mrr") & (pq.k == 10)]["value"].mean()
    assert mrr > 0 and (data == "tiny" or mrr < 1)  # on the speech, relevant units also come below rank 1
