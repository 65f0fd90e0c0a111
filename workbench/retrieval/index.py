"""One FAISS index per chunking, saved next to its chunk table, and search over it.

An entry lives in `<root>/index/<chunking key>-<corpus fingerprint>-<model fingerprint>/`, so a
changed chunker, corpus or model can never be served from a stale entry. The chunking key leaves
the retriever out: a dense, a BM25 and a hybrid variant of one chunking share the entry, and the
BM25 index (workbench.retrieval.bm25), built the first time a variant needs it, sits in its `bm25/`
subfolder, and an approximate index (workbench.retrieval.ann), when one is asked for and the entry is
big enough, in an `ann-...` subfolder named by its parameters. The vectors (`index.faiss`) are made when
a variant first reads them: an entry a BM25 variant built first holds its chunks alone, and the first
dense or hybrid variant of that chunking embeds them and adds the file. The `pgvector` stage's tables
(workbench.retrieval.pgvector) hold the entry's vectors in PostgreSQL, named by the entry. With
`mmap=True` FAISS files are read memory-mapped: the vectors stay on disk and the page cache holds what
searches touch. Entries and subfolders are built in a temporary folder and renamed into place: an
interrupted build leaves nothing half-written. Files are FAISS's own format, Parquet, numpy arrays and
JSON (no pickle).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from workbench.chunkers import ChunkEnv, get_strategy
from workbench.core.chunk import Chunk
from workbench.core.io import CACHE_DIR, publish
from workbench.core.stages import get_stage
from workbench.core.tokens import TIKTOKEN_ENCODINGS, TiktokenTokenizer
from workbench.dataset import Dataset, Document, Hit, Question, RankedHits, Span
from workbench.models.base import Engine
from workbench.models.context import context_fingerprint, contextualize
from workbench.models.embed import Embedder
from workbench.models.llm import LLM, llm_fingerprint, llm_of
from workbench.models.rerank import Rerankers
from workbench.retrieval.ann import Ann, recall
from workbench.retrieval.bm25 import LexicalIndex
from workbench.retrieval.pgvector import PgIndex, PgVector
from workbench.variant import Variant

if TYPE_CHECKING:
    import faiss

_COLUMNS = ["doc_id", "start", "end", "heading", "embed_text", "parent_start", "parent_end", "context_text",
            "context"]


# Bump when the chunks or vectors an entry holds change for the same variant, corpus and model (how
# a chunk's embedded text is made, late pooling, the build itself): it then names new entries.
# tests/test_code_versions.py fails when that code changes and this stays.
BUILD_VERSION = 1
KEPT_CHARS = 1 << 26  # characters of chunks an estimate leaves for the builds (IndexStore.keep), at most


def needs(variant: Variant) -> set[str]:
    """The index resources beside FAISS that the variant's retrieval stages use ("bm25")."""
    return {need for name, _, _ in variant.stages for need in get_stage(name).needs}


def reads_vectors(variant: Variant) -> bool:
    """Whether retrieving for the variant reads its chunks' vectors (a dense or hybrid stage, pgvector's):
    a BM25 variant's entry is built without them, since nothing would search them."""
    return variant.embeds or "pgvector" in needs(variant)


def chunking_models(variant: Variant) -> list[str]:
    """The fingerprints of the LLMs that write the variant's chunks (the parameters its strategy's
    `models` names): they name its index entry and its scores beside the variant key."""
    return [llm_fingerprint(variant.kwargs[p]) for p in get_strategy(variant.strategy).models]


def embed_texts(chunks: Sequence[Chunk]) -> list[str]:
    return [c.embed_text if c.embed_text is not None else c.text for c in chunks]


def overlap_chars(chunks: Sequence[Chunk]) -> int:
    """Characters stored more than once because chunks overlap (sum of lengths - union length)."""
    total, union = 0, 0
    by_doc: dict[str, list[tuple[int, int]]] = {}
    for c in chunks:
        by_doc.setdefault(c.doc_id, []).append((c.start, c.end))
        total += c.end - c.start
    for spans in by_doc.values():
        reach = -1
        for s, e in sorted(spans):
            union += max(0, e - max(s, reach))
            reach = max(reach, e)
    return total - union


class ChunkIndex:
    """A variant's chunks, their returned spans and token sizes, the FAISS index over them and the
    resources its retrieval stages need (`lexical`: the BM25 index over the same chunks; `rerankers`). It
    searches densely and turns rankings into hits; the stages (workbench.retrieval.stages) decide
    what is ranked."""

    lexical: LexicalIndex | None = None  # attached by IndexStore.get for the stages that need "bm25"
    rerankers: Rerankers | None = None  # attached by IndexStore.get for the stages that need "rerankers"
    pgvector: PgIndex | None = None  # attached by IndexStore.get for the stages that need "pgvector"
    ann: Ann | None = None  # set by `approximate`: `index` is then that approximate index, `exact` the flat one

    def __init__(self, chunks: list[Chunk], index: faiss.Index | None, returned: pd.DataFrame,
                 cost: dict[str, Any]):
        self.chunks = chunks
        self.index = index
        self.returned_tokens = returned  # tiktoken sizes of what each chunk returns, per encoding
        self.cost = cost
        self._returned = [c.returned for c in chunks]
        # each row's returned span and its tiktoken sizes as columns, for `top_hits`
        sizes = {enc: returned[enc].to_numpy(np.int64) for enc in TIKTOKEN_ENCODINGS}
        self._columns = (np.array([s.doc_id for s in self._returned], dtype=object),
                         np.array([s.start for s in self._returned], dtype=np.int64),
                         np.array([s.end for s in self._returned], dtype=np.int64), sizes)
        # the same sizes, one {encoding: tokens} per row, shared by its hits (`hits`)
        self._tokens = [dict(zip(sizes, row, strict=True))
                        for row in zip(*(t.tolist() for t in sizes.values()), strict=True)]
        units: dict[Span, int] = {}
        self._unit = [units.setdefault(span, len(units)) for span in self._returned]  # row -> its distinct unit
        # every row returns a span of its own: nothing collapses, a ranking's first k rows are its hits (`top_hits`)
        self.distinct = len(units) == len(chunks)
        self._doc_rows: dict[str, np.ndarray] = {}
        for i, c in enumerate(chunks):
            self._doc_rows.setdefault(c.doc_id, []).append(i)  # type: ignore[arg-type]
        self._doc_rows = {doc: np.asarray(rows, dtype=np.int64) for doc, rows in self._doc_rows.items()}
        self.has_parents = any(c.parent_start is not None for c in chunks)  # several rows may return one span
        self.exact = index

    def approximate(self, index: faiss.Index, ann: Ann) -> None:
        """Search `index`, an approximate index over the same rows, instead of the exact one."""
        self.index, self.ann = index, ann

    def ann_recall(self, vectors: np.ndarray, k: int) -> float | None:
        """The share of the exact top-k chunks the approximate search finds for these query
        vectors, over the whole index (workbench.retrieval.ann.recall); None when search is exact."""
        return None if self.ann is None else recall(self.index, self.exact, vectors, k)

    @property
    def spans(self) -> list[Span]:
        """Distinct returned spans: the units a retriever can hand to the LLM."""
        return list(dict.fromkeys(self._returned))

    def rows_of(self, question: Question) -> np.ndarray:
        """The rows of the question's evidence documents, of every alternative (what document mode may
        rank), sorted."""
        parts = [self._doc_rows[d] for d in dict.fromkeys(a.doc_id for a in question.spans) if d in self._doc_rows]
        return np.unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)

    def hits(self, ranking: tuple[np.ndarray, np.ndarray], k: int) -> list[Hit]:
        """The first k distinct returned units of a ranking (several children of one parent
        return the parent once, at the rank of the best of them)."""
        scores, rows = ranking
        returned, tokens = self._returned, self._tokens
        hits: list[Hit] = []
        seen: set[int] = set()
        for s, i in zip(scores.tolist(), rows.tolist(), strict=True):
            if self._unit[i] in seen:
                continue
            seen.add(self._unit[i])
            hits.append(Hit(returned[i], s, i, tokens[i]))
            if len(hits) == k:
                break
        return hits

    def top_hits(self, rankings: Sequence[tuple[np.ndarray, np.ndarray]], k: int) -> RankedHits:
        """`hits` of every ranking at once, as columns, when nothing collapses (`distinct`)."""
        if not self.distinct:
            raise ValueError("top_hits: rows of this index share returned spans; take each ranking's `hits`")
        rows = np.concatenate([np.zeros(0, dtype=np.int64), *(r[:k] for _, r in rankings)]).astype(np.int64)
        scores = np.concatenate([np.zeros(0), *(s[:k] for s, _ in rankings)]).astype(np.float64)
        doc, start, end, sizes = self._columns
        return RankedHits(RankedHits.bounds_of([min(k, len(r)) for _, r in rankings]), doc[rows], start[rows],
                          end[rows], scores, rows, {enc: t[rows] for enc, t in sizes.items()})

    def dense(self, vectors: np.ndarray, depth: int | None,
              rows: Sequence[np.ndarray | None]) -> list[tuple[np.ndarray, np.ndarray]]:
        """(cosines, row ids) of the `depth` nearest chunks (None: all) for each vector, among its
        `rows` if not None: one batched search over the whole index when nothing restricts it and
        no parents can collapse, else one search per vector (as it has always been done, so a
        cosine never changes in its last bit between releases)."""
        if not self.has_parents and all(r is None for r in rows):
            n = self.index.ntotal
            scores, ids = self.index.search(vectors, n if depth is None else min(depth, n))
            if (ids >= 0).all():  # FAISS pads with -1 only past the end of the index
                return list(zip(scores, ids, strict=True))
            return [(s[i >= 0], i[i >= 0]) for s, i in zip(scores, ids, strict=True)]
        return [self._dense_one(v, depth, r) for v, r in zip(vectors, rows, strict=True)]

    def _dense_one(self, q: np.ndarray, depth: int | None, rows: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        limit = self.index.ntotal if rows is None else len(rows)
        if limit == 0:
            return np.zeros(0, dtype=np.float32), np.zeros(0, dtype=np.int64)
        import faiss  # FAISS loads when an index is searched or built: a warm sweep reads its scores back

        params = None
        if rows is not None:
            selector = faiss.IDSelectorBatch(rows)
            params = self.ann.params(selector) if self.ann else faiss.SearchParameters(sel=selector)
        scores, ids = self.index.search(q[None, :], limit if depth is None else min(depth, limit), params=params)
        keep = ids[0] >= 0
        return scores[0][keep], ids[0][keep]


class IndexStore:
    """A folder of per-variant index entries: `get` loads one, or builds and saves it; `mmap`: read
    FAISS files memory-mapped (see the module docstring); `pg`: the URL of the PostgreSQL the `pgvector`
    stage searches (None: the bundled server, run in `<root>/postgres`)."""

    def __init__(self, root: str | Path = CACHE_DIR, mmap: bool = False, engine: Engine | None = None,
                 pg: str | None = None):
        if not isinstance(mmap, bool):
            raise TypeError(f"mmap must be True or False, got {mmap!r}")
        self.root = Path(root)
        self.mmap = mmap
        self.engine = engine  # where its rerankers and LLMs compute what their caches lack (None: this process)
        self.pgvector = PgVector(pg, self.root / "postgres")  # connects (or starts) on the first search
        # loaded on first use, their scores cached under root
        self.rerankers = Rerankers(self.root, engine)
        self._llms: dict[str, LLM] = {}  # +context's LLMs by model spec, their generations cached under root
        self._kept: dict[str, tuple[list[Chunk], float]] = {}  # `keep`: chunks and seconds, by entry name

    def llm(self, variant: Variant) -> LLM | None:
        """The LLM that writes a +context variant's contexts (one per model spec, loaded on first generation)."""
        if variant.context is None:
            return None
        spec = dict(variant.context)["model"]
        if spec not in self._llms:
            self._llms[spec] = llm_of(spec, self.root, self.engine)
        return self._llms[spec]

    def generate(self, variants: Sequence[Variant], dataset: Dataset, embedder: Embedder,
                 stop: Callable[[], bool] | None = None) -> None:
        """With an engine, write for every variant without an entry what its LLMs write (the contexts of
        +context, an LLM strategy's chunks) before any is built: the builds then find them cached, so
        the workers load the LLM once and then the embedder, not each in turn for every variant (only one
        model's actors live at a time: see workbench.run.engine.RayEngine). Not for a strategy that embeds
        as it chunks (semantic), whose sentence vectors would count as no variant's texts_embedded."""
        if self.engine is None:
            return
        for v in variants:
            strategy = v.strategy_entry()
            if (v.context is not None or strategy.models) and not strategy.embeds and \
                    not self.built(v, dataset, embedder):
                try:
                    written_chunks(v.chunking, dataset, embedder, self.llm(v), self.root, self.engine, stop)
                except Exception as e:
                    e.add_note(f"while generating for variant {v.label}")
                    raise

    def keep(self, variant: Variant, dataset: Dataset, embedder: Embedder, chunks: list[Chunk], seconds: float
             ) -> bool:
        """Leave chunks an estimate made, in `seconds`, to the build of the variant's entry (`get` takes them,
        once), so that a sweep chunks once: only a strategy that neither embeds nor generates as it chunks
        (what the estimate cut is then exactly what the build would cut), and up to KEPT_CHARS characters in
        all. Whether they were kept."""
        strategy = variant.strategy_entry()
        chars = sum(len(c.text) for kept, _ in self._kept.values() for c in kept)
        if strategy.embeds or strategy.models or chars + sum(len(c.text) for c in chunks) > KEPT_CHARS:
            return False
        self._kept[self.path(variant, dataset, embedder).name] = chunks, seconds
        return True

    def path(self, variant: Variant, dataset: Dataset, embedder: Embedder) -> Path:
        """The entry of the variant's chunking (any retriever of it: see the module docstring), and of
        the LLMs that wrote its chunks when its strategy has some (`chunking_models`); a +context
        variant's names its LLM's files and prompt too (context_fingerprint)."""
        build = f"-b{BUILD_VERSION}" if BUILD_VERSION != 1 else ""  # version 1 names entries as they always were
        llms = "".join(f"-{fp}" for fp in chunking_models(variant))
        context = f"-c{context_fingerprint(dict(variant.context))}" if variant.context is not None else ""
        name = f"{variant.chunking_key}-{dataset.corpus_fingerprint}-{embedder.fingerprint}{llms}{context}{build}"
        return self.root / "index" / name

    def built(self, variant: Variant, dataset: Dataset, embedder: Embedder) -> bool:
        """Whether the variant's entry is complete: its meta.json, written last, is there (`publish`)."""
        return (self.path(variant, dataset, embedder) / "meta.json").exists()

    def ready(self, variant: Variant, dataset: Dataset, embedder: Embedder) -> bool:
        """Whether `get` will load the variant's entry as it is: built, with the vectors it reads (an entry a
        BM25 variant built first has none, and a dense variant of its chunking embeds them)."""
        vectors = self.path(variant, dataset, embedder) / "index.faiss"
        return self.built(variant, dataset, embedder) and (not reads_vectors(variant) or vectors.exists())

    def get(self, variant: Variant, dataset: Dataset, embedder: Embedder, ann: Ann | None = None,
            stop: Callable[[], bool] | None = None) -> ChunkIndex:
        """The variant's index with what its retrieval stages need, searched approximately when
        `ann` is given and applies to its chunk count (cost["index"] then names what searches it);
        cost["built"] says whether anything (the FAISS entry, the approximate or the BM25 index)
        was built rather than loaded. `stop`: asked between the build's generations (build_index)."""
        path = self.path(variant, dataset, embedder)
        vectors = reads_vectors(variant)
        if self.built(variant, dataset, embedder):
            index = self._load(path, dataset)
            if vectors and index.exact is None:  # built by a BM25 variant: the vectors are made now
                self._add_vectors(index, path, variant, dataset, embedder)
        else:
            index = build_index(variant.chunking, dataset, embedder, self.llm(variant), llm_cache_dir=self.root,
                                engine=self.engine, stop=stop, vectors=vectors, made=self._kept.pop(path.name, None))
            publish(path, lambda tmp: self._write(tmp, variant.chunking, index))
        if self.mmap and index.cost["built"] and index.exact is not None:  # the vectors just made leave RAM
            index.exact = index.index = self._read(path / "index.faiss")
        if ann is not None and index.exact is not None:
            self._approximate(index, path, ann)
        if "bm25" in needs(variant):
            folder = path / "bm25"
            if folder.exists():
                index.lexical = LexicalIndex.load(folder)
            else:
                index.lexical = LexicalIndex.build(embed_texts(index.chunks))  # what dense embeds, header included
                publish(folder, index.lexical.save)
                index.cost["built"] = True
        if "rerankers" in needs(variant):
            index.rerankers = self.rerankers
        if "pgvector" in needs(variant):
            index.pgvector = PgIndex(self.pgvector, path.name, index.exact)
        return index

    def _approximate(self, index: ChunkIndex, path: Path, ann: Ann) -> None:
        import faiss  # see ChunkIndex._dense_one

        n = index.exact.ntotal
        index.cost["index"] = ann.name(n)
        if not ann.applies(n):
            return
        file = path / ann.folder(n) / "index.faiss"
        if not file.exists():
            built = ann.build(index.exact.reconstruct_n(0, n))
            publish(file.parent, lambda tmp: faiss.write_index(built, str(tmp / file.name)))
            index.cost["built"] = True
        index.approximate(ann.prepare(self._read(file)), ann)

    @staticmethod
    def _add_vectors(index: ChunkIndex, path: Path, variant: Variant, dataset: Dataset, embedder: Embedder) -> None:
        """Embed the chunks of an entry built without vectors and add its FAISS file, written beside and
        renamed into place (another process adding the same file writes the same vectors)."""
        import faiss  # see ChunkIndex._dense_one

        before = embedder.stats.embedded
        index.exact = index.index = flat_index(chunk_vectors(variant, dataset, index.chunks, embedder))
        tmp = path / f".index.faiss.{os.getpid()}"
        faiss.write_index(index.exact, str(tmp))
        os.replace(tmp, path / "index.faiss")
        index.cost |= {"texts_embedded": embedder.stats.embedded - before, "built": True}

    def _read(self, file: Path) -> faiss.Index:
        import faiss  # see ChunkIndex._dense_one

        return faiss.read_index(str(file), faiss.IO_FLAG_MMAP_IFC if self.mmap else 0)

    @staticmethod
    def _write(tmp: Path, variant: Variant, built: ChunkIndex) -> None:
        import faiss  # see ChunkIndex._dense_one

        table = pd.DataFrame([{col: getattr(c, col) for col in _COLUMNS} for c in built.chunks], columns=_COLUMNS)
        table = pd.concat([table, built.returned_tokens], axis=1)
        table.to_parquet(tmp / "chunks.parquet", index=False)
        if built.exact is not None:
            faiss.write_index(built.exact, str(tmp / "index.faiss"))
        cost = {k: v for k, v in built.cost.items() if k != "built"}
        meta = {"variant": variant.spec(), "label": variant.label, **cost}
        (tmp / "meta.json").write_text(json.dumps(meta, indent=2))

    def stored_chunks(self, variant: Variant, dataset: Dataset, embedder: Embedder) -> list[Chunk] | None:
        """The chunks of the variant's entry, read from its chunk table alone (no FAISS file) when the entry
        is built, else None: what a build embedded, every field, without chunking again (the audit of a
        cold sweep's report chunked every variant a third time)."""
        if not self.built(variant, dataset, embedder):
            return None
        return _stored(pd.read_parquet(self.path(variant, dataset, embedder) / "chunks.parquet"), dataset)

    def _load(self, path: Path, dataset: Dataset) -> ChunkIndex:
        meta = json.loads((path / "meta.json").read_text())
        table = pd.read_parquet(path / "chunks.parquet")
        chunks = _stored(table, dataset)
        index = self._read(path / "index.faiss") if (path / "index.faiss").exists() else None
        cost = {k: v for k, v in meta.items() if k not in ("variant", "label", "texts_embedded")}
        returned = table[list(TIKTOKEN_ENCODINGS)].reset_index(drop=True)
        return ChunkIndex(chunks, index, returned, cost | {"texts_embedded": 0, "built": False})


def _stored(table: pd.DataFrame, dataset: Dataset) -> list[Chunk]:
    """The chunks of an entry's chunk table (`IndexStore._write`), their texts sliced from the documents."""
    if "context" not in table:  # an entry written before +context
        table["context"] = None
    docs = dataset.docs
    return [
        Chunk(
            r.doc_id, int(r.start), int(r.end), docs[r.doc_id].text[int(r.start) : int(r.end)], r.heading,
            None if pd.isna(r.embed_text) else r.embed_text,
            None if pd.isna(r.parent_start) else int(r.parent_start),
            None if pd.isna(r.parent_end) else int(r.parent_end),
            context_text=None if pd.isna(getattr(r, "context_text", None)) else r.context_text,  # older entries
            context=None if pd.isna(getattr(r, "context", None)) else r.context,
        )
        for r in table.itertuples(index=False)
    ]


def build_index(variant: Variant, dataset: Dataset, embedder: Embedder, llm: LLM | None = None,
                llm_cache_dir: str | Path | None = CACHE_DIR, engine: Engine | None = None,
                stop: Callable[[], bool] | None = None, vectors: bool = True,
                made: tuple[list[Chunk], float] | None = None) -> ChunkIndex:
    """The whole build of one variant: chunk, write the contexts of +context (by `llm`, default: the
    one its parameters name, caching in the default folder), embed (or late-embed), index, and count
    its cost. An LLM strategy's model caches its generations in `llm_cache_dir`. What every LLM of
    the build (the chunker's, +context's) generated is the index's cost, in one pair of columns:
    index_tokens_generated and index_llm_seconds (cached generations at what they cost when made, so
    the cost of the variant whatever was cached); an LLM strategy's index_llm_fallbacks counts its
    answers not used. `engine`: where the LLMs made here generate and a big corpus is chunked
    (chunk_corpus; None: this process). `stop` is asked between generations (its chunker's and the
    contexts'): once true, workbench.models.llm.Stopped is raised, what finished cached, nothing saved.
    vectors=False: the chunks are not embedded (for a BM25 variant: IndexStore.get). `made`: its chunks, cut
    before in that many seconds (IndexStore.keep), counted in the build's."""
    t0 = time.perf_counter() - (made[1] if made else 0.0)
    before = embedder.stats.embedded
    chunks, env = written_chunks(variant, dataset, embedder, llm, llm_cache_dir, engine, stop,
                                 made[0] if made else None)
    texts = embed_texts(chunks)
    index = flat_index(chunk_vectors(variant, dataset, chunks, embedder)) if vectors else None
    returned = returned_token_counts(chunks, dataset)
    cost = chunk_cost(chunks, dataset, returned) | {
        # chunks longer than the model window lose their tail (late chunking pools windows instead)
        "truncated_chunks": 0 if variant.late else embedder.count_truncated(texts),
        "texts_embedded": embedder.stats.embedded - before,
        "seconds": round(time.perf_counter() - t0, 3),
        "built": True,
    }
    if get_strategy(variant.strategy).models or variant.context is not None:
        cost |= {"index_tokens_generated": int(env.llm_cost["tokens_generated"]),
                 "index_llm_seconds": round(env.llm_cost["llm_seconds"], 3)}
    if get_strategy(variant.strategy).models:
        cost["index_llm_fallbacks"] = int(env.llm_cost["fallbacks"])
    return ChunkIndex(chunks, index, returned, cost)


def chunk_vectors(variant: Variant, dataset: Dataset, chunks: list[Chunk], embedder: Embedder) -> np.ndarray:
    """The vectors of a build's chunks: their embedded texts, or late chunking's pooled token vectors."""
    if variant.late:
        from workbench.models.late import late_vectors

        return late_vectors(dataset.docs, chunks, embedder)
    return embedder.encode(embed_texts(chunks), desc=f"chunks {variant.label}")


def written_chunks(variant: Variant, dataset: Dataset, embedder: Embedder, llm: LLM | None,
                   llm_cache_dir: str | Path | None, engine: Engine | None,
                   stop: Callable[[], bool] | None = None, chunks: list[Chunk] | None = None
                   ) -> tuple[list[Chunk], ChunkEnv]:
    """The chunks a build embeds (build_index's arguments): chunked (unless `chunks` were cut before), and
    with their contexts for +context; and the env that chunked them, whose llm_cost holds what every LLM of
    the build cost."""
    env = ChunkEnv(embed=lambda texts: embedder.encode(texts, desc="sentences"), model_tokenizer=embedder.tokenizer,
                   llm_cache_dir=llm_cache_dir, llm_engine=engine, stop=stop)
    if chunks is None:
        chunks = chunk_corpus(variant, dataset, env, engine)
    if not chunks:
        raise ValueError(f"variant {variant.label} produced no chunks on dataset {dataset.name!r}")
    if variant.context is not None:
        params = dict(variant.context)
        chunks, cost = contextualize(dataset.docs, chunks, llm or llm_of(params["model"], CACHE_DIR, engine),
                                     doc_tokens=params["doc_tokens"], max_tokens=params["max_tokens"], stop=stop)
        env.llm_cost.update(cost)  # Counter.update adds: to the chunker's, if it has an LLM too
    return chunks, env


def chunk_corpus(variant: Variant, dataset: Dataset, env: ChunkEnv, engine: Engine | None) -> list[Chunk]:
    """The variant's chunks of the corpus, in corpus order. On the engine when there is one and the corpus
    has more than its `chunk_chars` characters: batches of whole documents of about that many, each
    chunked by a worker with the driver's model tokenizer, so the chunks are a local run's, every field.
    In this process otherwise, and always for a strategy that needs a model (an LLM's, `models`;
    semantic's sentence vectors, `embeds`): what is expensive in those, generating or embedding, already
    runs on the engine through the driver's models, which cache it where a worker cannot."""
    strategy = variant.strategy_entry()
    if engine is None or strategy.models or strategy.embeds or dataset.n_chars <= engine.chunk_chars:
        return variant.chunk(dataset, env)
    batches: list[list[Document]] = [[]]
    size = 0
    for doc in dataset.documents:
        if size >= engine.chunk_chars:
            batches.append([])
            size = 0
        batches[-1].append(doc)
        size += len(doc.text)
    worker = ChunkEnv(embed=partial(_no_embedder, variant.strategy), model_tokenizer=env.model_tokenizer,
                      llm_cache_dir=None)
    parts = engine.apply(partial(variant.chunk_documents, strategy, env=worker), batches, f"chunking {variant.label}")
    return [c for part in parts for c in part]


def _no_embedder(strategy: str, texts: list[str]) -> np.ndarray:
    raise ValueError(f"strategy {strategy!r} embeds (ChunkEnv.embed) on a Ray worker, which has no embedder: "
                     "register it with embeds=True, so that it chunks in the driver")


def token_counts(encoding: str, dataset: Dataset, pieces: Sequence[tuple[str | None, Span]]) -> list[int]:
    """Tiktoken size of each piece: of its own text when it has one, else of its span of the
    document (TiktokenTokenizer.count_span: a chunk's text is always its span's slice)."""
    tok = TiktokenTokenizer(encoding)
    return [tok.count(text) if text is not None else tok.count_span(dataset.docs[s.doc_id].text, s.start, s.end)
            for text, s in pieces]


def chunk_cost(chunks: Sequence[Chunk], dataset: Dataset, returned: pd.DataFrame) -> dict[str, Any]:
    """What a chunking stores and embeds, whatever computes its vectors (build_index, preview).
    `returned` (returned_token_counts) already holds the size of every chunk that embeds and
    returns its own span, as most do: only the others are counted here."""
    own = np.array([c.embed_text is None and c.context_text is None and c.returned == c.span for c in chunks],
                   dtype=bool)
    others = [(c.embed_text, c.span) for c, o in zip(chunks, own, strict=True) if not o]
    return {
        "chunks": len(chunks),
        "chars": sum(c.end - c.start for c in chunks),
        "mean_chunk_chars": float(np.mean([c.end - c.start for c in chunks])),
        "min_chunk_chars": min((c.end - c.start for c in chunks), default=None),  # verdict.evidence_warning
        "tokens_embedded": int(returned["cl100k_base"].to_numpy()[own].sum())
        + sum(token_counts("cl100k_base", dataset, others)),
        "overlap_chars": overlap_chars(chunks),
    }


def flat_index(vectors: np.ndarray) -> faiss.Index:
    """Exact inner-product search; the vectors are L2-normalised, so scores are cosines."""
    import faiss  # see ChunkIndex._dense_one

    index = faiss.IndexFlatIP(vectors.shape[1])
    index.add(np.ascontiguousarray(vectors, dtype=np.float32))
    return index


def returned_token_counts(chunks: Sequence[Chunk], dataset: Dataset) -> pd.DataFrame:
    """Tiktoken sizes of what each chunk sends (its context_text, else its returned span: the parent, if
    any): the unit of context cost."""
    pieces = [(c.context_text, c.returned) for c in chunks]
    return pd.DataFrame({enc: token_counts(enc, dataset, pieces) for enc in TIKTOKEN_ENCODINGS})
