"""Hypothesis strategies for random documents: ASCII prose, accents, emoji, CJK, Markdown bits."""

from __future__ import annotations

from hypothesis import strategies as st

from workbench.dataset import Document

WORDS = st.sampled_from(
    [
        "the", "chunk", "Dr.", "3.14", "e.g.", "naïve", "café", "Zürich", "😀", "👩‍💻", "中文",
        "日本語です。", "你好！", "真的？", "U.S.", "end.", "Why?", "Yes!", "`code`", "|a|b|", "-",
        "# Title", "## Sub", "```", "\n", "\n\n", "  ", "\t", "word", "long" * 12,
    ]
)

texts = st.lists(WORDS, min_size=1, max_size=120).map(" ".join).filter(lambda t: t.strip() != "")
documents = texts.map(lambda t: Document("doc", "Title", t))
