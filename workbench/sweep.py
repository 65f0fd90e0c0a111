"""The sweep: variants -> chunks -> vectors -> FAISS (and BM25) -> rankings -> tidy scores.

It is just the loop over variants; every step is a function of its own module. Queries are
embedded once per run, indexes come from the IndexStore (built once, then loaded), and the
result is a set of tidy DataFrames that plots, widgets and the report read without recomputing.
"""

from __future__ import annotations

import gc
import json
import platform
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from workbench.dataset import Dataset, Hit
from workbench.engine import get_engine
from workbench.evaluation import metrics, stats
from workbench.evaluation.score_cache import ScoreCache
from workbench.evaluation.scoring import HIT_COLUMNS, hits_table, score
from workbench.evaluation.settings import MUST_MATCH, Settings
from workbench.io import CACHE_DIR, atomic_write, write_text
from workbench.models.base import Engine
from workbench.models.choose import ModelSpec, embedders_of, result_key, variant_key
from workbench.models.context import context_fingerprint
from workbench.models.embed import Embedder
from workbench.retrieval.index import ChunkIndex, IndexStore, needs
from workbench.retrieval.preview import TokenCache, preview_index, preview_inputs, token_embedder
from workbench.retrieval.search import queries, ranked_for, search
from workbench.variant import Variant

_VERSIONED = ("sentence-transformers", "torch", "faiss-cpu", "bm25s", "tiktoken", "llama-index-core", "numpy", "pandas",
              "onnxruntime")
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
    config:       provenance: dataset and models (a `models` list of name, fingerprint, backend and
                  window; `model`, `model_fingerprint`, `backend`, `model_window` too when there is
                  one), the Settings (ks, budgets,
                  budget_encoding, mode, confidence; preview = True for a preview sweep), grid,
                  versions, date, and what this run computed: texts_embedded, texts_cached and
                  token_pass_documents (the documents a preview's token pass ran over; 0 when cached)

    A row has one kind of cut-off: k > 0 and budget = 0 for a metric at k; k = 0 and budget > 0
    (context tokens, counted in config["budget_encoding"]) for a metric at an equal context
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
    config: dict[str, Any] = field(default_factory=dict)
    hits: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=["key", "variant", *HIT_COLUMNS]))
    # the cache folder of the sweep that made it, where `ties` and `by_group` keep their intervals
    # (stats._cached: a re-run computes none); None for a loaded result
    cache: Path | None = field(default=None, repr=False, compare=False)

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
    def ks(self) -> list[int]:
        """The swept cut-offs k (from the config, else the summary's k > 0)."""
        ks = self.config.get("ks") or sorted(k for k in self.summary["k"].unique() if k > 0)
        return [int(k) for k in ks]

    @property
    def budgets(self) -> list[int]:
        """The swept context budgets in tokens (from the config, else the summary's budget > 0)."""
        if "budgets" in self.config:
            return [int(b) for b in self.config["budgets"]]
        return sorted(int(b) for b in self.summary.get("budget", pd.Series(dtype=int)).unique() if b > 0)

    @property
    def grid_params(self) -> list[str]:
        """The parameter names of the grid, in first-seen order (columns of `variants`)."""
        names = dict.fromkeys(p for spec in self.config.get("grid", []) for p in spec.get("params", {}))
        return [p for p in names if p in self.variants.columns]

    def variant(self, key: str) -> Variant:
        """The Variant of a measured variant (key or label), made again from the grid, e.g. to
        load its chunks or rankings."""
        key = self.key_of(key)
        for spec in self.config.get("grid", []):
            v = Variant.from_spec(spec)
            if v.key == variant_key(key):
                return v
        raise ValueError(f"variant {self.label_of(key)} cannot be made again from the result's grid")

    def ranking(self, metric: str = "recall", k: int = 5) -> pd.DataFrame:
        """The summary's rows of mean `metric` at cut-off k, best first (highest, or lowest for a cost such as
        context tokens; ties in the summary's order): one row per (variant, model), so that a result of
        several models says which model each row was measured with (its `model` and `key` columns)."""
        table = self.summary
        rows = table[(table["metric"] == metric) & (table["k"] == k) & (table["budget"] == 0)]
        if rows.empty:
            raise ValueError(f"no {metric!r} at k={k} in the result; metrics: {sorted(table['metric'].unique())}, "
                             f"ks: {self.ks}")
        sign = 1 if stats.lower_is_better(metric) else -1
        return rows.sort_values("mean", key=lambda mean: sign * mean, kind="stable").reset_index(drop=True)

    def top(self, n: int, metric: str = "recall", k: int = 5) -> list[Variant]:
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
        """The ranking by mean `metric`@k (default: metrics.default_k of the swept ks) with what its
        questions cannot order, at the sweep's confidence (stats.ranking_ties): a preview says which
        neighbours it cannot tell apart, and its `tied_with_top` rows are what a real sweep confirms.
        Columns: key, variant, then ranking_ties's."""
        k = metrics.default_k(self.ks) if k is None else k
        table = stats.ranking_ties(self.per_question, metric, k, self.config.get("confidence", 0.95), seed=seed,
                                   cache=self.cache)
        return table.assign(variant=table["key"].map(self.label_of))[["key", "variant", *table.columns[1:]]]

    def label_of(self, key: str) -> str:
        return self._label_by_key[self.key_of(key)]

    def key_of(self, variant: str | Variant) -> str:
        """The key of a variant given as a Variant, its key or its label; ValueError if unknown."""
        by_key = self._label_by_key
        name = variant.key if isinstance(variant, Variant) else variant
        if name in by_key:
            return name
        keys = [k for k, label in by_key.items() if label == name]
        if not keys:
            raise ValueError(f"variant {name!r} is not in the result; known: {list(by_key.values())}")
        return keys[0]

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
        return stats.summarize_by_group(pq, groups, self.config.get("confidence", 0.95), cache=self.cache)

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
        write_text(paths["config"], json.dumps(self.config, indent=2, default=str))
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
        return cls(tables["per_question.parquet"], tables["summary.csv"], tables["variants.csv"],
                   json.loads((out / "config.json").read_text(encoding="utf-8")), tables["hits.parquet"])


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
    store = _store(store)
    return store, embedder or Embedder(cache_dir=store.root)


def _store(store: IndexStore | str | Path) -> IndexStore:
    return store if isinstance(store, IndexStore) else IndexStore(store)


def resolve_models(store: IndexStore | str | Path, embedder: Embedder | None,
                   models: Sequence[ModelSpec] | None) -> tuple[IndexStore, list[Embedder]]:
    """The store and the models of a sweep: `models` (specs, see workbench.models.choose) caching
    their vectors in the store's folder, else the one `embedder` (default: the bundled model)."""
    if models is None:
        store, embedder = resolve_store(store, embedder)
        return store, [embedder]
    if embedder is not None:
        raise ValueError("give embedder= or models=, not both (an Embedder can be one of the models)")
    store = _store(store)
    return store, embedders_of(models, store.root)


def rankings(
    dataset: Dataset,
    variant: Variant,
    k: int = 10,
    embedder: Embedder | None = None,
    store: IndexStore | str | Path = CACHE_DIR,
    mode: str = "corpus",
) -> list[list[Hit]]:
    """One variant's top-k hits for every question (index loaded or built), e.g. to drill down."""
    store, embedder = resolve_store(store, embedder)
    qvecs = embedder.encode([q.question for q in dataset.questions], desc="questions")
    return search(store.get(variant, dataset, embedder), dataset.questions, qvecs, k, variant.stages, mode)


def check_grid(variants: Sequence[Variant]) -> None:
    """Refuse an empty grid, one variant twice or a +context LLM that is not a local model, before
    any work (the sweep and its estimate)."""
    if not variants:
        raise ValueError("variants is empty: nothing to sweep")
    keys = [v.key for v in variants]
    if len(set(keys)) != len(keys):
        twice = sorted({v.label for v in variants if keys.count(v.key) > 1})
        raise ValueError(f"duplicate variants in the grid (same key): {twice}")
    for v in variants:
        if v.context is not None:
            try:
                context_fingerprint(dict(v.context))
            except ValueError as e:
                raise ValueError(f"variant {v.label}: {e}") from None


@dataclass
class Context:
    """What measuring any variant of one sweep needs: the data, the settings, the model, the
    store and the score cache; the question vectors, token boundaries and (in preview) the
    corpus's token embeddings are made on first use, once, and only if some variant is not cached
    (a preview builds what indexes it can of `variants` meanwhile: `built`)."""

    dataset: Dataset
    settings: Settings
    embedder: Embedder
    store: IndexStore
    progress: bool = True
    stop: Callable[[], bool] | None = None  # asked between the builds' generations (IndexStore.get)
    variants: Sequence[Variant] = ()  # the grid, whose indexes a preview builds while its model passes run
    token_pass_documents: int = 0  # documents the preview's token pass ran the model over (0: it was cached)
    built: dict[str, ChunkIndex] = field(default_factory=dict)  # preview indexes built with the inputs, by key

    @cached_property
    def scores(self) -> ScoreCache | None:
        """Where measured scores are kept (none for a preview: its rows are estimates)."""
        if self.settings.preview:
            return None
        return ScoreCache(self.store.root, self.dataset, self.embedder.fingerprint, self.settings)

    @cached_property
    def inputs(self) -> tuple[np.ndarray, metrics.TokenBounds, TokenCache | None]:
        with self.embedder.progress_bars(self.progress):
            if self.settings.preview:  # the one model pass of a preview, and the questions', with CPU work meanwhile
                qvecs, tokens, self.built, bounds = preview_inputs(self.dataset, self.variants, self.embedder,
                                                                   self.store.root, self._scoring_inputs)
            else:
                qvecs = self.embedder.encode([q.question for q in self.dataset.questions], "questions")
                tokens, bounds = None, metrics.token_bounds(self.dataset)
        if tokens is not None and tokens.computed:
            self.token_pass_documents += len(self.dataset.documents)
        return qvecs, bounds, tokens

    def _scoring_inputs(self) -> metrics.TokenBounds:
        """The documents' token boundaries, and the bootstrap made ready for this many questions (a
        preview's new scores are summarised: what that does first, done while its passes run)."""
        stats.prepare(len(self.dataset.questions))
        return metrics.token_bounds(self.dataset)

    def config(self) -> dict[str, Any]:
        """A result's provenance, less what each step adds (grid, counts, date)."""
        d, e = self.dataset, self.embedder
        return {"dataset": d.name, "dataset_fingerprint": d.fingerprint, "corpus_fingerprint": d.corpus_fingerprint,
                "documents": len(d.documents), "questions": len(d.questions), "characters": d.n_chars,
                "evidence_chars": d.evidence_chars, "main_document": list(d.main_document),  # verdict.sweep_warnings
                "model": e.name, "model_fingerprint": e.fingerprint, "backend": e.backend,
                "model_window": e.window_tokens,  # the word pieces of a text the model reads (specials aside)
                **({"token_pass_model": token_embedder(e).fingerprint} if self.settings.preview else {}),
                "models": [model_entry(e)], **self.settings.config(), "versions": versions()}


def model_entry(embedder: Embedder) -> dict[str, Any]:
    """A model of a result's config["models"]; window None: the model reads a whole text."""
    e = embedder
    return {"name": e.name, "fingerprint": e.fingerprint, "backend": e.backend, "window": e.window_tokens}


@dataclass(frozen=True)
class Measured:
    """One variant's per-question scores [qid, k, budget, metric, value], its index cost and its top hits."""

    scores: pd.DataFrame
    cost: dict[str, Any]
    hits: pd.DataFrame


@contextmanager
def paused_gc() -> Iterator[None]:
    """Python's cyclic garbage collector off for the block, as it was after. Why: a variant's
    retrieval and scoring allocate hundreds of thousands of short-lived objects (a Hit per rank,
    intervals per question), which set off full collections that walk every long-lived object of
    the process (the dataset, its questions' prepared evidence) for nothing: they die by reference
    count. On SQuAD's 16 shortest articles that walking was a third of a preview grid's retrieval
    (bench/preview.md)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@paused_gc()
def measure_variant(variant: Variant, context: Context) -> Measured:
    """The unit of work of a sweep (what an engine maps): a variant's scores from the score cache,
    else its index loaded or built, its rankings and their scores, which are then kept."""
    found = context.scores.get(variant) if context.scores else None
    if found:
        return Measured(*found)
    qvecs, bounds, tokens = context.inputs
    s, dataset = context.settings, context.dataset
    with context.embedder.progress_bars(context.progress):
        if not s.preview:
            index = context.store.get(variant, dataset, context.embedder, s.ann, stop=context.stop)
        elif (index := context.built.pop(variant.key, None)) is None:
            index = preview_index(variant, dataset, context.embedder, tokens)
    qs = queries(index, dataset.questions, qvecs, s.mode)
    rerankers = index.rerankers = context.store.rerankers if "rerankers" in needs(variant) else None
    before = rerankers.seconds if rerankers else 0.0
    ranked = ranked_for(index, variant.stages, qs, s.ks, s.budgets, s.budget_encoding)
    cost = index.cost | ({"rerank_seconds_per_question": round((rerankers.seconds - before) / len(qs), 4)}
                         if rerankers else {})
    if s.ann:  # what the approximate search loses against exact search, on these questions
        cost["ann_recall"] = index.ann_recall(qvecs, max(s.ks))
    measured = Measured(score(dataset.questions, ranked, index.spans, s, bounds), cost,
                        hits_table(dataset.questions, ranked, max(s.ks)))
    if context.scores:
        context.scores.put(variant, measured.scores, measured.cost, measured.hits)
    return measured


def sweep_steps(
    dataset: Dataset,
    variants: Sequence[Variant],
    settings: Settings | None = None,
    *,
    embedder: Embedder | None = None,
    models: Sequence[ModelSpec] | None = None,
    store: IndexStore | str | Path = CACHE_DIR,
    progress: bool = True,
    stop: Callable[[], bool] | None = None,
    **changes: Any,
) -> Iterator[SweepResult]:
    """The sweep one variant at a time: each step is the complete SweepResult of one variant, so
    a caller can show results as they come and stop between variants (the widgets do), and with
    `stop` between generations too: once `stop()` is true an LLM building an index raises
    workbench.models.llm.Stopped, what it finished cached. `combine` of the steps is what `sweep`
    returns. Arguments are checked before anything runs."""
    contexts = _contexts(dataset, variants, Settings.of(settings, **changes), embedder, models, store, progress, stop)
    return (step for context in contexts for step in _steps(variants, context, several=len(contexts) > 1))


def _contexts(dataset: Dataset, variants: Sequence[Variant], settings: Settings, embedder: Embedder | None,
              models: Sequence[ModelSpec] | None, store: IndexStore | str | Path, progress: bool,
              stop: Callable[[], bool] | None) -> list[Context]:
    """One Context per model of a sweep, its arguments checked before anything runs."""
    check_grid(variants)
    store, embedders = resolve_models(store, embedder, models)
    return [Context(dataset, settings, e, store, progress, stop, tuple(variants)) for e in embedders]


def _steps(variants: Sequence[Variant], context: Context, several: bool = False,
           summarized: bool = True) -> Iterator[SweepResult]:
    """The steps of one model; `several`: the sweep has other models, so labels name this one.
    summarized=False leaves each step's summary empty, for `sweep`, which summarises the whole
    table in one call instead (the same numbers: stats.summarize)."""
    embedder, config = context.embedder, context.config()
    keys = [v.key for v in variants]
    labels = dict(zip(keys, unique_labels(keys, [f"{v.label} · {embedder.name}" if several else v.label
                                                 for v in variants]), strict=True))
    if not context.settings.preview:  # with an engine, every build's generations first (IndexStore.generate)
        context.store.generate([v for v in variants if not (context.scores and context.scores.has(v))],
                               context.dataset, embedder, context.stop)
    bar = tqdm(variants, desc="variants" + f" ({embedder.name})" * several, disable=not context.progress,
               unit="variant")
    for v in bar:
        bar.set_postfix_str(labels[v.key])
        before = (embedder.stats.embedded, embedder.stats.cached, context.token_pass_documents)
        t0 = time.perf_counter()
        try:
            measured = measure_variant(v, context)
        except Exception as e:
            e.add_note(f"while sweeping variant {labels[v.key]}")  # what failed, for the CLI and widgets
            raise
        named = {"key": result_key(v.key, embedder), "variant": labels[v.key], "model": embedder.name}
        scores, hits = (_named(t, named) for t in (measured.scores, measured.hits))
        cost = dict(measured.cost)
        # `chunks` and `truncated_chunks` side by side; BM25 reads the whole chunk, so only a stage
        # that ranks by vectors loses a truncated tail
        first = {"chunks": cost.pop("chunks"), "truncated_chunks": cost.pop("truncated_chunks") * v.embeds}
        build_seconds = cost.pop("seconds")  # when the index was built, perhaps runs ago
        row = {**named, "strategy": v.strategy, "contextual_header": v.contextual_header, "late": v.late,
               "retriever": v.retriever, **v.stage_params, **v.kwargs, **first, **cost,
               "build_seconds": build_seconds, "seconds": round(time.perf_counter() - t0, 3),  # this run's
               "preview": context.settings.preview}
        summary = (stats.summarize(scores, confidence=context.settings.confidence, cache=context.store.root)
                   if summarized else pd.DataFrame(columns=SUMMARY_COLUMNS))
        yield SweepResult(scores, summary, pd.DataFrame([row]), config | {
            "grid": [v.spec()],
            "texts_embedded": embedder.stats.embedded - before[0],
            "texts_cached": embedder.stats.cached - before[1],
            "token_pass_documents": context.token_pass_documents - before[2],
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
        }, hits, context.store.root)


def sweep(
    dataset: Dataset,
    variants: Sequence[Variant],
    settings: Settings | None = None,
    *,
    embedder: Embedder | None = None,
    models: Sequence[ModelSpec] | None = None,
    store: IndexStore | str | Path = CACHE_DIR,
    progress: bool = True,
    engine: str | Engine | None = None,
    stop: Callable[[], bool] | None = None,
    **changes: Any,
) -> SweepResult:
    """Score every variant on every question of `dataset` at every k and every context budget.

    settings: a Settings (workbench.evaluation.settings), or its fields as keywords on top of the
    defaults: ks, budgets (context budgets in tokens of budget_encoding, "cl100k_base" or
    "o200k_base"; () scores none), mode ("corpus" searches all chunks; "document" only the
    question's own document(s)), confidence, preview, ann (workbench.retrieval.ann.Ann: approximate
    search for indexes above a chunk count, its recall against exact search in the variants table).
    progress=False draws no progress bar at all (the embedder's included).
    models: the embedding models to sweep every variant with, as Embedders or specs (None: the bundled
    all-MiniLM-L6-v2, a local sentence-transformers folder, "wordllama", an encode(texts) -> vectors
    function; see workbench.models.choose), instead of the one `embedder`: one result, a `model`
    column, one row per (variant, model).
    preview=True scores every variant from one cached model pass over the corpus (workbench.retrieval.preview):
    chunk vectors are pooled token embeddings, nothing is written to the IndexStore, and every
    row is marked preview (which `combine` refuses to mix with real results). Its own bootstrap
    (SweepResult.ties) says which neighbours of its ranking its questions cannot order; confirm
    those tied with its best with real embeddings in a second call:

        rough = sweep(data, variants, preview=True)          # about the cost of one real variant
        ties = rough.ties("recall", k=5)
        real = sweep(data, [rough.variant(key) for key in ties.loc[ties["tied_with_top"], "key"]])

    engine: where the default embedder computes uncached texts, the rerankers of `+rerank` their
    uncached pairs and the LLMs of `+context` and of LLM strategies their uncached generations
    (workbench.engine): "local", "ray" (a local Ray instance, started and stopped by this call) or
    an engine such as a RayEngine; the results are a local run's to the last digit.
    An Embedder you pass takes its own engine=.
    stop: asked between generations (see `sweep_steps`); once true, Stopped is raised.
    """
    if engine is not None:
        if embedder is not None or models is not None:
            raise ValueError("engine: give it to the Embedders you pass (Embedder(..., engine=...)), not to sweep")
        own = isinstance(engine, str)  # made here, so stopped here
        engine = get_engine(engine) if own else engine
        # the store's rerankers and LLMs run on the engine too (a store of this sweep's own: the one given is unchanged)
        store = IndexStore(store.root, store.mmap, engine) if isinstance(store, IndexStore) else IndexStore(store,
                                                                                                       engine=engine)
        try:
            return sweep(dataset, variants, settings, embedder=Embedder(cache_dir=store.root, engine=engine),
                         store=store, progress=progress, stop=stop, **changes)
        finally:
            if own and engine is not None:
                engine.close()
    settings = Settings.of(settings, **changes)
    contexts = _contexts(dataset, variants, settings, embedder, models, store, progress, stop)
    before = [(c.embedder.stats.embedded, c.embedder.stats.cached) for c in contexts]
    # the steps unsummarised, then the whole table in one call: a call per variant cost about 20 ms (most of it
    # pandas and the stats cache's files), 0.45 s of a 22-variant chroma_small preview of 6 to 7 s (measured apart)
    result = combine([step for c in contexts for step in _steps(variants, c, len(contexts) > 1, summarized=False)])
    result.summary = stats.summarize(result.per_question, confidence=settings.confidence, cache=contexts[0].store.root)
    result.config |= {  # the questions' vectors count too
        "texts_embedded": sum(c.embedder.stats.embedded - b[0] for c, b in zip(contexts, before, strict=True)),
        "texts_cached": sum(c.embedder.stats.cached - b[1] for c, b in zip(contexts, before, strict=True)),
    }
    return result


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


def _named(table: pd.DataFrame, named: Mapping[str, str]) -> pd.DataFrame:
    """`table` after `named`'s columns, each one string on every row (metrics.string_column)."""
    first = np.zeros(len(table), dtype=np.intp)
    return pd.concat([pd.DataFrame({c: metrics.string_column([v], first) for c, v in named.items()}),
                      table.reset_index(drop=True)], axis=1)


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
