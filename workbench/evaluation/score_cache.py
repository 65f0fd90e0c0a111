"""Per-variant scores kept on disk, so that a re-run of a measured variant loads a table.

Why: once a variant's index exists, a warm sweep still searched it for every question and scored
every ranking (seconds per variant), only to find the numbers of last time. A variant's scores are
a function of its key, the dataset (questions and corpus), the model and the scoring settings
(Settings.scored: ks, budgets, budget encoding, mode), and of the code that retrieves and scores:
all of them name the entry, the code by a hash of its source files, so an edit to a metric or to search can never
serve old numbers. Entries are folders published atomically (workbench.core.io.publish): the
per-question scores and the top hits (Parquet) and the index cost the variants table shows (JSON).
"""

from __future__ import annotations

import hashlib
import json
from functools import cache
from pathlib import Path
from typing import Any

import pandas as pd

from workbench.core import stages as stage_registry
from workbench.core.io import publish, source_fingerprint
from workbench.dataset import Dataset
from workbench.evaluation import evidence, metrics, scoring
from workbench.evaluation.settings import Settings
from workbench.models.context import context_fingerprint
from workbench.models.rerank import reranker_fingerprint
from workbench.retrieval import ann, bm25, index, pgvector, rerank, search, stages
from workbench.variant import Variant

# what turns an index into rankings (the stages and the depth rule) and rankings into scores
_CODE = (evidence, metrics, scoring, index, ann, bm25, stage_registry, stages, rerank, search, pgvector)


@cache
def code_fingerprint() -> str:
    """Hash of the source of the retrieval and scoring modules."""
    return source_fingerprint(*_CODE)


class ScoreCache:
    """Scores of one dataset, model and scoring setting: `get` a variant's, or `put` them. `pg`: the URL
    of the server the pgvector stage searches (None: the bundled one), which names its variants' scores."""

    def __init__(self, root: Path, dataset: Dataset, model_fingerprint: str, settings: Settings,
                 pg: str | None = None):
        self.server = hashlib.sha256(pgvector.identity(pg).encode()).hexdigest()[:12]
        setting = json.dumps(settings.scored() | {"code": code_fingerprint()}, sort_keys=True)
        self.folder = Path(root) / "scores" / (
            f"{dataset.fingerprint}-{model_fingerprint}-{hashlib.sha256(setting.encode()).hexdigest()[:12]}")

    def path(self, variant: Variant) -> Path:
        """The variant's entry: its key, and the fingerprints of the models its strategy, its stages and
        +context name (an LLM's or a reranker's files are not in the key, which names them by path), and of
        the server its pgvector stage searches."""
        models = index.chunking_models(variant) + [
            reranker_fingerprint(value) for name, params, _ in variant.stages for param, value in params
            if param in stage_registry.get_stage(name).models and value is not None]
        models += [context_fingerprint(dict(variant.context))] if variant.context is not None else []
        models += [f"pg{self.server}"] if "pgvector" in index.needs(variant) else []
        return self.folder / "-".join([variant.key, *models])

    def has(self, variant: Variant) -> bool:
        """Whether the variant was measured before (entries are published whole: see the module docstring)."""
        return (self.path(variant) / "cost.json").exists()

    def get(self, variant: Variant) -> tuple[pd.DataFrame, dict[str, Any], pd.DataFrame] | None:
        """(scores [qid, k, budget, metric, value], cost, top hits) of a variant measured before, else None."""
        if not self.has(variant):
            return None
        path = self.path(variant)
        cost = json.loads((path / "cost.json").read_text())
        return (pd.read_parquet(path / "scores.parquet"), cost | {"texts_embedded": 0, "built": False},
                pd.read_parquet(path / "hits.parquet"))

    def put(self, variant: Variant, scores: pd.DataFrame, cost: dict[str, Any], hits: pd.DataFrame) -> None:
        def write(tmp: Path) -> None:
            scores.to_parquet(tmp / "scores.parquet", index=False)
            hits.to_parquet(tmp / "hits.parquet", index=False)
            (tmp / "cost.json").write_text(json.dumps({k: v for k, v in cost.items() if k != "built"}))

        publish(self.path(variant), write)
