"""auto_merging + auto_merge: the levels are HierarchicalNodeParser's nodes as nested spans, and
the merged results equal LlamaIndex's AutoMergingRetriever on the same hierarchy and rankings."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from conftest import REPO

from workbench.chunkers import ChunkEnv, run_strategy
from workbench.core.chunk import Chunk
from workbench.dataset import Document
from workbench.models.embed import Embedder
from workbench.retrieval.automerge import Tree, merge, tree
from workbench.variant import Variant

SIZES = [1024, 256, 64]
TEXT = (REPO / "tests" / "data" / "semantic" / "sotu_2024.txt").read_text(encoding="utf-8")[:9000]
DOC = Document("sotu", "State of the Union", TEXT)


@pytest.fixture(scope="module")
def chunks() -> list[Chunk]:
    return run_strategy("auto_merging", {"chunk_sizes": SIZES}, DOC, ChunkEnv())


def test_levels_are_hierarchical_node_parsers_nodes_as_nested_spans(chunks: list[Chunk]) -> None:
    from llama_index.core import Document as LlamaDocument
    from llama_index.core.node_parser import HierarchicalNodeParser
    from llama_index.core.schema import MetadataMode

    parser = HierarchicalNodeParser.from_defaults(chunk_sizes=SIZES, chunk_overlap=0)
    nodes = parser.get_nodes_from_documents([LlamaDocument(text=TEXT)])
    theirs = {n.get_content(metadata_mode=MetadataMode.NONE).strip() for n in nodes}
    assert {c.text for c in chunks} == theirs
    t = tree(chunks)
    for i, c in enumerate(chunks):
        p = t.parent[i]
        if p >= 0:
            assert chunks[p].start <= c.start and c.end <= chunks[p].end and (chunks[p].start, chunks[p].end) != (
                c.start, c.end)
    assert len(t.leaves) > 10 and sum(p < 0 for p in t.parent) >= 2  # three levels really built


def llamaindex_merge(chunks: list[Chunk], t: Tree, ranking: list[tuple[int, float]], ratio: float
                     ) -> list[tuple[int, float]]:
    """AutoMergingRetriever over a docstore holding the hierarchy `t` of `chunks`, its vector
    retriever replaced by one that returns `ranking` (the oracle harness; the merging is LlamaIndex's)."""
    from llama_index.core import StorageContext
    from llama_index.core.retrievers import AutoMergingRetriever, BaseRetriever
    from llama_index.core.schema import NodeRelationship, NodeWithScore, QueryBundle, TextNode

    nodes = [TextNode(id_=str(i), text=c.text) for i, c in enumerate(chunks)]
    for i, node in enumerate(nodes):
        rel = node.relationships
        if t.parent[i] >= 0:
            rel[NodeRelationship.PARENT] = nodes[t.parent[i]].as_related_node_info()
        if t.children[i]:
            rel[NodeRelationship.CHILD] = [nodes[k].as_related_node_info() for k in t.children[i]]
        if t.prev[i] >= 0:
            rel[NodeRelationship.PREVIOUS] = nodes[t.prev[i]].as_related_node_info()
        if t.next[i] >= 0:
            rel[NodeRelationship.NEXT] = nodes[t.next[i]].as_related_node_info()
    storage = StorageContext.from_defaults()
    storage.docstore.add_documents(nodes)

    class Fixed(BaseRetriever):
        def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
            return [NodeWithScore(node=storage.docstore.get_node(str(i)), score=s) for i, s in ranking]

    merged = AutoMergingRetriever(Fixed(), storage, simple_ratio_thresh=ratio).retrieve(QueryBundle("q"))
    return [(int(n.node.node_id), n.score) for n in merged]


def rankings(t: Tree, n: int) -> list[list[tuple[int, float]]]:
    """Seeded rankings of leaves, best first: random picks, and runs of neighbouring leaves
    (which fill in and merge up)."""
    rng = random.Random(7)
    leaves = t.leaves.tolist()
    out = []
    for _ in range(n):
        if rng.random() < 0.5:
            picked = rng.sample(leaves, rng.randint(1, min(24, len(leaves))))
        else:
            first = rng.randrange(len(leaves))
            picked = leaves[first : first + rng.randint(2, 24)]
            rng.shuffle(picked)
        scores = sorted((rng.random() for _ in picked), reverse=True)
        out.append(list(zip(picked, scores, strict=True)))
    return out


@pytest.mark.parametrize("ratio", [0.5, 0.3, 0.75])
def test_merging_equals_llamaindexs_auto_merging_retriever(chunks: list[Chunk], ratio: float) -> None:
    t = tree(chunks)
    merged_any = topped = 0
    for ranking in rankings(t, 40):
        ours = merge(ranking, t, ratio)
        theirs = llamaindex_merge(chunks, t, ranking, ratio)
        assert [r for r, _ in ours] == [r for r, _ in theirs]
        assert [s for _, s in ours] == pytest.approx([s for _, s in theirs])
        merged_any += any(t.children[r] for r, _ in ours)
        topped += any(t.parent[r] < 0 for r, _ in ours)
    assert merged_any > 5 and topped > 0  # the cases exercised merging, up to the top level


def test_the_stage_merges_a_dense_ranking_of_the_leaves(fake_embedder: Embedder, tmp_path: Path) -> None:
    from workbench.dataset import Dataset, Question, Span
    from workbench.retrieval.index import IndexStore
    from workbench.retrieval.search import search

    question = Question("q", "What did the president say about the economy?", (Span("sotu", 0, 50),))
    dataset = Dataset("sotu", (DOC,), (question,))
    variant = Variant.make("auto_merging", chunk_sizes=SIZES, retrieval=["dense", ("auto_merge", {"leaves": 8})])
    index = IndexStore(tmp_path).get(variant, dataset, fake_embedder)
    vector = fake_embedder.encode([question.question])
    (hits,) = search(index, [question], vector, 100, variant.stages)
    t = tree(index.chunks)
    scores, ids = index.dense(vector, None, [None])[0]
    leaves = [(int(i), float(s)) for s, i in zip(scores, ids, strict=True) if not t.children[i]][:8]
    assert [h.chunk_id for h in hits] == [r for r, _ in merge(leaves, t, 0.5)]
