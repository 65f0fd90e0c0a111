"""The `auto_merge` stage: LlamaIndex's AutoMergingRetriever over a chunking whose chunks nest
(the `auto_merging` strategy's levels): the leaves are ranked, and a parent replaces its
retrieved children when more than `ratio` of its children are among them, level by level.

The hierarchy is read from the spans: a chunk's parent is the smallest chunk of its document that
contains it, its siblings the other children of that parent in document order (LlamaIndex's
prev/next links). The merging is LlamaIndex's, step for step (tests/retrieval/test_automerge.py
checks it against AutoMergingRetriever): until nothing changes, first fill in a node lying between
two consecutive results (next of one == prev of the other, scored their mean), then replace the
children of each parent over the ratio by the parent, scored the mean of those children; last,
sort by score, best first (ties kept in order), each node once. A chunking without nesting passes
through, cut to `leaves`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from weakref import WeakKeyDictionary

import numpy as np

from workbench.core.chunk import Chunk
from workbench.core.params import Param
from workbench.core.stages import Index, Queries, Ranking, stage


@dataclass(frozen=True)
class Tree:
    """Per chunk row: its parent row (-1 for a top one), its children and its siblings around it."""

    parent: tuple[int, ...]
    children: tuple[tuple[int, ...], ...]
    prev: tuple[int, ...]
    next: tuple[int, ...]

    @property
    def leaves(self) -> np.ndarray:
        return np.array([i for i, c in enumerate(self.children) if not c], dtype=np.int64)


def tree(chunks: Sequence[Chunk]) -> Tree:
    """The containment tree of the chunk rows (spans of one document either nest or are apart, as
    the auto_merging strategy makes them; among equal spans, the first row is the parent)."""
    n = len(chunks)
    parent = [-1] * n
    order = sorted(range(n), key=lambda i: (chunks[i].doc_id, chunks[i].start, -chunks[i].end, i))
    stack: list[int] = []
    for i in order:
        c = chunks[i]
        while stack and not (chunks[stack[-1]].doc_id == c.doc_id and c.end <= chunks[stack[-1]].end):
            stack.pop()
        parent[i] = stack[-1] if stack else -1
        stack.append(i)
    kids: list[list[int]] = [[] for _ in range(n)]
    tops: dict[str, list[int]] = {}
    for i in order:
        (kids[parent[i]] if parent[i] >= 0 else tops.setdefault(chunks[i].doc_id, [])).append(i)
    prev, nxt = [-1] * n, [-1] * n
    for group in [*kids, *tops.values()]:
        for a, b in zip(group, group[1:], strict=False):
            nxt[a], prev[b] = b, a
    return Tree(tuple(parent), tuple(map(tuple, kids)), tuple(prev), tuple(nxt))


def merge(nodes: list[tuple[int, float]], t: Tree, ratio: float) -> list[tuple[int, float]]:
    """AutoMergingRetriever._retrieve after its vector search: `nodes` are (row, score) in the
    order retrieved; returns the merged (row, score), best first."""
    changed = True
    while changed:
        nodes, filled = _fill_in(nodes, t)
        nodes, merged = _merge_parents(nodes, t, ratio)
        changed = filled or merged
    best: dict[int, float] = {}  # a node filled in twice is returned once, where it ranks first (as retrieve() does)
    for row, score in sorted(nodes, key=lambda n: -n[1]):
        best.setdefault(row, score)
    return list(best.items())


def _fill_in(nodes: list[tuple[int, float]], t: Tree) -> tuple[list[tuple[int, float]], bool]:
    out, changed = [], False
    for k, (row, score) in enumerate(nodes):
        out.append((row, score))
        if k + 1 < len(nodes) and t.next[row] >= 0 and t.next[row] == t.prev[nodes[k + 1][0]]:
            out.append((t.next[row], (score + nodes[k + 1][1]) / 2))
            changed = True
    return out, changed


def _merge_parents(nodes: list[tuple[int, float]], t: Tree, ratio: float) -> tuple[list[tuple[int, float]], bool]:
    retrieved: dict[int, list[tuple[int, float]]] = {}  # parent -> its children among the nodes, in order
    for row, score in nodes:
        if t.parent[row] >= 0:
            retrieved.setdefault(t.parent[row], []).append((row, score))
    drop: set[int] = set()
    added: list[tuple[int, float]] = []
    for p, kids in retrieved.items():
        if len(kids) / len(t.children[p]) > ratio:
            drop.update(row for row, _ in kids)
            added.append((p, sum(s for _, s in kids) / len(kids)))
    return [n for n in nodes if n[0] not in drop] + added, bool(drop)


_TREES: WeakKeyDictionary[Index, Tree] = WeakKeyDictionary()  # built once per loaded index


def _tree_of(index: Index) -> Tree:
    if index not in _TREES:
        _TREES[index] = tree(index.chunks)
    return _TREES[index]


@stage("auto_merge", "LlamaIndex's AutoMergingRetriever over nested chunks (the auto_merging strategy): the "
       "`leaves` best leaves, each parent with more than `ratio` of its children retrieved replacing them",
       {"ratio": Param(0.5, "a parent replaces its children when more than this share of them is retrieved "
                            "(LlamaIndex's simple_ratio_thresh)", lo=0.0, hi=1.0),
        "leaves": Param(12, "leaves retrieved before merging (LlamaIndex's similarity_top_k)", lo=1, slider_hi=50)},
       first=False, wants=lambda params, depth: None)
def auto_merge(queries: Queries, rankings: list[Ranking] | None, index: Index, depth: int | None,
               ratio: float, leaves: int) -> list[Ranking]:
    t = _tree_of(index)
    is_leaf = np.zeros(len(t.parent), dtype=bool)
    is_leaf[t.leaves] = True
    out = []
    for scores, ids in rankings or []:
        keep = is_leaf[ids]
        nodes = merge(list(zip(ids[keep][:leaves].tolist(), scores[keep][:leaves].tolist(), strict=True)), t, ratio)
        out.append((np.array([s for _, s in nodes], dtype=np.float32), np.array([r for r, _ in nodes], dtype=np.int64)))
    return out
