"""wb.track and --mlflow against real MLflow stores: a `mlflow server` started on localhost (conftest's
mlflow_server, stopped after the session), a SQLite store and MLflow's file store. Every variant a child run
of the sweep's run, with its parameters, every metric with its interval, its costs and the verdict;
report.html and the tables as artifacts; the same result logged again (a re-run from the cache) logs
nothing; an interrupted log resumes; failures in one line. The sweeps embed with the fake model (tests/fakemodel.py):
what is tested is what reaches MLflow; the CLI's sweep alone runs the bundled model."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from conftest import free_port, write_dataset
from mlflow import MlflowClient

from workbench.cli import main
from workbench.dataset import Dataset
from workbench.models.embed import Embedder
from workbench.report import export
from workbench.results.track import KEY, NOTE, STANDING, SWEEP, track
from workbench.retrieval.index import IndexStore
from workbench.run.session import sweep
from workbench.variant import parse_variant

VARIANTS = ("fixed:size=8", "fixed:size=16")


@pytest.fixture(scope="module")
def swept(tiny: Dataset, fake_embedder: Embedder, tmp_path_factory: pytest.TempPathFactory):
    """A sweep of two variants, its store and its saved folder (report.html, tables, figures)."""
    return swept_tiny(tiny, fake_embedder, tmp_path_factory)


def swept_tiny(tiny: Dataset, fake_embedder: Embedder, tmp_path_factory: pytest.TempPathFactory):
    store = IndexStore(tmp_path_factory.mktemp("track-cache"))
    result = sweep(tiny, [parse_variant(v) for v in VARIANTS], ks=(1, 3), budgets=(), embedder=fake_embedder,
                   progress=False, store=store)
    out = tmp_path_factory.mktemp("track-out")
    export(result, out, dataset=tiny, store=store)
    return result, store, out


@pytest.fixture(scope="module")
def tiny_folder(tiny: Dataset, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_dataset(tiny, tmp_path_factory.mktemp("tiny") / "data")


def uri_of(kind: str, server: str, folder: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    if kind == "server":
        return server
    if kind == "file":
        monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3 keeps its file store for who asks
        return (folder / "mlruns").as_uri()
    monkeypatch.chdir(folder)  # a database store's artifacts go to ./mlruns, MLflow's default
    return f"sqlite:///{folder / 'mlflow.db'}"


@pytest.mark.parametrize("kind", ["server", "sqlite", "file"])
def test_every_variant_is_a_run_with_its_metrics_costs_and_standing_logged_once(
        kind, mlflow_server, swept, tiny, fake_embedder, tmp_path, monkeypatch) -> None:
    result, store, out = swept
    uri = uri_of(kind, mlflow_server, tmp_path, monkeypatch)
    experiment = f"test {kind} {tmp_path.name}"
    first = track(result, uri, experiment, folder=out)
    assert set(first.logged) == set(result.labels)
    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name(experiment).experiment_id
    runs = {r.data.tags[KEY]: r for r in client.search_runs([exp])}
    assert set(runs) == {SWEEP, *result.keys} and all(r.info.status == "FINISHED" for r in runs.values())
    sweep_run = runs[SWEEP]
    verdict = result.verdict()
    assert sweep_run.info.run_id == first.run_id and sweep_run.data.tags[NOTE].startswith(verdict.headline())
    assert sweep_run.data.params["dataset"] == "tiny" and sweep_run.data.params["ks"] == "[1, 3]"
    artifacts = {a.path for a in client.list_artifacts(first.run_id)}
    assert {"report.html", "summary.csv", "variants.csv", "per_question.parquet", "config.json"} <= artifacts
    for key, label in zip(result.keys, result.labels, strict=True):
        run = runs[key]
        assert run.data.tags["mlflow.parentRunId"] == first.run_id and run.info.run_name == label
        assert run.data.tags[STANDING] == ("best" if key == verdict.best else "trade-off" if key == verdict.trade_off
                                           else "tied" if key in verdict.tied else "worse")
        row = result.summary.query("key == @key and metric == 'recall' and k == 3").iloc[0]
        m = run.data.metrics
        assert (m["recall_at_3"], m["recall_at_3_ci_low"], m["recall_at_3_ci_high"]) == pytest.approx(
            (row["mean"], row["ci_low"], row["ci_high"]), abs=1e-12)
        n_metrics = len(result.summary.query("key == @key"))
        assert len([n for n in m if not n.endswith(("_ci_low", "_ci_high"))]) == n_metrics + len(
            [c for c in result.variants if c in m])  # every summary row and every number of the cost
        cost = result.variants.set_index("key").loc[key]
        assert m["chunks"] == cost["chunks"] and m["tokens_embedded"] == cost["tokens_embedded"]
        assert run.data.params["strategy"] == "fixed" and run.data.params["size"] == str(cost["size"])
    again = sweep(tiny, [parse_variant(v) for v in VARIANTS], ks=(1, 3), budgets=(), embedder=fake_embedder,
                  progress=False, store=store)  # a re-run, from the score cache: another object, another date
    assert again.provenance.date != "" and track(again, uri, experiment, folder=out).logged == ()
    assert len(client.search_runs([exp])) == len(runs)  # nothing logged twice
    client.set_terminated(runs[result.keys[0]].info.run_id, "FAILED")  # as an interrupted log leaves one
    assert track(result, uri, experiment, folder=out).logged == ()  # the sweep's run is finished: nothing to do
    if kind == "sqlite":
        client.set_terminated(first.run_id, "RUNNING")  # interrupted before its last child was finished
        resumed = track(result, uri, experiment, folder=out)
        assert resumed.run_id == first.run_id and resumed.logged == (result.labels[0],)
        children = client.search_runs([exp], f"tags.`mlflow.parentRunId` = '{first.run_id}'")
        assert len(children) == len(result.keys) and all(r.info.status == "FINISHED" for r in children)


@pytest.mark.model  # the CLI sweeps with the bundled model
def test_the_cli_logs_a_sweep_once(tiny_folder, mlflow_server, tmp_path, capsys) -> None:
    args = ["sweep", "--data", str(tiny_folder), "--cache", str(tmp_path / "cache"), "--out", str(tmp_path / "out"),
            "--quiet", "--ks", "1", "3", "--budgets", "--mlflow", mlflow_server, "--experiment", "cli", *[
                w for v in VARIANTS for w in ("-v", v)]]
    main(args)
    out = capsys.readouterr().out
    assert "mlflow: logged 2 variant runs (http://127.0.0.1:" in out and "/#/experiments/" in out
    assert "View run" not in out  # MLflow's own lines, one pair per run, are not printed
    main(args)
    assert "mlflow: every variant was logged before" in capsys.readouterr().out
    client = MlflowClient(tracking_uri=mlflow_server)
    exp = client.get_experiment_by_name("cli").experiment_id
    assert len(client.search_runs([exp])) == 3
    assert "report.html" in {a.path for a in client.list_artifacts(client.search_runs(
        [exp], f"tags.`{KEY}` = '{SWEEP}'")[0].info.run_id)}


def test_each_failure_is_one_line(swept, tmp_path, monkeypatch) -> None:
    result, _, _ = swept
    with pytest.raises(ConnectionError, match=r"mlflow: cannot reach the tracking server at http://127\.0\.0\.1"):
        track(result, f"http://127.0.0.1:{free_port()}")
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    with pytest.raises(ValueError, match="mlflow: file:.*: The filesystem tracking backend") as caught:
        track(result, (tmp_path / "mlruns").as_uri())
    assert "\n" not in str(caught.value)
    with pytest.raises(ValueError, match=f"mlflow: {tmp_path / 'runs'} is a folder, MLflow's file store, which MLflow "
                       f"refuses unless MLFLOW_ALLOW_FILE_STORE=true; a local store it keeps: "
                       f"sqlite:///{tmp_path / 'runs' / 'mlflow.db'}"):
        track(result, str(tmp_path / "runs"))  # a folder, as people give one
    monkeypatch.setitem(sys.modules, "mlflow", None)  # as where it is not installed
    with pytest.raises(ImportError, match=r"mlflow: the mlflow package is not installed: pip install mlflow-skinny=="):
        track(result, "sqlite:///unused.db")
    assert not os.path.exists("unused.db")
