"""The session: one object that runs sweeps on one dataset, so nothing else threads caches, models,
settings and engines through its signatures.

A session holds the dataset, the cache folder (an IndexStore: chunks, vectors, indexes, scores and
model outputs, shared by every run), the embedding models, the scoring Settings and, optionally, an
engine the models compute on. What it does: `estimate` what a grid will cost, `sweep` it (or
`steps` through it one variant at a time, or `preview` it from pooled vectors), look at a variant's
`chunks` and `rankings`. The CLI, the widgets and the notebooks each make one.

    >>> session = wb.Session(wb.load_dataset("data/chroma_small"), ks=(1, 5))  # doctest: +SKIP
    >>> result = session.sweep(wb.grid("fixed", size=[128, 256]))  # doctest: +SKIP
    >>> session.on(other_dataset).sweep(...)  # the same cache, models and settings  # doctest: +SKIP
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
from tqdm.auto import tqdm

from workbench.core.chunk import Chunk
from workbench.core.io import CACHE_DIR
from workbench.dataset import Dataset, Hit
from workbench.evaluation import stats
from workbench.evaluation.metrics import MetricAt
from workbench.evaluation.settings import Settings
from workbench.models.base import Engine
from workbench.models.choose import ModelSpec, embedders_of, result_key, variant_key
from workbench.models.embed import Embedder
from workbench.models.estimate import GenerationEstimate
from workbench.results import audit as chunk_audit
from workbench.results import label_free as no_labels
from workbench.results.combine import combine
from workbench.results.provenance import Computed
from workbench.results.result import SweepResult
from workbench.results.routing import propose_route
from workbench.retrieval.index import IndexStore, embed_texts, written_chunks
from workbench.retrieval.search import search as retrieve
from workbench.run import estimate as estimates
from workbench.run import search as searching
from workbench.run.defaults import default_grid
from workbench.run.engine import get_engine
from workbench.run.sweep import Context, check_grid, steps_of
from workbench.variant import Variant


class Session:
    """A dataset, where results are cached, the models that embed, how variants are scored, and
    where the models compute.

    settings: a Settings, or its fields as keywords (ks, budgets, budget_encoding, mode, confidence,
    preview, ann; see workbench.evaluation.settings). cache: a folder or an IndexStore. models: the
    embedding models, as Embedders or specs (None: the bundled all-MiniLM-L6-v2, a local
    sentence-transformers folder, "wordllama", an encode(texts) -> vectors function; see
    workbench.models.choose), or the one `embedder`; default: the bundled model. engine: where the
    models, the rerankers and the LLMs compute what is not cached: "local", "ray" (a local Ray
    instance the session starts and `close` stops) or an engine (workbench.run.engine); an Embedder
    you pass takes its own engine=. progress=False draws no progress bar at all. mmap: indexes read
    memory-mapped. pg: the URL of the PostgreSQL that variants with the pgvector stage search (None: the
    bundled server, started in the cache folder on first use; an IndexStore you pass keeps its own)."""

    def __init__(self, dataset: Dataset, settings: Settings | None = None, *,
                 cache: IndexStore | str | Path = CACHE_DIR, models: Sequence[ModelSpec] | None = None,
                 embedder: Embedder | None = None, engine: str | Engine | None = None, progress: bool = True,
                 mmap: bool = False, pg: str | None = None, **changes: Any) -> None:
        if not isinstance(dataset, Dataset):
            raise TypeError(f"dataset must be a Dataset (wb.load_dataset), got {type(dataset).__name__}")
        if embedder is not None and models is not None:
            raise ValueError("give embedder= or models=, not both (an Embedder can be one of the models)")
        if engine is not None and embedder is not None:
            raise ValueError("engine: give it to the Embedder you pass (Embedder(..., engine=...)), not to the "
                             "session")
        self.dataset = dataset
        self.settings = Settings.of(settings, **changes)
        self.progress = progress
        self._owns_engine = isinstance(engine, str)  # made here, so stopped here
        self.engine = get_engine(engine) if isinstance(engine, str) else engine
        if isinstance(cache, IndexStore):
            self.store = (IndexStore(cache.root, cache.mmap, self.engine, cache.pgvector.url)
                          if self.engine is not None else cache)
        else:
            self.store = IndexStore(cache, mmap, self.engine, pg)
        if models is not None:  # specs compute on the engine; an Embedder given keeps its own
            self.models = embedders_of(models, self.store.root, **({"engine": self.engine} if self.engine else {}))
        else:
            self.models = [embedder or Embedder(cache_dir=self.store.root, engine=self.engine)]

    @property
    def embedder(self) -> Embedder:
        """The first (or only) model."""
        return self.models[0]

    def on(self, dataset: Dataset) -> Session:
        """A session of `dataset` with this one's cache, models, settings and engine (which this one
        still owns), e.g. for the code files of a corpus alone."""
        other = copy.copy(self)
        other.dataset, other._owns_engine = dataset, False
        return other

    def with_settings(self, settings: Settings | None = None, *, progress: bool | None = None,
                      **changes: Any) -> Session:
        """This session scoring with other settings (e.g. those of a result, so what it measures combines),
        and with progress bars or not (a widget draws its own)."""
        other = self.on(self.dataset)
        other.settings = Settings.of(settings or self.settings, **changes)
        other.progress = self.progress if progress is None else progress
        return other

    def default_grid(self) -> list[Variant]:
        """The grid a sweep runs when none is given: built from the data and the smallest window of the
        session's models (workbench.run.defaults)."""
        windows = [e.window_tokens for e in self.models if e.window_tokens is not None]
        return default_grid(self.dataset, min(windows) if windows else None)

    def context(self, model: Embedder | None = None, variants: Sequence[Variant] = (),
                stop: Callable[[], bool] | None = None, settings: Settings | None = None) -> Context:
        """What measuring a variant with `model` (default: the first) needs (workbench.run.sweep.Context)."""
        return Context(self.dataset, settings or self.settings, model or self.embedder, self.store, self.progress,
                       stop, tuple(variants))

    def steps(self, variants: Sequence[Variant], *, models: Sequence[Embedder] | None = None,
              stop: Callable[[], bool] | None = None, **changes: Any) -> Iterator[SweepResult]:
        """The sweep one variant at a time: each step is the complete SweepResult of one (variant, model),
        so a caller can show results as they come and stop between variants (the widgets do); with `stop`
        between an LLM's generations too (once `stop()` is true, workbench.models.llm.Stopped is raised,
        what finished cached). `models`: some of the session's (default: all). `combine` of the steps is
        what `sweep` returns. Arguments are checked before anything runs."""
        contexts = self._contexts(variants, models, stop, changes)
        return (step for c in contexts for step in steps_of(variants, c, several=len(contexts) > 1))

    def sweep(self, variants: Sequence[Variant], *, models: Sequence[Embedder] | None = None,
              stop: Callable[[], bool] | None = None, **changes: Any) -> SweepResult:
        """Score every variant with every model (`models`: some of the session's; default all) on every
        question, at every k and context budget; `changes`: settings for this sweep only (e.g. preview=True)."""
        contexts = self._contexts(variants, models, stop, changes)
        before = [(c.embedder.stats.embedded, c.embedder.stats.cached) for c in contexts]
        # the steps unsummarised, then the whole table in one call (the same numbers as per step, faster)
        result = combine([step for c in contexts
                          for step in steps_of(variants, c, len(contexts) > 1, summarized=False)])
        result.summary = stats.summarize(result.per_question, confidence=contexts[0].settings.confidence,
                                         cache=self.store.root)
        computed = Computed(  # the questions' vectors count too
            sum(c.embedder.stats.embedded - b[0] for c, b in zip(contexts, before, strict=True)),
            sum(c.embedder.stats.cached - b[1] for c, b in zip(contexts, before, strict=True)),
            result.provenance.computed.token_pass_documents)
        result.provenance = result.provenance.with_(computed=computed)
        return result

    def with_route(self, result: SweepResult, metric: MetricAt | str = "recall") -> SweepResult:
        """`result` and, when its folders are won by different chunkings, the route that gives each folder
        its winner (workbench.results.routing), measured, with a note in its provenance that it was chosen
        on the same questions; `result` itself when there is none to propose (or it is a preview)."""
        proposal = None if result.preview else propose_route(result, self.dataset, metric)
        if proposal is None or proposal.variant.key in {variant_key(k) for k in result.keys}:
            return result
        routed = combine(result, self.sweep([proposal.variant]))
        routed.provenance = routed.provenance.with_(notes=(*routed.provenance.notes, proposal.note))
        return routed

    def preview(self, variants: Sequence[Variant], **changes: Any) -> SweepResult:
        """Every variant scored from one cached model pass over the corpus (workbench.retrieval.preview),
        in about the time of one real variant: an estimate whose `ties` say what it cannot order;
        confirm the variants tied with its best with `sweep`."""
        return self.sweep(variants, preview=True, **changes)

    def search(self, space: searching.Space | Mapping[str, Any] | str | Path | Sequence[Variant], *,
               metric: str = "recall", k: int | None = None, budget: float = searching.BUDGET, seed: int = 0,
               finalists: int = searching.FINALISTS, refine: bool = True,
               stop: Callable[[], bool] | None = None) -> SweepResult:
        """The best variants of a space of hundreds for a share of sweeping them all (workbench.run.search):
        a preview calibrated on a few real anchors, then real rounds on a sample of the corpus and on the
        whole that drop what the paired evidence puts behind the best; a SweepResult of the last round,
        with its `race`. `space`: {"strategies": {"fixed": {"size": "64:512:64"}}, "retrievers": [...]},
        a JSON or YAML file of that, or a list of variants. budget: the share of the full sweep's embedding
        it may spend. How often its best is in the full sweep's tied set: bench/search.md."""
        return searching.search(self, space, metric=metric, k=k, budget=budget, seed=seed, finalists=finalists,
                                refine=refine, stop=stop)

    def estimate(self, variants: Sequence[Variant], **changes: Any) -> dict[str, estimates.Estimate]:
        """What `sweep(variants)` will embed and generate, and how long it will take, per model that
        runs a transformer (by model name; workbench.run.estimate). A warm grid costs file checks."""
        settings = Settings.of(self.settings, **changes)
        check_grid(variants)
        return {e.name: estimates.estimate(self.context(e, settings=settings), variants)
                for e in self.models if e.window_tokens is not None}

    def generation_estimates(self, variants: Sequence[Variant], model: Embedder | None = None,
                             stop: Callable[[], bool] | None = None) -> tuple[tuple[GenerationEstimate, ...], int]:
        """What the LLMs of `sweep(variants)` will generate (the estimates, and the builds left
        unestimated), without the embedding estimate: what the widgets show before a Run."""
        return estimates.generation_estimates(self.context(model), variants, stop)

    def audit(self, variants: Sequence[Variant], model: Embedder | None = None,
              label_free: bool = False) -> pd.DataFrame:
        """The chunk audit (workbench.results.audit): one row per variant, in order, a column per check,
        from the variant's chunks alone (read from its index entry when one is built, as after a sweep, else
        chunked here without building one; the audit itself read back from the cache when made before);
        truncation by the window of `model` (default: the first), whose tokenizer sizes tokenizer=model
        chunks and whose vectors place semantic cuts. What an LLM writes into a variant's chunks (an LLM
        strategy's, +context's contexts, whose length counts for truncation) is generated as a sweep would
        (and cached for it). workbench.results.audit.warnings(table) says which checks are past their
        threshold. With `label_free`, the measures of `Session.label_free` are two more columns."""
        check_grid(variants)
        e = model or self.embedder
        structures: dict[str, chunk_audit.Structure] = {}  # each document read once for every variant
        made: dict[str, list[Chunk]] = {}  # chunks made here, by entry: the label-free measures read them too
        rows = []
        for v in tqdm(variants, desc="audit", unit="variant", disable=not self.progress):
            entry = self.store.path(v, self.dataset, e).name
            path = chunk_audit.cache_file(self.store.root, entry)
            found = chunk_audit.load(path)
            if found is None:  # a built entry's chunks are read back (a cold sweep's report audits after building)
                stored = self.store.stored_chunks(v, self.dataset, e)
                chunks = made[entry] = stored if stored is not None else self.chunked(v, e, "auditing")
                found = chunk_audit.audit_chunks(self.dataset, chunks, e.truncated(embed_texts(chunks)), structures)
                chunk_audit.save(path, found)
            rows.append(chunk_audit.row(v, found, result_key(v.key, e)))
        table = chunk_audit.table(rows)
        if label_free:
            measured = self._label_free(variants, e, made)
            for name in no_labels.MEASURES:
                table[name] = measured[name].to_numpy()
        return table

    def label_free(self, variants: Sequence[Variant], model: Embedder | None = None) -> pd.DataFrame:
        """Quality without labels (workbench.results.label_free): one row per variant, in order, with
        cut_contrast and cohesion from the sentence vectors of `model` (default: the first), embedded
        once for every variant and cached, and each variant's chunks (chunked here, no index built);
        the measures are cached per chunking. Needs no questions. workbench.results.label_free.TRUST says
        how far they follow recall where labels exist."""
        check_grid(variants)
        return self._label_free(variants, model or self.embedder, {})

    def _label_free(self, variants: Sequence[Variant], e: Embedder, made: dict[str, list[Chunk]]) -> pd.DataFrame:
        """`label_free`, reading the chunks of an index entry from `made` when they were made already."""
        found: dict[str, no_labels.Sentences] | None = None  # embedded when a variant is not cached
        rows = []
        for v in tqdm(variants, desc="label-free", unit="variant", disable=not self.progress):
            entry = self.store.path(v, self.dataset, e).name
            path = no_labels.cache_file(self.store.root, entry)
            cached = no_labels.load(path)
            if cached is None:
                chunks = made.get(entry) or self.chunked(v, e, "measuring")
                found = found or no_labels.sentences(self.dataset, lambda t: e.encode(t, desc="sentences"))
                cached = no_labels.measure(self.dataset, found, chunks), len(chunks)
                no_labels.save(path, *cached)
            rows.append(no_labels.row(v, cached[0], cached[1], result_key(v.key, e)))
        return no_labels.table(rows)

    def chunked(self, variant: Variant, model: Embedder | None = None, doing: str = "chunking") -> list[Chunk]:
        """The chunks a build of `variant` would embed, chunked here without building its index (nothing
        embedded but what the chunker itself embeds, e.g. semantic's sentences); an error says which
        variant it was `doing`."""
        try:
            return written_chunks(variant.chunking, self.dataset, model or self.embedder, self.store.llm(variant),
                                  self.store.root, self.engine)[0]
        except Exception as err:
            err.add_note(f"while {doing} variant {variant.label}")
            raise

    def chunks(self, variant: Variant, model: Embedder | None = None) -> list[Chunk]:
        """The variant's chunks, from its index (loaded, or built and cached)."""
        return self.store.get(variant, self.dataset, model or self.embedder).chunks

    def rankings(self, variant: Variant, k: int = 10, model: Embedder | None = None) -> list[list[Hit]]:
        """The variant's top-k hits for every question (its index loaded or built), e.g. to drill down."""
        e = model or self.embedder
        qvecs = e.encode([q.question for q in self.dataset.questions], desc="questions")
        return retrieve(self.store.get(variant, self.dataset, e), self.dataset.questions, qvecs, k, variant.stages,
                      self.settings.mode)

    def close(self) -> None:
        """Stop the engine the session started (one named by a string), close the pgvector connection and stop
        the bundled PostgreSQL if a search started it (the next search starts it again)."""
        if self._owns_engine and self.engine is not None:
            self.engine.close()
            self._owns_engine = False
        self.store.pgvector.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def __repr__(self) -> str:
        models = ", ".join(e.name for e in self.models)
        return (f"Session({self.dataset.name!r}: {len(self.dataset.documents)} documents, "
                f"{len(self.dataset.questions)} questions; models {models}; cache {str(self.store.root)!r})")

    def _contexts(self, variants: Sequence[Variant], models: Sequence[Embedder] | None,
                  stop: Callable[[], bool] | None, changes: dict[str, Any]) -> list[Context]:
        """One Context per model of a sweep, its arguments checked before anything runs."""
        settings = Settings.of(self.settings, **changes)
        check_grid(variants)
        return [self.context(e, variants, stop, settings) for e in (self.models if models is None else models)]


def sweep(dataset: Dataset, variants: Sequence[Variant], settings: Settings | None = None, *,
          embedder: Embedder | None = None, models: Sequence[ModelSpec] | None = None,
          store: IndexStore | str | Path = CACHE_DIR, progress: bool = True, engine: str | Engine | None = None,
          stop: Callable[[], bool] | None = None, **changes: Any) -> SweepResult:
    """`Session(dataset, ...).sweep(variants)` in one call (see Session for the arguments): every
    variant scored on every question at every k and context budget. A preview (preview=True) ranks a
    grid from pooled vectors; confirm what it ties with its best:

        rough = wb.sweep(data, variants, preview=True)          # about the cost of one real variant
        ties = rough.ties("recall", k=5)
        real = wb.sweep(data, [rough.variant(key) for key in ties.loc[ties["tied_with_top"], "key"]])
    """
    with Session(dataset, settings, cache=store, models=models, embedder=embedder, engine=engine,
                 progress=progress, **changes) as session:
        return session.sweep(variants, stop=stop)


def sweep_steps(dataset: Dataset, variants: Sequence[Variant], settings: Settings | None = None, *,
                embedder: Embedder | None = None, models: Sequence[ModelSpec] | None = None,
                store: IndexStore | str | Path = CACHE_DIR, progress: bool = True,
                stop: Callable[[], bool] | None = None, **changes: Any) -> Iterator[SweepResult]:
    """`Session(dataset, ...).steps(variants)` in one call (see Session.steps)."""
    session = Session(dataset, settings, cache=store, models=models, embedder=embedder, progress=progress, **changes)
    return session.steps(variants, stop=stop)


def search(dataset: Dataset, space: searching.Space | Mapping[str, Any] | str | Path | Sequence[Variant], *,
           models: Sequence[ModelSpec] | None = None, store: IndexStore | str | Path = CACHE_DIR,
           progress: bool = True, engine: str | Engine | None = None, **how: Any) -> SweepResult:
    """`Session(dataset, ...).search(space, **how)` in one call (`wb.search`), with the models the
    space names (else `models`, else the bundled one):

        result = wb.search(wb.load_dataset("data/chroma_small"),
                           {"strategies": {"fixed": {"size": "64:512:64", "overlap": [0, 32]},
                                           "recursive": {"size": "64:512:64"}}, "retrievers": ["dense", "hybrid"]})
        result.verdict().headline(), result.race
    """
    if not isinstance(space, Sequence) or isinstance(space, str):
        space = searching.Space.of(space)
        models = list(space.models) or models
    with Session(dataset, cache=store, models=models, engine=engine, progress=progress) as session:
        return session.search(space, **how)


def audit(dataset: Dataset, variants: Sequence[Variant], *, embedder: Embedder | None = None,
                   models: Sequence[ModelSpec] | None = None, store: IndexStore | str | Path = CACHE_DIR,
                   progress: bool = True, engine: str | Engine | None = None) -> pd.DataFrame:
    """`Session(dataset, ...).audit(variants)` in one call (`wb.audit`): the chunk health of every
    variant, one row each, before any is scored.

        table = wb.audit(wb.load_dataset("data/chroma_small"), wb.grid("fixed", size=[128, 256]))
        print(*workbench.results.audit.warnings(table), sep="\n")
    """
    with Session(dataset, cache=store, models=models, embedder=embedder, engine=engine, progress=progress) as session:
        return session.audit(variants)


def rankings(dataset: Dataset, variant: Variant, k: int = 10, embedder: Embedder | None = None,
             store: IndexStore | str | Path = CACHE_DIR, mode: str = "corpus") -> list[list[Hit]]:
    """`Session(dataset, ...).rankings(variant, k)` in one call."""
    return Session(dataset, cache=store, embedder=embedder, mode=mode).rankings(variant, k)

