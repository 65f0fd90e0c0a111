"""`python -m workbench`: help, strategy listing, a headless sweep, and clear errors."""

from __future__ import annotations

import html
import json
import subprocess
import sys
from itertools import takewhile
from pathlib import Path

import pandas as pd
import pytest
from conftest import REPO, write_dataset

from workbench.chunkers import STRATEGIES, register_function
from workbench.cli import main
from workbench.core.stages import STAGES
from workbench.dataset import Dataset
from workbench.evaluation import stats
from workbench.results.result import SweepResult
from workbench.variant import MODIFIERS


def test_help_explains_every_option() -> None:
    out = subprocess.run([sys.executable, "-m", "workbench", "sweep", "--help"], capture_output=True, text=True,
                         check=True).stdout
    for option in ("--data", "--questions", "--out", "--variant", "--grid", "--ks", "--mode", "--model", "--cache",
                   "--max-questions", "--threads", "--backend", "--device", "--preview", "--no-report", "--top",
                   "--quiet",
                   "+header", "+late"):
        assert option in out


def test_strategies_lists_every_parameter(capsys: pytest.CaptureFixture[str]) -> None:
    main(["strategies"])
    out = capsys.readouterr().out
    for name, s in STRATEGIES.items():
        assert f"{name}: " in out
        assert all(f"    {p} = " in out for p in s.params)
    assert "breakpoint_percentile = 95.0 in [0, 100]" in out


def test_strategies_lists_the_modifiers_and_the_retrieval_stages(capsys: pytest.CaptureFixture[str]) -> None:
    main(["strategies"])
    out = capsys.readouterr().out
    modifiers = out.split("\nmodifiers (")[1]  # the section, not a help text naming modifiers
    assert all(f"+{name}: {meaning}" in modifiers for name, meaning in MODIFIERS.items())
    stages = out.split("\nretrieval stages (")[1]
    for name, s in STAGES.items():
        assert f"+{name}: {s.help}" in stages
        assert all(f"    {p} = {prm.default!r}" in stages for p, prm in s.params.items())
    assert "rrf_k = 60 in [1, inf]" in stages


@pytest.mark.model
def test_sweep_writes_results_then_reuses_caches(tiny: Dataset, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    data = write_dataset(tiny, tmp_path / "data")
    grid = tmp_path / "grid.json"
    grid.write_text(json.dumps([{"strategy": "recursive", "size": 32}]))
    args = ["sweep", "--data", str(data), "--out", str(tmp_path / "out"), "--cache", str(tmp_path / "cache"),
            "-v", "fixed:size=24,overlap=4", "--grid", str(grid), "--ks", "1", "3"]
    main(args)
    first = capsys.readouterr().out
    assert "2 of 2 indexes built" in first and "texts embedded" in first
    wrote = [line for line in first.splitlines() if line.startswith("wrote ")]
    assert len(wrote) == 1 and wrote[0].startswith(f"wrote {tmp_path / 'out'}/: report.html, ")  # where, in a line
    for name in ("summary.csv", "variants.csv", "per_question.parquet", "config.json", "overview.png", "report.html"):
        assert (tmp_path / "out" / name).exists(), name
    main(args)
    assert "0 of 2 indexes built, embedded nothing new" in capsys.readouterr().out


@pytest.mark.model
def test_sweep_on_the_bundled_mixed_folder_reads_every_file(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """data/mixed as a user's folder: every file read (--strict: a skipped one is an error), its questions
    on code, PDF pages and table rows scored by the structure-aware strategies (BM25: no model to load)."""
    main(["sweep", "--data", str(REPO / "data" / "mixed"), "--strict", "--out", str(tmp_path / "out"),
          "--cache", str(tmp_path / "cache"), "--no-report", "--ks", "1", "3",
          "-v", "code:size=128+bm25", "-v", "page+bm25", "-v", "table:size=128+bm25"])
    out, err = capsys.readouterr()
    assert "warning" not in err and "skipped" not in out + err
    summary = pd.read_csv(tmp_path / "out" / "summary.csv")
    recall = summary[(summary["metric"] == "recall") & (summary["k"] == 3)].set_index("variant")["n"]
    assert sorted(recall.index) == ["code(size=128)+bm25", "page(window=1)+bm25", "table(size=128)+bm25"]
    assert set(recall) == {41}  # every question of questions.jsonl, none dropped with a skipped file


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["-v", "fixed:size=8,overlap=9"], "--variant: fixed: parameter 'overlap' must be in [0, size)"),
        (["-v", "chonk:size=8"], "--variant: unknown strategy 'chonk'"),
        (["--max-questions", "0"], "--max-questions must be >= 1"),
        (["--top", "0"], "--top must be >= 1"),
        (["-v", "fixed:size=8", "-v", "fixed:size=8,overlap=0"], "duplicate variants in the grid"),
        (["--model", "sentence-transformers/all-MiniLM-L6-v2"], "--model: model"),
    ],
)
def test_bad_arguments_fail_before_work(tiny: Dataset, tmp_path: Path, extra: list[str], message: str) -> None:
    data = write_dataset(tiny, tmp_path / "data")
    with pytest.raises(SystemExit) as err:
        main(["sweep", "--data", str(data), "--out", str(tmp_path / "out"), "--cache", str(tmp_path / "c"), *extra])
    assert message in str(err.value)
    assert not (tmp_path / "out").exists()


def test_bad_data_names_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "corpus.jsonl").write_text('{"doc_id": "a", "text": "x"}\n{"doc_id": "a", "text": "y"}\n')
    (tmp_path / "d" / "questions.jsonl").write_text("")
    with pytest.raises(SystemExit) as err:
        main(["sweep", "--data", str(tmp_path / "d"), "--out", str(tmp_path / "out")])
    assert "corpus.jsonl, line 2: field 'doc_id' duplicate id 'a'" in str(err.value)


@pytest.mark.model
def test_a_failing_variant_is_one_line_naming_it(tiny: Dataset, tmp_path: Path) -> None:
    register_function("nothing", lambda text: [])
    data = write_dataset(tiny, tmp_path / "data")
    with pytest.raises(SystemExit) as err:
        main(["sweep", "--data", str(data), "--out", str(tmp_path / "out"), "--cache", str(tmp_path / "c"),
              "-v", "fixed:size=24", "-v", "nothing", "--quiet", "--no-report"])
    message = str(err.value)
    assert message.startswith("error: ValueError: variant nothing() produced no chunks")
    assert "while sweeping variant nothing()" in message and "\n" not in message
    assert err.value.code not in (0, None)


@pytest.mark.model
def test_a_cold_grid_prints_an_estimate_before_it_starts(tiny: Dataset, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    data = write_dataset(tiny, tmp_path / "data")
    args = ["sweep", "--data", str(data), "--out", str(tmp_path / "out"), "--cache", str(tmp_path / "c"),
            "-v", "fixed:size=24", "-v", "recursive:size=32", "--no-report"]
    main(args)
    lines = capsys.readouterr().out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("estimate: "))
    assert at < next(i for i, line in enumerate(lines) if line.startswith("done in "))
    wrapped = takewhile(lambda line: line.startswith("  "), lines[at + 1 :])
    estimate = " ".join([lines[at], *(line.strip() for line in wrapped)])
    assert " texts to embed " in estimate and " word pieces/s, measured on " in estimate
    main(args)
    assert "estimate: all cached, nothing to embed" in capsys.readouterr().out.splitlines()


@pytest.mark.model
def test_sweep_ends_with_the_verdict_and_its_top_variants(tiny: Dataset, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """After the one line of paths: the verdict's sentences, wrapped, then the --top variants on its
    metric with their interval, how each stands against the best, context tokens, chunks and truncated
    chunks, the headline marked: always the first row, the highest mean."""
    import pandas as pd

    data = write_dataset(tiny, tmp_path / "data")
    main(["sweep", "--data", str(data), "--out", str(tmp_path / "out"), "--cache", str(tmp_path / "c"), "--ks", "1",
          "3", "-v", "fixed:size=16", "-v", "fixed:size=48", "-v", "recursive:size=32", "--top", "2", "--no-report"])
    lines = capsys.readouterr().out.splitlines()
    start = lines.index("Verdict on recall@3 over 4 questions:")
    assert any(line.startswith("wrote ") for line in lines[:start])  # the paths come before the answer
    header = next(i for i in range(start, len(lines)) if lines[i].split()[:2] == ["#", "variant"])
    sentences = " ".join(line.strip() for line in lines[start + 1 : header] if line)
    assert all(len(line) <= 100 for line in lines[start:header]) and sentences.endswith(".")  # the table: labels
    assert lines[header].split()[2:] == ["recall@3", "[95%", "CI]", "vs", "best", "context", "tokens", "chunks",
                                         "truncated"]
    summary = pd.read_csv(tmp_path / "out" / "summary.csv").set_index(["metric", "k", "variant"]).sort_index()
    variants = pd.read_csv(tmp_path / "out" / "variants.csv").set_index("variant")
    recall = summary.loc[("recall", 3)].sort_values("mean", ascending=False, kind="stable")
    rows = lines[header + 1 : -1]
    assert len(rows) == 2  # the top 2: the headline is the first
    for rank, row in enumerate(rows, 1):
        label = recall.index[rank - 1]
        r, tokens = recall.loc[label], summary.loc[("context_tokens", 3, label), "mean"]
        cells = row.lstrip("* ").split(f" {label} ")
        assert cells[0].strip() == str(rank), row
        truncated = variants.loc[label, "truncated_chunks"]
        standing = [] if rank == 1 else [next(s for s in ("tied", "worse", "trade-off") if s in cells[1].split())]
        assert cells[1].split() == [f"{r['mean']:.3f}", f"[{r['ci_low']:.3f},", f"{r['ci_high']:.3f}]", *standing,
                                    f"{tokens:,.0f}", str(variants.loc[label, "chunks"]), str(truncated)], row
    marked = [row for row in rows if row.startswith("*")]
    assert marked == rows[:1] and sentences.startswith(f"{recall.index[0]} has the highest recall@3")
    assert lines[-1].startswith(f"* the headline (the highest mean); {len(rows)} of 3 variants")


def test_without_recall_the_answer_says_there_is_no_verdict(tiny: Dataset, embedder, tmp_path: Path) -> None:
    from workbench.cli import answer
    from workbench.results.result import SweepResult
    from workbench.run.session import sweep
    from workbench.variant import parse_variant

    result = sweep(tiny, [parse_variant("fixed:size=24")], ks=(1,), embedder=embedder, store=tmp_path, progress=False)
    assert answer(result)[0].startswith("Verdict on recall@1")
    odd = SweepResult(*(t[t["metric"] != "recall"] for t in (result.per_question, result.summary)), result.variants,
                      result.provenance, result.hits)
    out = answer(odd)
    assert len(out) == 1 and out[0].startswith("No verdict: metric 'recall' not in the result")


def test_the_verdict_computed_once_gives_the_same_answer_and_report(tiny: Dataset, embedder, tmp_path: Path) -> None:
    """The CLI computes the verdict once and hands it to the report and its closing lines: both are
    what each computes alone."""
    from workbench.cli import answer
    from workbench.report import write_report
    from workbench.results.verdict import verdict
    from workbench.run.session import sweep
    from workbench.variant import parse_variant

    variants = [parse_variant(v) for v in ("fixed:size=24", "fixed:size=48,overlap=8", "recursive:size=32")]
    result = sweep(tiny, variants, ks=(1, 3), embedder=embedder, store=tmp_path, progress=False)
    judged = verdict(result)
    assert answer(result, 2, judged) == answer(result, 2)
    alone = write_report(result, tmp_path / "a.html", figures={}, dataset=tiny).read_text(encoding="utf-8")
    given = write_report(result, tmp_path / "b.html", figures={}, dataset=tiny, judged=judged)
    assert given.read_text(encoding="utf-8") == alone and 'id="against-best"' in alone


@pytest.mark.model
def test_quiet_prints_only_the_verdict_and_the_table(tiny: Dataset, tmp_path: Path) -> None:
    """A cold run (the model loads, texts are embedded): nothing on stderr, no bar, no banner, no path."""
    data = write_dataset(tiny, tmp_path / "data")
    run = subprocess.run([sys.executable, "-m", "workbench", "sweep", "--data", str(data), "--out",
                          str(tmp_path / "out"), "--cache", str(tmp_path / "c"), "-v", "fixed:size=24", "-v",
                          "fixed:size=24+bm25", "--quiet", "--no-report"], capture_output=True, text=True, check=True)
    assert run.stderr == ""
    lines = run.stdout.splitlines()
    assert lines[0] == "Verdict on recall@5 over 4 questions:" and lines[-1].startswith("* the headline")
    assert str(tmp_path) not in run.stdout and not any(line.startswith(("done in", "estimate")) for line in lines)
    header = next(i for i, line in enumerate(lines) if line.split()[:2] == ["#", "variant"])
    assert len(lines) - header == 4  # the header, two variants, the key


@pytest.mark.model
def test_preview_prints_a_confirm_command_that_runs_as_printed(tiny: Dataset, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """The command carries the options given and its own --out, so run as printed it keeps the
    preview's folder; the closing line says what the preview computed: its token pass."""
    import shlex

    import pandas as pd

    data = write_dataset(tiny, tmp_path / "data")
    options = ["--cache", str(tmp_path / "cache"), "--ks", "1", "3", "--max-questions", "3", "--mode", "document"]
    grid = ["-v", "fixed:size=16", "-v", "fixed:size=32,overlap=8", "-v", "recursive:size=48", "-v", "sentence:size=24"]
    main(["sweep", "--data", str(data), "--out", str(tmp_path / "p"), "--preview", *grid, *options])
    out = capsys.readouterr().out
    done = next(line for line in out.splitlines() if line.startswith("done in "))
    assert f"a token pass over {len(tiny.documents)} documents (computed now)" in done
    assert "embedded nothing new" not in done
    ties = SweepResult.load(tmp_path / "p").ties(k=3)  # the preview's own bootstrap over its 3 questions
    tied = set(ties.loc[ties["tied_with_top"], "key"])
    for run in stats.cannot_order(ties):
        assert f"cannot tell apart (95% paired interval holds 0): {', '.join(run)}" in out.replace("\n  ", " ")
    command = shlex.split(out.split("tied with its best with real embeddings:\n")[1].splitlines()[0])
    assert command[:4] == ["python", "-m", "workbench", "sweep"] and command.count("-v") == len(tied)
    assert "--preview" not in command and command[command.index("--out") + 1] == str(tmp_path / "p-confirm")
    for option, *values in (options[:2], options[2:5], options[5:7], options[7:]):  # each given, with its values
        at = command.index(option)
        assert command[at + 1 : at + 1 + len(values)] == values
    assert "<b>Preview.</b>" in (tmp_path / "p" / "report.html").read_text(encoding="utf-8")
    assert pd.read_csv(tmp_path / "p" / "variants.csv")["preview"].all()
    assert not (tmp_path / "cache" / "index").exists()  # a preview builds no real index
    kept = {name: (tmp_path / "p" / name).read_bytes() for name in ("variants.csv", "summary.csv", "report.html")}
    main(command[3:])  # as printed
    assert {name: (tmp_path / "p" / name).read_bytes() for name in kept} == kept  # the preview's folder is kept
    real = pd.read_csv(tmp_path / "p-confirm" / "variants.csv")
    assert len(real) == len(tied) and not real["preview"].any() and real["built"].all()
    config = json.loads((tmp_path / "p-confirm" / "config.json").read_text())
    assert (config["questions"], config["mode"], config["ks"]) == (3, "document", [1, 3])
    assert set(real["key"]) == tied  # the printed variants, parsed back, are those tied with the preview's best
    capsys.readouterr()
    main(["sweep", "--data", str(data), "--out", str(tmp_path / "p2"), "--preview", *grid, *options])
    done = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("done in "))
    assert f"the cached token pass over {len(tiny.documents)} documents" in done


@pytest.mark.model
def test_ctrl_c_ends_with_one_line_saying_what_finished_and_is_cached(tiny: Dataset, tmp_path: Path) -> None:
    """The trial's Ctrl-C printed a 135-line traceback; now one line, and the next run resumes."""
    from workbench.chunkers import register_function

    def interrupt(text: str) -> list[str]:
        raise KeyboardInterrupt

    register_function("interrupted", interrupt)
    data = write_dataset(tiny, tmp_path / "data")
    args = ["sweep", "--data", str(data), "--out", str(tmp_path / "out"), "--cache", str(tmp_path / "c"), "--quiet",
            "--no-report", "--ks", "1", "-v", "fixed:size=24", "-v", "interrupted"]
    with pytest.raises(SystemExit) as stopped:
        main(args)
    assert str(stopped.value.code).startswith("interrupted: 1 of 2 variants measured and cached")
    assert "run the same command again to resume" in str(stopped.value.code)


@pytest.mark.model
def test_labels_left_out_by_skip_missing_are_said_and_reach_the_result_and_its_report(
        tiny: Dataset, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One quote not found stops the sweep; --skip-missing leaves it out (and its question), says so once on
    stderr, and the result's config.json and report say it too."""
    data = write_dataset(tiny, tmp_path / "data")
    with (data / "questions.jsonl").open("a", encoding="utf-8") as f:
        f.write(json.dumps({"qid": "q-llama", "question": "?", "evidence": "Llamas graze on the moon"}) + "\n")
    args = ["sweep", "--data", str(data), "--out", str(tmp_path / "out"), "--cache", str(tmp_path / "cache"),
            "-v", "fixed:size=64+bm25", "--ks", "1", "--budgets"]
    with pytest.raises(SystemExit, match="field 'evidence' quote not found"):
        main(args)
    main([*args, "--skip-missing"])
    said = "left out 1 label(s) whose evidence is not located (missing='skip'): line 5 q-llama evidence (missing)"
    assert said in capsys.readouterr().err
    config = json.loads((tmp_path / "out" / "config.json").read_text(encoding="utf-8"))
    assert any(said in note for note in config["dataset_notes"])
    assert html.escape(said) in (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert set(pd.read_parquet(tmp_path / "out" / "per_question.parquet")["qid"]) == {q.qid for q in tiny.questions}
