"""Results of the same data joined as one: `combine`, and the labels that stay unique across them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

import pandas as pd

from workbench.evaluation import metrics
from workbench.results.provenance import Provenance, combine_provenance
from workbench.results.result import SweepResult


def unique_labels(keys: Sequence[str], labels: Sequence[str]) -> list[str]:
    """Labels for people, unique: a label shared by variants of different keys (e.g. two versions
    of a registered function) gets the start of the key appended, "mine(size=64) #3fa2c1"."""
    counts = Counter(labels)
    return [f"{label} #{key[:6]}" if counts[label] > 1 else label for key, label in zip(keys, labels, strict=True)]


def combine(*results: SweepResult | Sequence[SweepResult]) -> SweepResult:
    """Stack sweeps of the same data, ks and mode: combine(r1, r2) or combine([r1, r2]); a
    (variant, model) measured twice keeps its first measurement. Runs of different models or
    backends join as one result of several models (labels name the model). Raises ValueError
    naming the setting that differs (workbench.results.provenance.combine_provenance)."""
    results = tuple(r for item in results for r in (item if isinstance(item, list | tuple) else [item]))
    if not results:
        raise ValueError("combine: no results")
    if not all(isinstance(r, SweepResult) for r in results):
        wrong = sorted({type(r).__name__ for r in results if not isinstance(r, SweepResult)})
        raise TypeError(f"combine takes SweepResults (or lists of them), got {wrong}")
    provenance = combine_provenance([r.provenance for r in results])
    seen: set[str] = set()
    parts = []
    for r in results:
        new = [k for k in r.keys if k not in seen]
        seen.update(new)
        parts.append([_with_model(t if len(new) == len(r.keys) else t[t["key"].isin(new)], r.provenance)
                      for t in (r.per_question, r.summary, r.variants, r.hits)])
    per_question, summary, variants, hits = (pd.concat(tables, ignore_index=True)
                                             for tables in zip(*parts, strict=True))
    # labels unique across the results too (each result's own were unique within it), naming the model when several
    keys, labels = list(variants["key"]), list(variants["variant"])
    if len(provenance.models) > 1:
        labels = [label if label.endswith(f" · {m}") else f"{label} · {m}"
                  for label, m in zip(labels, variants["model"], strict=True)]
    relabel = dict(zip(keys, unique_labels(keys, labels), strict=True))
    per_question, summary, variants, hits = (_relabelled(t, relabel) for t in (per_question, summary, variants, hits))
    return SweepResult(per_question, summary, variants, provenance, hits, results[0].cache)


def _relabelled(table: pd.DataFrame, relabel: Mapping[str, str]) -> pd.DataFrame:
    """`table` with each row's variant label `relabel[key]`, each distinct key looked up once (on a
    large grid's per-question rows, several times faster than Series.map)."""
    codes, keys = pd.factorize(table["key"])
    return table.assign(variant=metrics.string_column([relabel[k] for k in keys], codes))


def _with_model(table: pd.DataFrame, provenance: Provenance) -> pd.DataFrame:
    """`table` with its `model` column, added after `variant` for a result saved before it (of one model)."""
    if "model" in table.columns:
        return table
    return table.assign(model=provenance.models[0].name if provenance.models else None).reindex(
        columns=[*table.columns[:2], "model", *table.columns[2:]])
