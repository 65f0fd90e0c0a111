"""The loop of a sweep: variants -> chunks -> vectors -> FAISS (and BM25) -> rankings -> tidy scores.

It is just the loop over variants (workbench.run.session.Session runs it); every step is a function
of its own module. Queries are embedded once per run, indexes come from the IndexStore (built once,
then loaded), scores from the score cache when measured before, and each step is a SweepResult
that plots, widgets and the report read without recomputing.
"""

from __future__ import annotations

import gc
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from workbench.dataset import Dataset
from workbench.evaluation import evidence, metrics, stats
from workbench.evaluation.score_cache import ScoreCache
from workbench.evaluation.scoring import hits_table, score
from workbench.evaluation.settings import Settings
from workbench.models.choose import result_key
from workbench.models.context import context_fingerprint
from workbench.models.embed import Embedder
from workbench.results.combine import unique_labels
from workbench.results.provenance import Computed, DatasetIdentity, ModelInfo, Provenance, now, versions
from workbench.results.result import SUMMARY_COLUMNS, SweepResult
from workbench.retrieval.index import ChunkIndex, IndexStore, needs
from workbench.retrieval.preview import TokenCache, preview_index, preview_inputs, shared_index, token_embedder
from workbench.retrieval.search import queries, ranked_for
from workbench.variant import Variant

FALLBACK_EXAMPLES = 3  # documents a variant's row names of those its strategy does not read as meant


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
    built: dict[str, ChunkIndex] = field(default_factory=dict)  # preview indexes, by chunking key (`preview_of`)

    @cached_property
    def left(self) -> Counter[str]:
        """Variants of the grid still to be previewed, by chunking key: a preview index is kept until
        the last variant that shares it (`preview_of`)."""
        return Counter(v.chunking_key for v in self.variants)

    def preview_of(self, variant: Variant) -> ChunkIndex:
        """The variant's preview index: the one its chunking's other variants read (built with the inputs
        or for the first of them), kept while others of the grid are to come."""
        key = variant.chunking_key
        index = self.built.get(key)
        if index is None:
            index = preview_index(variant, self.dataset, self.embedder, self.inputs[2])
        self.left[key] -= 1
        if self.left[key] > 0:
            self.built[key] = index
        else:
            self.built.pop(key, None)
        return shared_index(variant, index)

    @cached_property
    def scores(self) -> ScoreCache | None:
        """Where measured scores are kept (none for a preview: its rows are estimates)."""
        if self.settings.preview:
            return None
        return ScoreCache(self.store.root, self.dataset, self.embedder.fingerprint, self.settings,
                          self.store.pgvector.url)

    @cached_property
    def inputs(self) -> tuple[np.ndarray, evidence.TokenBounds, TokenCache | None]:
        with self.embedder.progress_bars(self.progress):
            if self.settings.preview:  # the one model pass of a preview, and the questions', with CPU work meanwhile
                qvecs, tokens, self.built, bounds = preview_inputs(self.dataset, self.variants, self.embedder,
                                                                   self.store.root, self._scoring_inputs)
            else:
                qvecs = self.embedder.encode([q.question for q in self.dataset.questions], "questions")
                tokens, bounds = None, evidence.token_bounds(self.dataset)
        if tokens is not None and tokens.computed:
            self.token_pass_documents += len(self.dataset.documents)
        return qvecs, bounds, tokens

    def _scoring_inputs(self) -> evidence.TokenBounds:
        """The documents' token boundaries, and the bootstrap made ready for this many questions (a
        preview's new scores are summarised: what that does first, done while its passes run)."""
        stats.prepare(len(self.dataset.questions))
        return evidence.token_bounds(self.dataset)

    def provenance(self) -> Provenance:
        """A result's provenance, less what each step adds (grid, counts, date)."""
        e = self.embedder
        return Provenance(DatasetIdentity.of(self.dataset), (ModelInfo.of(e),), self.settings, versions=versions(),
                          token_pass_model=token_embedder(e).fingerprint if self.settings.preview else None)


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
    qvecs, bounds, _ = context.inputs
    s, dataset = context.settings, context.dataset
    with context.embedder.progress_bars(context.progress):
        if not s.preview:
            index = context.store.get(variant, dataset, context.embedder, s.ann, stop=context.stop)
        else:
            index = context.preview_of(variant)
    qs = queries(index, dataset.questions, qvecs, s.mode)
    rerankers = index.rerankers = context.store.rerankers if "rerankers" in needs(variant) else None
    before = rerankers.seconds if rerankers else 0.0
    ranked = ranked_for(index, variant.stages, qs, s.ks, s.budgets, s.budget_encoding)
    cost = index.cost | ({"rerank_seconds_per_question": round((rerankers.seconds - before) / len(qs), 4)}
                         if rerankers else {})
    if s.ann:  # what the approximate search loses against exact search, on these questions
        cost["ann_recall"] = index.ann_recall(qvecs, max(s.ks))
    if index.pgvector is not None:  # and what pgvector's index loses (workbench.retrieval.pgvector)
        cost |= index.pgvector.cost(variant, qvecs, max(s.ks))
    measured = Measured(score(dataset.questions, ranked, index.spans, s, bounds), cost,
                        hits_table(dataset.questions, ranked, max(s.ks)))
    if context.scores:
        context.scores.put(variant, measured.scores, measured.cost, measured.hits)
    return measured


def steps_of(variants: Sequence[Variant], context: Context, several: bool = False,
           summarized: bool = True) -> Iterator[SweepResult]:
    """The steps of one model (Session.steps); `several`: the sweep has other models, so labels name
    this one. summarized=False leaves each step's summary empty, for Session.sweep, which summarises
    the whole table in one call instead (the same numbers: stats.summarize)."""
    embedder, provenance = context.embedder, context.provenance()
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
        fallbacks = v.fallbacks(context.dataset)  # documents it does not read as meant, said (sweep_warnings)
        shown = list(fallbacks)[:FALLBACK_EXAMPLES]
        first |= {"fallback_documents": len(fallbacks),
                  "fallback_examples": f"{', '.join(shown)} ({fallbacks[shown[0]]})" if shown else ""}
        row = {**named, "strategy": v.strategy, "contextual_header": v.contextual_header, "late": v.late,
               "retriever": v.retriever, **v.stage_params, **v.kwargs, **first, **cost,
               "build_seconds": build_seconds, "seconds": round(time.perf_counter() - t0, 3),  # this run's
               "preview": context.settings.preview}
        summary = (stats.summarize(scores, confidence=context.settings.confidence, cache=context.store.root)
                   if summarized else pd.DataFrame(columns=SUMMARY_COLUMNS))
        computed = Computed(embedder.stats.embedded - before[0], embedder.stats.cached - before[1],
                            context.token_pass_documents - before[2])
        yield SweepResult(scores, summary, pd.DataFrame([row]),
                          provenance.with_(grid=(v.spec(),), computed=computed, date=now()), hits, context.store.root)


def _named(table: pd.DataFrame, named: Mapping[str, str]) -> pd.DataFrame:
    """`table` after `named`'s columns, each one string on every row (metrics.string_column)."""
    first = np.zeros(len(table), dtype=np.intp)
    return pd.concat([pd.DataFrame({c: metrics.string_column([v], first) for c, v in named.items()}),
                      table.reset_index(drop=True)], axis=1)


