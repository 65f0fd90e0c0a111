"""A chunking's token counts from the documents' boundaries equal encoding every text alone."""

from __future__ import annotations

from dataclasses import replace

import pytest
from conftest import REPO

from workbench.chunkers import ChunkEnv
from workbench.core.tokens import TIKTOKEN_ENCODINGS, TiktokenTokenizer
from workbench.dataset import Dataset
from workbench.ingest import load_dataset
from workbench.retrieval.index import chunk_cost, embed_texts, returned_token_counts
from workbench.variant import Variant

VARIANTS = [
    Variant.make("fixed", size=128, overlap=32),
    Variant.make("sentence", size=256, overlap=1),
    Variant.make("recursive", size=200, contextual_header=True),  # embeds a header above the text
    Variant.make("parent_child"),  # returns parents
    Variant.make("sentence_window"),
]


@pytest.fixture(scope="module")
def general() -> Dataset:
    return load_dataset(REPO / "tests" / "data" / "chroma_general")


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.label)
def test_counts_equal_encoding_each_text(general: Dataset, variant: Variant) -> None:
    chunks = variant.chunk(general, ChunkEnv())
    # a proposition-like unit sends its own text instead of its span
    chunks[1] = replace(chunks[1], context_text="Refunds take five days. " * 3)
    returned = [c.context_text if c.context_text is not None else general.docs[c.doc_id].text[c.returned.start:
                c.returned.end] for c in chunks]
    assert any(c.returned != c.span for c in chunks) == (variant.strategy in ("parent_child", "sentence_window"))
    counts = returned_token_counts(chunks, general)
    for enc in TIKTOKEN_ENCODINGS:
        assert counts[enc].tolist() == TiktokenTokenizer(enc).count_many(returned)
    embedded = sum(TiktokenTokenizer("cl100k_base").count_many(embed_texts(chunks)))
    assert chunk_cost(chunks, general, counts)["tokens_embedded"] == embedded  # the returned counts reused
