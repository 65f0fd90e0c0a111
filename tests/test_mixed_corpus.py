"""A project's folder of documentation and source code nobody here wrote (tests/data/itsdangerous:
pallets/itsdangerous's reStructuredText pages and Python modules, 21 questions), through the CLI as a
new user runs it: the default grid fits the model's window, the headline is the highest mean, the
folders' winners make a route that is measured and said to be optimistic, and a reranker's model time
shows in the verdict."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
from conftest import REPO

from workbench.cli import main
from workbench.results.result import SweepResult
from workbench.results.verdict import TRUNCATED_SHARE

pytestmark = pytest.mark.model  # the default grid of the bundled model, through the CLI

FOLDER = REPO / "tests" / "data" / "itsdangerous"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The folder copied as a user has it, and a cache folder the module's sweeps share."""
    work = tmp_path_factory.mktemp("mixed")
    return shutil.copytree(FOLDER, work / "itsdangerous"), work / "cache"


def sweep(folder: tuple[Path, Path], out: Path, *args: str) -> SweepResult:
    data, cache = folder
    main(["sweep", "--data", str(data), "--out", str(out), "--cache", str(cache), "--no-report", *args])
    return SweepResult.load(out)


def test_the_default_sweep_fits_the_model_and_heads_with_the_highest_mean(
        folder: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = sweep(folder, tmp_path / "out")
    lines = capsys.readouterr().out.splitlines()
    v = result.variants.set_index("variant")
    assert {"code", "markdown", "route"} <= set(v["strategy"])  # the folder holds both kinds, so both and a route
    dense = v[v["retriever"] != "bm25"]
    assert (dense["truncated_chunks"] <= TRUNCATED_SHARE * dense["chunks"]).all(), dense["truncated_chunks"]
    recall = result.summary.query("metric == 'recall' and k == 5 and budget == 0")
    best = recall.sort_values("mean", ascending=False, kind="stable")["variant"].iloc[0]
    start = next(i for i, line in enumerate(lines) if line.startswith("Verdict on recall@5 over 21 questions"))
    assert lines[start + 1].strip().startswith(f"{best} has the highest recall@5")
    starred = next(line for line in lines[start:] if line.startswith("*  1"))
    assert best in starred
    # markdown on the modules and code on the pages fall back, and the run says so
    assert v.loc[v["strategy"] == "markdown", "fallback_documents"].item() == 7
    warned = " ".join(line.strip() for line in lines[start:])
    assert "chunk some documents other than their strategy is meant to" in warned and "src/_json.py" in warned
    assert v.loc[v["strategy"] == "route", "fallback_documents"].item() == 0


def test_folders_that_disagree_get_their_route_measured_and_called_optimistic(
        folder: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """recursive wins the pages (first of those at 1.0), fixed(476)+bm25 the modules: the route of both
    is built, measured with the retriever of the overall best, and its note says how it was chosen."""
    recursive, big = "recursive:size=238,tokenizer=model", "fixed:size=476,tokenizer=model+bm25"
    result = sweep(folder, tmp_path / "out", "-v", recursive, "-v", big)
    out = capsys.readouterr().out
    assert "the folders disagree: measured route(" in " ".join(out.split())
    routed = result.variants[result.variants["strategy"] == "route"]
    assert len(routed) == 1 and routed["retriever"].item() == "bm25"
    label = routed["variant"].item()
    assert "folder:docs" in label and "recursive(size=238" in label and "folder:src" in label
    assert result.provenance.notes and result.provenance.notes[0].startswith(label)
    assert "leans optimistic" in result.provenance.notes[0]
    assert "leans optimistic" in " ".join(out.split())  # said with the verdict
    assert result.per_question["key"].isin(routed["key"]).sum() > 0  # scored on every question, as the others


def test_a_reranker_s_model_time_per_question_is_in_the_verdict(
        folder: tuple[Path, Path], cross_encoder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plain = "fixed:size=238,tokenizer=model"
    result = sweep(folder, tmp_path / "out", "-v", plain, "-v", f"{plain}+rerank:model={cross_encoder},n=10")
    out = " ".join(capsys.readouterr().out.split())
    seconds = result.variants.set_index("strategy")["rerank_seconds_per_question"].dropna()
    assert len(seconds) == 1 and seconds.item() > 0
    assert "Model cost:" in out and "s of model time per question" in out
    assert "s/question" in out  # the table's column, there because a variant spends it
    summary = pd.read_csv(tmp_path / "out" / "variants.csv")
    assert summary["rerank_seconds_per_question"].notna().sum() == 1
