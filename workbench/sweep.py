"""The sweep: variants -> chunks -> vectors -> FAISS -> rankings -> tidy scores.

It is just the loop over variants; every step is a function of its own module. Queries are
embedded once per run, indexes come from the IndexStore (built once, then loaded), and the
result is a set of tidy DataFrames that plots, widgets and the report read without recomputing.
"""

from __future__ import annotations

import json
import platform
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import pandas as pd
from tqdm.auto import tqdm

from workbench import metrics, stats
from workbench.dataset import Dataset
from workbench.embed import Embedder
from workbench.index import Hit, IndexStore
from workbench.io import atomic_write, write_text
from workbench.variant import Variant

DEFAULT_KS = (1, 3, 5, 10)
MODES = ("corpus", "document")
MUST_MATCH = ("dataset_fingerprint", "model_fingerprint", "ks", "mode", "confidence")  # for `combine`
_VERSIONED = ("sentence-transformers", "torch", "faiss-cpu", "tiktoken", "llama-index-core", "numpy", "pandas")


@dataclass
class SweepResult:
    """Everything a sweep measured, as tidy tables.

    per_question: one row per variant x question x k x metric: [variant, qid, k, metric, value]
    summary:      one row per variant x metric x k: [variant, metric, k, mean, ci_low, ci_high, n]
    variants:     one row per variant: label, key, strategy, modifiers, one column per parameter,
                  and index cost (chunks, chars, tokens embedded, overlap chars, seconds, ...)
    config:       provenance: dataset and model (names, fingerprints), ks, mode, grid, versions, date
    """

    per_question: pd.DataFrame
    summary: pd.DataFrame
    variants: pd.DataFrame
    config: dict[str, Any] = field(default_factory=dict)

    @property
    def labels(self) -> list[str]:
        """Variant labels in sweep (grid) order."""
        table = self.variants if len(self.variants) else self.summary
        return list(dict.fromkeys(table["variant"]))

    def save(self, folder: str | Path) -> dict[str, Path]:
        """Write the tables (CSV + Parquet) and config.json, each atomically."""
        out = Path(folder)
        out.mkdir(parents=True, exist_ok=True)
        paths = {
            "summary": out / "summary.csv",
            "variants": out / "variants.csv",
            "per_question": out / "per_question.parquet",
            "config": out / "config.json",
        }
        atomic_write(paths["summary"], lambda p: self.summary.to_csv(p, index=False))
        atomic_write(paths["variants"], lambda p: self.variants.to_csv(p, index=False))
        atomic_write(paths["per_question"], lambda p: self.per_question.to_parquet(p, index=False))
        write_text(paths["config"], json.dumps(self.config, indent=2, default=str))
        return paths


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in _VERSIONED:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


def resolve_store(store: IndexStore | str | Path, embedder: Embedder | None) -> tuple[IndexStore, Embedder]:
    """A store from a folder name, and by default an embedder caching its vectors in that folder."""
    store = store if isinstance(store, IndexStore) else IndexStore(store)
    return store, embedder or Embedder(cache_dir=store.root)


def rankings(
    dataset: Dataset,
    variant: Variant,
    k: int = 10,
    embedder: Embedder | None = None,
    store: IndexStore | str | Path = "results/cache",
    mode: str = "corpus",
) -> list[list[Hit]]:
    """One variant's top-k hits for every question (index loaded or built), e.g. to drill down."""
    store, embedder = resolve_store(store, embedder)
    qvecs = embedder.encode([q.question for q in dataset.questions], desc="questions")
    return store.get(variant, dataset, embedder).search(qvecs, dataset.questions, k, mode=mode)


def sweep(
    dataset: Dataset,
    variants: Sequence[Variant],
    ks: Sequence[int] = DEFAULT_KS,
    embedder: Embedder | None = None,
    store: IndexStore | str | Path = "results/cache",
    mode: str = "corpus",
    progress: bool = True,
    confidence: float = 0.95,
) -> SweepResult:
    """Score every variant on every question of `dataset` at every k.

    mode: "corpus" searches all chunks; "document" searches only the question's own document(s).
    """
    ks = tuple(sorted(set(ks)))
    if not ks or ks[0] < 1:
        raise ValueError(f"ks must be positive integers, got {list(ks)}")
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if not variants:
        raise ValueError("variants is empty: nothing to sweep")
    labels = [v.label for v in variants]
    if len(set(labels)) != len(labels):
        raise ValueError(f"duplicate variants in the grid: {sorted(x for x in labels if labels.count(x) > 1)}")
    store, embedder = resolve_store(store, embedder)
    before = (embedder.stats.embedded, embedder.stats.cached)
    qvecs = embedder.encode([q.question for q in dataset.questions], desc="questions")
    bounds = metrics.token_bounds(dataset)  # for token-level recall, once per corpus
    per_q, rows = [], []
    bar = tqdm(variants, desc="variants", disable=not progress, unit="variant")
    for v in bar:
        bar.set_postfix_str(v.label)
        index = store.get(v, dataset, embedder, progress=progress)
        rankings = index.search(qvecs, dataset.questions, max(ks), mode=mode)
        scores = pd.concat([metrics.score_rankings(dataset.questions, rankings, ks, token_bounds=bounds),
                            metrics.score_omega(dataset.questions, index.spans)], ignore_index=True)
        scores.insert(0, "variant", v.label)
        per_q.append(scores)
        rows.append({"variant": v.label, "key": v.key, "strategy": v.strategy,
                     "contextual_header": v.contextual_header, "late": v.late, **v.kwargs, **index.cost})
    per_question = pd.concat(per_q, ignore_index=True)
    config = {
        "dataset": dataset.name,
        "dataset_fingerprint": dataset.fingerprint,
        "corpus_fingerprint": dataset.corpus_fingerprint,
        "documents": len(dataset.documents),
        "questions": len(dataset.questions),
        "characters": dataset.n_chars,
        "model": embedder.name,
        "model_fingerprint": embedder.fingerprint,
        "ks": list(ks),
        "mode": mode,
        "confidence": confidence,
        "grid": [v.spec() for v in variants],
        "texts_embedded": embedder.stats.embedded - before[0],
        "texts_cached": embedder.stats.cached - before[1],
        "versions": versions(),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    summary = stats.summarize(per_question, confidence=confidence)
    return SweepResult(per_question, summary, pd.DataFrame(rows), config)


def combine(results: Sequence[SweepResult]) -> SweepResult:
    """Stack sweeps of the same data, model, ks and mode; a variant measured twice keeps its first
    measurement. Raises ValueError naming the config field that differs."""
    if not results:
        raise ValueError("combine: no results")
    first = results[0].config
    for r in results[1:]:
        for name in MUST_MATCH:
            if r.config.get(name) != first.get(name):
                raise ValueError(
                    f"cannot combine results with different {name}: {first.get(name)!r} vs {r.config.get(name)!r}"
                )
    seen: set[str] = set()
    parts = []
    for r in results:
        new = [v for v in r.labels if v not in seen]
        seen.update(new)
        parts.append([t[t["variant"].isin(new)] for t in (r.per_question, r.summary, r.variants)])
    per_question, summary, variants = (pd.concat(tables, ignore_index=True) for tables in zip(*parts, strict=True))
    grid = {json.dumps(g, sort_keys=True, default=str): g for r in results for g in r.config.get("grid", [])}
    config = first | {
        "grid": list(grid.values()),
        "texts_embedded": sum(r.config.get("texts_embedded", 0) for r in results),
        "texts_cached": sum(r.config.get("texts_cached", 0) for r in results),
        "date": max(str(r.config.get("date", "")) for r in results),
    }
    return SweepResult(per_question, summary, variants, config)
