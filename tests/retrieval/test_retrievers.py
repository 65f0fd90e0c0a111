"""Retrievers: BM25 scores against a hand computation, RRF on hand-made rankings, and dense, bm25
and hybrid variants of one chunking on real data (shared cache entry, parents once, reuse)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from workbench.cli import main
from workbench.dataset import Dataset, Hit
from workbench.models.embed import Embedder
from workbench.retrieval.bm25 import LexicalIndex, rrf, tokenize
from workbench.retrieval.index import IndexStore
from workbench.retrieval.search import search
from workbench.run.session import sweep
from workbench.variant import Variant, grid, parse_variant

TEXTS = ["The cat sat on the mat.", "A dog and a cat, and another cat!", "Dogs chase cats.", ""]
# hand tokenized: lowercase words of 2+ characters, English stopwords (the, on, a, and) removed
TOKENS = [["cat", "sat", "mat"], ["dog", "cat", "another", "cat"], ["dogs", "chase", "cats"], []]


def okapi(query: list[str], docs: list[list[str]], k1: float = 1.5, b: float = 0.75) -> list[float]:
    """BM25 as bm25s computes it by default (method "lucene"): idf = ln(1 + (N - df + 0.5) / (df + 0.5)),
    term weight = idf * tf / (tf + k1 * (1 - b + b * |d| / avgdl)), avgdl over every document."""
    n, avgdl = len(docs), sum(map(len, docs)) / len(docs)
    out = []
    for d in docs:
        score = 0.0
        for t in query:
            df = sum(t in other for other in docs)
            tf = d.count(t)
            if tf:
                idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
                score += idf * tf / (tf + k1 * (1 - b + b * len(d) / avgdl))
        out.append(score)
    return out


def test_bm25_scores_equal_a_hand_computation() -> None:
    index = LexicalIndex.build(TEXTS)
    assert tokenize(TEXTS) == TOKENS
    for question, tokens in [("Where is the cat?", ["cat"]), ("cat and dog chase", ["cat", "dog", "chase"]),
                             ("the", []), ("zebra", [])]:
        np.testing.assert_allclose(index.scores(question), okapi(tokens, TOKENS), rtol=1e-6)
    scores, ids = index.ranking("cat and dog chase")
    assert list(ids) == [1, 2, 0]  # the empty text and nothing without a shared token
    assert list(index.ranking("cat", rows=[0, 2, 3])[1]) == [0]


def test_bm25_index_round_trips_without_pickle(tmp_path: Path) -> None:
    LexicalIndex.build(TEXTS).save(tmp_path / "bm25")
    for npy in (tmp_path / "bm25").glob("*.npy"):
        np.load(npy, allow_pickle=False)  # raises if an array needed pickle
    np.testing.assert_allclose(LexicalIndex.load(tmp_path / "bm25").scores("dog cat"), okapi(["dog", "cat"], TOKENS),
                               rtol=1e-6)


def test_rrf_on_hand_made_rankings() -> None:
    scores, ids = rrf([[0, 1, 2], [2, 3]], rrf_k=60)  # docs/metrics.md's example: A, B, C and C, D
    assert list(ids) == [2, 0, 1, 3]
    np.testing.assert_allclose(scores, [1 / 63 + 1 / 61, 1 / 61, 1 / 62, 1 / 62])
    scores, ids = rrf([[7, 8], [8, 7]], rrf_k=1)  # a tie keeps first appearance
    assert list(ids) == [7, 8] and scores[0] == scores[1] == 1 / 2 + 1 / 3


def test_variant_retriever_fields() -> None:
    dense = Variant.make("fixed", size=24)
    bm25, hybrid = parse_variant("fixed:size=24+bm25"), parse_variant("fixed:size=24+hybrid:rrf_k=30")
    assert bm25.label == "fixed(size=24, overlap=0)+bm25" and hybrid.label.endswith("+hybrid(rrf_k=30)")
    assert len({dense.key, bm25.key, hybrid.key}) == 3
    assert dense.chunking_key == bm25.chunking_key == hybrid.chunking_key == dense.key
    assert parse_variant("fixed:size=24+hybrid") == Variant.make("fixed", size=24, retriever="hybrid", rrf_k=60)
    spec = hybrid.spec()  # rebuilt from its spec the way reports and widgets do it
    assert Variant.make(spec["strategy"], contextual_header=spec["contextual_header"], late=spec["late"],
                        **spec["params"]) == hybrid
    variants = grid("fixed", size=24, retriever=["dense", "bm25"], rrf_k=[60, 30])
    assert [v.retriever for v in variants] == ["dense", "bm25"]
    for kwargs, message in [({"retriever": "splade"}, "parameter 'retriever' must be one of"),
                            ({"retriever": "hybrid", "rrf_k": 0}, r"parameter 'rrf_k' must be in \[1, inf\]"),
                            ({"retriever": "bm25", "rrf_k": 30}, "applies to retriever='hybrid' only")]:
        with pytest.raises(ValueError, match=message):
            Variant.make("fixed", size=24, **kwargs)
    for bad, message in [("fixed:size=24+bm25+hybrid", "one retriever at most"),
                         ("fixed:size=24+bm25:rrf_k=3", r"stage 'bm25': unknown parameter\(s\) \['rrf_k'\]")]:
        with pytest.raises(ValueError, match=message):
            parse_variant(bad)


def test_retrievers_share_the_chunking_entry(tiny: Dataset, fake_embedder: Embedder, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    store = IndexStore(tmp_path)
    dense, bm25 = parse_variant("fixed:size=24"), parse_variant("fixed:size=24+bm25")
    qvecs = fake_embedder.encode([q.question for q in tiny.questions])
    d = store.get(dense, tiny, fake_embedder)
    b = store.get(bm25, tiny, fake_embedder)
    assert b.cost["built"]
    assert [p.name for p in (tmp_path / "index").iterdir()] == [store.path(dense, tiny, fake_embedder).name]
    assert (store.path(dense, tiny, fake_embedder) / "bm25").is_dir()
    assert [c.text for c in d.chunks] == [c.text for c in b.chunks]
    by_dense = [[h.chunk_id for h in r] for r in search(d, tiny.questions, qvecs, 5, dense.stages)]
    by_bm25 = [[h.chunk_id for h in r] for r in search(b, tiny.questions, qvecs, 5, bm25.stages)]
    assert by_dense != by_bm25
    for q, hits in zip(tiny.questions, search(b, tiny.questions, qvecs, 5, bm25.stages), strict=True):
        words = set(tokenize([q.question])[0])
        assert all(words & set(tokenize([b.chunks[h.chunk_id].text])[0]) for h in hits)  # shares a token
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)

    def no_build(texts: list[str]) -> LexicalIndex:
        raise AssertionError("the BM25 index was rebuilt")

    monkeypatch.setattr(LexicalIndex, "build", no_build)
    again = store.get(bm25, tiny, fake_embedder)
    assert not again.cost["built"]
    assert [[h.chunk_id for h in r] for r in search(again, tiny.questions, qvecs, 5, bm25.stages)] == by_bm25


def test_a_bm25_variant_builds_its_entry_without_vectors_and_a_dense_one_adds_them(
        tiny: Dataset, fake_embedder: Embedder, tmp_path: Path) -> None:
    store = IndexStore(tmp_path / "first-bm25")
    bm25, hybrid = parse_variant("fixed:size=24+bm25"), parse_variant("fixed:size=24+hybrid")
    qvecs = fake_embedder.encode([q.question for q in tiny.questions])
    def asked() -> int:  # texts the model was asked for, computed or from its cache
        return fake_embedder.stats.embedded + fake_embedder.stats.cached

    before = asked()
    b = store.get(bm25, tiny, fake_embedder)
    entry = store.path(bm25, tiny, fake_embedder)
    assert b.exact is None and not (entry / "index.faiss").exists() and (entry / "chunks.parquet").exists()
    assert asked() == before  # no vector made or looked up for BM25
    h = store.get(hybrid, tiny, fake_embedder)  # the same entry: its chunks read back, embedded now
    assert (entry / "index.faiss").exists() and h.cost["built"] and asked() == before + len(h.chunks)
    fresh = IndexStore(tmp_path / "first-hybrid").get(hybrid, tiny, fake_embedder)
    assert h.exact.ntotal == fresh.exact.ntotal == len(fresh.chunks)
    np.testing.assert_array_equal(h.exact.reconstruct_n(0, h.exact.ntotal),
                                  fresh.exact.reconstruct_n(0, fresh.exact.ntotal))
    ranked = [[(x.chunk_id, x.score) for x in r] for r in search(h, tiny.questions, qvecs, 5, hybrid.stages)]
    assert ranked == [[(x.chunk_id, x.score) for x in r] for r in search(fresh, tiny.questions, qvecs, 5,
                                                                          hybrid.stages)]
    again = store.get(hybrid, tiny, fake_embedder)
    assert not again.cost["built"] and again.exact.ntotal == len(again.chunks)  # loaded, nothing added


def test_hybrid_ranks_the_union_by_reciprocal_ranks(tiny: Dataset, fake_embedder: Embedder, tmp_path: Path) -> None:
    store = IndexStore(tmp_path)
    qvecs = fake_embedder.encode([q.question for q in tiny.questions])

    def ranked(text: str, k: int) -> list[list[Hit]]:
        v = parse_variant(text)
        return search(store.get(v, tiny, fake_embedder), tiny.questions, qvecs, k, v.stages)

    every = 10_000
    dense = ranked("fixed:size=24", every)
    bm25 = ranked("fixed:size=24+bm25", every)
    hybrid = ranked("fixed:size=24+hybrid:rrf_k=5", 4)
    for d, b, h in zip(dense, bm25, hybrid, strict=True):
        expected = {hit.chunk_id: 1 / (5 + rank) for rank, hit in enumerate(d, start=1)}
        for rank, hit in enumerate(b, start=1):
            expected[hit.chunk_id] += 1 / (5 + rank)
        best = sorted(expected.values(), reverse=True)[:4]
        assert [hit.score for hit in h] == pytest.approx(best)
        assert all(hit.score == pytest.approx(expected[hit.chunk_id]) for hit in h)


def test_bm25_returns_each_parent_once(tiny: Dataset, fake_embedder: Embedder, tmp_path: Path) -> None:
    v = parse_variant("parent_child:child_size=16,parent_size=64+bm25")
    index = IndexStore(tmp_path).get(v, tiny, fake_embedder)
    qvecs = fake_embedder.encode([q.question for q in tiny.questions])
    for q, hits in zip(tiny.questions, search(index, tiny.questions, qvecs, len(index.chunks), v.stages), strict=True):
        spans = [h.span for h in hits]
        assert len(spans) == len(set(spans)) and all(h.span == index.chunks[h.chunk_id].returned for h in hits)
        children = index.lexical.ranking(q.question)[1]
        parents = list(dict.fromkeys(index.chunks[i].returned for i in children))
        assert spans == parents  # the children's BM25 order, each parent at its best child
    assert len({c.returned for c in index.chunks}) < len(index.chunks)  # parents do collapse children here


@pytest.mark.model
def test_cli_sweeps_a_bm25_variant(tiny: Dataset, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from conftest import write_dataset

    data = write_dataset(tiny, tmp_path / "data")
    main(["sweep", "--data", str(data), "--out", str(tmp_path / "out"), "--cache", str(tmp_path / "cache"),
          "-v", "fixed:size=24", "-v", "fixed:size=24+bm25", "-v", "fixed:size=24+hybrid", "--ks", "1", "3", "--quiet"])
    assert "Verdict on recall@3 over 4 questions" in capsys.readouterr().out  # --quiet: only the answer
    variants = pd.read_csv(tmp_path / "out" / "variants.csv")
    assert list(variants["built"]) == [True, True, False]  # hybrid reuses the FAISS entry and the BM25 index
    assert list(variants["retriever"]) == ["dense", "bm25", "hybrid"]
    assert len(list((tmp_path / "cache" / "index").iterdir())) == 1
    assert (tmp_path / "out" / "report.html").exists()


def test_bm25_recall_on_real_questions(chroma_small: Dataset, fake_embedder: Embedder, tmp_path: Path) -> None:
    """chroma_small's questions were written from the text, so BM25 finds much of the evidence."""
    data = chroma_small.select(max_questions=20)
    result = sweep(data, [parse_variant("fixed:size=256+bm25")], ks=(5,), embedder=fake_embedder, store=tmp_path,
                   progress=False, budgets=())
    recall = result.summary.query("metric == 'recall' and k == 5")["mean"].item()
    assert 0.3 < recall <= 1.0
