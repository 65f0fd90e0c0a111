"""Late chunking: embed the document once, then pool each chunk's token embeddings.

Why: a chunk embedded alone loses what its document says around it ("it", "the company",
a heading three paragraphs up). Running the model over the whole document window first and
mean-pooling only the chunk's tokens afterwards keeps that context in every chunk vector, for
any boundary strategy, since chunks are exact character spans.

Documents longer than the model window are read in overlapping windows; every overlap is split
at its middle, so each token's embedding comes from the window where it sits farther from a cut.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from tqdm.auto import tqdm

from workbench.chunkers.base import Chunk
from workbench.chunkers.units import windows
from workbench.dataset import Document
from workbench.models.embed import Embedder

OVERLAP = 0.25  # share of a window repeated from the previous one, as context for its first tokens
GROUP_WINDOWS = 256  # windows run before their documents are pooled: bounds memory on big corpora


def plan_windows(n: int, size: int, overlap: int) -> list[tuple[int, int, int, int]]:
    """(start, end, own_start, own_end) windows over n tokens: at most `size` tokens each,
    neighbours sharing at least `overlap`, the last one full-sized and ending at n; the owned
    ranges split every overlap at its middle and tile [0, n). With overlap <= size // 2 only
    neighbours overlap, so each token is owned by the window where it is farthest from a cut."""
    if n == 0:
        return []
    spans = windows(n, size, overlap)
    spans[-1] = (max(0, n - size), n)
    cuts = [0, *((nxt[0] + cur[1]) // 2 for cur, nxt in zip(spans, spans[1:])), n]
    return [(s, e, cuts[k], cuts[k + 1]) for k, (s, e) in enumerate(spans)]


@dataclass(eq=False)
class DocTokens:
    """A document's content tokens, their character offsets and (once computed) embeddings."""

    ids: list[int]  # content tokens, without special tokens
    starts: np.ndarray  # char offsets of each token
    ends: np.ndarray
    vecs: np.ndarray | None = None  # (tokens, dim) contextual embeddings, filled by the passes


@dataclass(frozen=True, eq=False)
class _Window:
    """Tokens [start, end) of a document, read in one pass; it supplies tokens [own_start, own_end)."""

    doc: DocTokens
    start: int
    end: int
    own_start: int
    own_end: int


def _frame(tokenizer) -> tuple[list[int], list[int]]:
    """The special tokens the model expects before and after a text (e.g. [CLS] and [SEP])."""
    enc = tokenizer("a", return_special_tokens_mask=True)
    ids, special = enc["input_ids"], enc["special_tokens_mask"]
    first = special.index(0)
    last = len(special) - 1 - special[::-1].index(0)
    return ids[:first], ids[last + 1 :]


def _tokenize(text: str, tokenizer) -> DocTokens:
    """Content tokens of `text` (no special tokens) with their char offsets."""
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
    offsets = np.array(enc["offset_mapping"], dtype=np.int64).reshape(-1, 2)
    return DocTokens(enc["input_ids"], offsets[:, 0], np.maximum.accumulate(offsets[:, 1]))


def _run_windows(plan: list[_Window], frame: tuple[list[int], list[int]], embedder: Embedder) -> None:
    """Fill each document's token embeddings: one model pass per window, batched, similar
    lengths together to limit padding."""
    import torch

    module = embedder.model[0]  # the transformer: its output is the token embeddings
    pad = embedder.tokenizer.pad_token_id or 0
    prefix, suffix = frame
    plan = sorted(plan, key=lambda w: w.end - w.start)
    for b in range(0, len(plan), embedder.batch_size):
        batch = plan[b : b + embedder.batch_size]
        rows = [prefix + w.doc.ids[w.start : w.end] + suffix for w in batch]
        width = max(map(len, rows))
        ids = torch.tensor([r + [pad] * (width - len(r)) for r in rows])
        mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows])
        with torch.inference_mode():
            out = module({"input_ids": ids, "attention_mask": mask})["token_embeddings"].float().cpu().numpy()
        for w, emb in zip(batch, out, strict=True):
            lo = len(prefix) + w.own_start - w.start
            w.doc.vecs[w.own_start : w.own_end] = emb[lo : lo + w.own_end - w.own_start]


def _pool(doc: DocTokens, spans: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean embedding and count of the tokens overlapping each [start, end) span.

    By running sums taken only at the spans' ends: the tokens between consecutive ends are summed
    in one pass (np.add.reduceat), so a document is read once per call and no (tokens x dim)
    cumulative sum is built; a preview pools many variants from one cached document."""
    first = np.searchsorted(doc.ends, spans[:, 0], side="right")  # first token ending after start
    stop = np.maximum(np.searchsorted(doc.starts, spans[:, 1], side="left"), first)  # first starting at/after end
    count = stop - first
    n, dim = doc.vecs.shape
    points = np.unique(np.concatenate([first, stop, [0, n]]))  # strictly increasing, from 0 to n
    between = np.add.reduceat(doc.vecs, points[:-1], axis=0, dtype=np.float64) if n else np.zeros((0, dim))
    csum = np.concatenate([np.zeros((1, dim)), np.cumsum(between, axis=0)])  # sum of the tokens before each point
    sums = csum[np.searchsorted(points, stop)] - csum[np.searchsorted(points, first)]
    return sums / np.maximum(count, 1)[:, None], count


def window_size(embedder: Embedder) -> tuple[int, int]:
    """(content tokens per window, tokens shared with the previous window) for this model."""
    prefix, suffix = _frame(embedder.tokenizer)
    size = embedder.max_tokens - len(prefix) - len(suffix)
    return size, int(size * OVERLAP)


def token_embeddings(docs: Mapping[str, Document], embedder: Embedder) -> Iterator[tuple[str, DocTokens]]:
    """(doc id, tokens with their float32 contextual embeddings) of every document, in `docs`
    order: one model pass per window, GROUP_WINDOWS windows at a time. A document's embeddings
    are freed when the caller asks for the next one after its group, which bounds memory."""
    frame = _frame(embedder.tokenizer)
    size, overlap = window_size(embedder)
    groups: list[list[tuple[str, DocTokens, list]]] = [[]]  # documents whose windows run together
    n_windows = 0
    for doc_id, doc in docs.items():
        tokens = _tokenize(doc.text, embedder.tokenizer)
        plan = plan_windows(len(tokens.ids), size, overlap)
        if groups[-1] and n_windows + len(plan) > GROUP_WINDOWS:
            groups.append([])
            n_windows = 0
        groups[-1].append((doc_id, tokens, plan))
        n_windows += len(plan)

    for group in tqdm(groups, desc="token embeddings", unit="group", disable=not embedder.progress or len(groups) < 2):
        for _, tokens, _ in group:
            tokens.vecs = np.zeros((len(tokens.ids), embedder.dim), dtype=np.float32)
        _run_windows([_Window(t, *w) for _, t, plan in group for w in plan], frame, embedder)
        for doc_id, tokens, _ in group:
            yield doc_id, tokens
            tokens.vecs = None


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
        empty.extend(r for r, k in zip(rows, count) if k == 0)
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
    needed: dict[str, Document] = {}
    for row, c in enumerate(chunks):
        if c.doc_id not in docs:
            raise KeyError(f"chunk {row} belongs to document {c.doc_id!r}, which is not in `docs`")
        needed[c.doc_id] = docs[c.doc_id]
    return pooled_vectors(chunks, token_embeddings(needed, embedder), embedder)
