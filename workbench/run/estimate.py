"""What a sweep will embed, said before it starts: the texts missing from the vector cache, the
token passes, and the time they take at a rate measured here and now.

Why: a cold grid embeds for minutes behind one progress bar per variant; told up front, a user can
shrink the grid (or preview it) before waiting. The CLI prints `Estimate.line()`; a widget can too.

What is counted follows the sweep's own rules: a variant whose scores are cached costs nothing;
otherwise the questions (once) and, when its index entry is missing (once per chunking: its dense,
BM25 and hybrid variants share one), the texts it embeds: what its chunker embeds (semantic's sentence
groups), and its chunks' embedded texts (or for +late a token pass over its documents) when a variant
of the chunking reads vectors; an entry a BM25 variant built holds none, so a dense one embeds them. A
preview embeds no chunk, only its one token pass over the corpus, unless that is cached. A text is
counted once: the vector cache serves repeats.

The cost is in model word pieces as the model runs them: each text cut at the window, sorted by
length and padded to the longest of its pass (`Embedder.padded_word_pieces`: the ONNX runner's
passes are small, so a mixed sample is not counted as padded to its longest). The rate is measured by
embedding a random sample of the counted texts (a batch, or a fiftieth of them up to four batches;
half of them at most), which then sit in the vector cache, so nothing is wasted; when no text is
left to sample (a token pass alone),
by a token pass over the start of a document, which is not kept. Either way a first pass, untimed,
warms the model up. A preview's token pass runs on another model than its texts (the int8 export,
workbench.retrieval.preview.token_embedder), so with texts to embed too it gets a rate of its own,
measured on that model the same way. One measurement, on a machine that may be busy: an estimate
(a probe of a few windows reads slower than a whole pass).

In a sweep: a +context build's contexts are estimated by workbench.models.estimate (with the
store's LLM, on the build's chunks), one GenerationEstimate per build. A build whose chunker
itself generates is not chunked here, since that would generate all of it: its strategy's
`generations` hook (chunkers.registry.Asks)
says what it will ask. propositions knows every passage it will ask about, so it is estimated as
+context is; llm_chunk knows only each document's first window (the next starts where the answer
says), so those are estimated and the later windows given as bounds (`later`), their tokens and
time at the sample's mean per window. A chunker without the hook, or +context over an LLM chunker
(its chunks wait on the answers), is counted as unestimated. `generation_estimates` gives the
generations alone (the widgets show it before a Run): nothing is loaded unless a build generates.

The counts are exact but for semantic chunkers (below); the rate of one batch on a shared machine
is rough (tests/test_estimate.py checks the counts against what a sweep embeds).

Counting a variant's texts means chunking it. The chunks are left to the sweep's build of the entry
(IndexStore.keep), which then does not chunk again: on a folder of a thousand files, chunking twice was
4% of a cold default sweep (bench/folders.md). A semantic chunker's cuts wait on vectors not yet
computed: it cuts with random placeholder vectors (the percentile still fixes how many cuts there are,
not where), so its chunk count is `approximate`, its chunks are never sampled nor kept, and the sweep
cuts it again: the time that takes is the estimate's chunking line.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from workbench.chunkers import ChunkEnv, get_strategy
from workbench.chunkers.registry import Asks
from workbench.core.chunk import Chunk
from workbench.dataset import Dataset, Document
from workbench.models.cache import text_key
from workbench.models.context import CONTEXT, context_items
from workbench.models.embed import Embedder
from workbench.models.estimate import GenerationEstimate, duration, estimate_generation, generation_parts
from workbench.models.onnx import faster_backend
from workbench.retrieval.index import IndexStore, embed_texts, reads_vectors
from workbench.retrieval.preview import token_cache_path, token_embedder
from workbench.run.sweep import Context
from workbench.variant import Variant

# an embedding wait from which the estimate names a faster backend this CPU runs (Estimate.faster_backend)
SUGGEST_BACKEND_S = 60
PROBE_CHARS = 4000  # the text a token pass measures the rate on when no text is left to sample
PASSAGE_CHARS = 800  # a passage a reranker's rate is measured on: about a chunk of 200 tokens


@dataclass(frozen=True)
class Estimate:
    """What a sweep will compute before it starts, and the time at the rate measured."""

    variants: int  # variants to measure (the others' scores are cached)
    builds: int  # index entries to build (none in a preview: its indexes live in memory)
    texts: int  # distinct texts still to embed: not in the vector cache, the sample left out
    token_passes: int  # model passes over whole documents (a preview's over the corpus, one per +late build)
    token_pass_documents: int  # the documents those passes read, in all
    word_pieces: int  # what the model will run over for all of it, padded as its batches are
    rate: float | None  # word pieces per second, measured now (None: nothing to embed)
    measured: str  # how the rate was measured, for people ("" when it was not)
    sampled: int  # texts embedded to measure the rate, now in the vector cache
    approximate: bool  # some chunker's cuts wait on vectors not computed yet, so `texts` is approximate
    generations: tuple[GenerationEstimate, ...] = ()  # per build: its contexts (+context), its chunker's generations
    unestimated: int = 0  # builds whose generations cannot be counted before generating (module docstring)
    pass_word_pieces: int = 0  # of word_pieces, those of the token passes
    # the token passes' own rate, when they run on another model than the texts (a preview's on the int8
    # export, which reads about twice as fast) and there are texts too; None: they run at `rate`
    pass_rate: float | None = None
    reranks: tuple[RerankEstimate, ...] = ()  # per reranker of the variants' +rerank stages
    chunk_seconds: float = 0.0  # chunking the builds took here, which the sweep's builds take again (not kept)
    faster_backend: str = ""  # a backend this CPU runs faster than the embedder's, named when the wait is long

    @property
    def cached(self) -> bool:
        """Nothing to embed or generate: every vector, generation (or score) the sweep needs is cached."""
        return (self.word_pieces == 0 and all(g.cached for g in self.generations) and not self.unestimated
                and not self.reranks)

    @property
    def embed_seconds(self) -> float:
        """The embedding time of what is left, at the measured rates."""
        if not self.rate:
            return 0.0
        if self.pass_rate:
            return (self.word_pieces - self.pass_word_pieces) / self.rate + self.pass_word_pieces / self.pass_rate
        return self.word_pieces / self.rate

    @property
    def seconds(self) -> float:
        """Embedding and chunking (not the generations, reranking, FAISS or scoring: small beside them)."""
        return self.embed_seconds + self.chunk_seconds

    def line(self) -> str:
        if self.cached:
            return "estimate: all cached, nothing to embed"
        more = generation_parts(self.generations, self.unestimated) + [r.line() for r in self.reranks]
        if self.word_pieces == 0:
            return "estimate: nothing to embed; " + "; ".join(more)
        return self._embedding_line() + "".join(f"; {m}" for m in more)

    def _embedding_line(self) -> str:
        work = [f"{'about ' if self.approximate else ''}{self.texts:,} texts to embed"] if self.texts else []
        if self.token_passes:
            work.append(f"a token pass over {self.token_pass_documents:,} documents" if self.token_passes == 1 else
                        f"{self.token_passes} token passes over {self.token_pass_documents:,} documents in all")
        builds = f" ({self.builds} indexes to build)" if self.builds else ""
        return (f"estimate: {' and '.join(work)} ({self.word_pieces:,} word pieces) for {self.variants} variants"
                f"{builds}: about {duration(self.seconds)} of embedding at {self.rate:,.0f} word pieces/s"
                f"{f' ({self.pass_rate:,.0f} for the token pass)' if self.pass_rate else ''}, measured {self.measured}"
                + (f", and chunking (as long as it took here: {duration(self.chunk_seconds)})"
                   if self.chunk_seconds >= 1 else "")
                + (f"; this CPU has bfloat16 matrix units: backend {self.faster_backend!r} (--backend "
                   f"{self.faster_backend}) embeds faster on them, vectors within 1e-4 of these (docs/models.md)"
                   if self.faster_backend and self.embed_seconds >= SUGGEST_BACKEND_S else ""))


@dataclass(frozen=True)
class RerankEstimate:
    """What a reranker of +rerank stages will score, said before it starts: at most this many pairs."""

    model: str  # the reranker, as the stage names it
    variants: int  # the variants it reranks
    pairs: int  # questions x n of each variant: a bound (a pair cached, or shared by variants, is scored once)
    rate: float  # pairs per second, measured now on a batch of real questions and passages (not kept)
    sampled: int

    @property
    def seconds(self) -> float:
        return self.pairs / self.rate

    def line(self) -> str:
        return (f"reranking with {self.model}: at most {self.pairs:,} pairs for {self.variants} variant"
                f"{'s' * (self.variants > 1)} (questions x n; a pair cached or shared is scored once): at most about "
                f"{duration(self.seconds)} at {self.rate:,.1f} pairs/s, measured on {self.sampled} pairs after "
                "one to warm up")


def generates(variant: Variant) -> bool:
    """Whether building the variant's index asks an LLM: +context, or a chunker that names one."""
    return variant.context is not None or bool(get_strategy(variant.strategy).models)


def window_lengths(e: Embedder, texts: Sequence[str]) -> list[int]:
    """Word pieces of each window a token pass of `e` runs over `texts`, special tokens included."""
    ids = e.tokenizer(list(texts), add_special_tokens=False, verbose=False)["input_ids"] if texts else []
    frame = e.max_tokens - e.window_tokens
    return [end - start + frame for n in map(len, ids) for start, end, _, _ in e.token_windows(n)]


class _Tally:
    """The texts the sweep will embed, each once, grouped by the model call that will embed them,
    and the windows of its token passes, which `pass_embedder` runs (default: the embedder)."""

    def __init__(self, embedder: Embedder, pass_embedder: Embedder | None = None):
        self.embedder = embedder
        self.pass_embedder = pass_embedder or embedder
        self.texts: dict[bytes, str] = {}
        self.calls: list[list[bytes]] = []
        self.inexact: set[bytes] = set()  # chunks cut from placeholder vectors
        self.windows: list[int] = []  # word pieces of each token-pass window, special tokens included
        self.passes = 0
        self.pass_documents = 0
        self.chunk_seconds = 0.0  # the time `build` took to chunk, which the sweep's builds take again

    def add(self, texts: Sequence[str], exact: bool = True) -> tuple[list[bytes], dict[bytes, np.ndarray]]:
        """Count the texts neither cached nor counted yet; their keys and the cached vectors found."""
        keys = [text_key(t) for t in texts]
        found = self.embedder.cache.get_many(keys) if self.embedder.cache is not None else {}
        new = {k: t for k, t in zip(keys, texts, strict=True) if k not in found and k not in self.texts}
        self.texts.update(new)
        self.calls.append(list(new))
        if not exact:
            self.inexact.update(new)
        return keys, found

    def build(self, variant: Variant, dataset: Dataset, vectors: bool = True) -> list[Chunk]:
        """What building the variant's index embeds: what its chunker embeds, then, with `vectors`, its
        chunks (or a token pass over their documents, for +late); returns the chunks."""
        waited = False  # whether the chunker was given placeholder vectors
        rng = np.random.default_rng(0)

        def embed(texts: list[str]) -> np.ndarray:
            nonlocal waited
            keys, found = self.add(texts)
            if all(k in found for k in keys):
                return np.stack([found[k] for k in keys])
            waited = True
            noise = rng.standard_normal((len(keys), self.embedder.dim)).astype(np.float32)
            noise /= np.linalg.norm(noise, axis=1, keepdims=True)
            return np.stack([found.get(k, v) for k, v in zip(keys, noise, strict=True)])

        t0 = time.perf_counter()
        chunks = variant.chunk(dataset, ChunkEnv(embed=embed, model_tokenizer=self.embedder.tokenizer))
        self.chunk_seconds += time.perf_counter() - t0
        if not vectors:
            return chunks
        if variant.late:
            read = {c.doc_id for c in chunks}
            self.token_pass([d for d in dataset.documents if d.doc_id in read])
        else:
            self.add(embed_texts(chunks), exact=not waited)
        return chunks

    def token_pass(self, documents: Sequence[Document]) -> None:
        self.windows += window_lengths(self.pass_embedder, [d.text for d in documents])
        self.passes += 1
        self.pass_documents += len(documents)

    @cached_property
    def length(self) -> dict[bytes, int]:
        """Word pieces of each text as the model reads it (special tokens included, cut at its
        window), once the tallying is done (Embedder.lengths)."""
        lengths = self.embedder.lengths(list(self.texts.values()))
        return {k: min(n, self.embedder.max_tokens) for k, n in zip(self.texts, lengths, strict=True)}

    def word_pieces(self, leave_out: set[bytes]) -> int:
        """Of the texts, those in `leave_out` left out, and of the token passes."""
        return (sum(self.embedder.padded_word_pieces([self.length[k] for k in call if k not in leave_out])
                    for call in self.calls) + self.pass_word_pieces)

    @property
    def pass_word_pieces(self) -> int:
        return self.pass_embedder.padded_word_pieces(self.windows)


def estimate(context: Context, variants: Sequence[Variant]) -> Estimate:
    """What sweeping `variants` in `context` (its dataset, settings, model and store) will embed and
    how long it will take (see the module docstring); Session.estimate asks it per model. A warm
    grid costs file checks: the model loads only when something is to be embedded, to measure the rate."""
    dataset, settings, embedder, store = context.dataset, context.settings, context.embedder, context.store
    scores = context.scores
    todo = [v for v in variants if not (scores and scores.has(v))]
    tally = _Tally(embedder, token_embedder(embedder) if settings.preview else None)
    if todo:
        tally.add([q.question for q in dataset.questions])
    builds: dict[str, Variant] = {}
    if settings.preview:
        if todo and not (token_cache_path(dataset, embedder, store.root) / "meta.json").exists():
            tally.token_pass(dataset.documents)
    else:
        builds = _unbuilt(todo, dataset, embedder, store)
    generations, unestimated = _generations(builds.values(), dataset, store, tally)
    rate, measured, sample = _measure(tally, dataset)
    pass_rate = None
    if tally.windows and sample and tally.pass_embedder is not embedder:  # the passes run on another model
        pass_rate, how = _pass_rate(tally.pass_embedder, dataset)
        measured += f"; the token pass's {how}"
    return Estimate(len(todo), len(builds), len(tally.texts) - len(sample), tally.passes, tally.pass_documents,
                    tally.word_pieces(sample), rate, measured, len(sample), bool(tally.inexact), generations,
                    unestimated, tally.pass_word_pieces, pass_rate, _reranks(todo, dataset, store),
                    tally.chunk_seconds, faster_backend(embedder.backend, embedder.device))


def _reranks(variants: Sequence[Variant], dataset: Dataset, store: IndexStore) -> tuple[RerankEstimate, ...]:
    """Per reranker the variants' +rerank stages name: the pairs it may score (every question's top n) and
    its rate, measured on a batch of the first question against passages of the corpus, after one pair
    to load it (scored without its cache: nothing kept)."""
    asked: dict[str, list[int]] = {}
    for v in variants:
        for name, params, _ in v.stages:
            if name == "rerank":
                p = dict(params)
                asked.setdefault(p["model"], []).append(len(dataset.questions) * p["n"])
    out = []
    for spec, pairs in asked.items():
        reranker = store.rerankers.get(spec)
        text = max(dataset.documents, key=lambda d: len(d.text)).text
        question = dataset.questions[0].question
        batch = [(question, text[i * PASSAGE_CHARS:(i + 1) * PASSAGE_CHARS]) for i in range(reranker.batch_size + 1)]
        reranker.batch_scores(batch[:1])  # loads the model: not timed
        t0 = time.perf_counter()
        reranker.batch_scores(batch[1:])
        out.append(RerankEstimate(spec, len(pairs), sum(pairs), len(batch[1:]) / (time.perf_counter() - t0),
                                  len(batch) - 1))
    return tuple(out)


def generation_estimates(context: Context, variants: Sequence[Variant], stop: Callable[[], bool] | None = None,
                         ) -> tuple[tuple[GenerationEstimate, ...], int]:
    """What the LLMs of sweeping `variants` in `context` will generate, as `estimate` counts it, without
    its embedding estimate: (an estimate per build that generates, builds unestimated). Variants whose
    builds ask no LLM (`generates`) are not even looked at; `stop` stops the sample's generation."""
    asking = [v for v in variants if generates(v)]
    if not asking:
        return (), 0
    dataset, embedder, store, scores = context.dataset, context.embedder, context.store, context.scores
    builds = _unbuilt([v for v in asking if not (scores and scores.has(v))], dataset, embedder, store)
    return _generations(builds.values(), dataset, store, _Tally(embedder), stop)


def _unbuilt(variants: Sequence[Variant], dataset: Dataset, embedder: Embedder, store: IndexStore
             ) -> dict[str, tuple[Variant, bool]]:
    """The chunkings of `variants` whose index entry is missing or lacks the vectors one of them reads
    (IndexStore.ready), by chunking key, each with whether its chunks will be embedded."""
    out: dict[str, tuple[Variant, bool]] = {}
    for v in variants:
        if not store.ready(v, dataset, embedder):
            vectors = out.get(v.chunking_key, (v, False))[1]
            out[v.chunking_key] = (v.chunking, vectors or reads_vectors(v))
    return out


def _generations(builds: Iterable[tuple[Variant, bool]], dataset: Dataset, store: IndexStore, tally: _Tally,
                 stop: Callable[[], bool] | None = None) -> tuple[tuple[GenerationEstimate, ...], int]:
    """Each build chunked into `tally` (unless its chunker generates), and what its LLMs will generate
    (module docstring): the estimates, and the builds left unestimated."""
    env = ChunkEnv(model_tokenizer=tally.embedder.tokenizer, llm_cache_dir=store.root, llm_engine=store.engine)
    out: list[GenerationEstimate] = []
    unestimated = 0
    for v, vectors in builds:
        s = get_strategy(v.strategy)
        try:
            if s.models:  # its chunker generates: chunking it here would generate it all
                if s.generations is None or v.context is not None:
                    unestimated += 1
                if s.generations is not None:
                    out += _asked(env, [a for doc in dataset.documents for a in s.generations(doc, env, **v.kwargs)],
                                  stop)
                continue
            spent = tally.chunk_seconds
            chunks = tally.build(v, dataset, vectors)
            spent = tally.chunk_seconds - spent
            if store.keep(v, dataset, tally.embedder, chunks, spent):  # the build takes them, not chunking again
                tally.chunk_seconds -= spent
            if v.context is not None:  # the contexts are written after chunking, by the store's LLM
                params = dict(v.context)
                out.append(estimate_generation(store.llm(v), CONTEXT, context_items(
                    dataset.docs, chunks, params["doc_tokens"]), params["max_tokens"], stop=stop))
        except Exception as e:
            e.add_note(f"while estimating variant {v.label}")
            raise
    return tuple(out), unestimated


def _asked(env: ChunkEnv, asks: Sequence[Asks], stop: Callable[[], bool] | None) -> list[GenerationEstimate]:
    """One estimate per LLM, prompt and max_tokens that the documents' asks name."""
    groups: dict[tuple[str, str, int, int], list[Asks]] = {}
    for a in asks:
        groups.setdefault((a.model, a.prompt.name, a.prompt.version, a.max_tokens), []).append(a)
    return [estimate_generation(env.llm(model), group[0].prompt, [i for a in group for i in a.items], max_tokens,
                                later=(sum(a.later[0] for a in group), sum(a.later[1] for a in group)), stop=stop)
            for (model, _, _, max_tokens), group in groups.items()]


def _measure(tally: _Tally, dataset: Dataset) -> tuple[float | None, str, set[bytes]]:
    """(word pieces per second, how it was measured, the keys of the texts embedded to measure it)."""
    e = tally.embedder
    exact = [k for k in tally.texts if k not in tally.inexact]
    # one to warm the model up, then a batch, or a fiftieth of the texts up to four batches (kept, so not wasted)
    n = min(min(max(e.batch_size, len(exact) // 50), 4 * e.batch_size) + 1, len(exact) // 2)
    if not (tally.texts or tally.windows):
        return None, "", set()
    e.dim  # the model loaded before the clock starts
    if n > 1:
        keys = [exact[i] for i in np.random.default_rng(0).choice(len(exact), n, replace=False)]
        keys.sort(key=tally.length.__getitem__)
        e.encode([tally.texts[keys[0]]], desc="warming up")  # a first pass sets the model up: not timed
        t0 = time.perf_counter()
        e.encode([tally.texts[k] for k in keys[1:]], desc="measuring the rate")
        pieces = e.padded_word_pieces([tally.length[k] for k in keys[1:]])
        return (pieces / (time.perf_counter() - t0),
                f"on {n - 1} of them after one to warm up (embedded now, kept in the cache)", set(keys))
    rate, how = _pass_rate(tally.pass_embedder, dataset)
    return rate, f"on a token pass {how}", set()


def _pass_rate(e: Embedder, dataset: Dataset) -> tuple[float, str]:
    """(word pieces per second, where it was measured) of a token pass of `e` over the start of the
    longest document, after a shorter one to set the model up."""
    doc = max(dataset.documents, key=lambda d: len(d.text))
    text = doc.text[:PROBE_CHARS]
    for _ in e.token_embeddings({doc.doc_id: text[: PROBE_CHARS // 4]}):  # a first pass, a full window, sets it up
        pass
    t0 = time.perf_counter()
    for _ in e.token_embeddings({doc.doc_id: text}):
        pass
    seconds = time.perf_counter() - t0
    pieces = e.padded_word_pieces(window_lengths(e, [text]))
    return pieces / seconds, f"over the start of {doc.doc_id} ({pieces:,} word pieces, not kept)"
