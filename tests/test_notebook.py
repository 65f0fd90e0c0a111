"""The notebooks, executed headless with the real model on a tiny corpus (and `make app` dry-run)."""

from __future__ import annotations

import html
import re
import shlex
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import nbformat
import pytest
from conftest import REPO, model_stack_parameters, write_dataset
from nbformat.v4 import new_code_cell

from workbench.dataset import Dataset
from workbench.figures.viewer import EVIDENCE

pytestmark = [pytest.mark.notebook, pytest.mark.model]

def execute(name: str, params: str, then: Callable[[list], list[str]] = lambda cells: []) -> list:
    """Run notebooks/<name> headless with its 'parameters' cell replaced, then the cells `then`
    makes of its code cells (e.g. a sweep, and some of its cells once more); return the outputs."""
    from nbclient import NotebookClient

    nb = nbformat.read(REPO / "notebooks" / name, as_version=4)
    cells = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(cells) == 1, f"{name} needs exactly one cell tagged 'parameters'"
    cells[0].source = params
    nb.cells += [new_code_cell(source) for source in then([c for c in nb.cells if c.cell_type == "code"])]
    resources = {"metadata": {"path": str(REPO / "notebooks")}}
    NotebookClient(nb, timeout=600, kernel_name="python3", resources=resources).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    return outputs


SWEEP = """sweeper.background = False  # as a user's Run, but in this cell
sweeper.ranges["size"].value = "40"
sweeper.run_button.click()"""
SHOW = "print(repr(sweeper.ranges['size'].value), sweeper.result.labels)"


def after_a_sweep(cells: list) -> list[str]:
    """A sweep from the sweeper, section 7 run again, then the sweeper's cell run again."""
    export, = (c.source for c in cells if "wb.report.export(" in c.source)
    sweeper, = (c.source for c in cells if "wb.widgets.sweeper(" in c.source)
    return [SWEEP, export, sweeper, SHOW]


def app_command(*args: str) -> tuple[dict[str, str], list[str]]:
    """What `make app` runs (dry, nothing is served): the environment it sets and the command."""
    dry = subprocess.run(["make", "-n", "app", *args], cwd=REPO, capture_output=True, text=True, check=True).stdout
    line, = (line for line in dry.replace("\\\n", " ").splitlines() if "voila " in line)
    words = shlex.split(line)
    env = dict(word.split("=", 1) for word in words if "=" in word and not word.startswith("-"))
    return env, [word for word in words if "=" not in word or word.startswith("-")]


def test_make_app_serves_the_folder_named_by_data(tiny: Dataset, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """`make app DATA=folder` serves the user's folder; without DATA, the bundled dataset."""
    assert app_command()[0]["WORKBENCH_DATA"] == str(REPO / "data" / "chroma_small")
    data = write_dataset(tiny, tmp_path / "mine")
    env, command = app_command(f"DATA={data}")
    assert env["WORKBENCH_DATA"] == str(data) and "notebooks/app.ipynb" in command
    monkeypatch.setenv("WORKBENCH_DATA", env["WORKBENCH_DATA"])  # the kernel inherits it, as under Voilà
    params = next(c.source for c in nbformat.read(REPO / "notebooks" / "app.ipynb", as_version=4).cells
                  if "parameters" in c.metadata.get("tags", []))
    outputs = execute("app.ipynb", f"{params}\nCACHE = {str(tmp_path / 'cache')!r}",
                      lambda cells: ["print(session.dataset.fingerprint, sweeper.ranges['size'].value)"])
    assert outputs[-1].text.split(" ", 1) == [tiny.fingerprint, "128, 256, 512\n"]


def test_quickstart_runs_end_to_end_and_exports_what_the_sweeper_measured(tiny: Dataset, tmp_path: Path) -> None:
    data = write_dataset(tiny, tmp_path / "data")
    outputs = execute("01_quickstart.ipynb", f"DATA = {str(data)!r}\nCACHE = {str(tmp_path / 'cache')!r}\n"
                      f"OUT = {str(tmp_path / 'out')!r}\nMAX_QUESTIONS = None\nKS = (1, 3, 5)", after_a_sweep)
    assert any("image/png" in o.get("data", {}) for o in outputs), "the overview plot was not drawn"
    assert any(EVIDENCE in o.get("data", {}).get("text/html", "") for o in outputs), "no chunk viewer"
    assert any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in outputs), "no widget panel"
    report = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert "data:image/png;base64," in report and tiny.fingerprint in report
    swept = "fixed(size=40, overlap=0)"
    assert swept in report and "fixed(size=512, overlap=0)" in report  # the sweeper's and section 2's
    size, labels = outputs[-1].text.split(" ", 1)  # the sweeper's cell again: its grid and variants are back
    assert size == "'40'" and swept in labels and "semantic(" in labels


def test_tradeoffs_notebook_runs_end_to_end(tiny: Dataset, tmp_path: Path) -> None:
    data = write_dataset(tiny, tmp_path / "data")
    outputs = execute("02_tradeoffs.ipynb", f"DATA = {str(data)!r}\nCACHE = {str(tmp_path / 'cache')!r}\n"
                      f"OUT = {str(tmp_path / 'out')!r}\nMAX_QUESTIONS = None\nK = 3\nKS = (1, 3)")
    assert sum("image/png" in o.get("data", {}) for o in outputs) == 3
    report = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    for label in ("fixed(size=64, overlap=0)", "recursive(size=256, overlap=0)+late", "sentence_window(window=3)"):
        assert label in report


@pytest.mark.parametrize("folder", ["data/mixed", "tests/data/itsdangerous"])
def test_your_documents_notebook_is_a_template_any_folder_runs_through(folder: str, tmp_path: Path) -> None:
    """Pointed at a folder by one cell, every section adapts to what it holds (one without such documents
    says so in a line), and it ends in the sweeper and a report: on the bundled mixed folder (code, docs,
    a PDF) and on a project's docs and code (no PDF), copied where no relative path of the repo holds."""
    data = shutil.copytree(REPO / folder, tmp_path / "folder")
    if folder == "tests/data/itsdangerous":  # questions as people write them, one quote matching nothing
        shutil.copy(REPO / "tests/data/itsdangerous_as_written.jsonl", data / "questions.jsonl")
    grid = ["fixed:size=119,tokenizer=model", "recursive:size=238,tokenizer=model+bm25"]
    outputs = execute("03_your_documents.ipynb", f"DATA = {str(data)!r}\nCACHE = {str(tmp_path / 'cache')!r}\n"
                      f"GRID = {grid!r}\nK = 3\nKS = (1, 3)\nOUT = {str(tmp_path / 'out')!r}")
    text = "\n".join(o.get("text", "") for o in outputs)
    tables = [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    assert "recall@3" in " ".join(tables) and "has the highest recall@3" in text
    assert any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in outputs), "no sweeper"
    report = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert "fixed(size=119, overlap=0, tokenizer=model)" in report
    if folder == "data/mixed":
        assert "code(size=238, tokenizer=model)" in " ".join(tables) and "page(window=1)" in " ".join(tables)
    else:
        assert "No PDF with questions in this folder: nothing to compare here." in text
        assert "markdown(size=238, overlap=0, tokenizer=model)" in " ".join(tables)
        left_out = "left out 1 label(s) whose evidence is not located (missing='skip'): line 9 line-9 evidence"
        assert left_out in text and left_out in html.unescape(report)
        assert "8 questions" in text


def test_model_stack_notebook_measures_every_llm_row_and_the_answers(model_stack_files: tuple[Path, Path],
                                                                     tmp_path: Path) -> None:
    outputs = execute("03_model_stack.ipynb", model_stack_parameters(model_stack_files, tmp_path / "out"))
    tables = [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    text = "".join(o.get("text", "") for o in outputs)
    labels = ("recursive(size=128, overlap=0)+context(max_tokens=12)", "propositions(passage_size=128, max_tokens=12",
              "llm_chunk(window=12, max_size=256, max_tokens=12", "recursive(size=128, overlap=0)+hybrid+rerank(n=10)")
    for label in labels:
        assert any(label in t for t in tables), label
    costs = [t for t in tables if "index_tokens_generated" in t]  # +context's, the LLM chunkers': one pair of columns
    assert len(costs) >= 2 and not any("context_tokens_generated" in t for t in tables)
    assert any("rerank_seconds_per_question" in t for t in tables)
    written = text.split("the context written above one chunk: ")[1].splitlines()[0]
    assert written not in ("None", "''")  # the model wrote something above the chunk
    answers = tables[-1]
    assert "(no context)" in answers and "(evidence as context)" in answers and "f1" in answers
    assert "<th>key</th>" not in answers and not re.search(r"\d\.\d{4}", answers)  # rounded to 3 digits
    assert "Answer quality" in (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
