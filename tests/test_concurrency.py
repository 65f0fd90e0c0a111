"""Sweeps that share a cache: two processes at once, and a process killed mid-sweep then rerun,
must give the results of a clean run (real model, real FAISS, the real CLI in subprocesses)."""

from __future__ import annotations

import json
import random
import signal
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import REPO

GRID = ["fixed:size=32,overlap=8", "semantic:breakpoint_percentile=90,max_size=64"]
EXCERPT = {"state_of_the_union": 2500, "wikitexts": 2000}  # characters kept: ~45 sentences
KILLS = 3


@dataclass(frozen=True)
class Run:
    out: Path
    cache: Path
    seconds: float
    stdout: str
    stderr: str


def write_corpus(folder: Path) -> Path:
    """The start of two data/chroma_small documents, their questions, and one blank document
    (which the CLI must skip with a warning)."""
    src = REPO / "data" / "chroma_small"
    docs = [json.loads(line) for line in (src / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    docs = [dict(d, text=d["text"][: EXCERPT[d["doc_id"]]]) for d in docs if d["doc_id"] in EXCERPT]
    docs.append({"doc_id": "blank", "text": " \n "})
    questions = [json.loads(line) for line in (src / "questions.jsonl").read_text(encoding="utf-8").splitlines()]
    questions = [q for q in questions if all(a["doc_id"] in EXCERPT and a["end"] <= EXCERPT[a["doc_id"]]
                                             for a in q["answers"])]
    folder.mkdir(parents=True)
    for name, rows in (("corpus.jsonl", docs), ("questions.jsonl", questions)):
        (folder / name).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return folder


def start(data: Path, cache: Path, out: Path) -> subprocess.Popen:
    variants = [arg for v in GRID for arg in ("-v", v)]
    cmd = [sys.executable, "-m", "workbench", "sweep", "--data", str(data), "--cache", str(cache), "--out", str(out),
           *variants, "--threads", "1", "--no-report", "--quiet"]
    return subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(p: subprocess.Popen, out: Path, cache: Path, t0: float) -> Run:
    stdout, stderr = p.communicate(timeout=300)
    assert p.returncode == 0, stderr
    return Run(out, cache, time.perf_counter() - t0, stdout, stderr)


def sweep(data: Path, cache: Path, out: Path) -> Run:
    t0 = time.perf_counter()
    return finish(start(data, cache, out), out, cache, t0)


def assert_same_results(a: Run, b: Run) -> None:
    for table in ("summary.csv", "variants.csv"):
        cols = ["key", "variant", "metric", "k", "mean", "ci_low", "ci_high", "n"] if table == "summary.csv" else \
            ["key", "variant", "chunks", "chars", "tokens_embedded", "truncated_chunks", "overlap_chars"]
        pd.testing.assert_frame_equal(pd.read_csv(a.out / table)[cols], pd.read_csv(b.out / table)[cols])
    pd.testing.assert_frame_equal(pd.read_parquet(a.out / "per_question.parquet"),
                                  pd.read_parquet(b.out / "per_question.parquet"))


def vectors(cache: Path) -> dict[bytes, np.ndarray]:
    """Every row of the (single) vector cache file, after SQLite's own integrity check."""
    (path,) = (cache / "embeddings").glob("*.sqlite")
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        rows = db.execute("SELECT key, v FROM vec").fetchall()
    found = {k: np.frombuffer(v, dtype=np.float32) for k, v in rows}
    assert len(found) == len(rows)
    return found


def assert_same_cache(cache: Path, clean: Path) -> None:
    """One index entry per variant, and exactly the clean run's vectors (no row missing or extra)."""
    entries = [p for p in (cache / "index").iterdir() if not p.name.startswith(".")]
    assert len(entries) == len(GRID)
    assert sorted(p.name for p in entries) == sorted(p.name for p in (clean / "index").iterdir())
    got, want = vectors(cache), vectors(clean)
    assert got.keys() == want.keys()
    assert all(np.allclose(got[k], want[k], atol=1e-5) for k in want)


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("concurrency") / "data")


@pytest.fixture(scope="module")
def clean(data: Path) -> Run:
    """One uninterrupted sweep, alone on an empty cache: the reference."""
    run = sweep(data, data.parent / "clean-cache", data.parent / "clean")
    assert pd.read_csv(run.out / "variants.csv")["built"].sum() == 2  # --quiet prints only the answer
    warned = [line for line in run.stderr.splitlines() if line.startswith("warning: ")]
    assert len(warned) == 1 and "'blank'" in warned[0]  # a one-line warning, not a failure
    return run


@pytest.mark.model
def test_two_processes_on_one_empty_cache_agree(data: Path, clean: Run) -> None:
    cache = data.parent / "shared-cache"
    t0 = time.perf_counter()
    both = [start(data, cache, data.parent / name) for name in ("first", "second")]
    first, second = (finish(p, data.parent / name, cache, t0) for p, name in zip(both, ("first", "second"),
                                                                                   strict=True))
    assert_same_results(first, clean)
    assert_same_results(second, clean)
    assert not [p.name for p in (cache / "index").iterdir() if p.name.startswith(".")]  # no temporary folder left
    assert_same_cache(cache, clean.cache)

    third = sweep(data, cache, data.parent / "third")
    assert not pd.read_csv(third.out / "variants.csv")["built"].any()
    assert json.loads((third.out / "config.json").read_text())["texts_embedded"] == 0
    assert_same_results(third, clean)


@pytest.mark.model
def test_a_sweep_killed_at_random_points_then_rerun_gives_the_clean_results(data: Path, clean: Run) -> None:
    """Kills at seeded random times between 0.5 s and a third of the clean run's duration land
    while the model loads, while texts are embedded or while entries are written; each next run
    resumes from what the killed one left in the cache, so it reaches its later steps sooner. A
    third: the clean run, the module's first process, took 7.9 s where a later cold run takes
    about 3 s, and draws up to its whole duration all missed in CI."""
    cache = data.parent / "killed-cache"
    rng = random.Random(20261130)
    killed = 0
    for n, at in enumerate(rng.uniform(0.5, clean.seconds / 3) for _ in range(KILLS)):
        p = start(data, cache, data.parent / f"killed-{n}")
        try:
            p.wait(timeout=at)
        except subprocess.TimeoutExpired:
            p.send_signal(signal.SIGKILL)
            killed += 1
        p.communicate()
    assert killed >= 1  # at least one run really was interrupted
    rerun = sweep(data, cache, data.parent / "rerun")
    assert_same_results(rerun, clean)
    assert_same_cache(cache, clean.cache)
