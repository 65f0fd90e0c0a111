"""Chunking workbench: compare chunking strategies for RAG on span-labelled questions.

    import workbench as wb
    ds = wb.load_dataset("data/chroma_small")
    result = wb.sweep(ds, wb.grid("fixed", size=[128, 256, 512]))
    wb.plots.overview(result)
    wb.report.export(result, "results/mine")
    wb.track(result, "sqlite:///mlflow.db")  # every variant as an MLflow run
"""

import importlib
import os
from typing import Any

import pyarrow

# pandas keeps strings in pyarrow buffers, allocated by pyarrow's default pool (mimalloc). Building
# the str columns of a large grid's tables was an order of magnitude slower from that pool than from
# the system allocator (bench/preview.md), so the workbench uses the system pool unless
# ARROW_DEFAULT_MEMORY_POOL names one.
if "ARROW_DEFAULT_MEMORY_POOL" not in os.environ:
    pyarrow.set_memory_pool(pyarrow.system_memory_pool())

from workbench.chunkers import STRATEGIES, register_factory, register_function, register_node_parser, unregister
from workbench.dataset import (
    Dataset,
    DatasetError,
    DatasetWarning,
    Document,
    Hit,
    Question,
    Span,
)
from workbench.ingest import load_dataset
from workbench.labels.importers import import_dataset
from workbench.models.embed import Embedder
from workbench.models.llm import LLM
from workbench.results.combine import combine
from workbench.results.result import SweepResult
from workbench.results.track import track
from workbench.retrieval.index import IndexStore, build_index
from workbench.run.session import Session, audit, rankings, search, sweep, sweep_steps
from workbench.variant import Variant, grid, parse_variant

# matplotlib/ipywidgets load on use; the name under `wb.` -> its module
_LAZY = {"answers": "results.answers", "drilldown": "results.drilldown", "metrics": "evaluation.metrics",
         "plots": "figures.plots", "report": "report", "stats": "evaluation.stats", "viewer": "figures.viewer",
         "widgets": "widgets"}
# a class or function under `wb.` -> its module, loaded on use like _LAZY
_LAZY_NAMES = {"Labeler": "widgets.labeler", "export_code": "export"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return importlib.import_module(f"workbench.{_LAZY[name]}")
    if name in _LAZY_NAMES:
        return getattr(importlib.import_module(f"workbench.{_LAZY_NAMES[name]}"), name)
    raise AttributeError(f"module 'workbench' has no attribute {name!r}")


__all__ = [
    "LLM", "STRATEGIES", "Dataset", "DatasetError", "DatasetWarning", "Document", "Embedder", "Hit", "IndexStore",
    "Question", "Session", "Span", "SweepResult", "Variant", "audit", "build_index", "combine", "grid",
    "import_dataset", "load_dataset", "parse_variant", "rankings", "register_factory", "register_function",
    "register_node_parser", "search", "sweep", "sweep_steps", "track", "unregister", *sorted(_LAZY),
    *sorted(_LAZY_NAMES),
]
