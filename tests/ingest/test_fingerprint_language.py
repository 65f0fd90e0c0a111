"""A document's language names its caches (a code chunker reads it); prose keeps its old keys."""

from __future__ import annotations

from workbench.dataset import Dataset, Document


def test_language_is_in_the_corpus_fingerprint_only_when_set() -> None:
    prose = Dataset("d", (Document("a.py", "a", "def f():\n    return 1\n"),), ())
    same = Dataset("d", (Document("a.py", "a", "def f():\n    return 1\n", kind="text", path="a.py"),), ())
    python = Dataset("d", (Document("a.py", "a", "def f():\n    return 1\n", language="python"),), ())
    ruby = Dataset("d", (Document("a.py", "a", "def f():\n    return 1\n", language="ruby"),), ())
    assert prose.corpus_fingerprint == same.corpus_fingerprint  # provenance changes no chunk
    assert len({prose.corpus_fingerprint, python.corpus_fingerprint, ruby.corpus_fingerprint}) == 3
