"""Exact token counts of spans from the document's own boundaries (what sentence packing asks)."""

from __future__ import annotations

import base64

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.textgen import texts
from workbench.core.memo import forget
from workbench.core.offline import bundled_tiktoken_file
from workbench.core.tokens import MODEL_TOKENIZER, TIKTOKEN_ENCODINGS, TiktokenTokenizer, _bundled_bpe, get_tokenizer
from workbench.models.embed import default_model_path
from workbench.models.onnx import JsonTokenizer

SHIPPED = ["Dr. Smith's café, in Zürich, said: \"it's 3.14 — isn't it?\"\n\n## Next\n\tThe end.  Really",
           "中文 and English mixed;  spaces   and\r\nnewlines don't   break   it 😀👩‍💻 ok"]


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
@settings(max_examples=60, deadline=None)
@given(text=texts, data=st.data())
def test_span_count_equals_counting_the_span_alone(name: str, text: str, data: st.DataObject) -> None:
    """span_count relies on every tiktoken piece ending between an ASCII letter and a space: a
    tiktoken whose patterns broke that would fail here, not miscount silently."""
    tok = TiktokenTokenizer(name)
    count = tok.span_count(text, tok.boundaries(text))
    for _ in range(20):
        s = data.draw(st.integers(0, len(text) - 1))
        e = data.draw(st.integers(s + 1, len(text)))
        assert count(s, e) == tok.count(text[s:e]), (s, e, text[s:e])


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
@pytest.mark.parametrize("text", SHIPPED)
def test_span_count_on_every_span_of_a_short_text(name: str, text: str) -> None:
    tok = TiktokenTokenizer(name)
    count = tok.span_count(text, tok.boundaries(text))
    wrong = [(s, e) for s in range(len(text)) for e in range(s + 1, len(text) + 1)
             if count(s, e) != tok.count(text[s:e])]
    assert wrong == []


@pytest.mark.parametrize("name", TIKTOKEN_ENCODINGS)
def test_the_bundled_ranks_are_read_as_tiktoken_reads_them(name: str) -> None:
    """The one-pass parse of the bundled file gives tiktoken's load_tiktoken_bpe parse, line by line."""
    url = f"https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
    data = bundled_tiktoken_file(url).read_bytes()
    lines = (line.split() for line in data.splitlines() if line)
    by_line = {base64.b64decode(token): int(rank) for token, rank in lines}
    ranks = _bundled_bpe(url)
    assert list(ranks.items()) == list(by_line.items()) and len(ranks) > 100_000


def test_boundaries_are_found_once_per_text_and_tokenizer_and_read_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every variant of a sweep sizes the same documents, each with a tokenizer of its own env: the
    first finds a text's boundaries, the rest share them (read-only); another encoding, or another
    model's tokenizer, finds its own."""
    calls: list[str] = []
    find = TiktokenTokenizer._boundaries

    def counted(self: TiktokenTokenizer, text: str) -> np.ndarray:
        calls.append(self.name)
        return find(self, text)

    monkeypatch.setattr(TiktokenTokenizer, "_boundaries", counted)
    text = "Boundaries are found once, then shared by every variant. " * 30
    b = TiktokenTokenizer("cl100k_base").boundaries(text)
    assert TiktokenTokenizer("cl100k_base").boundaries(text) is b and calls == ["cl100k_base"]
    assert np.array_equal(b, find(TiktokenTokenizer("cl100k_base"), text))
    with pytest.raises(ValueError, match="read-only"):
        b[1] = 0
    assert not np.array_equal(TiktokenTokenizer("o200k_base").boundaries("日本語の文章です。" * 20),
                              TiktokenTokenizer("cl100k_base").boundaries("日本語の文章です。" * 20))
    one, two = (get_tokenizer(MODEL_TOKENIZER, JsonTokenizer(default_model_path())) for _ in range(2))
    assert one.boundaries(text) is one.boundaries(text) and two.boundaries(text) is not one.boundaries(text)


def test_forget_clears_what_every_memo_keeps() -> None:
    """A benchmark timing one chunking from scratch: after forget, boundaries are found again."""
    text = "Forget drops the boundaries kept by every tokenizer. " * 20
    b = TiktokenTokenizer("cl100k_base").boundaries(text)
    assert TiktokenTokenizer("cl100k_base").boundaries(text) is b
    forget()
    again = TiktokenTokenizer("cl100k_base").boundaries(text)
    assert again is not b and np.array_equal(again, b)
