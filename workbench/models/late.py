"""Late chunking: embed the document once, then pool each chunk's token embeddings.

Why: a chunk embedded alone loses what its document says around it ("it", "the company",
a heading three paragraphs up). Running the model over the whole document window first and
mean-pooling only the chunk's tokens afterwards keeps that context in every chunk vector, for
any boundary strategy, since chunks are exact character spans. The token embeddings, in
overlapping windows for long documents, come from `Embedder.token_embeddings`; pooling is here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from workbench.core.chunk import Chunk
from workbench.dataset import Document
from workbench.models.embed import DocTokens, Embedder


def _pool(doc: DocTokens, spans: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean embedding and count of the tokens overlapping each [start, end) span.

    As one sparse product: a (spans x tokens) 0/1 matrix whose row i marks span i's tokens, times
    the token embeddings (float32, whatever the cache stores), so a document is read once per call
    and only each span's own tokens are summed; a preview pools many variants from one cached
    document (numpy's reduceat over the float16 rows took several times longer, bench/preview.md).
    scipy.sparse is imported here, at the first pooling: every sweep imports this module, few pool (a
    tenth of a second of a warm re-run's start)."""
    import scipy.sparse

    first = np.searchsorted(doc.ends, spans[:, 0], side="right")  # first token ending after start
    stop = np.maximum(np.searchsorted(doc.starts, spans[:, 1], side="left"), first)  # first starting at/after end
    count = stop - first
    n = len(doc.vecs)
    indptr = np.concatenate([[0], np.cumsum(count)])
    columns = np.arange(indptr[-1]) - np.repeat(indptr[:-1] - first, count)  # first..stop-1 of each row in turn
    marks = scipy.sparse.csr_matrix((np.ones(len(columns), np.float32), columns, indptr), shape=(len(spans), n))
    sums = marks @ np.asarray(doc.vecs, dtype=np.float32)
    return sums / np.maximum(count, 1)[:, None], count


def pooled_vectors(chunks: Sequence[Chunk], doc_tokens: Iterable[tuple[str, DocTokens]],
                   embedder: Embedder) -> np.ndarray:
    """L2-normalised float32 vectors, one row per chunk: the mean embedding of the tokens whose
    characters overlap the chunk's span, from `doc_tokens` ((doc id, tokens), each chunk's
    document among them). A chunk with no token (whitespace only) gets the ordinary embedding
    of its text instead of a NaN."""
    rows_of: dict[str, list[int]] = {}
    for row, c in enumerate(chunks):
        rows_of.setdefault(c.doc_id, []).append(row)
    parts: list[tuple[list[int], np.ndarray]] = []
    empty: list[int] = []
    for doc_id, tokens in doc_tokens:
        rows = rows_of.pop(doc_id, None)
        if rows is None:
            continue
        spans = np.array([(chunks[r].start, chunks[r].end) for r in rows], dtype=np.int64).reshape(-1, 2)
        vecs, count = _pool(tokens, spans)
        parts.append((rows, vecs))
        empty.extend(r for r, k in zip(rows, count, strict=True) if k == 0)
    if rows_of:
        raise KeyError(f"no token embeddings for document(s) {sorted(rows_of)[:5]} of the chunks")
    dim = parts[0][1].shape[1] if parts else embedder.dim  # from the tokens: a cached pass needs no model
    out = np.zeros((len(chunks), dim), dtype=np.float32)
    for rows, vecs in parts:
        out[rows] = vecs
    if empty:
        out[empty] = embedder.encode([chunks[r].text for r in empty])
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return (out / np.maximum(norms, 1e-12)).astype(np.float32)


def late_vectors(docs: Mapping[str, Document], chunks: Sequence[Chunk], embedder: Embedder) -> np.ndarray:
    """L2-normalised float32 late-chunking vectors, one row per chunk (see `pooled_vectors`),
    from one pass over the chunks' documents.

    Special tokens ([CLS], [SEP]) give each window its usual frame but are not pooled.
    `embed_text` is ignored: the document is the context."""
    needed: dict[str, str] = {}
    for row, c in enumerate(chunks):
        if c.doc_id not in docs:
            raise KeyError(f"chunk {row} belongs to document {c.doc_id!r}, which is not in `docs`")
        needed[c.doc_id] = docs[c.doc_id].text
    return pooled_vectors(chunks, embedder.token_embeddings(needed), embedder)
