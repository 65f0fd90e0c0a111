"""Sentence splitting (exact offsets, abbreviations, CJK, line breaks) and the `sentence` packer."""

from __future__ import annotations

import itertools
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, SHARED
from hypothesis import given, settings
from hypothesis import strategies as st
from textgen import documents, texts

from workbench.chunkers import ChunkEnv, run_strategy
from workbench.chunkers import sentence as sentence_module
from workbench.chunkers.sentence import (
    EXTRA_ABBREVIATIONS,
    SENTENCE_SPLITTERS,
    llamaindex_sentence_spans,
    punkt_line_spans,
    sentence_spans,
    sentence_splitter,
    sentences_of,
)
from workbench.core.chunk import strip_span
from workbench.core.memo import TextMemo
from workbench.core.offline import use_bundled_nltk_data
from workbench.dataset import Document
from workbench.ingest import load_dataset

ENV = ChunkEnv()


def split(text: str) -> list[str]:
    return [text[a:b] for a, b in sentence_spans(text)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Dr. Smith arrived. He sat down.", ["Dr. Smith arrived.", "He sat down."]),
        ("Pi is 3.14 roughly. Next one.", ["Pi is 3.14 roughly.", "Next one."]),
        ("The U.S. economy grew. It did.", ["The U.S. economy grew.", "It did."]),
        ("Fruit, e.g. apples, i.e. food. Fine.", ["Fruit, e.g. apples, i.e. food.", "Fine."]),
        ("Why? Yes! Sure.", ["Why?", "Yes!", "Sure."]),
        ("日本語です。你好！真的？", ["日本語です。", "你好！", "真的？"]),
        ("待って。。。次です。", ["待って。。。", "次です。"]),
        ("「はい。」と言った。", ["「はい。」", "と言った。"]),
        ("# Title\nBody text here\n\nNew paragraph", ["# Title", "Body text here", "New paragraph"]),
        ("  \n lead and trail.  \n\n ", ["lead and trail."]),
        ("a | b | c\n1 | 2 | 3", ["a | b | c", "1 | 2 | 3"]),
        ("   \n\t ", []),
    ],
)
def test_sentence_cases(text: str, expected: list[str]) -> None:
    assert split(text) == expected


def test_exact_offsets_non_ascii() -> None:
    text = "Café 😀 naïve. 👩‍💻 codes in Zürich! 中文。End"
    assert sentence_spans(text) == [(0, 13), (14, 34), (35, 38), (38, 41)]
    assert split(text) == ["Café 😀 naïve.", "👩‍💻 codes in Zürich!", "中文。", "End"]


def assert_tiles_non_whitespace(text: str, spans: list[tuple[int, int]]) -> None:
    owner = [0] * len(text)
    for a, b in spans:
        assert 0 <= a < b <= len(text)
        assert not text[a].isspace() and not text[b - 1].isspace()
        for i in range(a, b):
            owner[i] += 1
    for ch, n in zip(text, owner, strict=True):
        assert n <= 1 if ch.isspace() else n == 1  # whitespace between sentences belongs to none


@settings(max_examples=50, deadline=None)
@given(texts)
def test_sentences_tile_non_whitespace(text: str) -> None:
    spans = sentence_spans(text)
    assert spans == sorted(spans)
    assert_tiles_non_whitespace(text, spans)


@cache
def plain_punkt() -> Any:
    """NLTK's own English punkt (guarded regexes, no memo), as sentence_spans used it before issue 21."""
    from nltk.tokenize.punkt import PunktTokenizer

    use_bundled_nltk_data()
    tok = PunktTokenizer("english")
    tok._params.abbrev_types.update(EXTRA_ABBREVIATIONS)
    return tok


CJK_END = re.compile(r"[。！？]+[」』”’）)]*")


def oracle_line_spans(text: str) -> list[tuple[int, int]]:
    """NLTK punkt's plain span_tokenize on each line (a maximal run without "\n"), shifted."""
    return [(line.start() + a, line.start() + b) for line in re.finditer(r"[^\n]+", text)
            for a, b in plain_punkt().span_tokenize(line.group())]


def oracle_sentence_spans(text: str) -> list[tuple[int, int]]:
    """sentence_spans as it was before its one-pass punkt: per-line span_tokenize, then CJK stops."""
    out = []
    for a, b in oracle_line_spans(text):
        cuts = [m.end() for m in CJK_END.finditer(text, a, b)]
        for lo, hi in zip([a, *cuts], [*cuts, b], strict=True):
            span = strip_span(text, lo, hi)
            if span is not None:
                out.append(span)
    return out


# What punkt's candidates, contexts and realignment look at: stops, closing punctuation, "--",
# every kind of whitespace (ASCII, "\r", and Unicode ones that `regex`, `re` and str.isspace
# disagree on), abbreviations, initials, numbers, ellipses, CJK.
HOSTILE_PIECES = st.sampled_from(
    [
        ".", "?", "!", "...", ". . .", "..", "!!!", "?!", '"', "'", ")", "(", "]", "}", "\u201d", "\u2019", "\xbb",
        "--", "-", ",", ";", ":", "*", "@", " ", "  ", "\t", "\n", "\n\n", "\r", "\r\n", "\x0b", "\x0c", "\x1c",
        "\x85", "\u2028", "\u3000", "\xa0", "Dr.", "dr.", "e.g.", "i.e.", "U.S.", "J.", "etc.", "vs.", "3.14",
        "1.", "No.", "the", "The", "word", "Next", "hello", "A", "a", "中文", "。", "！", "？", "」", "）",
        "x" * 40,
    ]
)
hostile_texts = st.one_of(
    st.lists(HOSTILE_PIECES, max_size=60).map("".join),
    st.lists(HOSTILE_PIECES, max_size=60).map(" ".join),
    texts,
)
HOSTILE_CASES = [
    "", "\n", "\n\n\n", "   ", "no newline at all. Two sentences here! And a third?",
    "Dr. Smith paid $3.14 for e.g. apples... Then he left.\r\nNext line.\r\n\r\nLast.",
    'He said "Stop." Then (quietly.) "Go!" -- she ran.\n"Quoted." \u201cCurly.\u201d Done.',
    "Wait... what?! Really?!? Yes . . . no.\n. . .\n...\n!\n?",
    "日本語です。你好！真的？「はい。」と言った。\nMixed. 中文。 English.",
    "a.\x1cB. c.\x85D. e.\u2028F. g.\u3000H. i.\x0bJ. k.\x0cL.",
    " ".join(["Sentence number %d ends here." % i for i in range(5000)]),  # one very long line
    "\n".join(["Row %d. value 1.5 | x" % i for i in range(2000)]),
]


@pytest.mark.parametrize("text", HOSTILE_CASES)
def test_sentences_are_per_line_punkts_on_hostile_cases(text: str) -> None:
    assert punkt_line_spans(text) == oracle_line_spans(text)
    assert sentence_spans(text) == oracle_sentence_spans(text)


@settings(max_examples=400, deadline=None)
@given(hostile_texts)
def test_sentences_are_per_line_punkts(text: str) -> None:
    """The one pass over the text gives exactly per-line span_tokenize's spans, and sentence_spans
    the spans it gave when it called that per line."""
    assert punkt_line_spans(text) == oracle_line_spans(text)
    assert sentence_spans(text) == oracle_sentence_spans(text)


def corpus_documents() -> list[Document]:
    folders = [REPO / "data" / "chroma_small", REPO / "data" / "mixed", SHARED / "chroma_general"]
    return [d for f in folders if (f / "corpus.jsonl").exists() for d in load_dataset(f).documents]


@pytest.mark.parametrize("doc", corpus_documents(), ids=lambda d: d.doc_id)
def test_sentences_are_per_line_punkts_on_corpora(doc: Document) -> None:
    assert sentence_spans(doc.text) == oracle_sentence_spans(doc.text)


def llamaindex_strings(text: str) -> list[str]:
    from llama_index.core.node_parser.text.utils import split_by_sentence_tokenizer

    return split_by_sentence_tokenizer()(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Dr. Smith arrived. He sat down.", ["Dr.", "Smith arrived.", "He sat down."]),  # no abbreviations
        ("# Title\nBody text here.\n- item one\n- item two", ["# Title\nBody text here.", "- item one\n- item two"]),
        ("日本語です。你好！", ["日本語です。你好！"]),
    ],
)
def test_llamaindex_sentence_cases(text: str, expected: list[str]) -> None:
    assert [text[a:b] for a, b in llamaindex_sentence_spans(text)] == expected


@settings(max_examples=50, deadline=None)
@given(texts)
def test_llamaindex_sentences_are_llamaindex_strings_trimmed(text: str) -> None:
    """LlamaIndex's default splitter returns strings that tile the text; ours are those strings
    without their leading and trailing whitespace, as spans."""
    spans = llamaindex_sentence_spans(text)
    assert_tiles_non_whitespace(text, spans)
    theirs = [s for s in llamaindex_strings(text) if s.strip()]
    assert [text[a:b] for a, b in spans] == [s.strip() for s in theirs]


@pytest.mark.parametrize("path", sorted((REPO / "tests" / "data" / "semantic").iterdir()), ids=lambda p: p.name)
def test_llamaindex_sentences_on_real_documents(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    theirs = llamaindex_strings(text)
    assert "".join(theirs) == text
    assert [text[a:b] for a, b in llamaindex_sentence_spans(text)] == [s.strip() for s in theirs]


def test_sentence_splitter_by_name() -> None:
    assert sentence_splitter("lines+punkt") is sentence_spans
    assert sentence_splitter("llamaindex") is llamaindex_sentence_spans
    assert list(SENTENCE_SPLITTERS) == ["lines+punkt", "llamaindex"]
    with pytest.raises(ValueError, match="'spacy'.*lines\\+punkt"):
        sentence_splitter("spacy")


def test_sentences_of_splits_a_text_once_for_every_chunking(monkeypatch: pytest.MonkeyPatch) -> None:
    """The variants of a sweep chunk with an env each: the first splits the document, the later ones
    reuse its spans and chunk exactly as when nothing is kept."""
    doc = Document("d", "t", "Dr. Smith arrived. He sat down.\nA new line! 中文。End. " * 40 + "splits once")
    calls: list[str] = []

    def counted(text: str) -> list[tuple[int, int]]:
        calls.append(text)
        return sentence_spans(text)

    monkeypatch.setitem(SENTENCE_SPLITTERS, "lines+punkt", counted)
    spans = sentences_of(doc.text)
    assert spans == sentence_spans(doc.text) and sentences_of(doc.text) is spans
    assert sentences_of(doc.text, "llamaindex") == llamaindex_sentence_spans(doc.text)
    grid = [{"size": size, "overlap": overlap} for size, overlap in [(16, 0), (40, 2), (200, 1)]]
    kept = [run_strategy("sentence", params, doc, ChunkEnv()) for params in grid]
    assert calls == [doc.text]
    monkeypatch.setattr(sentence_module, "_SENTENCES", TextMemo(chars=0))  # keeps nothing
    assert kept == [run_strategy("sentence", params, doc, ChunkEnv()) for params in grid]
    assert calls == [doc.text] * 4


def pack(text: str, **params: object) -> list[str]:
    return [c.text for c in run_strategy("sentence", params, Document("d", "t", text), ENV)]


def test_packing_hand_computed() -> None:
    text = "Aa. Bb. Cc. Dd."
    assert pack(text, size=7, unit="chars") == ["Aa. Bb.", "Cc. Dd."]
    assert pack(text, size=11, unit="chars") == ["Aa. Bb. Cc.", "Dd."]
    assert pack(text, size=11, overlap=1, unit="chars") == ["Aa. Bb. Cc.", "Cc. Dd."]
    # overlap only where it fits: "Bb. Cc. Dd." would be 11 > 10 chars
    assert pack(text, size=10, overlap=2, unit="chars") == ["Aa. Bb.", "Bb. Cc.", "Cc. Dd."]
    # a sentence over `size` is cut into fixed windows; its neighbours stay whole
    assert pack("abcdefghij. Next.", size=5, unit="chars") == ["abcde", "fghij", ".", "Next."]


def test_packing_tokens_hand_computed() -> None:
    # cl100k: "One two." = 3 tokens, "One two. Three four." = 6
    text = "One two. Three four. Five six."
    assert pack(text, size=6) == ["One two. Three four.", "Five six."]
    assert pack(text, size=3) == ["One two.", "Three four.", "Five six."]


@settings(max_examples=50, deadline=None)
@given(
    documents,
    st.integers(1, 40),
    st.integers(0, 3),
    st.sampled_from(["chars", "tokens"]),
    st.sampled_from(["cl100k_base", "o200k_base"]),
)
def test_sentence_strategy_properties(doc: Document, size: int, overlap: int, unit: str, tokenizer: str) -> None:
    params = {"size": size, "overlap": overlap, "unit": unit, "tokenizer": tokenizer}
    chunks = run_strategy("sentence", params, doc, ENV)
    assert chunks == run_strategy("sentence", params, doc, ENV)  # deterministic
    length = ENV.length_fn(unit, tokenizer)
    covered = [0] * len(doc.text)
    for c in chunks:
        assert c.text == doc.text[c.start : c.end] and c.text.strip() == c.text != ""
        assert length(c.text) <= size or len(c.text) == 1  # one character can be several tokens
        for i in range(c.start, c.end):
            covered[i] = 1
    assert all(covered[i] or ch.isspace() for i, ch in enumerate(doc.text))
    starts = [c.start for c in chunks]
    assert starts == sorted(starts) and len(set(starts)) == len(starts)
    if overlap == 0:  # no overlap: chunks are disjoint
        assert all(a.end <= b.start for a, b in itertools.pairwise(chunks))
