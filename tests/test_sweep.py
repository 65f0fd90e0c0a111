"""The end-to-end path with the real model and real FAISS: index store, retrieval, sweep, caches."""

from __future__ import annotations

import gc
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import span_of

from workbench.chunkers import ChunkEnv, register_function, unregister
from workbench.chunkers.registry import strategy
from workbench.core.chunk import make_chunk
from workbench.core.params import Param
from workbench.core.tokens import TiktokenTokenizer
from workbench.dataset import Dataset, Document, Question
from workbench.figures.plots import overview
from workbench.models.embed import Embedder
from workbench.results.combine import combine
from workbench.results.result import SweepResult
from workbench.retrieval.index import IndexStore
from workbench.retrieval.search import search
from workbench.run.session import sweep
from workbench.variant import Variant, grid

GRID = grid("fixed", size=[24, 48], overlap=[0, 12])


@pytest.mark.model
def test_sweep_tables_and_cache_reuse(tiny: Dataset, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    embedder = Embedder(cache_dir=cache, progress=False)
    assert embedder.backend == "onnx"  # the default for a new cache (issue 21): its keys stay the variants' own
    first = sweep(tiny, GRID, ks=(1, 3), embedder=embedder, store=IndexStore(cache), progress=False)
    labels = [v.label for v in GRID]
    assert list(first.variants["variant"]) == labels and first.variants["built"].all()
    assert first.provenance.computed.texts_embedded > 0
    pq = first.per_question
    assert list(pq.columns) == ["key", "variant", "model", "qid", "k", "budget", "metric", "value"]
    assert dict(zip(pq["key"], pq["variant"], strict=True)) == {v.key: v.label for v in GRID}
    assert len(pq[(pq.metric == "recall") & (pq.k == 3)]) == len(GRID) * len(tiny.questions)
    s = first.summary
    assert {"key", "variant", "metric", "k", "mean", "ci_low", "ci_high", "n"} <= set(s.columns)
    row = s[(s.metric == "recall") & (s.k == 3)].iloc[0]
    assert row.ci_low <= row["mean"] <= row.ci_high
    # better than chance on an easy corpus: the right passage is in the top 3 for most questions
    assert s[(s.metric == "hit") & (s.k == 3)]["mean"].min() >= 0.75

    # a second run, as a new process would: nothing embedded, nothing built, identical numbers
    fresh = Embedder(cache_dir=cache, progress=False)
    second = sweep(tiny, GRID, ks=(1, 3), embedder=fresh, store=IndexStore(cache), progress=False)
    assert second.provenance.computed.texts_embedded == 0 and fresh.stats.embedded == 0
    assert not second.variants["built"].any()
    assert "model" not in fresh.__dict__  # queries and chunks all came from the cache
    pd.testing.assert_frame_equal(first.per_question, second.per_question)

    out = second.save(tmp_path / "out")
    assert pd.read_csv(out["summary"]).shape[0] == len(second.summary)
    assert not list((tmp_path / "out").glob(".*tmp"))


def test_index_entry_is_reused_and_keyed(tiny: Dataset, fake_embedder: Embedder, tmp_path: Path) -> None:
    store = IndexStore(tmp_path)
    v = GRID[0]
    built = store.get(v, tiny, fake_embedder)
    loaded = store.get(v, tiny, fake_embedder)
    assert built.cost["built"] and not loaded.cost["built"]
    assert [c.span for c in built.chunks] == [c.span for c in loaded.chunks]
    assert all(c.text == tiny.docs[c.doc_id].text[c.start:c.end] for c in loaded.chunks)
    assert store.path(v, tiny, fake_embedder) != store.path(GRID[1], tiny, fake_embedder)
    changed = Dataset(tiny.name, (tiny.documents[0],), ())
    assert store.path(v, changed, fake_embedder) != store.path(v, tiny, fake_embedder)
    assert [p.name for p in (tmp_path / "index").iterdir()] == [store.path(v, tiny, fake_embedder).name]  # no temp left
    entry = store.path(v, tiny, fake_embedder)
    assert {p.name for p in entry.iterdir()} == {"chunks.parquet", "index.faiss", "meta.json"}


def test_interrupted_build_leaves_no_entry(tiny: Dataset, fake_embedder: Embedder, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    store = IndexStore(tmp_path)
    v = Variant.make("fixed", size=30, overlap=5)

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("faiss.write_index", interrupted)  # what IndexStore._write imports
    with pytest.raises(KeyboardInterrupt):
        store.get(v, tiny, fake_embedder)
    monkeypatch.undo()
    assert not (tmp_path / "index").exists() or list((tmp_path / "index").iterdir()) == []
    assert store.get(v, tiny, fake_embedder).cost["built"]


def test_document_mode_and_context_cost(tiny: Dataset, fake_embedder: Embedder, tmp_path: Path) -> None:
    store = IndexStore(tmp_path)
    v = Variant.make("fixed", size=16, overlap=0)
    index = store.get(v, tiny, fake_embedder)
    qvecs = fake_embedder.encode([q.question for q in tiny.questions])
    corpus = search(index, tiny.questions, qvecs, 5, mode="corpus")
    own = search(index, tiny.questions, qvecs, 5, mode="document")
    for q, hits in zip(tiny.questions, own, strict=True):
        assert {h.span.doc_id for h in hits} == {a.doc_id for a in q.answers}
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert any({h.span.doc_id for h in hits} != {q.answers[0].doc_id}
               for q, hits in zip(tiny.questions, corpus, strict=True))

    result = sweep(tiny, [v], ks=(1, 3), embedder=fake_embedder, store=store, progress=False)
    cost = result.per_question.query("metric == 'context_tokens' and k == 3").set_index("qid")["value"]
    enc = TiktokenTokenizer("cl100k_base")
    for q, hits in zip(tiny.questions, corpus, strict=True):
        sent = sum(enc.count(tiny.docs[h.span.doc_id].text[h.span.start:h.span.end]) for h in hits[:3])
        assert cost[q.qid] == sent


def test_hits_as_columns_score_as_the_hits_one_question_at_a_time(tiny: Dataset, fake_embedder: Embedder,
                                                                  tmp_path: Path) -> None:
    """When no two rows return one span, retrieval hands every question's hits over at once as
    columns (RankedHits): the same hits as each ranking's `hits`, and the same per-question scores
    (budgets included), hits table and rankings deep enough for the budgets as the lists of Hits."""
    from workbench.dataset import RankedHits
    from workbench.evaluation import evidence
    from workbench.evaluation.scoring import hits_table, score
    from workbench.evaluation.settings import Settings
    from workbench.retrieval.search import queries, ranked_for, run_stages
    from workbench.variant import DENSE_ONLY

    index = IndexStore(tmp_path).get(Variant.make("fixed", size=16, overlap=0), tiny, fake_embedder)
    assert index.distinct
    qvecs = fake_embedder.encode([q.question for q in tiny.questions])
    qs = queries(index, tiny.questions, qvecs, "corpus")
    settings = Settings(ks=(1, 3, 5), budgets=(64, 128))
    columns = ranked_for(index, DENSE_ONLY, qs, settings.ks, settings.budgets, settings.budget_encoding)
    assert isinstance(columns, RankedHits) and len(columns) == len(tiny.questions)
    depth = int(columns.lengths.max())
    assert depth > 5  # ranked past k to fill the budgets
    lists = [index.hits(r, depth) for r in run_stages(DENSE_ONLY, qs, index, depth)]
    assert columns == lists and lists == list(columns) and columns[-1] == lists[-1] and columns[1:3] == lists[1:3]
    bounds = evidence.token_bounds(tiny)
    by_columns = score(tiny.questions, columns, index.spans, settings, bounds)
    by_lists = score(tiny.questions, lists, index.spans, settings, bounds)
    pd.testing.assert_frame_equal(by_columns, by_lists)
    assert (by_columns["budget"] > 0).any()
    pd.testing.assert_frame_equal(hits_table(tiny.questions, columns, 5), hits_table(tiny.questions, lists, 5))
    back = RankedHits.of(lists)
    assert back == columns and (back.totals("o200k_base") == [sum(h.tokens["o200k_base"] for h in hits)
                                                              for hits in lists]).all()
    empty = RankedHits.of([[], lists[0][:2], []])
    assert list(empty.lengths) == [0, 2, 0] and list(empty.totals("cl100k_base"))[0] == 0
    assert empty.top(1) == [[], lists[0][:1], []] and RankedHits.of([[], []]).sizes("cl100k_base").size == 0


def test_sweep_rejects_bad_arguments(tiny: Dataset, fake_embedder: Embedder, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="ks must be positive"):
        sweep(tiny, GRID, ks=(0, 3), embedder=fake_embedder, store=tmp_path, progress=False)
    with pytest.raises(ValueError, match="mode must be one of"):
        sweep(tiny, GRID, mode="web", embedder=fake_embedder, store=tmp_path, progress=False)
    with pytest.raises(ValueError, match="duplicate variants"):
        sweep(tiny, [GRID[0], GRID[0]], embedder=fake_embedder, store=tmp_path, progress=False)


def test_vectors_in_index_match_embedder(tiny: Dataset, fake_embedder: Embedder, tmp_path: Path) -> None:
    index = IndexStore(tmp_path).get(GRID[0], tiny, fake_embedder)
    stored = index.index.reconstruct_n(0, index.index.ntotal)
    assert np.allclose(stored, fake_embedder.encode([c.text for c in index.chunks]), atol=1e-6)


def test_small_to_big_returns_each_parent_once(tiny: Dataset, fake_embedder: Embedder, tmp_path: Path) -> None:
    v = Variant.make("parent_child", child="fixed", child_size=8, parent="fixed", parent_size=48)
    index = IndexStore(tmp_path).get(v, tiny, fake_embedder)
    parents = {c.returned for c in index.chunks}
    assert len(parents) < len(index.chunks)  # several children share each parent
    qvecs = fake_embedder.encode([q.question for q in tiny.questions])
    k = 3
    for hits in search(index, tiny.questions, qvecs, k):
        spans = [h.span for h in hits]
        assert len(spans) == len(set(spans)) == min(k, len(parents))
        for h in hits:
            child = index.chunks[h.chunk_id]
            assert child.returned == h.span and h.span.start <= child.start and child.end <= h.span.end
    result = sweep(tiny, [v], ks=(1, 3), embedder=fake_embedder, store=IndexStore(tmp_path), progress=False)
    enc = TiktokenTokenizer("cl100k_base")
    cost = result.per_question.query("metric == 'context_tokens' and k == 1").set_index("qid")["value"]
    for q, hits in zip(tiny.questions, search(index, tiny.questions, qvecs, 1), strict=True):
        parent = hits[0].span
        assert cost[q.qid] == enc.count(tiny.docs[parent.doc_id].text[parent.start:parent.end])


def test_late_chunking_variant_sweeps(tiny: Dataset, embedder: Embedder, tmp_path: Path) -> None:
    plain, late = Variant.make("fixed", size=24), Variant.make("fixed", size=24, late=True)
    store = IndexStore(tmp_path)
    a, b = store.get(plain, tiny, embedder), store.get(late, tiny, embedder)
    assert [c.span for c in a.chunks] == [c.span for c in b.chunks]
    va, vb = a.index.reconstruct_n(0, a.index.ntotal), b.index.reconstruct_n(0, b.index.ntotal)
    assert np.allclose(np.linalg.norm(vb, axis=1), 1, atol=1e-5)
    assert not np.allclose(va, vb, atol=1e-3)  # context changed the vectors
    result = sweep(tiny, [plain, late], ks=(3,), embedder=embedder, store=store, progress=False)
    assert set(result.summary["variant"]) == {plain.label, late.label}
    assert result.variants.set_index("variant").loc[late.label, "truncated_chunks"] == 0


def test_combine_keeps_first_measurement_and_refuses_mismatches(tiny: Dataset, fake_embedder: Embedder,
                                                                tmp_path: Path) -> None:
    a, b, new = Variant.make("fixed", size=16), Variant.make("fixed", size=48), Variant.make("fixed", size=24)
    base = sweep(tiny, [a, b], ks=(1, 3), embedder=fake_embedder, store=tmp_path, progress=False)
    extra = sweep(tiny, [b, new], ks=(1, 3), embedder=fake_embedder, store=tmp_path, progress=False)
    both = combine([base, extra])
    pair = combine(base, extra)  # both forms, as a user types them
    assert pair.labels == both.labels and pair.summary.equals(both.summary)
    with pytest.raises(TypeError, match="combine takes SweepResults \\(or lists of them\\), got \\['str'\\]"):
        combine(base, "results/demo")
    assert both.labels == [a.label, b.label, new.label]
    assert len(both.summary) == len(base.summary) + len(extra.summary) // 2
    assert len(both.provenance.grid) == 3
    kept = both.summary[both.summary.variant == b.label]
    assert kept.equals(base.summary[base.summary.variant == b.label])
    settings = replace(extra.provenance.settings, ks=(1, 5))
    other = SweepResult(extra.per_question, extra.summary, extra.variants, extra.provenance.with_(settings=settings))
    with pytest.raises(ValueError, match="different ks"):
        combine([base, other])


def test_variants_are_identified_by_key_not_label(tiny: Dataset, embedder: Embedder, tmp_path: Path) -> None:
    """Two variants whose labels print alike (an untyped parameter, 1 and "1") are both measured,
    kept apart in every table, given distinct labels, and found by key or label. On the bundled
    model, whose result keys are the variant keys (another model's carry its hash, and key_of(a
    Variant) finds those no more)."""
    def by_words(doc: Document, env: ChunkEnv, *, n: object) -> list:
        words = list(re.finditer(r"\S+", doc.text))
        step = int(n) * 4 if isinstance(n, str) else int(n) * 8  # the two values chunk differently
        return [make_chunk(doc, words[i].start(), words[min(i + step, len(words)) - 1].end())
                for i in range(0, len(words), step)]

    strategy("alike", "words, untyped n", {"n": Param(None, "any value", label=True)})(by_words)
    one, text_one = Variant.make("alike", n=1), Variant.make("alike", n="1")
    assert one.label == text_one.label and one.key != text_one.key
    result = sweep(tiny, [one, text_one], ks=(1, 3), embedder=embedder, store=tmp_path, progress=False)
    assert result.keys == [one.key, text_one.key]
    assert len(set(result.labels)) == 2 and all(label.startswith(one.label) for label in result.labels)
    assert result.summary.groupby("key").size().tolist() == [len(result.summary) // 2] * 2
    chunks = result.variants.set_index("key")["chunks"]
    assert chunks[one.key] != chunks[text_one.key]  # measured apart, not merged
    assert result.key_of(result.labels[1]) == text_one.key == result.key_of(text_one)
    plotted = overview(result, k=3)
    legend = [t.get_text() for t in plotted.legends[0].get_texts()]
    assert legend == [f"1  {result.labels[0]}", f"2  {result.labels[1]}"]
    with pytest.raises(ValueError, match="duplicate variants"):
        sweep(tiny, [one, Variant.make("alike", n=1)], embedder=embedder, store=tmp_path, progress=False)
    # combined with a later sweep, the pair stays two variants and the labels stay unique
    more = combine([result, sweep(tiny, [text_one], ks=(1, 3), embedder=embedder, store=tmp_path, progress=False)])
    assert more.keys == result.keys and more.labels == result.labels


def test_floats_that_print_alike_get_different_labels() -> None:
    a = Variant.make("semantic", breakpoint_percentile=95)
    b = Variant.make("semantic", breakpoint_percentile=95.0000001)
    assert a.key != b.key and a.label != b.label and "95.0000001" in b.label and "=95," in a.label


@pytest.mark.model
def test_progress_false_draws_no_bar_at_all(tiny: Dataset, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The embedder would draw its bars (batch 1: a bar from 8 texts on) unless the sweep says no."""
    loud = Embedder(cache_dir=tmp_path / "a", batch_size=1, progress=True)
    sweep(tiny, [GRID[0]], ks=(1,), embedder=loud, store=tmp_path / "a", progress=False)
    assert capsys.readouterr().err == "" and loud.progress  # and the embedder's own setting is kept
    sweep(tiny, [Variant.make("fixed", size=10)], ks=(1,), embedder=loud, store=tmp_path / "a", progress=True)
    assert "chunks" in capsys.readouterr().err  # the bars it hid are real


@pytest.mark.model
def test_seconds_are_this_runs_and_truncation_sits_next_to_chunks(tmp_path: Path) -> None:
    """A variant measured from the caches reports this run's seconds, with its original build time
    kept apart; `truncated_chunks` follows `chunks`, and BM25 alone, which reads whole chunks, has none.
    An empty vector cache of its own: the first build embeds (the session's embedder may hold these
    texts' vectors from another test on the same log, which made it as quick as the re-run)."""
    embedder = Embedder(cache_dir=tmp_path / "vectors", progress=False)
    text = " ".join(f"Station{i} logs reading{i * 7} at dusk." for i in range(400))
    doc = Document("log.txt", "Log", text)
    data = Dataset("log", (doc,), (Question("q", "What does Station12 log?", (span_of(doc, "Station12 logs"),)),))
    dense, lexical = Variant.make("fixed", size=300), Variant.make("fixed", size=300, retriever="bm25")
    first = sweep(data, [dense, lexical], ks=(1,), embedder=embedder, store=tmp_path, progress=False).variants
    again = sweep(data, [dense, lexical], ks=(1,), embedder=embedder, store=tmp_path, progress=False).variants
    columns = list(first.columns)
    assert columns[columns.index("chunks") + 1] == "truncated_chunks"
    rows = first.set_index("retriever")
    # every full chunk: 300 tokens > 256 word pieces (the document's last chunk may be shorter)
    assert rows.loc["dense", "truncated_chunks"] >= rows.loc["dense", "chunks"] - 1 > 1
    assert rows.loc["bm25", "truncated_chunks"] == 0
    assert (again["build_seconds"] == first["build_seconds"]).all()  # the build, as recorded then
    # the window the warning names is what truncation counts: model-token chunks of that size fit, one more do not
    window = embedder.window_tokens
    fit, over = (Variant.make("fixed", size=n, tokenizer="model") for n in (window, window + 1))
    sized = sweep(data, [fit, over], ks=(1,), embedder=embedder, store=tmp_path, progress=False)
    assert sized.provenance.window == embedder.window_tokens == 254
    assert sized.variants["truncated_chunks"].tolist()[0] == 0 < sized.variants["truncated_chunks"].tolist()[1]
    assert (again["seconds"] < 0.5 * first["build_seconds"].max()).all()  # this run's: read from the caches


def test_the_collector_is_off_while_a_variant_is_measured_and_as_it_was_after(tiny: Dataset, fake_embedder: Embedder,
                                                                              tmp_path: Path) -> None:
    """sweep.paused_gc: a variant's chunking, retrieval and scoring run without Python's cyclic
    collector (bench/preview.md: its full collections were a third of a preview's retrieval), and
    it is on again after each variant, even one that raised; a caller who had it off keeps it off."""
    seen: list[bool] = []

    def whole(text: str) -> list[str]:
        seen.append(gc.isenabled())
        return [text]

    register_function("gc_probe", whole)
    register_function("gc_fails", lambda text: [])
    try:
        sweep(tiny, [Variant.make("gc_probe")], ks=(1,), embedder=fake_embedder, store=tmp_path, progress=False)
        assert seen and not any(seen) and gc.isenabled()
        with pytest.raises(ValueError, match="produced no chunks"):
            sweep(tiny, [Variant.make("gc_fails")], ks=(1,), embedder=fake_embedder, store=tmp_path, progress=False)
        assert gc.isenabled()
        gc.disable()
        try:
            sweep(tiny, [Variant.make("gc_probe")], ks=(3,), embedder=fake_embedder, store=tmp_path, progress=False)
            assert not gc.isenabled()
        finally:
            gc.enable()
    finally:
        unregister("gc_probe")
        unregister("gc_fails")
