"""Semantic chunking (Kamradt; LlamaIndex's SemanticSplitterNodeParser): cut where meaning shifts.

Each sentence is embedded together with `buffer_size` neighbours on each side; a chunk ends
where the cosine distance between adjacent groups exceeds the `breakpoint_percentile`-th
percentile of all such distances. Group texts depend only on the sentences and the buffer, so
every percentile reuses the same cached embeddings, and `cut_from_vectors` re-cuts from cached vectors.

Equal to LlamaIndex: with `sentences="llamaindex"` (and min_size = max_size = 0) the chunks are
those of `SemanticSplitterNodeParser(embed_model, buffer_size, breakpoint_percentile_threshold)`
with its default sentence splitter and the same embedding model: the same count, and each of
our chunk texts is its node text with the leading and trailing whitespace removed (LlamaIndex's
nodes tile the whole document, so they carry the whitespace between chunks; only the first can
have leading whitespace). tests/chunkers/test_chunk_semantic.py checks it on real documents. With the
default `sentences="lines+punkt"` every line break also ends a sentence, so headings, list
items and table rows are sentences of their own: the breakpoint rule is LlamaIndex's, the
sentences are not. Exception: an empty or whitespace-only document gives no chunk here and one
empty node (text "") there.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from workbench.chunkers.base import ChunkEnv
from workbench.chunkers.registry import strategy
from workbench.chunkers.sentence import SENTENCE_SPLITTERS, pack, sentences_of
from workbench.chunkers.units import TOKENIZER
from workbench.core.chunk import Bounds, Chunk, make_chunk
from workbench.core.params import Param
from workbench.dataset import Document


def group_texts(text: str, sentences: list[Bounds], buffer_size: int) -> list[str]:
    """LlamaIndex's combined sentences: each sentence with `buffer_size` neighbours per side,
    as a concatenation of sentence strings; like its punkt splitter, a sentence string runs up
    to the next sentence's start (trailing whitespace included) and the first one from the start
    of the text (leading whitespace included), so a group is a plain slice."""
    n = len(sentences)
    piece_start = [0] + [s for s, _ in sentences[1:]]
    piece_end = piece_start[1:] + [len(text)]
    return [text[piece_start[max(0, i - buffer_size)] : piece_end[min(n - 1, i + buffer_size)]] for i in range(n)]


def distances(vectors: np.ndarray) -> list[float]:
    """Cosine distance between each pair of adjacent group vectors, computed with LlamaIndex's
    float operations pair by pair, so near-ties break the same way."""
    v = np.asarray(vectors, dtype=np.float64)
    return [float(1 - np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b))) for a, b in itertools.pairwise(v)]


def _above(dists: list[float], percentile: float) -> tuple[list[int], float | None]:
    """Indices of the distances above their `percentile`-th numpy percentile, and that threshold."""
    if not dists:
        return [], None
    threshold = float(np.percentile(dists, percentile))
    return [i for i, d in enumerate(dists) if d > threshold], threshold


def breakpoints(vectors: np.ndarray, percentile: float) -> list[int]:
    """Indices i where the group after sentence i starts a new chunk (as LlamaIndex: cosine
    distance > numpy percentile of all adjacent distances)."""
    return _above(distances(vectors), percentile)[0]


def _merge_small(text: str, groups: list[Bounds], min_size: int, length: Callable[[str], int]) -> list[Bounds]:
    """A chunk smaller than `min_size` absorbs the next one (the last one joins its predecessor)."""
    merged: list[Bounds] = []
    for g in groups:
        if merged and length(text[merged[-1][0] : merged[-1][1]]) < min_size:
            merged[-1] = (merged[-1][0], g[1])
        else:
            merged.append(g)
    if len(merged) > 1 and length(text[merged[-1][0] : merged[-1][1]]) < min_size:
        last = merged.pop()
        merged[-1] = (merged[-1][0], last[1])
    return merged


def _split_large(
    text: str, groups: list[Bounds], sentences: list[Bounds], max_size: int, tokenizer: str, env: ChunkEnv
) -> list[Bounds]:
    """A chunk over `max_size` tokens is re-packed by sentences (over-long sentences cut to size)."""
    length = env.length_fn("tokens", tokenizer)
    out: list[Bounds] = []
    for a, b in groups:
        if length(text[a:b]) <= max_size:
            out.append((a, b))
        else:
            out += pack(text, [s for s in sentences if a <= s[0] < b], max_size, 0, "tokens", tokenizer, env)
    return out


@dataclass(frozen=True)
class SemanticCut:
    """Chunk spans of one document, with what decided them (for plots and teaching)."""

    spans: list[Bounds]  # character spans of the chunks, after min/max size
    distances: list[float]  # cosine distance between group i and group i + 1
    threshold: float | None  # the breakpoint_percentile-th percentile of `distances` (None: < 2 groups)
    breakpoints: list[int]  # indices i with distances[i] > threshold: a chunk ends after sentence i


def cut_from_vectors(
    text: str,
    sentences: list[Bounds],
    vectors: np.ndarray,
    breakpoint_percentile: float,
    min_size: int,
    max_size: int,
    tokenizer: str,
    env: ChunkEnv,
) -> SemanticCut:
    """Cut `text` given its sentence spans and the vectors of their `group_texts` (one per
    sentence): pure and embedding-free, so a widget can re-cut at any percentile or size limit
    from cached vectors. `min_size`, `max_size` are in `tokenizer` tokens (0 = off)."""
    if len(vectors) != len(sentences):
        raise ValueError(f"cut_from_vectors: {len(vectors)} group vectors for {len(sentences)} sentences")
    dists = distances(vectors)
    cuts, threshold = _above(dists, breakpoint_percentile)
    bounds = [0, *(i + 1 for i in cuts), len(sentences)]
    groups = [(sentences[a][0], sentences[b - 1][1]) for a, b in itertools.pairwise(bounds)]
    if min_size:
        groups = _merge_small(text, groups, min_size, env.length_fn("tokens", tokenizer))
    if max_size:
        groups = _split_large(text, groups, sentences, max_size, tokenizer, env)
    return SemanticCut(groups, dists, threshold, cuts)


def _check(p: dict[str, Any]) -> None:
    if p["min_size"] and p["max_size"] and p["min_size"] > p["max_size"]:
        raise ValueError(f"parameter 'min_size' must be <= max_size = {p['max_size']}, got {p['min_size']}")


@strategy(
    "semantic",
    "Cut between sentences where the embedding distance of adjacent sentence groups exceeds the "
    "`breakpoint_percentile`-th percentile; then merge chunks under `min_size` and split those "
    'over `max_size` tokens (0 = no limit). `sentences="llamaindex"` splits sentences as '
    "LlamaIndex does, giving SemanticSplitterNodeParser's chunks.",
    {
        "breakpoint_percentile": Param(
            95.0, "percentile of adjacent distances that is a breakpoint", 0, 100, label=True
        ),
        "buffer_size": Param(
            1, "neighbouring sentences embedded with each sentence, per side", lo=0, label=True, slider_hi=5,
            unit="sentences",
        ),
        "min_size": Param(0, "merge chunks under this many tokens into the next (0 = off)", lo=0, unit="tokens"),
        "max_size": Param(0, "split chunks over this many tokens, by sentences (0 = off)", lo=0, unit="tokens"),
        "tokenizer": TOKENIZER,
        "sentences": Param(
            "lines+punkt",
            "sentence splitter: lines+punkt (every line break ends one) or llamaindex (LlamaIndex's default)",
            choices=tuple(SENTENCE_SPLITTERS),
        ),
    },
    check=_check,
    embeds=True,
)
def semantic(
    doc: Document,
    env: ChunkEnv,
    *,
    breakpoint_percentile: float,
    buffer_size: int,
    min_size: int,
    max_size: int,
    tokenizer: str,
    sentences: str,
) -> list[Chunk]:
    if env.embed is None:
        raise ValueError("semantic: needs an embedding function (ChunkEnv.embed)")
    text = doc.text
    spans = sentences_of(text, sentences)
    if not spans:
        return []
    vectors = env.embed(group_texts(text, spans, buffer_size))
    result = cut_from_vectors(text, spans, vectors, breakpoint_percentile, min_size, max_size, tokenizer, env)
    return [make_chunk(doc, a, b) for a, b in result.spans]
