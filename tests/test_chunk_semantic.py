"""Semantic chunking: same breakpoints as LlamaIndex's SemanticSplitterNodeParser, cached
re-runs across percentiles, size limits and properties, all with the real bundled model."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from conftest import SHARED
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from textgen import documents

from workbench.chunkers import ChunkEnv, get_strategy, run_strategy
from workbench.chunkers.semantic import breakpoints, group_texts
from workbench.chunkers.sentence import sentence_spans
from workbench.dataset import Document
from workbench.embed import Embedder
from workbench.variant import Variant

CORPUS = SHARED / "chroma_general" / "corpus.jsonl"


@pytest.fixture(scope="module")
def embedder(tmp_path_factory: pytest.TempPathFactory) -> Embedder:
    return Embedder(cache_dir=tmp_path_factory.mktemp("cache"), progress=False)


@pytest.fixture(scope="module")
def env(embedder: Embedder) -> ChunkEnv:
    return ChunkEnv(embed=embedder.encode, model_tokenizer=embedder.tokenizer)


def corpus_text(doc_id: str, start: int, n_chars: int) -> str:
    """A slice of a real document, from the paragraph after `start`, ending at a paragraph break."""
    text = next(json.loads(line)["text"] for line in CORPUS.open() if json.loads(line)["doc_id"] == doc_id)
    begin = text.index("\n\n", start) + 2
    return text[begin : text.rindex("\n\n", begin, begin + n_chars)]


def test_group_texts_hand_computed() -> None:
    text = " One fish.  Two fish.\nRed fish. "
    spans = sentence_spans(text)
    assert group_texts(text, spans, 0) == ["One fish.  ", "Two fish.\n", "Red fish. "]
    assert group_texts(text, spans, 1) == ["One fish.  Two fish.\n", text[1:], "Two fish.\nRed fish. "]
    assert group_texts(text, spans, 5) == [text[1:]] * 3


def test_breakpoints_hand_computed() -> None:
    x, y = [1.0, 0.0], [0.0, 1.0]
    diag = [0.6, 0.8]
    # distances: [0, 1 - 0.6, 0, 1 - 0.8] = [0, 0.4, 0, 0.2]
    vectors = np.array([x, x, diag, diag, y])
    assert breakpoints(vectors, 50) == [1, 3]  # median 0.1
    assert breakpoints(vectors, 80) == [1]  # 0.2 + 0.6 * (0.4 - 0.2) = 0.32
    assert breakpoints(vectors, 100) == []  # nothing exceeds the maximum
    assert breakpoints(vectors[:1], 50) == []


def spans_from_llamaindex(text: str, node_texts: list[str], first: int) -> list[tuple[int, int]]:
    """Node texts are consecutive slices of `text` from the first sentence on; trailing
    whitespace belongs to LlamaIndex's sentence strings, not to our (trimmed) spans."""
    out, pos = [], first
    for t in node_texts:
        assert text[pos : pos + len(t)] == t
        out.append((pos, pos + len(t.rstrip())))
        pos += len(t)
    assert pos == len(text)
    return out


@pytest.mark.skipif(not CORPUS.exists(), reason="../shared/datasets not beside the repo")
@pytest.mark.parametrize(
    ("doc_id", "offset", "n_chars", "buffer_size", "percentiles"),
    [
        ("state_of_the_union", 0, 5000, 1, (95, 80, 50)),
        ("state_of_the_union", 0, 5000, 0, (90, 60)),
        ("pubmed", 20000, 5000, 2, (95, 70)),
    ],
)
def test_breakpoints_equal_llamaindex(
    env: ChunkEnv, embedder: Embedder, doc_id: str, offset: int, n_chars: int, buffer_size: int, percentiles: tuple
) -> None:
    from llama_index.core import Document as LIDocument
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from llama_index.core.node_parser import SemanticSplitterNodeParser

    class WorkbenchEmbedding(BaseEmbedding):
        """The same model and vectors as the workbench, as a LlamaIndex embedding."""

        def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
            return embedder.encode(texts).tolist()

        def _get_text_embedding(self, text: str) -> list[float]:
            return self._get_text_embeddings([text])[0]

        def _get_query_embedding(self, query: str) -> list[float]:
            return self._get_text_embedding(query)

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_text_embedding(query)

    text = corpus_text(doc_id, offset, n_chars)
    sentences = sentence_spans(text)
    assert len(sentences) > 20
    pieces = [text[a:b] for a, b in zip([s for s, _ in sentences], [s for s, _ in sentences[1:]] + [len(text)])]
    doc = Document(doc_id, doc_id, text)
    for p in percentiles:
        parser = SemanticSplitterNodeParser(
            embed_model=WorkbenchEmbedding(),
            buffer_size=buffer_size,
            breakpoint_percentile_threshold=p,
            sentence_splitter=lambda _text: pieces,
        )
        nodes = parser.get_nodes_from_documents([LIDocument(text=text)])
        expected = spans_from_llamaindex(text, [n.get_content() for n in nodes], sentences[0][0])
        ours = [
            (c.start, c.end)
            for c in run_strategy("semantic", {"breakpoint_percentile": p, "buffer_size": buffer_size}, doc, env)
        ]
        assert ours == expected
        assert 1 < len(ours) < len(sentences)  # a real split, not a degenerate one


def test_second_percentile_embeds_nothing(env: ChunkEnv, embedder: Embedder) -> None:
    doc = Document("sotu", "sotu", corpus_text("state_of_the_union", 8000, 2500))
    n = len(sentence_spans(doc.text))
    run_strategy("semantic", {"breakpoint_percentile": 95, "buffer_size": 3}, doc, env)
    embedder.stats.reset()
    run_strategy("semantic", {"breakpoint_percentile": 40, "buffer_size": 3}, doc, env)
    assert (embedder.stats.embedded, embedder.stats.cached) == (0, n)


def test_min_and_max_size(env: ChunkEnv) -> None:
    doc = Document("sotu", "sotu", corpus_text("state_of_the_union", 0, 5000))
    count = env.tokenizer("cl100k_base").count
    plain = run_strategy("semantic", {"breakpoint_percentile": 50}, doc, env)
    assert min(count(c.text) for c in plain) < 40 and max(count(c.text) for c in plain) > 100

    merged = run_strategy("semantic", {"breakpoint_percentile": 50, "min_size": 40}, doc, env)
    assert all(count(c.text) >= 40 for c in merged) and len(merged) < len(plain)
    assert {c.start for c in merged} <= {c.start for c in plain}  # merging only removes cuts

    capped = run_strategy("semantic", {"breakpoint_percentile": 50, "max_size": 100}, doc, env)
    assert all(count(c.text) <= 100 for c in capped) and len(capped) > len(plain)
    assert {c.start for c in plain} <= {c.start for c in capped}  # splitting only adds cuts


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(documents, st.floats(0, 100), st.integers(0, 3), st.sampled_from([0, 5, 20]), st.sampled_from([0, 20, 60]))
def test_semantic_properties(
    env: ChunkEnv, doc: Document, pct: float, buffer: int, min_size: int, max_size: int
) -> None:
    if min_size > max_size > 0:
        min_size = 0
    params: dict[str, Any] = {
        "breakpoint_percentile": pct,
        "buffer_size": buffer,
        "min_size": min_size,
        "max_size": max_size,
    }
    chunks = run_strategy("semantic", params, doc, env)
    assert chunks == run_strategy("semantic", params, doc, env)  # deterministic
    count = env.tokenizer("cl100k_base").count
    covered = [0] * len(doc.text)
    for c in chunks:
        assert c.text == doc.text[c.start : c.end] and c.text.strip() == c.text != ""
        if max_size:
            assert count(c.text) <= max_size or len(c.text) == 1
        for i in range(c.start, c.end):
            covered[i] += 1
    assert all(n == 1 or ch.isspace() and n == 0 for n, ch in zip(covered, doc.text, strict=True))  # a partition
    if min_size and not max_size and len(chunks) > 1:
        assert all(count(c.text) >= min_size for c in chunks)


@pytest.mark.parametrize(
    ("params", "name"),
    [
        ({"breakpoint_percentile": 101}, "breakpoint_percentile"),
        ({"breakpoint_percentile": -0.5}, "breakpoint_percentile"),
        ({"buffer_size": -1}, "buffer_size"),
        ({"min_size": -1}, "min_size"),
        ({"max_size": -1}, "max_size"),
        ({"min_size": 50, "max_size": 20}, "min_size"),
        ({"tokenizer": "bert"}, "tokenizer"),
    ],
)
def test_invalid_parameters_named(params: dict, name: str) -> None:
    with pytest.raises(ValueError, match=f"'{name}'"):
        Variant.make("semantic", **params)
    with pytest.raises(ValueError, match=f"'{name}'"):
        get_strategy("semantic").resolve(params)


def test_needs_an_embedder() -> None:
    with pytest.raises(ValueError, match="embed"):
        run_strategy("semantic", {}, Document("d", "t", "One. Two."), ChunkEnv())
