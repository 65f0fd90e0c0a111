"""Results of the same data joined as one: `combine`, and the labels that stay unique across them."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from workbench.evaluation import metrics
from workbench.evaluation.settings import MUST_MATCH
from workbench.results.result import SweepResult


def unique_labels(keys: Sequence[str], labels: Sequence[str]) -> list[str]:
    """Labels for people, unique: a label shared by variants of different keys (e.g. two versions
    of a registered function) gets the start of the key appended, "mine(size=64) #3fa2c1"."""
    counts = Counter(labels)
    return [f"{label} #{key[:6]}" if counts[label] > 1 else label for key, label in zip(keys, labels, strict=True)]


def combine(*results: SweepResult | Sequence[SweepResult]) -> SweepResult:
    """Stack sweeps of the same data, ks and mode: combine(r1, r2) or combine([r1, r2]); a
    (variant, model) measured twice keeps its first measurement. Runs of different models or
    backends join as one result of several models (config["models"]; labels name the model).
    Raises ValueError naming the config field that differs."""
    results = tuple(r for item in results for r in (item if isinstance(item, list | tuple) else [item]))
    if not results:
        raise ValueError("combine: no results")
    if not all(isinstance(r, SweepResult) for r in results):
        wrong = sorted({type(r).__name__ for r in results if not isinstance(r, SweepResult)})
        raise TypeError(f"combine takes SweepResults (or lists of them), got {wrong}")
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
        new = [k for k in r.keys if k not in seen]
        seen.update(new)
        parts.append([_with_model(t if len(new) == len(r.keys) else t[t["key"].isin(new)], r.config)
                      for t in (r.per_question, r.summary, r.variants, r.hits)])
    per_question, summary, variants, hits = (pd.concat(tables, ignore_index=True)
                                             for tables in zip(*parts, strict=True))
    models = list({m["fingerprint"]: m for r in results for m in models_in(r.config)}.values())
    # labels unique across the results too (each result's own were unique within it), naming the model when several
    keys, labels = list(variants["key"]), list(variants["variant"])
    if len(models) > 1:
        labels = [label if label.endswith(f" · {m}") else f"{label} · {m}"
                  for label, m in zip(labels, variants["model"], strict=True)]
    relabel = dict(zip(keys, unique_labels(keys, labels), strict=True))
    per_question, summary, variants, hits = (_relabelled(t, relabel) for t in (per_question, summary, variants, hits))
    grid = {json.dumps(g, sort_keys=True, default=str): g for r in results for g in r.config.get("grid", [])}
    single = {} if len(models) > 1 else {name: first.get(name) for name in _SINGLE_MODEL if name in first}
    config = {k: v for k, v in first.items() if k not in _SINGLE_MODEL} | single | {
        "models": models,
        "grid": list(grid.values()),
        "texts_embedded": sum(r.config.get("texts_embedded", 0) for r in results),
        "texts_cached": sum(r.config.get("texts_cached", 0) for r in results),
        "token_pass_documents": sum(r.config.get("token_pass_documents", 0) for r in results),
        "date": max(str(r.config.get("date", "")) for r in results),
    }
    return SweepResult(per_question, summary, variants, config, hits, results[0].cache)


_SINGLE_MODEL = ("model", "model_fingerprint", "backend", "model_window")  # in a config of one model only


def models_in(config: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A result's models: config["models"], or (a result saved before it) its one model."""
    if "models" in config:
        return list(config["models"])
    return [{"name": config.get("model"), "fingerprint": config.get("model_fingerprint"),
             "backend": config.get("backend", "torch"), "window": config.get("model_window")}]


def _relabelled(table: pd.DataFrame, relabel: Mapping[str, str]) -> pd.DataFrame:
    """`table` with each row's variant label `relabel[key]`, each distinct key looked up once
    (a SQuAD preview grid's 543,048 per_question rows: 9 ms against Series.map's 77, measured apart)."""
    codes, keys = pd.factorize(table["key"])
    return table.assign(variant=metrics.string_column([relabel[k] for k in keys], codes))


def _with_model(table: pd.DataFrame, config: Mapping[str, Any]) -> pd.DataFrame:
    """`table` with its `model` column, added after `variant` from the config of a result saved before it."""
    if "model" in table.columns:
        return table
    return table.assign(model=config.get("model")).reindex(
        columns=[*table.columns[:2], "model", *table.columns[2:]])
