"""One FAISS index per chunking, saved next to its chunk table, and search over it.

An entry lives in `<root>/index/<chunking key>-<corpus fingerprint>-<model fingerprint>/`, so a
changed chunker, corpus or model can never be served from a stale entry. The chunking key leaves
the retriever out: a dense, a BM25 and a hybrid variant of one chunking share the entry, and the
BM25 index (workbench.retrieval.bm25), built the first time a variant needs it, sits in its `bm25/`
subfolder. Entries and subfolders are built in a temporary folder and renamed into place: an
interrupted build leaves nothing half-written. Files are FAISS's own format, Parquet, numpy
arrays and JSON (no pickle).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import faiss
import numpy as np
import pandas as pd

from workbench.chunkers import Chunk, ChunkEnv
from workbench.dataset import Dataset, Hit, Question, Span
from workbench.io import CACHE_DIR, publish
from workbench.models.embed import Embedder
from workbench.retrieval.bm25 import LexicalIndex, rrf
from workbench.tokens import TIKTOKEN_ENCODINGS, TiktokenTokenizer
from workbench.variant import DEFAULT_RRF_K, Variant

_COLUMNS = ["doc_id", "start", "end", "heading", "embed_text", "parent_start", "parent_end"]


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
    """A variant's chunks, their returned spans and token sizes, the FAISS index over them and,
    for the bm25 and hybrid retrievers, the BM25 index over the same chunks."""

    retriever = "dense"  # until `retrieving` says otherwise
    rrf_k = DEFAULT_RRF_K
    lexical: LexicalIndex | None = None

    def __init__(self, chunks: list[Chunk], index: faiss.Index, returned: pd.DataFrame, cost: dict[str, Any]):
        self.chunks = chunks
        self.index = index
        self.returned_tokens = returned  # tiktoken sizes of what each chunk returns, per encoding
        # tiktoken sizes of what each chunk returns, one {encoding: tokens} per row, shared by its hits
        self._tokens = [dict(zip(TIKTOKEN_ENCODINGS, map(int, row), strict=True))
                        for row in returned[list(TIKTOKEN_ENCODINGS)].itertuples(index=False)]
        self.cost = cost
        self._returned = [c.returned for c in chunks]
        self._doc_rows: dict[str, list[int]] = {}
        for i, c in enumerate(chunks):
            self._doc_rows.setdefault(c.doc_id, []).append(i)
        self._has_parents = any(c.parent_start is not None for c in chunks)

    def retrieving(self, retriever: str, rrf_k: int, lexical: LexicalIndex) -> ChunkIndex:
        """Rank with `retriever` ("bm25" or "hybrid", fused with constant rrf_k) from now on."""
        self.retriever, self.rrf_k, self.lexical = retriever, rrf_k, lexical
        return self

    @property
    def spans(self) -> list[Span]:
        """Distinct returned spans: the units a retriever can hand to the LLM."""
        return list(dict.fromkeys(self._returned))

    def _hits(self, scores: np.ndarray, ids: np.ndarray, k: int) -> list[Hit]:
        hits: list[Hit] = []
        seen: set[Span] = set()
        for s, i in zip(scores, ids, strict=True):
            if i < 0:
                continue
            span = self._returned[i]
            if span in seen:  # several children of one parent: return the parent once
                continue
            seen.add(span)
            hits.append(Hit(span, float(s), int(i), self._tokens[i]))
            if len(hits) == k:
                break
        return hits

    def _dense(self, q: np.ndarray, depth: int, rows: list[int] | None) -> tuple[np.ndarray, np.ndarray]:
        """(cosines, row ids) of the `depth` nearest chunks, among `rows` if given."""
        params = None if rows is None else faiss.SearchParameters(sel=faiss.IDSelectorBatch(np.asarray(rows, dtype=np.int64)))
        scores, ids = self.index.search(q[None, :], depth, params=params)
        return scores[0], ids[0]

    def _search_one(self, q: np.ndarray, k: int, rows: list[int] | None) -> list[Hit]:
        """Top-k distinct returned units; searches deeper while parents collapse duplicates."""
        limit = self.index.ntotal if rows is None else len(rows)
        depth = min(limit, k * 4 if self._has_parents else k)
        while True:
            hits = self._hits(*self._dense(q, depth, rows), k)
            if len(hits) == k or depth >= limit:
                return hits
            depth = min(limit, depth * 4)

    def _lexical_ranking(self, question: str, q: np.ndarray, rows: list[int] | None) -> tuple[np.ndarray, np.ndarray]:
        """The whole (scores, row ids) ranking of bm25, or for hybrid the RRF of the whole dense
        ranking and the bm25 one (chunks sharing no token with the question rank by dense alone)."""
        lexical = self.lexical.ranking(question, rows)
        if self.retriever == "bm25":
            return lexical
        _, dense = self._dense(q, self.index.ntotal if rows is None else len(rows), rows)
        return rrf([dense[dense >= 0], lexical[1]], self.rrf_k)

    def search(self, qvecs: np.ndarray, questions: Sequence[Question], k: int, mode: str = "corpus") -> list[list[Hit]]:
        """Rankings for every question by this index's retriever: the whole corpus, or only its
        evidence documents. Every retriever ranks chunks and returns their (parent) spans once."""
        if self.retriever == "dense" and mode == "corpus" and not self._has_parents:
            scores, ids = self.index.search(qvecs, min(k, self.index.ntotal))
            return [self._hits(s, i, k) for s, i in zip(scores, ids, strict=True)]
        out = []
        for q, vec in zip(questions, qvecs, strict=True):
            rows = None
            if mode == "document":
                rows = sorted({r for a in q.answers for r in self._doc_rows.get(a.doc_id, [])})
            if rows == []:
                out.append([])
            elif self.retriever == "dense":
                out.append(self._search_one(vec, k, rows))
            else:
                out.append(self._hits(*self._lexical_ranking(q.question, vec, rows), k))
        return out


class IndexStore:
    """A folder of per-variant index entries: `get` loads one, or builds and saves it."""

    def __init__(self, root: str | Path = CACHE_DIR):
        self.root = Path(root)

    def path(self, variant: Variant, dataset: Dataset, embedder: Embedder) -> Path:
        """The entry of the variant's chunking (any retriever of it: see the module docstring)."""
        return self.root / "index" / f"{variant.chunking_key}-{dataset.corpus_fingerprint}-{embedder.fingerprint}"

    def get(self, variant: Variant, dataset: Dataset, embedder: Embedder) -> ChunkIndex:
        """The variant's index, searching with its retriever; cost["built"] says whether anything
        (the FAISS entry or the BM25 index) was built rather than loaded."""
        path = self.path(variant, dataset, embedder)
        if (path / "meta.json").exists():
            index = self._load(path, dataset)
        else:
            index = build_index(variant.chunking, dataset, embedder)
            publish(path, lambda tmp: self._write(tmp, variant.chunking, index))
        if variant.retriever == "dense":
            return index
        folder = path / "bm25"
        if folder.exists():
            lexical = LexicalIndex.load(folder)
        else:
            lexical = LexicalIndex.build(embed_texts(index.chunks))  # what dense embeds, header included
            publish(folder, lexical.save)
            index.cost["built"] = True
        return index.retrieving(variant.retriever, variant.rrf_k, lexical)

    @staticmethod
    def _write(tmp: Path, variant: Variant, built: ChunkIndex) -> None:
        table = pd.DataFrame([{col: getattr(c, col) for col in _COLUMNS} for c in built.chunks], columns=_COLUMNS)
        table = pd.concat([table, built.returned_tokens], axis=1)
        table.to_parquet(tmp / "chunks.parquet", index=False)
        faiss.write_index(built.index, str(tmp / "index.faiss"))
        cost = {k: v for k, v in built.cost.items() if k != "built"}
        meta = {"variant": variant.spec(), "label": variant.label, **cost}
        (tmp / "meta.json").write_text(json.dumps(meta, indent=2))

    def _load(self, path: Path, dataset: Dataset) -> ChunkIndex:
        meta = json.loads((path / "meta.json").read_text())
        table = pd.read_parquet(path / "chunks.parquet")
        docs = dataset.docs
        chunks = [
            Chunk(
                r.doc_id, int(r.start), int(r.end), docs[r.doc_id].text[int(r.start) : int(r.end)], r.heading,
                None if pd.isna(r.embed_text) else r.embed_text,
                None if pd.isna(r.parent_start) else int(r.parent_start),
                None if pd.isna(r.parent_end) else int(r.parent_end),
            )
            for r in table.itertuples(index=False)
        ]
        index = faiss.read_index(str(path / "index.faiss"))
        cost = {k: v for k, v in meta.items() if k not in ("variant", "label", "texts_embedded")}
        returned = table[list(TIKTOKEN_ENCODINGS)].reset_index(drop=True)
        return ChunkIndex(chunks, index, returned, cost | {"texts_embedded": 0, "built": False})


def build_index(variant: Variant, dataset: Dataset, embedder: Embedder) -> ChunkIndex:
    """The whole build of one variant: chunk, embed (or late-embed), index, and count its cost."""
    t0 = time.perf_counter()
    before = embedder.stats.embedded
    env = ChunkEnv(embed=lambda texts: embedder.encode(texts, desc="sentences"), model_tokenizer=embedder.tokenizer)
    chunks = variant.chunk(dataset, env)
    if not chunks:
        raise ValueError(f"variant {variant.label} produced no chunks on dataset {dataset.name!r}")
    texts = embed_texts(chunks)
    if variant.late:
        from workbench.models.late import late_vectors

        vectors = late_vectors(dataset.docs, chunks, embedder)
    else:
        vectors = embedder.encode(texts, desc=f"chunks {variant.label}")
    cost = chunk_cost(chunks) | {
        # chunks longer than the model window lose their tail (late chunking pools windows instead)
        "truncated_chunks": 0 if variant.late else embedder.count_truncated(texts),
        "texts_embedded": embedder.stats.embedded - before,
        "seconds": round(time.perf_counter() - t0, 3),
        "built": True,
    }
    return ChunkIndex(chunks, flat_index(vectors), returned_token_counts(chunks, dataset), cost)


def chunk_cost(chunks: Sequence[Chunk]) -> dict[str, Any]:
    """What a chunking stores and embeds, whatever computes its vectors (build_index, preview)."""
    return {
        "chunks": len(chunks),
        "chars": sum(c.end - c.start for c in chunks),
        "mean_chunk_chars": float(np.mean([c.end - c.start for c in chunks])),
        "tokens_embedded": sum(TiktokenTokenizer("cl100k_base").count_many(embed_texts(chunks))),
        "overlap_chars": overlap_chars(chunks),
    }


def flat_index(vectors: np.ndarray) -> faiss.Index:
    """Exact inner-product search; the vectors are L2-normalised, so scores are cosines."""
    index = faiss.IndexFlatIP(vectors.shape[1])
    index.add(np.ascontiguousarray(vectors, dtype=np.float32))
    return index


def returned_token_counts(chunks: Sequence[Chunk], dataset: Dataset) -> pd.DataFrame:
    """Tiktoken sizes of what each chunk returns (its parent, if any): the unit of context cost."""
    texts = [dataset.docs[s.doc_id].text[s.start : s.end] for s in (c.returned for c in chunks)]
    return pd.DataFrame({enc: TiktokenTokenizer(enc).count_many(texts) for enc in TIKTOKEN_ENCODINGS})
