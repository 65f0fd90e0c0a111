"""A sweep's result: what it measured, as tidy tables, and its typed provenance; and the answers
every reader asks of it (the default cut-off, the confidence, the ranking, the ties, the verdict),
given once here."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from workbench.core.io import atomic_write, write_text
from workbench.dataset import Dataset
from workbench.evaluation import stats
from workbench.evaluation.scoring import HIT_COLUMNS
from workbench.models.choose import variant_key
from workbench.results.provenance import Provenance
from workbench.results.verdict import Verdict, verdict
from workbench.variant import Variant

SUMMARY_COLUMNS = ["key", "variant", "model", "metric", "k", "budget", "mean", "ci_low", "ci_high", "n"]


@dataclass
class SweepResult:
    """Everything a sweep measured, as tidy tables.

    per_question: one row per variant x question x cut-off x metric:
                  [key, variant, model, qid, k, budget, metric, value]
    summary:      one row per variant x metric x cut-off:
                  [key, variant, model, metric, k, budget, mean, ci_low, ci_high, n]
    variants:     one row per variant: key, variant (its label), model (its name), strategy, modifiers, retriever
                  (its stages' names) and their parameters (rrf_k for hybrid), one column per
                  parameter, index cost (chunks, truncated_chunks: those longer than the model's
                  window, 0 for BM25 alone; chars, tokens embedded, overlap chars, build_seconds:
                  when its index was built, perhaps in an earlier run; for a variant an LLM indexes (a
                  strategy whose chunks it writes, +context), index_tokens_generated and index_llm_seconds:
                  what its generations cost when made, cached or not, and for such a strategy
                  index_llm_fallbacks, the answers not used), seconds (this run's),
                  preview (True: scored from pooled vectors, see workbench.retrieval.preview) and, with
                  Settings.ann, index (what searched it: "flat" or the approximate index and its
                  parameters) and ann_recall (the share of the exact top max(ks) chunks it found per
                  question, averaged; empty when flat)
    hits:         each variant's top max(ks) returned units per question, what the report draws:
                  [key, variant, model, qid, rank, doc_id, start, end, score, chunk_id]
    provenance:   the dataset and models it was measured on, the Settings (ks, budgets, budget
                  encoding, mode, confidence, preview, ann), the grid, versions, date and what the run
                  computed (workbench.results.provenance); saved as config.json
    race:         for a search's result (workbench.run.search), one row per candidate per round it was
                  scored in: [key, variant, model, round, stage, documents, metric, k, mean, ci_low,
                  ci_high, corrected, texts, status, reason] (texts: the chunks its round embedded for its
                  chunking first, so the column sums to what the search embedded; status "kept", "dropped"
                  or "final"; reason says why it left: its kind, then its details in parentheses); None
                  for a sweep

    A row has one kind of cut-off: k > 0 and budget = 0 for a metric at k; k = 0 and budget > 0
    (context tokens, counted in the settings' budget_encoding) for a metric at an equal context
    budget (metrics.score_budgets); k = 0 and budget = 0 for a k-independent metric
    (precision_omega). So `k > 0` selects the per-k rows and `budget > 0` the budget rows.

    A row is about a (variant, model): `key` is the Variant.key for the bundled default model and
    `<variant key>@<8 hex digits of the model fingerprint>` for any other (workbench.models.choose.result_key);
    `variant` is its label, for people, made unique within the result (with " · <model name>" when the
    result holds several models). Every function that takes variants accepts either (see `key_of`).
    """

    per_question: pd.DataFrame
    summary: pd.DataFrame
    variants: pd.DataFrame
    provenance: Provenance
    hits: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=["key", "variant", *HIT_COLUMNS]))
    # the cache folder of the sweep that made it, where `ties` and `by_group` keep their intervals
    # (stats._cached: a re-run computes none); None for a loaded result
    cache: Path | None = field(default=None, repr=False, compare=False)
    race: pd.DataFrame | None = field(default=None, compare=False)

    @property
    def keys(self) -> list[str]:
        """Variant keys in sweep (grid) order."""
        return list(self._label_by_key)

    @property
    def labels(self) -> list[str]:
        """Variant labels in sweep (grid) order (unique within the result)."""
        return list(self._label_by_key.values())

    @property
    def _label_by_key(self) -> dict[str, str]:
        table = self.variants if len(self.variants) else self.summary
        return dict(zip(table["key"], table["variant"], strict=True))

    @property
    def confidence(self) -> float:
        """The level of every interval of the result, and of every tie read from it."""
        return self.provenance.confidence

    @property
    def default_k(self) -> int:
        """The cut-off a figure, a table or a verdict uses when none is chosen."""
        return self.provenance.default_k

    @property
    def ks(self) -> list[int]:
        """The swept cut-offs k."""
        return list(self.provenance.settings.ks)

    @property
    def budgets(self) -> list[int]:
        """The swept context budgets, in tokens of the settings' budget_encoding."""
        return list(self.provenance.settings.budgets)

    @property
    def preview(self) -> bool:
        """Scored from pooled vectors (workbench.retrieval.preview): an estimate to confirm."""
        return self.provenance.settings.preview

    @property
    def grid_params(self) -> list[str]:
        """The parameter names of the grid, in first-seen order (columns of `variants`)."""
        names = dict.fromkeys(p for spec in self.provenance.grid for p in spec.get("params", {}))
        return [p for p in names if p in self.variants.columns]

    def variant(self, key: str) -> Variant:
        """The Variant of a measured variant (key or label), made again from the grid, e.g. to
        load its chunks or rankings."""
        key = self.key_of(key)
        for spec in self.provenance.grid:
            v = Variant.from_spec(spec)
            if v.key == variant_key(key):
                return v
        raise ValueError(f"variant {self.label_of(key)} cannot be made again from the result's grid")

    def ranking(self, metric: str = "recall", k: int | None = None) -> pd.DataFrame:
        """The summary's rows of mean `metric` at cut-off k (default: `default_k`), best first (highest,
        or lowest for a cost such as context tokens; ties in the summary's order): one row per (variant,
        model), so that a result of several models says which model each row was measured with."""
        k = self.default_k if k is None else k
        table = self.summary
        rows = table[(table["metric"] == metric) & (table["k"] == k) & (table["budget"] == 0)]
        if rows.empty:
            raise ValueError(f"no {metric!r} at k={k} in the result; metrics: {sorted(table['metric'].unique())}, "
                             f"ks: {self.ks}")
        sign = 1 if stats.lower_is_better(metric) else -1
        return rows.sort_values("mean", key=lambda mean: sign * mean, kind="stable").reset_index(drop=True)

    def top(self, n: int, metric: str = "recall", k: int | None = None) -> list[Variant]:
        """The n best variants by mean `metric` at cut-off k (`ranking`), e.g. the best of a preview sweep,
        to confirm with a real one. Each variant comes once, at the rank of its best row: on a result of
        several models, sweep them again with the same models; `ranking` says which model each row had."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"n must be an int >= 1, got {n!r}")
        best: dict[str, str] = {}  # variant key -> its best row's key
        for key in self.ranking(metric, k)["key"]:
            best.setdefault(variant_key(key), key)
        return [self.variant(key) for key in list(best.values())[:n]]

    def ties(self, metric: str = "recall", k: int | None = None, seed: int = 0) -> pd.DataFrame:
        """The ranking by mean `metric`@k (default: `default_k`) with what its questions cannot order,
        at the result's confidence (stats.ranking_ties): a preview says which neighbours it cannot tell
        apart, and its `tied_with_top` rows are what a real sweep confirms.
        Columns: key, variant, then ranking_ties's."""
        k = self.default_k if k is None else k
        table = stats.ranking_ties(self.per_question, metric, k, self.confidence, seed=seed, cache=self.cache)
        return table.assign(variant=table["key"].map(self.label_of))[["key", "variant", *table.columns[1:]]]

    def verdict(self, metric: str = "recall", k: int | None = None) -> Verdict:
        """What the result says, in sentences a team can act on, judged at the result's confidence
        (workbench.results.verdict); its paired comparisons kept in the sweep's cache."""
        return verdict(self, metric, k, cache=self.cache)

    def label_of(self, key: str) -> str:
        return self._label_by_key[self.key_of(key)]

    def key_of(self, variant: str | Variant) -> str:
        """The key of a variant given as a Variant, its key or its label; ValueError if unknown, or if
        it names rows of several models (give the row's key, `<variant key>@<model hash>`, then)."""
        by_key = self._label_by_key
        name = variant.key if isinstance(variant, Variant) else variant
        if name in by_key:
            return name
        keys = [k for k, label in by_key.items() if label == name]
        models = [k for k in by_key if variant_key(k) == name]  # the variant's rows, one per model
        if not keys and len(models) > 1:
            raise ValueError(f"variant {name!r} was measured with {len(models)} models: give one of the keys {models}")
        if not keys and not models:
            raise ValueError(f"variant {name!r} is not in the result; known: {list(by_key.values())}")
        return (keys or models)[0]

    def by_group(self, groups: Dataset | Mapping[str, str], metric: str | None = None,
                 k: int | None = None) -> pd.DataFrame:
        """The summary split by group of questions: `summary`'s columns after a `group` column
        (stats.summarize_by_group at the sweep's confidence). `groups` is qid -> group, or a
        Dataset (its Dataset.groups_of_questions(): `group` fields, else doc id prefixes).
        `metric` and `k`: only that metric at that cut-off, without a budget (the same rows: each
        row's interval is its own; the others' bootstraps are not paid for)."""
        if isinstance(groups, Dataset):
            groups = groups.groups_of_questions()
        pq = self.per_question
        if metric is not None:
            pq = pq[(pq["metric"] == metric) & (pq["k"] == k) & (pq.get("budget", 0) == 0)]
        return stats.summarize_by_group(pq, groups, self.confidence, cache=self.cache)

    def save(self, folder: str | Path) -> dict[str, Path]:
        """Write the tables (CSV + Parquet) and config.json, each atomically."""
        out = Path(folder)
        out.mkdir(parents=True, exist_ok=True)
        paths = {
            "summary": out / "summary.csv",
            "variants": out / "variants.csv",
            "per_question": out / "per_question.parquet",
            "hits": out / "hits.parquet",
            "config": out / "config.json",
        }
        atomic_write(paths["summary"], lambda p: self.summary.to_csv(p, index=False))
        atomic_write(paths["variants"], lambda p: self.variants.to_csv(p, index=False))
        atomic_write(paths["per_question"], lambda p: self.per_question.to_parquet(p, index=False))
        atomic_write(paths["hits"], lambda p: self.hits.to_parquet(p, index=False))
        write_text(paths["config"], json.dumps(self.provenance.config(), indent=2, default=str))
        if self.race is not None:
            paths["race"] = out / "race.csv"
            atomic_write(paths["race"], lambda p: self.race.to_csv(p, index=False))
        return paths

    @classmethod
    def load(cls, folder: str | Path) -> SweepResult:
        """A result as `save` wrote it (e.g. a baseline kept for `workbench check`); a missing or
        unreadable table is named."""
        out = Path(folder)
        if not (out / "config.json").is_file():
            raise FileNotFoundError(f"{out}: not a saved sweep result (no config.json; `python -m workbench sweep "
                                    "--out` writes one)")
        tables = {}
        for name, read in (("summary.csv", pd.read_csv), ("variants.csv", pd.read_csv),
                           ("per_question.parquet", pd.read_parquet), ("hits.parquet", pd.read_parquet)):
            try:
                tables[name] = read(out / name)
            except (OSError, ValueError) as e:
                raise ValueError(f"{out / name}: cannot read the saved table ({e})") from e
        race = (pd.read_csv(out / "race.csv", dtype={"reason": str}).fillna({"reason": ""})
                if (out / "race.csv").is_file() else None)
        return cls(tables["per_question.parquet"], tables["summary.csv"], tables["variants.csv"],
                   Provenance.from_config(json.loads((out / "config.json").read_text(encoding="utf-8"))),
                   tables["hits.parquet"], race=race)
