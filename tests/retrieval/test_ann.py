"""Approximate search (FAISS IVF and HNSW) on a small real corpus with the threshold lowered: exact
results below the threshold and with every IVF list probed, ann_recall against a numpy top-k, cache
entries named by the build parameters, deterministic builds, memory-mapped reads, the CLI options."""

from __future__ import annotations

import json
from pathlib import Path

import faiss
import numpy as np
import pandas as pd
import pytest

from workbench.cli import main
from workbench.dataset import Dataset
from workbench.evaluation.settings import Settings
from workbench.ingest import load_dataset
from workbench.models.embed import Embedder
from workbench.results.combine import combine
from workbench.retrieval.ann import Ann
from workbench.retrieval.index import IndexStore
from workbench.run.session import sweep
from workbench.variant import parse_variant

REPO = Path(__file__).resolve().parents[2]
SQUAD = REPO / "tests" / "data" / "squad_v11_dev"
VARIANT = parse_variant("fixed:size=16")  # about 60 chunks of the excerpt: enough lists and graph to approximate
KS = (1, 3, 5)


@pytest.fixture(scope="module")
def squad() -> Dataset:
    return load_dataset(SQUAD)


@pytest.fixture(scope="module")
def exact(squad: Dataset, fake_embedder: Embedder, tmp_path_factory: pytest.TempPathFactory):
    return sweep(squad, [VARIANT], ks=KS, budgets=(), embedder=fake_embedder, progress=False,
                 store=IndexStore(tmp_path_factory.mktemp("exact")))


def run(squad: Dataset, fake_embedder: Embedder, root: Path, ann: Ann, variant=VARIANT, **changes):
    return sweep(squad, [variant], ks=KS, budgets=(), embedder=fake_embedder, progress=False, store=IndexStore(root),
                 ann=ann, **changes)


@pytest.mark.parametrize("text, problem", [
    ("flat", "kind must be one of"), ("ivf:nprobe=0", "nprobe must be an int >= 1"),
    ("hnsw:m=x", "m must be an int"), ("ivf:depth=3", "'depth=3' is not name=value"),
    ("hnsw:above=-1", "above must be an int >= 0"),
])
def test_a_bad_ann_is_refused_naming_the_parameter(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        Ann.parse(text)


def test_settings_refuse_an_ann_that_is_not_one_and_a_preview_with_one() -> None:
    with pytest.raises(TypeError, match="ann must be an Ann"):
        Settings(ann="hnsw")
    with pytest.raises(ValueError, match="ann: a preview"):
        Settings(ann=Ann(), preview=True)
    settings = Settings(ann=Ann("ivf", above=10, nprobe=3))
    assert Settings.from_config(settings.config()) == settings
    assert "ann" not in Settings().config() and "ann" not in Settings().scored()  # exact runs keep their names


def test_below_the_threshold_the_results_are_the_exact_ones(squad, fake_embedder, exact, tmp_path) -> None:
    chunks = int(exact.variants["chunks"].iloc[0])
    result = run(squad, fake_embedder, tmp_path, Ann("hnsw", above=chunks, m=4, ef_search=1))
    pd.testing.assert_frame_equal(result.per_question, exact.per_question)
    pd.testing.assert_frame_equal(result.hits, exact.hits)
    assert result.variants["index"].tolist() == ["flat"] and result.variants["ann_recall"].isna().all()
    assert not list((tmp_path / "index").glob("*/ann-*"))  # nothing approximate was built
    with pytest.raises(ValueError, match="different ann"):  # one ranking per key in a result
        combine(exact, result)


def test_ivf_probing_every_list_finds_the_exact_neighbours(squad, fake_embedder, exact, tmp_path) -> None:
    result = run(squad, fake_embedder, tmp_path, Ann("ivf", above=0, nlist=8, nprobe=8))
    assert result.variants["index"].tolist() == ["ivf(nlist=8,nprobe=8)"]
    assert result.variants["ann_recall"].tolist() == [1.0]
    merge = ["qid", "rank"]
    ours, theirs = (r.hits.set_index(merge).sort_index() for r in (result, exact))
    assert ours["chunk_id"].tolist() == theirs["chunk_id"].tolist()
    np.testing.assert_allclose(ours["score"], theirs["score"], rtol=0, atol=1e-5)


@pytest.mark.parametrize("ann", [Ann("ivf", above=0, nlist=16, nprobe=1), Ann("hnsw", above=0, m=2, ef_search=1)])
def test_ann_recall_is_the_overlap_with_the_exact_top_k(squad, fake_embedder, exact, tmp_path, ann: Ann) -> None:
    result = run(squad, fake_embedder, tmp_path, ann)
    index = IndexStore(tmp_path).get(VARIANT, squad, fake_embedder, ann)
    assert index.ann is ann and not index.cost["built"]  # loaded from the entry the sweep built
    vectors = index.exact.reconstruct_n(0, index.exact.ntotal)
    qvecs = fake_embedder.encode([q.question for q in squad.questions])
    truth = np.argsort(-(qvecs @ vectors.T), axis=1, kind="stable")[:, :max(KS)]
    found = index.index.search(qvecs, max(KS))[1]
    expected = np.mean([len(set(f) & set(t)) / max(KS) for f, t in zip(found, truth, strict=True)])
    assert result.variants["ann_recall"].iloc[0] == pytest.approx(expected, abs=1e-12)
    if ann.kind == "ivf":  # one list of 16: the exact neighbours are surely not all in it
        assert expected < 0.9
        mean = result.summary.query("metric == 'recall' and k == 5")["mean"].iloc[0]
        assert mean < exact.summary.query("metric == 'recall' and k == 5")["mean"].iloc[0]


def test_the_approximate_entry_is_named_by_its_build_parameters_and_built_the_same_twice(
        squad, fake_embedder, tmp_path) -> None:
    for root, ann in ((tmp_path / "a", Ann("ivf", above=0, nlist=8, seed=3)), (tmp_path / "a", Ann("ivf", above=0)),
                      (tmp_path / "b", Ann("ivf", above=0, nlist=8, seed=3)),
                      (tmp_path / "a", Ann("hnsw", above=0, m=8, ef_construction=20)),
                      (tmp_path / "b", Ann("hnsw", above=0, m=8, ef_construction=20))):
        assert IndexStore(root).get(VARIANT, squad, fake_embedder, ann).cost["built"]
    probed = Ann("ivf", above=0, nlist=8, seed=3, nprobe=2)
    again = IndexStore(tmp_path / "a").get(VARIANT, squad, fake_embedder, probed)
    assert not again.cost["built"] and again.index.nprobe == 2  # search parameters set on load, not stored
    n = again.exact.ntotal
    folders = {p.name for p in (tmp_path / "a" / "index").glob("*/ann-*")}
    assert folders == {"ann-ivf-nlist8-seed3", f"ann-ivf-nlist{round(4 * n ** 0.5)}-seed0", "ann-hnsw-m8-efc20"}
    for name in ("ann-ivf-nlist8-seed3", "ann-hnsw-m8-efc20"):
        a, b = (next((tmp_path / root / "index").glob(f"*/{name}")) / "index.faiss" for root in ("a", "b"))
        assert a.read_bytes() == b.read_bytes()


def test_document_mode_restricts_the_approximate_search_too(squad, fake_embedder, exact, tmp_path) -> None:
    exact_doc = sweep(squad, [VARIANT], ks=KS, budgets=(), embedder=fake_embedder, progress=False,
                      store=IndexStore(tmp_path / "exact"), mode="document")
    for ann in (Ann("ivf", above=0, nlist=4, nprobe=4), Ann("hnsw", above=0, ef_search=200)):
        result = run(squad, fake_embedder, tmp_path, ann, mode="document")
        docs = dict(zip(exact_doc.hits["chunk_id"], exact_doc.hits["doc_id"], strict=True))
        assert result.hits["chunk_id"].tolist() == exact_doc.hits["chunk_id"].tolist(), ann
        assert all(docs[c] == d for c, d in zip(result.hits["chunk_id"], result.hits["doc_id"], strict=True))


def test_a_memory_mapped_store_reads_the_same_index_without_copying_it(squad, fake_embedder, exact, tmp_path) -> None:
    mapped = sweep(squad, [VARIANT], ks=KS, budgets=(), embedder=fake_embedder, progress=False,
                   store=IndexStore(tmp_path, mmap=True))  # built, then read back mapped
    loaded = sweep(squad, [VARIANT], ks=KS, budgets=(), embedder=fake_embedder, progress=False,
                   store=IndexStore(tmp_path, mmap=True), ann=Ann("hnsw", above=10**6))  # not from the score cache
    for result in (mapped, loaded):
        pd.testing.assert_frame_equal(result.per_question, exact.per_question)
    flat = IndexStore(tmp_path, mmap=True).get(VARIANT, squad, fake_embedder).index
    owned = IndexStore(tmp_path).get(VARIANT, squad, fake_embedder).index
    assert not faiss.downcast_index(flat).codes.is_owned and faiss.downcast_index(owned).codes.is_owned
    with pytest.raises(TypeError, match="mmap must be True or False"):
        IndexStore(tmp_path, mmap="yes")


@pytest.mark.model
def test_the_cli_takes_ann_and_mmap(squad, tmp_path, capsys) -> None:
    with pytest.raises(SystemExit, match="ann: nprobe must be an int >= 1"):
        main(["sweep", "--data", str(SQUAD), "--ann", "ivf:nprobe=0", "--cache", str(tmp_path)])
    out = tmp_path / "out"
    main(["sweep", "--data", str(SQUAD), "--cache", str(tmp_path), "--out", str(out), "--no-report", "--quiet",
          "-v", VARIANT.text, "--ks", "1", "5", "--budgets", "--ann", "ivf:above=0,nlist=8,nprobe=8", "--mmap"])
    table = pd.read_csv(out / "variants.csv")
    assert table[["index", "ann_recall"]].values.tolist() == [["ivf(nlist=8,nprobe=8)", 1.0]]
    assert json.loads((out / "config.json").read_text())["ann"]["nlist"] == 8
