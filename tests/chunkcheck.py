"""The chunk contract every sized chunker must keep, shared by the chunker tests: exact spans,
every non-space character covered, size and overlap bounds in the right unit, determinism."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
from hypothesis import settings
from hypothesis import strategies as st

from workbench.chunkers import ChunkEnv, run_strategy
from workbench.core.chunk import Chunk
from workbench.dataset import Document

MIXED = "Ça coûte 3 €. 😀👩‍💻 emoji! 中文的句子。日本語です。\n\nZürich naïve café — fin."
UNITS = [("chars", "cl100k_base"), ("tokens", "cl100k_base"), ("tokens", "o200k_base")]
PROPS = settings(max_examples=50, deadline=None)
# The strategies whose chunks an LLM writes, left out of the property tests over every strategy
# (test_every_kind.py, test_contracts.py): the bundled model makes a few tokens a second here, so their
# dozens of documents and settings would take hours; propositions also give one row per statement, so
# several rows share a span by design. tests/chunkers/test_llm_chunkers.py checks their contract with the
# real model on tiny documents, and that this list names every strategy with a model.
GENERATES = {"propositions", "llm_chunk"}


def units_in(doc: Document, start: int, end: int, unit: str, tokenizer: str, env: ChunkEnv) -> int:
    """Units of the whole document's tokenization needed to cover [start, end): every token
    starting inside it, plus the one cut by its start (a multi-token emoji counts in full)."""
    if unit == "chars":
        return end - start
    b = env.tokenizer(tokenizer).boundaries(doc.text)
    first, nxt = b[:-1], b[1:]
    return int(np.sum(((first >= start) & (first < end)) | ((first < start) & (nxt > start))))


def assert_chunk_contract(
    doc: Document, chunks: list[Chunk], size: int, overlap: int, unit: str, tokenizer: str, env: ChunkEnv
) -> None:
    text = doc.text
    covered = np.zeros(len(text), dtype=bool)
    for c in chunks:
        assert c.doc_id == doc.doc_id and c.text == text[c.start : c.end] and c.text.strip()
        covered[c.start : c.end] = True
        n = units_in(doc, c.start, c.end, unit, tokenizer, env)
        assert n <= size or len(c.text) == 1, f"{c.text!r} is {n} {unit} > size {size}"
    missed = [i for i in np.flatnonzero(~covered) if not text[i].isspace()]
    assert not missed, f"characters not in any chunk: {[text[i] for i in missed[:10]]}"
    for a, b in pairwise(chunks):
        assert a.start < b.start and a.end < b.end, "chunks out of order or nested"
        if b.start < a.end:
            n = units_in(doc, b.start, a.end, unit, tokenizer, env)
            assert n <= overlap, f"overlap {text[b.start:a.end]!r} is {n} {unit} > {overlap}"


def check_random_doc(name: str, doc: Document, size: int, data: st.DataObject, env: ChunkEnv, **extra) -> None:
    """Run `name` with a drawn unit, tokenizer and overlap; check the contract and determinism."""
    unit, tokenizer = data.draw(st.sampled_from(UNITS))
    overlap = data.draw(st.integers(0, size - 1))
    params = dict(size=size, overlap=overlap, unit=unit, tokenizer=tokenizer, **extra)
    chunks = run_strategy(name, params, doc, env)
    assert_chunk_contract(doc, chunks, size, overlap, unit, tokenizer, env)
    assert run_strategy(name, params, doc, ChunkEnv()) == chunks


ENV = ChunkEnv()

