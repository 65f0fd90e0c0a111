"""Preview mode: rank a grid of chunkings from one model pass over the corpus.

Why: a real sweep embeds every variant's chunks again, so a grid of 20 costs 20 passes. Every
chunk is an exact character span, so its vector can instead be pooled (mean, then L2-normalised)
from token embeddings computed once per corpus and model: the document-context pass of late
chunking (workbench.models.late), kept on disk. Any number of variants then costs chunking and FAISS
only. The ranking of such a grid is an estimate (preview vectors are late-chunking vectors, so
a contextual header changes nothing here); confirm its best variants with a real sweep
(SweepResult.ties: those its own bootstrap cannot tell from its top, then sweep).

A real embedding sees only the first tokens of a chunk longer than the model window (it is
truncated), so a preview chunk vector pools the same first tokens; a late-chunking variant
pools all its tokens, as it does for real.

Semantic chunking embeds sentence groups to choose its cuts: in preview, each group's vector
is pooled from the same cached tokens too (the groups are slices of the document), so a
semantic grid costs no model pass either; a strategy embedding texts that are not slices of
its document gets real (cached) embeddings.

For a model on onnxruntime (the default backend) the token pass runs on the model's int8 export
(`token_embedder`); the questions keep the float model's (cached) vectors, shared with real
sweeps. On the bundled model int8, one window per batch, reads the corpus about twice as fast per
word piece (bench/backends.md; its sessions skip a fusion that slowed them: onnx.SKIPPED_FUSIONS),
so the pass costs less than embedding one real variant's chunks, and the preview ranks variants as
closely to the real ranking as the float pass does (bench/preview.md measures both side by side).

A sweep's preview runs its two model passes (the token pass, then the questions) on a background
thread and meanwhile chunks and pools its variants on its own (`preview_inputs`): on two cores
that CPU work used to follow the passes while one core idled (bench/preview.md).

Cache: `<root>/tokens/<corpus fingerprint>-<token pass model fingerprint>-t<TOKEN_PASS_VERSION>/`,
float16 token vectors in one raw file (memory-mapped when read), int64 character offsets and
meta.json, published atomically. Preview indexes live in memory only: never in the IndexStore, never served as real.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pandas as pd

from workbench.chunkers import ChunkEnv
from workbench.core.chunk import Chunk, make_chunk
from workbench.core.io import publish
from workbench.dataset import Dataset, Document
from workbench.models.embed import DocTokens, Embedder, EmbedStats
from workbench.models.late import pooled_vectors
from workbench.retrieval.bm25 import LexicalIndex
from workbench.retrieval.index import ChunkIndex, chunk_cost, embed_texts, flat_index, needs, returned_token_counts
from workbench.variant import Variant

DTYPE = np.float16  # halves the cache; bench/preview.md measures that rankings do not move
KEPT_BYTES = 1 << 30  # float32 copies of documents' token rows a TokenCache keeps for pooling (see `tokens`)
TOKEN_PASS_BACKEND = "onnx-int8"  # what a model on onnxruntime runs the token pass on (see the module docstring)
# Windows per batch of that int8 pass. One: int8 scales activations per batch, so a window's vectors then
# depend on it alone (not on which windows shared its batch), and with no padding and small matrices
# the pass is faster than at 32 (bench/preview.md).
TOKEN_PASS_BATCH = 1
# Bump when what the token cache holds changes for the same corpus and token pass model; it names the cache.
# 2: the int8 pass runs TOKEN_PASS_BATCH windows per batch (it ran the embedder's 32).
TOKEN_PASS_VERSION = 2
# Chunks a preview may hold ahead of their turn (chunked or pooled while its model passes run, see
# preview_inputs): bounds that memory (a pooled chunk holds its text and a float32 vector, about 2 KB)
PREFETCH_CHUNKS = 250_000
T = TypeVar("T")


def token_embedder(embedder: Embedder) -> Embedder:
    """The model of a preview's token pass: an "onnx" embedder's int8 twin (the same model, folder
    and settings but TOKEN_PASS_BATCH), else the embedder itself."""
    if embedder.backend != "onnx":
        return embedder
    return Embedder(**(embedder.arguments() | {"backend": TOKEN_PASS_BACKEND, "batch_size": TOKEN_PASS_BATCH}))


class TokenCache:
    """A corpus's contextual token embeddings, memory-mapped from one cache folder."""

    def __init__(self, path: Path, computed: bool = False, pending: Future | None = None):
        """pending: the token pass that is writing `path`, when the cache is made before the pass
        ends (`preview_inputs` chunks variants meanwhile); what reads the tokens waits for it."""
        self.path = path
        self.computed = computed  # made by the model pass of this call, not read from an earlier one
        self._pending = pending
        self._envs: dict[str, ChunkEnv] = {}  # doc id -> its chunk environment (see env)
        self._float32: dict[str, np.ndarray] = {}  # doc id -> its token rows as float32 (see tokens)
        self._kept = 0  # their bytes

    def _ready(self) -> None:
        """Wait for the pending token pass (and raise its error, if it failed)."""
        if self._pending is not None:
            self._pending.result()

    @cached_property
    def _meta(self) -> dict[str, Any]:
        self._ready()
        return json.loads((self.path / "meta.json").read_text())

    @cached_property
    def vectors(self) -> np.ndarray:
        shape = (self._meta["tokens"], self._meta["dim"])
        return np.memmap(self.path / "vectors.bin", dtype=self._meta["dtype"], mode="r", shape=shape)

    @cached_property
    def offsets(self) -> np.ndarray:
        """(tokens, 2) character start, end."""
        self._ready()
        return np.load(self.path / "offsets.npy")

    @cached_property
    def rows(self) -> dict[str, tuple[int, int]]:
        """doc id -> its first and past-the-last token row."""
        bounds = self._meta["rows"]
        return {d: (bounds[i], bounds[i + 1]) for i, d in enumerate(self._meta["doc_ids"])}

    def tokens(self, doc_id: str) -> DocTokens:
        """One document's tokens (offsets and float32 vectors; no ids: pooling needs none). The
        float32 rows are kept, up to KEPT_BYTES in all, since every variant of a grid pools the same
        documents: converting them from the float16 cache each time was most of the pooling, profiled."""
        if doc_id not in self.rows:
            raise KeyError(f"document {doc_id!r} is not in the token cache {self.path}")
        a, b = self.rows[doc_id]
        vecs = self._float32.get(doc_id)
        if vecs is None:
            vecs = np.asarray(self.vectors[a:b], dtype=np.float32)
            if self._kept + vecs.nbytes <= KEPT_BYTES:
                vecs.flags.writeable = False
                self._float32[doc_id], self._kept = vecs, self._kept + vecs.nbytes
        return DocTokens([], self.offsets[a:b, 0], self.offsets[a:b, 1], vecs)

    def vectors_of(self, chunks: list[Chunk], embedder: Embedder, window: int | None = None) -> np.ndarray:
        """Each chunk's pooled vector (workbench.models.late.pooled_vectors over the cached tokens); with
        `window`, of its first `window` tokens only (see `seen`)."""
        if window is not None:
            chunks = [self.seen(c, window) for c in chunks]
        return pooled_vectors(chunks, ((d, self.tokens(d)) for d in dict.fromkeys(c.doc_id for c in chunks)), embedder)

    def seen(self, chunk: Chunk, window: int) -> Chunk:
        """The chunk cut after its first `window` tokens: what a model that truncates its input
        embeds of it (bench/preview.md: pooling the whole chunk flatters long chunks)."""
        a, b = self.rows[chunk.doc_id]
        ends = self.offsets[a:b, 1]  # non-decreasing
        last = int(np.searchsorted(ends, chunk.start, side="right")) + window - 1
        if last >= len(ends) or ends[last] >= chunk.end:
            return chunk
        end = int(ends[last])
        return replace(chunk, end=end, text=chunk.text[: end - chunk.start])

    def env(self, doc: Document, embedder: Embedder) -> ChunkEnv:
        """A chunk environment for `doc` whose embedding function pools the texts' spans: one per
        document for the life of this cache (a preview sweep's), so that what an environment
        keeps (its tokenizers, any memo of its own) serves every variant of the grid, and its embedding function pools
        each list of texts once (semantic variants that differ only in their percentile embed the
        same sentence groups). The arrays it returns are shared: read-only."""
        if doc.doc_id not in self._envs:
            self._envs[doc.doc_id] = self._env(doc, embedder)
        return self._envs[doc.doc_id]

    def _env(self, doc: Document, embedder: Embedder) -> ChunkEnv:
        pooled: dict[tuple[str, ...], np.ndarray] = {}

        def embed(texts: list[str]) -> np.ndarray:
            key = tuple(texts)
            if key in pooled:
                return pooled[key]
            spans, at = [], 0
            for text in texts:  # slices in document order (semantic's sentence groups)
                start = doc.text.find(text, at) if text else -1
                if start < 0:  # not slices: real embeddings, which the embedder caches itself
                    return embedder.encode(texts, desc="sentences")
                spans.append(make_chunk(doc, start, start + len(text)))
                at = start
            pooled[key] = self.vectors_of(spans, embedder)
            pooled[key].flags.writeable = False
            return pooled[key]

        return ChunkEnv(embed=embed, model_tokenizer=embedder.tokenizer)


def token_cache_path(dataset: Dataset, embedder: Embedder, root: str | Path) -> Path:
    """Where the corpus's token cache for `embedder` lives, named by its token pass's model and
    TOKEN_PASS_VERSION (it is complete when its meta.json is there)."""
    name = f"{dataset.corpus_fingerprint}-{token_embedder(embedder).fingerprint}-t{TOKEN_PASS_VERSION}"
    return Path(root) / "tokens" / name


def token_cache(dataset: Dataset, embedder: Embedder, root: str | Path) -> TokenCache:
    """The corpus's token cache under `root`, computed if missing: one pass of `token_embedder`
    per window."""
    path = token_cache_path(dataset, embedder, root)
    computed = not (path / "meta.json").exists()
    if computed:
        _publish(path, dataset, token_embedder(embedder))
    return TokenCache(path, computed)


def _publish(path: Path, dataset: Dataset, model: Embedder, stop: Callable[[], bool] = lambda: False) -> None:
    """Run the token pass of `model` (a `token_embedder`) into `path`, atomically; `stop()` is asked
    between documents."""
    publish(path, lambda tmp: _write(tmp, dataset, model, stop))


def _write(folder: Path, dataset: Dataset, embedder: Embedder, stop: Callable[[], bool]) -> None:
    """Stream each document's token vectors to disk as they come, so memory holds one group."""
    doc_ids, rows, offsets = [], [0], []
    with open(folder / "vectors.bin", "wb") as f:
        for doc_id, tokens in embedder.token_embeddings({d: doc.text for d, doc in dataset.docs.items()}):
            if stop():
                raise RuntimeError(f"the token pass over {dataset.name!r} was stopped")
            f.write(tokens.vecs.astype(DTYPE).tobytes())
            doc_ids.append(doc_id)
            rows.append(rows[-1] + len(tokens.ids))
            offsets.append(np.stack([tokens.starts, tokens.ends], axis=1))
    np.save(folder / "offsets.npy", np.concatenate(offsets).astype(np.int64).reshape(-1, 2))
    meta = {"dtype": np.dtype(DTYPE).name, "dim": embedder.dim, "tokens": rows[-1], "doc_ids": doc_ids, "rows": rows}
    (folder / "meta.json").write_text(json.dumps(meta))


def preview_inputs(dataset: Dataset, variants: Sequence[Variant], embedder: Embedder, root: str | Path,
                   meanwhile: Callable[[], T] = lambda: None,
                   ) -> tuple[np.ndarray, TokenCache, dict[str, ChunkIndex], T]:
    """A preview sweep's question vectors and token cache, the indexes of the `variants` (by chunking
    key: every retriever of a chunking shares one, see `shared_index`) that were built while the model
    computed those, and what `meanwhile()` returned (the caller's
    own work for this thread, done after those builds, while the passes may still run).

    Why: the two model passes (the token pass, then the questions) run on a background thread,
    on sessions that release the GIL while they compute; meanwhile this thread chunks the variants
    (during the token pass) and pools their vectors (during the question pass), CPU work that would
    otherwise follow the passes on one core while the other idles (bench/preview.md measures the
    cost). What is built is what `preview_index` builds, variant by variant in their order, until
    the passes end; a variant that fails here is left to be built (and to fail) in its turn. The
    questions' embeddings count in `embedder.stats` as usual, once the passes end."""
    path = token_cache_path(dataset, embedder, root)
    computed = not (path / "meta.json").exists()
    questions = [q.question for q in dataset.questions]
    asked = EmbedStats()  # the question pass counts apart, so that an index's own count stays its own
    stopping = threading.Event()
    passes = ThreadPoolExecutor(1, thread_name_prefix="workbench-model-passes")
    pass_ = passes.submit(_publish, path, dataset, token_embedder(embedder), stopping.is_set) if computed else None
    question_pass = passes.submit(embedder.encode, questions, "questions", asked)
    cache = TokenCache(path, computed, pass_)
    chunked: dict[str, Chunked] = {}
    built: dict[str, ChunkIndex] = {}
    held = 0  # chunks chunked or built ahead (PREFETCH_CHUNKS)
    failed = False  # a variant failed ahead: none after it is tried ahead, it is tried once more in its turn
    try:
        firsts: dict[str, Variant] = {}  # the first variant of each chunking, in order
        for v in variants:
            firsts.setdefault(v.chunking_key, v)
        for v in firsts.values():  # chunk, while the token pass runs
            if pass_ is None or pass_.done() or held >= PREFETCH_CHUNKS:
                break
            try:
                chunked[v.chunking_key] = preview_chunks(v, dataset, embedder, cache)
            except Exception:
                failed = True
                break
            held += len(chunked[v.chunking_key].chunks)
        for v in firsts.values():  # pool what was chunked, and build more while the question pass runs
            ahead = chunked.pop(v.chunking_key, None)
            if ahead is None and (failed or question_pass.done() or held >= PREFETCH_CHUNKS):
                break
            try:
                built[v.chunking_key] = preview_index(v, dataset, embedder, cache, ahead)
            except Exception:
                break
            held += 0 if ahead else len(built[v.chunking_key].chunks)
        extra = meanwhile()
        qvecs = question_pass.result()
        cache._ready()
    except BaseException:
        stopping.set()
        passes.shutdown(wait=False, cancel_futures=True)
        raise
    passes.shutdown()
    embedder.stats.embedded += asked.embedded
    embedder.stats.cached += asked.cached
    return qvecs, cache, built, extra


@dataclass(frozen=True)
class Chunked:
    """A variant's chunks as a preview makes them before their vectors: with what returning each
    costs (returned_token_counts), the seconds they took and the texts the model embedded for them."""

    chunks: list[Chunk]
    returned: pd.DataFrame
    seconds: float
    texts_embedded: int


def preview_chunks(variant: Variant, dataset: Dataset, embedder: Embedder, cache: TokenCache) -> Chunked:
    """The variant's chunks of every document, made with the cache's environments (semantic cuts
    from pooled group vectors); refused for what a preview cannot score, or when there is none."""
    if variant.context is not None:
        raise ValueError(f"variant {variant.label}: a preview cannot score +context, whose embedded text the document "
                         "does not hold (a preview pools the document's token embeddings); sweep it without preview")
    t0, before = time.perf_counter(), embedder.stats.embedded
    chunks = [c for doc in dataset.documents
              for c in variant.chunk(Dataset(dataset.name, (doc,), ()), cache.env(doc, embedder))]
    if not chunks:
        raise ValueError(f"variant {variant.label} produced no chunks on dataset {dataset.name!r}")
    return Chunked(chunks, returned_token_counts(chunks, dataset), time.perf_counter() - t0,
                   embedder.stats.embedded - before)


def shared_index(variant: Variant, index: ChunkIndex) -> ChunkIndex:
    """`index`, built for another variant of the same chunking, as `variant`'s: with the BM25 index its
    stages need, built here when the first variant's did not. Why: the retrievers of a chunking read
    the same chunks and pooled vectors, so a preview of a grid crossed with retrievers chunks and
    pools each chunking once (a real sweep shares them through the index store)."""
    if "bm25" in needs(variant) and index.lexical is None:
        index.lexical = LexicalIndex.build(embed_texts(index.chunks))
    return index


def preview_index(variant: Variant, dataset: Dataset, embedder: Embedder, cache: TokenCache,
                  chunked: Chunked | None = None) -> ChunkIndex:
    """The variant's index, in memory only, with pooled chunk vectors (and a BM25 index when its
    stages need one, as IndexStore.get builds it); `chunked`: its `preview_chunks`, if made already."""
    chunked = chunked or preview_chunks(variant, dataset, embedder, cache)
    t0, before = time.perf_counter(), embedder.stats.embedded
    chunks, returned = chunked.chunks, chunked.returned
    vectors = cache.vectors_of(chunks, embedder, None if variant.late else embedder.window_tokens)
    cost = chunk_cost(chunks, dataset, returned) | {
        "truncated_chunks": 0, "texts_embedded": chunked.texts_embedded + embedder.stats.embedded - before,
        "seconds": round(chunked.seconds + time.perf_counter() - t0, 3), "built": True}
    index = ChunkIndex(chunks, flat_index(vectors), returned, cost)
    if "bm25" in needs(variant):
        index.lexical = LexicalIndex.build(embed_texts(chunks))
    return index
