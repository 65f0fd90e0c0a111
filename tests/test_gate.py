"""`python -m workbench check`: a CI gate over a baseline run. The regression it must catch is
real: a user's chunking function changed behaviour without a new version (so the variant key, and
the baseline's, stay the same), swept on a fresh cache as on a CI machine."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import REPO

from workbench.chunkers import register_function
from workbench.cli import main
from workbench.results.gate import compare, failed
from workbench.results.result import SweepResult
from workbench.run import registries

SQUAD = REPO / "tests" / "data" / "squad_v11_dev"  # 130 questions: enough to tell a real drop from noise


def windows(size: int):
    return lambda text: [text[i : i + size] for i in range(0, len(text), size)]


def sweep_args(out: Path, cache: Path) -> list[str]:
    return ["--data", str(SQUAD), "--out", str(out), "--cache", str(cache), "-v", "windows", "-v",
            "fixed:size=128", "--ks", "1", "5", "--budgets", "--quiet"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(baseline folder, regressed folder): `windows` cuts 600-character pieces, then 60."""
    root = tmp_path_factory.mktemp("gate")
    saved = registries.snapshot()  # made before a test's own snapshot: conftest's fixture would keep `windows`
    try:
        register_function("windows", windows(600))
        main(["sweep", *sweep_args(root / "baseline", root / "cache"), "--no-report"])
        register_function("windows", windows(60))  # same name, same version: the key cannot tell
        main(["sweep", *sweep_args(root / "regressed", root / "fresh-cache"), "--no-report"])
    finally:
        registries.restore(saved)
    return root / "baseline", root / "regressed"


def exit_code(argv: list[str]) -> int:
    with pytest.raises(SystemExit) as e:
        main(argv)
    return e.value.code


@pytest.mark.model
def test_a_run_checked_against_itself_passes_from_the_caches(runs: tuple[Path, Path], tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    baseline, _ = runs
    register_function("windows", windows(600))
    main(["check", "--baseline", str(baseline), *sweep_args(tmp_path / "now", baseline.parent / "cache")])
    out = capsys.readouterr().out
    rows = out.splitlines()[1:3]
    assert "PASS: no variant's recall@5 dropped" in out and all(" ok " in row for row in rows), out
    config = json.loads((tmp_path / "now" / "config.json").read_text())
    assert config["texts_embedded"] == 0  # measured from the caches: a CI gate costs no model pass
    assert not (tmp_path / "now" / "report.html").exists()  # tables only


@pytest.mark.model
def test_a_real_drop_fails_with_exit_1_and_names_the_variant(runs: tuple[Path, Path],
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    baseline, regressed = runs
    assert exit_code(["check", "--baseline", str(baseline), "--current", str(regressed)]) == 1
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.strip().startswith("windows()"))
    assert " drop " in line and "FAIL: 1 variant(s) dropped recall@5" in out, out
    assert " ok " in next(x for x in out.splitlines() if x.strip().startswith("fixed("))
    table = compare(SweepResult.load(baseline), SweepResult.load(regressed))
    row = table.set_index("variant").loc["windows()"]
    assert row["ci_high"] < 0 and row["diff"] < -0.02 and row["n"] == 130 and failed(table)


@pytest.mark.model
def test_max_drop_lets_a_drop_pass_on_purpose(runs: tuple[Path, Path]) -> None:
    baseline, regressed = runs
    table = compare(SweepResult.load(baseline), SweepResult.load(regressed), max_drop=0.99)
    assert table["status"].tolist() == ["ok", "ok"] and not failed(table)
    costs = compare(SweepResult.load(baseline), SweepResult.load(regressed), metric="context_tokens")
    assert costs.set_index("variant").loc["windows()", "status"] == "better"  # 60-character pieces cost less


@pytest.mark.model
def test_a_variant_missing_from_the_run_fails_and_a_new_one_does_not(runs: tuple[Path, Path], tmp_path: Path) -> None:
    baseline, _ = runs
    register_function("windows", windows(600))
    main(["sweep", "--data", str(SQUAD), "--out", str(tmp_path / "other"), "--cache", str(baseline.parent / "cache"),
          "-v", "windows", "-v", "fixed:size=64", "--ks", "1", "5", "--budgets", "--quiet", "--no-report"])
    table = compare(SweepResult.load(baseline), SweepResult.load(tmp_path / "other")).set_index("variant")
    assert table.loc["fixed(size=64, overlap=0)", "status"] == "new"
    assert table.loc["fixed(size=128, overlap=0)", "status"] == "missing"
    assert failed(table.reset_index())


@pytest.mark.model
def test_errors_exit_2_with_one_line(runs: tuple[Path, Path], tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    baseline, regressed = runs
    assert exit_code(["check", "--baseline", str(tmp_path / "nothing"), "--current", str(regressed)]) == 2
    assert "error: --baseline:" in capsys.readouterr().err
    broken = tmp_path / "broken"
    shutil.copytree(regressed, broken)
    (broken / "per_question.parquet").write_text("not parquet")
    assert exit_code(["check", "--baseline", str(baseline), "--current", str(broken)]) == 2
    assert "per_question.parquet: cannot read" in capsys.readouterr().err
    assert exit_code(["check", "--baseline", str(baseline), "--current", str(regressed), "--k", "3"]) == 2
    assert "k=3 was not swept" in capsys.readouterr().err
