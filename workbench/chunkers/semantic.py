"""Semantic chunking (Kamradt; LlamaIndex's SemanticSplitterNodeParser): cut where meaning shifts.

Each sentence is embedded together with `buffer_size` neighbours on each side; a chunk ends
where the cosine distance between adjacent groups exceeds the `breakpoint_percentile`-th
percentile of all such distances. Breakpoints match LlamaIndex exactly for the same sentences,
embeddings, buffer and percentile (tests/test_chunk_semantic.py proves it). Group texts depend
only on the sentences and the buffer, so every percentile reuses the same cached embeddings.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np

from workbench.chunkers.base import Chunk, ChunkEnv, make_chunk
from workbench.chunkers.fixed import TOKENIZER
from workbench.chunkers.registry import Param, strategy
from workbench.chunkers.sentence import Span, pack, sentence_spans
from workbench.dataset import Document


def group_texts(text: str, sentences: list[Span], buffer_size: int) -> list[str]:
    """LlamaIndex's combined sentences: each sentence with `buffer_size` neighbours per side,
    as a concatenation of sentence strings; like its punkt splitter, a sentence string runs up
    to the next sentence's start (trailing whitespace included), so a group is a plain slice."""
    n = len(sentences)
    piece_end = [s for s, _ in sentences[1:]] + [len(text)]
    return [text[sentences[max(0, i - buffer_size)][0] : piece_end[min(n - 1, i + buffer_size)]] for i in range(n)]


def breakpoints(vectors: np.ndarray, percentile: float) -> list[int]:
    """Indices i where the group after sentence i starts a new chunk (as LlamaIndex: cosine
    distance > numpy percentile of all adjacent distances)."""
    if len(vectors) < 2:
        return []
    v = np.asarray(vectors, dtype=np.float64)
    # the same float operations as LlamaIndex, pair by pair, so near-ties break the same way
    distances = [1 - np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)) for a, b in itertools.pairwise(v)]
    threshold = np.percentile(distances, percentile)
    return [i for i, d in enumerate(distances) if d > threshold]


def _merge_small(text: str, groups: list[Span], min_size: int, length: Callable[[str], int]) -> list[Span]:
    """A chunk smaller than `min_size` absorbs the next one (the last one joins its predecessor)."""
    merged: list[Span] = []
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
    text: str, groups: list[Span], sentences: list[Span], max_size: int, tokenizer: str, env: ChunkEnv
) -> list[Span]:
    """A chunk over `max_size` tokens is re-packed by sentences (over-long sentences cut to size)."""
    length = env.length_fn("tokens", tokenizer)
    out: list[Span] = []
    for a, b in groups:
        if length(text[a:b]) <= max_size:
            out.append((a, b))
        else:
            out += pack(text, [s for s in sentences if a <= s[0] < b], max_size, 0, "tokens", tokenizer, env)
    return out


def _check(p: dict[str, Any]) -> None:
    if p["min_size"] and p["max_size"] and p["min_size"] > p["max_size"]:
        raise ValueError(f"parameter 'min_size' must be <= max_size = {p['max_size']}, got {p['min_size']}")


@strategy(
    "semantic",
    "Cut between sentences where the embedding distance of adjacent sentence groups exceeds the "
    "`breakpoint_percentile`-th percentile; then merge chunks under `min_size` and split those "
    "over `max_size` tokens (0 = no limit).",
    {
        "breakpoint_percentile": Param(
            95.0, "percentile of adjacent distances that is a breakpoint", 0, 100, label=True
        ),
        "buffer_size": Param(
            1, "neighbouring sentences embedded with each sentence, per side", lo=0, label=True, slider_hi=5
        ),
        "min_size": Param(0, "merge chunks under this many tokens into the next (0 = off)", lo=0),
        "max_size": Param(0, "split chunks over this many tokens, by sentences (0 = off)", lo=0),
        "tokenizer": TOKENIZER,
    },
    check=_check,
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
) -> list[Chunk]:
    if env.embed is None:
        raise ValueError("semantic: needs an embedding function (ChunkEnv.embed)")
    text = doc.text
    sentences = sentence_spans(text)
    if not sentences:
        return []
    cuts = breakpoints(env.embed(group_texts(text, sentences, buffer_size)), breakpoint_percentile)
    bounds = [0, *(i + 1 for i in cuts), len(sentences)]
    groups = [(sentences[a][0], sentences[b - 1][1]) for a, b in itertools.pairwise(bounds)]
    if min_size:
        groups = _merge_small(text, groups, min_size, env.length_fn("tokens", tokenizer))
    if max_size:
        groups = _split_large(text, groups, sentences, max_size, tokenizer, env)
    return [make_chunk(doc, a, b) for a, b in groups]
