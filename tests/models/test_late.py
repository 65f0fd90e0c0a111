"""Late chunking with the real bundled model: exact pooling, long documents, no NaN."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import REPO
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.chunkers import ChunkEnv, run_strategy
from workbench.core.chunk import make_chunk
from workbench.dataset import Document
from workbench.models.embed import OVERLAP, plan_windows
from workbench.models.late import late_vectors

SHORT = Document("s", "S", "Zürich café is naïve. The city lies on a lake. It has many banks.\n\n   \nBye.")


@pytest.fixture(scope="module")
def long_doc() -> Document:
    """A real text long enough for 4 model windows (about 760 word pieces)."""
    with open(REPO / "data" / "chroma_small" / "corpus.jsonl", encoding="utf-8") as f:
        row = json.loads(f.readline())
    return Document("sotu", row["title"], row["text"][:3500])


def short_chunks() -> list:
    return [make_chunk(SHORT, 0, 21), make_chunk(SHORT, 22, 46), make_chunk(SHORT, 47, 65), make_chunk(SHORT, 3, 9)]


def unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


def overlapping(offsets, start: int, end: int) -> list[int]:
    """Tokens whose characters overlap [start, end): the pooling rule late_vectors documents."""
    return [i for i, (a, b) in enumerate(offsets) if a < end and b > start]


def test_plan_windows_by_hand():
    assert plan_windows(0, 254, 63) == []
    assert plan_windows(10, 254, 63) == [(0, 10, 0, 10)]
    # windows at 0 and 191 (step 254 - 63), the last shifted back to a full window ending at 600;
    # owned ranges cut each overlap in the middle: (191 + 254) // 2 = 222, (346 + 445) // 2 = 395.
    assert plan_windows(600, 254, 63) == [(0, 254, 0, 222), (191, 445, 222, 395), (346, 600, 395, 600)]


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 1000), st.integers(2, 300), st.data())
def test_each_token_is_read_from_the_window_where_it_has_most_context(n, size, data):
    overlap = data.draw(st.integers(0, size // 2))
    plan = plan_windows(n, size, overlap)
    assert [own for *_, own in plan] == [own_s for _, _, own_s, _ in plan[1:]] + [n]
    assert plan[0][2] == 0 and all(0 < e - s <= size and s <= o1 <= o2 <= e for s, e, o1, o2 in plan)

    def context(t: int, s: int, e: int) -> float:  # distance to the nearest cut (document ends are not cuts)
        return min(t - s if s > 0 else np.inf, e - 1 - t if e < n else np.inf)

    for s, e, o1, o2 in plan:
        for t in range(o1, o2):
            best = max(context(t, s2, e2) for s2, e2, *_ in plan if s2 <= t < e2)
            assert context(t, s, e) >= best - 1  # within one token (the middle of an odd overlap)


def test_token_embeddings_are_the_models_own_with_their_offsets(embedder):
    texts = embedder.token_embeddings({"s": SHORT.text, "empty": ""})
    key, tokens = next(texts)  # lazily: a text's vectors are freed once the next one is asked for
    enc = embedder.tokenizer(SHORT.text, add_special_tokens=False, return_offsets_mapping=True)
    assert key == "s" and tokens.ids == enc["input_ids"]
    assert list(zip(tokens.starts.tolist(), tokens.ends.tolist(), strict=True)) == enc["offset_mapping"]
    assert SHORT.text[tokens.starts[1] : tokens.ends[1]] == "café"  # offsets into the text, not the lowercased pieces
    reference = embedder.model.encode(SHORT.text, output_value="token_embeddings").numpy()[1:-1]  # no [CLS], [SEP]
    assert tokens.vecs.dtype == np.float32 and np.abs(tokens.vecs - reference).max() < 1e-5
    key, empty = next(texts)
    assert key == "empty" and empty.ids == [] and empty.vecs.shape == (0, 384)
    assert tokens.vecs is None


def test_short_document_matches_the_pooled_document_pass(embedder):
    chunks = short_chunks()
    vecs = late_vectors({"s": SHORT}, chunks, embedder)
    assert vecs.dtype == np.float32 and vecs.shape == (4, 384)
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1, atol=1e-5)
    # reference: sentence-transformers' own token embeddings of the whole document
    tokens = embedder.model.encode(SHORT.text, output_value="token_embeddings").numpy()
    enc = embedder.tokenizer(SHORT.text, return_offsets_mapping=True, return_special_tokens_mask=True)
    pairs = zip(enc["offset_mapping"], enc["special_tokens_mask"], strict=True)
    offsets = [(-1, -1) if special else span for span, special in pairs]  # [CLS]/[SEP] are never pooled
    for chunk, vec in zip(chunks, vecs, strict=True):
        picked = overlapping(offsets, chunk.start, chunk.end)
        assert picked
        assert np.abs(unit(tokens[picked].mean(axis=0)) - vec).max() < 1e-5, chunk.text
    assert len(overlapping(offsets, 3, 9)) == 2  # "ich ca" pools the tokens of "zurich" and "cafe"


def test_late_vectors_differ_from_embedding_the_chunk_alone(embedder):
    chunks = short_chunks()[:3]
    late = late_vectors({"s": SHORT}, chunks, embedder)
    plain = embedder.encode([c.text for c in chunks])
    cosines = np.sum(late * plain, axis=1)
    assert np.all(cosines < 0.98) and np.all(cosines > 0.3)  # related, but not the same vector


def test_whitespace_chunk_gets_its_plain_embedding_not_nan(embedder):
    blank = make_chunk(SHORT, 65, 70)
    assert blank.text.strip() == ""
    vec = late_vectors({"s": SHORT}, [blank], embedder)
    assert np.isfinite(vec).all()
    assert np.allclose(vec[0], embedder.encode([blank.text])[0], atol=1e-6)


def test_long_document_pools_each_token_from_its_owning_window(embedder, long_doc):
    env = ChunkEnv(model_tokenizer=embedder.tokenizer)
    chunks = run_strategy("fixed", {"size": 100, "unit": "tokens", "tokenizer": "model"}, long_doc, env)
    vecs = late_vectors({"sotu": long_doc}, chunks, embedder)
    assert np.isfinite(vecs).all() and np.allclose(np.linalg.norm(vecs, axis=1), 1, atol=1e-5)

    # reference: each window run through the raw Hugging Face model, tokens taken from their owner
    import torch

    enc = embedder.tokenizer(long_doc.text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
    ids, offsets = enc["input_ids"], enc["offset_mapping"]
    size = embedder.max_tokens - 2  # [CLS] and [SEP]
    plan = plan_windows(len(ids), size, int(size * OVERLAP))
    assert len(plan) > 3
    cls, sep = embedder.tokenizer.cls_token_id, embedder.tokenizer.sep_token_id
    bert = embedder.model[0].auto_model
    owned = np.zeros((len(ids), 384), dtype=np.float32)
    for s, e, o1, o2 in plan:
        x = torch.tensor([[cls, *ids[s:e], sep]])
        with torch.inference_mode():
            hidden = bert(input_ids=x, attention_mask=torch.ones_like(x)).last_hidden_state[0].numpy()
        owned[o1:o2] = hidden[1 + o1 - s : 1 + o2 - s]
    cuts = [o1 for _, _, o1, _ in plan[1:]]
    straddling = 0
    for chunk, vec in zip(chunks, vecs, strict=True):
        picked = overlapping(offsets, chunk.start, chunk.end)
        straddling += any(picked[0] < cut <= picked[-1] for cut in cuts)
        assert np.abs(unit(owned[picked].mean(axis=0)) - vec).max() < 1e-4, chunk.start
    assert straddling >= 3  # chunks across window borders were checked too


def test_batching_documents_together_changes_nothing_and_is_deterministic(embedder, long_doc):
    two_windows = Document("two", "T", long_doc.text[:1500])
    chunks = short_chunks() + [make_chunk(two_windows, 0, 500), make_chunk(two_windows, 900, 1500)]
    docs = {"s": SHORT, "two": two_windows}
    together = late_vectors(docs, chunks, embedder)
    apart = np.concatenate([late_vectors(docs, chunks[:4], embedder), late_vectors(docs, chunks[4:], embedder)])
    assert np.abs(together - apart).max() < 1e-5  # padding a short document next to long windows is harmless
    assert np.array_equal(together, late_vectors(docs, chunks, embedder))


def test_chunk_of_an_unknown_document_is_named(embedder):
    with pytest.raises(KeyError, match="'s'"):
        late_vectors({}, short_chunks()[:1], embedder)
