"""A warm re-run imports only what it uses: no file parser, model stack, Markdown parser, FAISS or
scipy.stats when every output comes from the caches (imports were 4 of the 5 seconds of a warm
CLI sweep). Checked in a fresh interpreter's sys.modules, never by time."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, write_dataset

from workbench.cli import main
from workbench.dataset import Dataset

PARSERS = ("bs4", "markdownify", "pypdf", "docx", "pygments", "markdown_it", "tree_sitter", "nltk")
MODELS = ("torch", "sentence_transformers", "transformers", "onnxruntime")
# what intervals, searches and late chunking's pooling need: a re-run reads them back
COMPUTE = ("scipy.stats", "scipy.sparse", "faiss")

# runs its arguments as `python -m workbench` does, then prints which of its modules were imported
SHOW_IMPORTS = """import json, sys
from workbench.cli import main
main(sys.argv[2:])
print(json.dumps(sorted(m for m in json.loads(sys.argv[1]) if m in sys.modules)))
"""


def imported(args: list[str], modules: tuple[str, ...]) -> list[str]:
    """Which of `modules` a fresh interpreter has imported after running the CLI with `args`."""
    out = subprocess.run([sys.executable, "-c", SHOW_IMPORTS, json.dumps(modules), *args], capture_output=True,
                         text=True, check=True, cwd=REPO).stdout
    return json.loads(out.splitlines()[-1])


def test_importing_the_cli_loads_no_parser_model_faiss_or_scipy_stats() -> None:
    code = "import json, sys, workbench, workbench.cli; print(json.dumps(sorted(sys.modules)))"
    loaded = set(json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                           cwd=REPO).stdout))
    assert not loaded & {*PARSERS, *MODELS, *COMPUTE, "matplotlib"}


@pytest.mark.model
def test_a_warm_sweep_imports_no_parser_model_faiss_scipy_stats_or_matplotlib(tiny: Dataset, tmp_path: Path) -> None:
    """The first run parses Markdown, embeds, bootstraps and draws; the re-run reads chunks, vectors,
    scores, intervals and figures back, so it needs none of those libraries (report or not), FAISS
    nor matplotlib."""
    data = write_dataset(tiny, tmp_path / "data")
    args = ["sweep", "--data", str(data), "--out", str(tmp_path / "out"), "--cache", str(tmp_path / "cache"),
            "--quiet", "--ks", "1", "3", "-v", "markdown:size=64", "-v", "fixed:size=24,overlap=4"]
    main(args)
    assert imported([*args, "--no-report"], (*PARSERS, *MODELS, *COMPUTE)) == []
    assert imported(args, (*PARSERS, *MODELS, *COMPUTE, "matplotlib")) == []
