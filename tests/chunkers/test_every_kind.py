"""Every registered strategy on every kind of document read from real files: chunks are exact spans of
`doc.text`, non-empty, in order of their start, none twice, and together cover every non-space character.

Why real files: the readers make texts no hand-written string has (OCR text joined across PDF pages, Markdown
tables out of HTML and Word, tabs and unclosed comments in code), and a chunker that is exact on prose can slip there.
Parameters are drawn at random from each strategy's own schema with a fixed seed per (strategy, draw), so
a failure names a setting that reproduces; the draws cover every choice and sizes from tiny to large.
"""

from __future__ import annotations

import random
from itertools import pairwise
from typing import Any

import fakemodel
import numpy as np
import pytest
from chunkcheck import GENERATES  # the LLM strategies, left out for the reason given there
from conftest import REPO

from workbench.chunkers import STRATEGIES, ChunkEnv, get_strategy, run_strategy
from workbench.core.params import Param
from workbench.dataset import Document
from workbench.ingest import read_folder
from workbench.ingest.jsonl import read_corpus
from workbench.models.embed import Embedder

DRAWS = 3  # parameter settings per strategy
SIZES = (24, 64, 200, 600)  # what a size is drawn from (a draw that breaks a cross-parameter rule is redrawn)
# one draw on one document of each kind, to stay quick: semantic embeds every sentence, auto_merging runs
# LlamaIndex's splitter once per level
SLOW = {"semantic", "auto_merging"}


def real_documents() -> list[Document]:
    """Each kind once or more: the format samples, the bundled mixed corpus, and a jsonl corpus."""
    docs = [x.doc for folder in ("tests/data/formats", "data/mixed")
            for x in read_folder(REPO / folder, {(REPO / folder / "questions.jsonl").absolute()})[0]]
    docs += [x.doc for x in read_corpus(REPO / "tests/data/squad_v11_dev/corpus.jsonl")]
    return [d for d in docs if d.text.strip()]


DOCS = real_documents()
ONE_OF_EACH = list({(d.kind, d.language): d for d in sorted(DOCS, key=lambda d: -len(d.text))}.values())  # shortest


def test_the_documents_hold_every_kind() -> None:
    kinds = {d.kind for d in DOCS}
    assert {"markdown", "text", "rst", "html", "pdf", "docx", "code", "jsonl"} <= kinds, kinds
    assert {"python", "go", "javascript", "bash"} <= {d.language for d in DOCS if d.kind == "code"}
    assert any(len(d.pages) > 2 for d in DOCS)  # a PDF of several pages


def draw_value(rng: random.Random, name: str, p: Param) -> Any:
    """A value for parameter `name` that its schema allows (its range may still refuse it: then redrawn)."""
    if p.choices is not None:
        return rng.choice([c for c in p.choices if c != "model"] or p.choices)  # "model" in test_model_tokenizer
    if isinstance(p.default, bool):
        return rng.random() < 0.5
    if isinstance(p.default, float):
        return rng.uniform(p.lo or 0.0, p.hi if p.hi is not None else 100.0)
    if isinstance(p.default, int):
        if p.hi is not None:
            return rng.randint(int(p.lo or 0), int(p.hi))
        if p.unit in ("pages", "sentences") or name == "window":
            return rng.randint(int(p.lo or 0), 3)
        if "overlap" in name:
            return rng.choice((0, 2, 8, 40))
        return rng.choice(SIZES) if p.default else rng.choice((0, *SIZES))  # 0 = off (max_size, max_parent_tokens)
    if isinstance(p.default, tuple) and p.default and all(isinstance(x, int) for x in p.default):
        return tuple(sorted(rng.sample(SIZES, len(p.default)), reverse=True))  # level sizes, largest first
    return p.default


def draw_params(name: str, seed: int) -> dict[str, Any]:
    """Seeded settings for strategy `name` that pass its validation."""
    rng = random.Random(f"{name}/{seed}")
    s = get_strategy(name)
    for _ in range(200):
        params = {k: draw_value(rng, k, p) for k, p in s.params.items()}
        try:
            return s.resolve(params)
        except ValueError:
            continue
    raise AssertionError(f"no valid parameters drawn for {name!r}")


def assert_exact_ordered_covering(doc: Document, chunks: list, where: str) -> None:
    text = doc.text
    assert chunks, f"{where}: no chunks for a document with text"
    covered = np.zeros(len(text), dtype=bool)
    for c in chunks:
        assert c.doc_id == doc.doc_id, where
        assert 0 <= c.start < c.end <= len(text), f"{where}: bad span [{c.start}, {c.end})"
        assert c.text == text[c.start:c.end], f"{where}: text is not doc.text[{c.start}:{c.end}]"
        assert c.text.strip(), f"{where}: a whitespace-only chunk at {c.start}"
        if c.parent_start is not None:
            assert c.parent_start <= c.start < c.end <= c.parent_end <= len(text), f"{where}: parent around child"
        covered[c.start:c.end] = True
    for a, b in pairwise(chunks):  # by start; a shared start is a hierarchy's parent and child (auto_merging)
        assert a.start <= b.start and (a.start, a.end) != (b.start, b.end), f"{where}: out of order at {b.start}"
    missed = [i for i in np.flatnonzero(~covered) if not text[i].isspace()]
    assert not missed, f"{where}: {len(missed)} characters in no chunk, from {missed[0]}: {text[missed[0]:][:40]!r}"


@pytest.fixture(scope="module")
def env(fake_embedder: Embedder) -> ChunkEnv:
    """The fake model's vectors (semantic cuts land elsewhere, the contract is the same) and the
    bundled model's word pieces (tokenizer="model")."""
    return ChunkEnv(embed=fake_embedder.encode, model_tokenizer=fakemodel.model_tokenizer())


# Known failures on real files: the alias table's separator row is a run of ~130 dashes that LangChain and
# LlamaIndex cut into overlapping pieces of dashes, and a piece of a repeated character fits anywhere in the run:
# find_in_order (workbench/labels/locate.py) takes the first place that ends past the piece before, which can be
# too early, so a later stretch is in no chunk (LangChain) or a later piece is not found (LlamaIndex).
AMBIGUOUS_RUN = pytest.mark.xfail(strict=True, reason="pieces of a long run of one character are placed ambiguously "
                                  "by find_in_order (table/git_aliases.md)")
KNOWN = {("langchain_recursive", 0): AMBIGUOUS_RUN, ("llamaindex_sentence", 2): AMBIGUOUS_RUN}
CASES = [pytest.param(name, seed, marks=KNOWN.get((name, seed), ()), id=f"{name}-{seed}")
         for name in sorted(set(STRATEGIES) - GENERATES) for seed in range(1 if name in SLOW else DRAWS)]


@pytest.mark.parametrize(("name", "seed"), CASES)
def test_every_strategy_is_exact_on_every_kind(name: str, seed: int, env: ChunkEnv) -> None:
    params = draw_params(name, seed)
    for doc in ONE_OF_EACH if name in SLOW else DOCS:
        chunks = run_strategy(name, params, doc, env)
        assert_exact_ordered_covering(doc, chunks, f"{name}({params}) on {doc.doc_id} ({doc.kind})")


@pytest.mark.parametrize("name", sorted(n for n, s in STRATEGIES.items()
                                        if "tokenizer" in s.params and n not in GENERATES))
def test_model_tokenizer_sizes_are_exact_too(name: str, env: ChunkEnv) -> None:
    params = {**draw_params(name, 0), "tokenizer": "model"}
    for doc in ONE_OF_EACH if name in SLOW else DOCS:
        chunks = run_strategy(name, params, doc, env)
        assert_exact_ordered_covering(doc, chunks, f"{name}({params}) on {doc.doc_id} ({doc.kind})")


def test_auto_merging_keeps_every_cell_of_the_alias_table(env: ChunkEnv) -> None:
    """LlamaIndex hints a node "|\\n|" at an earlier copy of it (before the previous node's end): the
    hint must not be taken, or the real one is in no chunk."""
    doc = next(d for d in DOCS if d.doc_id.endswith("git_aliases.md"))
    chunks = run_strategy("auto_merging", {"chunk_sizes": (64,)}, doc, env)
    assert_exact_ordered_covering(doc, chunks, "auto_merging(64) on git_aliases.md")
