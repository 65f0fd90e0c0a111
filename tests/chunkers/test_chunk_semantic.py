"""Semantic chunking: same breakpoints as LlamaIndex's SemanticSplitterNodeParser, cached
re-runs across percentiles, size limits and properties, all with the fake model of
tests/fakemodel.py: the cuts move with the vectors, the algorithm under test does not (the bundled
model cuts semantically in the sweeps of test_engine_ray.py and test_estimate.py)."""

from __future__ import annotations

from typing import Any

import fakemodel
import numpy as np
import pytest
from conftest import REPO
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from textgen import documents

from workbench.chunkers import ChunkEnv, get_strategy, run_strategy
from workbench.chunkers.semantic import breakpoints, cut_from_vectors, group_texts
from workbench.chunkers.sentence import llamaindex_sentence_spans, sentence_spans
from workbench.dataset import Document
from workbench.models.embed import Embedder
from workbench.variant import Variant

DATA = REPO / "tests" / "data" / "semantic"  # real documents, see tests/data/semantic/README.md
DOCS = ("sotu_2024.txt", "pubmed_pmc212319.txt", "wikitext_valkyria.txt", "httpx_readme.md")


@pytest.fixture(scope="module")
def env(fake_embedder: Embedder) -> ChunkEnv:
    return ChunkEnv(embed=fake_embedder.encode, model_tokenizer=fakemodel.model_tokenizer())


def data_doc(name: str) -> Document:
    return Document(name, name, (DATA / name).read_text(encoding="utf-8"))


def paragraphs(name: str, start: int, n_chars: int) -> Document:
    """A slice of a real document, from the paragraph after `start`, ending at a paragraph break."""
    text = (DATA / name).read_text(encoding="utf-8")
    begin = text.index("\n\n", start) + 2 if start else 0
    return Document(name, name, text[begin : text.rindex("\n\n", begin, begin + n_chars)])


def llamaindex_parser(embedder: Embedder, **kwargs: Any) -> Any:
    """SemanticSplitterNodeParser with the workbench's model and vectors, and its own defaults."""
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from llama_index.core.node_parser import SemanticSplitterNodeParser

    class WorkbenchEmbedding(BaseEmbedding):
        def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
            return embedder.encode(texts).tolist()

        def _get_text_embedding(self, text: str) -> list[float]:
            return self._get_text_embeddings([text])[0]

        def _get_query_embedding(self, query: str) -> list[float]:
            return self._get_text_embedding(query)

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_text_embedding(query)

    return SemanticSplitterNodeParser(embed_model=WorkbenchEmbedding(), **kwargs)


def llamaindex_texts(parser: Any, text: str) -> list[str]:
    from llama_index.core import Document as LIDocument

    return [n.get_content() for n in parser.get_nodes_from_documents([LIDocument(text=text)])]


def test_group_texts_hand_computed() -> None:
    text = " One fish.  Two fish.\nRed fish. "
    spans = sentence_spans(text)
    # LlamaIndex's sentence strings: the first from 0, each up to the next one's start
    assert group_texts(text, spans, 0) == [" One fish.  ", "Two fish.\n", "Red fish. "]
    assert group_texts(text, spans, 1) == [" One fish.  Two fish.\n", text, "Two fish.\nRed fish. "]
    assert group_texts(text, spans, 5) == [text] * 3


def test_breakpoints_hand_computed() -> None:
    x, y = [1.0, 0.0], [0.0, 1.0]
    diag = [0.6, 0.8]
    # distances: [0, 1 - 0.6, 0, 1 - 0.8] = [0, 0.4, 0, 0.2]
    vectors = np.array([x, x, diag, diag, y])
    assert breakpoints(vectors, 50) == [1, 3]  # median 0.1
    assert breakpoints(vectors, 80) == [1]  # 0.2 + 0.6 * (0.4 - 0.2) = 0.32
    assert breakpoints(vectors, 100) == []  # nothing exceeds the maximum
    assert breakpoints(vectors[:1], 50) == []


def test_cut_from_vectors_hand_computed(env: ChunkEnv) -> None:
    text = "Aa. Bb. Cc. Dd. Ee."
    spans = sentence_spans(text)
    vectors = np.array([[1.0, 0.0], [1.0, 0.0], [0.6, 0.8], [0.6, 0.8], [0.0, 1.0]])
    result = cut_from_vectors(text, spans, vectors, 50, 0, 0, "cl100k_base", env)
    assert np.allclose(result.distances, [0, 0.4, 0, 0.2]) and result.threshold == pytest.approx(0.1)
    assert result.breakpoints == [1, 3]
    assert [text[a:b] for a, b in result.spans] == ["Aa. Bb.", "Cc. Dd.", "Ee."]
    # cl100k: "Aa. Bb." = 6 tokens, "Cc. Dd." = 5, "Ee." = 3: the last joins its predecessor
    merged = cut_from_vectors(text, spans, vectors, 50, 5, 0, "cl100k_base", env)
    assert [text[a:b] for a, b in merged.spans] == ["Aa. Bb.", "Cc. Dd. Ee."]
    with pytest.raises(ValueError, match="4 group vectors for 5 sentences"):
        cut_from_vectors(text, spans, vectors[:4], 50, 0, 0, "cl100k_base", env)


def spans_from_llamaindex(text: str, node_texts: list[str]) -> list[tuple[int, int]]:
    """LlamaIndex's nodes tile the whole text; each of our chunks is a node without its leading
    and trailing whitespace (leading whitespace only in the first node)."""
    out, pos = [], 0
    for t in node_texts:
        assert text[pos : pos + len(t)] == t
        out.append((pos + len(t) - len(t.lstrip()), pos + len(t.rstrip())))
        pos += len(t)
    assert pos == len(text)
    return out


@pytest.mark.parametrize(
    ("name", "start", "n_chars", "buffer_size", "percentiles"),
    [
        ("sotu_2024.txt", 0, 5000, 1, (95, 80, 50)),
        ("sotu_2024.txt", 0, 5000, 0, (90, 60)),
        ("pubmed_pmc212319.txt", 2000, 5000, 2, (95, 70)),
    ],
)
def test_breakpoints_equal_llamaindex_given_our_sentences(
    env: ChunkEnv, fake_embedder: Embedder, name: str, start: int, n_chars: int, buffer_size: int, percentiles: tuple
) -> None:
    """The breakpoint rule alone: LlamaIndex is handed our "lines+punkt" sentence strings."""
    doc = paragraphs(name, start, n_chars)
    text = doc.text
    sentences = sentence_spans(text)
    assert len(sentences) > 20
    starts = [0] + [s for s, _ in sentences[1:]]
    pieces = [text[a:b] for a, b in zip(starts, [*starts[1:], len(text)], strict=True)]
    for p in percentiles:
        parser = llamaindex_parser(
            fake_embedder, buffer_size=buffer_size, breakpoint_percentile_threshold=p,
            sentence_splitter=lambda _t: pieces,
        )
        expected = spans_from_llamaindex(text, llamaindex_texts(parser, text))
        ours = [
            (c.start, c.end)
            for c in run_strategy("semantic", {"breakpoint_percentile": p, "buffer_size": buffer_size}, doc, env)
        ]
        assert ours == expected
        assert 1 < len(ours) < len(sentences)  # a real split, not a degenerate one


@pytest.mark.parametrize(
    ("name", "buffer_size", "percentiles"),
    [
        ("sotu_2024.txt", 1, (95, 60)),
        ("pubmed_pmc212319.txt", 2, (95, 80)),
        ("wikitext_valkyria.txt", 0, (90, 70)),
        ("httpx_readme.md", 1, (95, 75)),
    ],
)
def test_llamaindex_option_equals_llamaindex(
    env: ChunkEnv, fake_embedder: Embedder, name: str, buffer_size: int, percentiles: tuple
) -> None:
    """sentences="llamaindex" against SemanticSplitterNodeParser with its own default sentence
    splitter, on raw documents (headings, lists, line-broken titles): the same number of chunks,
    and each chunk text is the node text without leading and trailing whitespace."""
    doc = data_doc(name)
    for p in percentiles:
        parser = llamaindex_parser(fake_embedder, buffer_size=buffer_size, breakpoint_percentile_threshold=p)
        theirs = llamaindex_texts(parser, doc.text)
        params = {"breakpoint_percentile": p, "buffer_size": buffer_size, "sentences": "llamaindex"}
        ours = run_strategy("semantic", params, doc, env)
        assert [c.text for c in ours] == [t.strip() for t in theirs]
        assert [(c.start, c.end) for c in ours] == spans_from_llamaindex(doc.text, theirs)
        assert 1 < len(ours) < len(llamaindex_sentence_spans(doc.text))  # a real split


@pytest.mark.parametrize(("name", "buffer_size"), [("pubmed_pmc212319.txt", 2), ("httpx_readme.md", 1)])
def test_default_sentences_differ_from_llamaindex(env: ChunkEnv, name: str, buffer_size: int) -> None:
    """Why the option exists: with line breaks as sentence ends, headings and list items are
    sentences of their own, so the default's chunks are not LlamaIndex's."""
    doc = data_doc(name)
    lines = run_strategy("semantic", {"buffer_size": buffer_size}, doc, env)
    llama = run_strategy("semantic", {"buffer_size": buffer_size, "sentences": "llamaindex"}, doc, env)
    assert [c.text for c in lines] != [c.text for c in llama]


def test_second_percentile_embeds_nothing(env: ChunkEnv, fake_embedder: Embedder) -> None:
    doc = paragraphs("sotu_2024.txt", 4000, 2500)
    n = len(sentence_spans(doc.text))
    run_strategy("semantic", {"breakpoint_percentile": 95, "buffer_size": 3}, doc, env)
    fake_embedder.stats.reset()
    run_strategy("semantic", {"breakpoint_percentile": 40, "buffer_size": 3}, doc, env)
    assert (fake_embedder.stats.embedded, fake_embedder.stats.cached) == (0, n)


def test_min_and_max_size(env: ChunkEnv) -> None:
    doc = paragraphs("sotu_2024.txt", 0, 5000)
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
@given(
    documents,
    st.floats(0, 100),
    st.integers(0, 3),
    st.sampled_from([0, 5, 20]),
    st.sampled_from([0, 20, 60]),
    st.sampled_from(["lines+punkt", "llamaindex"]),
)
def test_semantic_properties(
    env: ChunkEnv, doc: Document, pct: float, buffer: int, min_size: int, max_size: int, sentences: str
) -> None:
    if min_size > max_size > 0:
        min_size = 0
    params: dict[str, Any] = {
        "breakpoint_percentile": pct,
        "buffer_size": buffer,
        "min_size": min_size,
        "max_size": max_size,
        "sentences": sentences,
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
        ({"sentences": "spacy"}, "sentences"),
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
