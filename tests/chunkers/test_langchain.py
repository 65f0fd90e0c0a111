"""Production splitters as sweepable strategies: `langchain_recursive`, `llamaindex_sentence` and
user factories registered with `register_factory`, compared with the libraries' own output."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import REPO
from langchain_text_splitters import CharacterTextSplitter, RecursiveCharacterTextSplitter
from llama_index.core import Document as LlamaDocument
from llama_index.core.node_parser import SentenceSplitter, TokenTextSplitter
from llama_index.core.schema import MetadataMode

import workbench as wb
from workbench.chunkers import ChunkEnv, run_strategy
from workbench.chunkers.adapters import register_factory
from workbench.chunkers.registry import check_overlap
from workbench.core.offline import bundled_tiktoken
from workbench.core.params import IncompatibleParams, Param
from workbench.core.tokens import tiktoken_encoding
from workbench.dataset import Dataset, Document
from workbench.models.embed import Embedder
from workbench.retrieval.index import IndexStore
from workbench.run.defaults import default_grid
from workbench.variant import parse_variant

TEXTS = sorted((REPO / "tests" / "data" / "semantic").glob("*"))


def load(path: Path) -> Document:
    return Document(path.name, path.stem, path.read_text(encoding="utf-8"))


def words(text: str) -> str:
    """The whitespace `locate` may restore: pieces are compared modulo runs of whitespace."""
    return " ".join(text.split())


def check_exact(chunks, doc: Document, pieces: list[str]) -> None:
    assert [words(c.text) for c in chunks] == [words(p) for p in pieces if p.strip()]
    assert all(c.text == doc.text[c.start : c.end] for c in chunks)
    assert [c.start for c in chunks] == sorted(c.start for c in chunks)


@pytest.mark.parametrize("path", TEXTS, ids=lambda p: p.name)
@pytest.mark.parametrize(("size", "overlap", "unit"), [(128, 16, "tokens"), (600, 100, "chars")])
def test_langchain_recursive_gives_the_library_chunks_at_exact_offsets(path, size, overlap, unit, monkeypatch) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(bundled_tiktoken()))  # the library as a user runs it offline
    doc = load(path)
    params = {"chunk_size": size, "chunk_overlap": overlap, "unit": unit}
    chunks = run_strategy("langchain_recursive", params, doc, ChunkEnv())
    if unit == "tokens":
        ref = RecursiveCharacterTextSplitter.from_tiktoken_encoder(
            encoding_name="cl100k_base", chunk_size=size, chunk_overlap=overlap)
    else:
        ref = RecursiveCharacterTextSplitter(chunk_size=size, chunk_overlap=overlap)
    check_exact(chunks, doc, ref.split_text(doc.text))
    assert len(chunks) > 3


@pytest.mark.parametrize("path", TEXTS, ids=lambda p: p.name)
def test_llamaindex_sentence_gives_the_library_chunks_at_exact_offsets(path) -> None:
    doc = load(path)
    chunks = run_strategy("llamaindex_sentence", {"chunk_size": 128, "chunk_overlap": 16}, doc, ChunkEnv())
    nodes = SentenceSplitter(chunk_size=128, chunk_overlap=16).get_nodes_from_documents([LlamaDocument(text=doc.text)])
    check_exact(chunks, doc, [n.get_content(metadata_mode=MetadataMode.NONE) for n in nodes])
    assert len(chunks) > 3


def test_token_lengths_are_cl100k_and_characters_are_len() -> None:
    """The `unit` really is the length function: token chunks fit in cl100k tokens, char chunks in len."""
    doc = load(REPO / "tests" / "data" / "semantic" / "sotu_2024.txt")
    enc = tiktoken_encoding("cl100k_base")
    by_tokens = run_strategy("langchain_recursive", {"chunk_size": 64, "unit": "tokens"}, doc, ChunkEnv())
    by_chars = run_strategy("langchain_recursive", {"chunk_size": 64, "unit": "chars"}, doc, ChunkEnv())
    assert max(len(enc.encode(c.text)) for c in by_tokens) <= 64 < max(len(c.text) for c in by_tokens)
    assert max(len(c.text) for c in by_chars) <= 64
    assert len(by_chars) > 2 * len(by_tokens)


@pytest.mark.parametrize("name", ["langchain_recursive", "llamaindex_sentence"])
def test_parameters_are_checked_when_the_variant_is_made(name: str) -> None:
    with pytest.raises(IncompatibleParams, match=rf"{name}: parameter 'chunk_overlap' must be in \[0, chunk_size\) "
                       r"= \[0, 64\), got 64"):
        wb.Variant.make(name, chunk_size=64, chunk_overlap=64)
    with pytest.raises(ValueError, match=rf"{name}: parameter 'chunk_size' must be in \[1, inf\], got 0"):
        wb.Variant.make(name, chunk_size=0)
    with pytest.raises(ValueError, match=rf"{name}: unknown parameter\(s\) \['size'\]"):
        wb.Variant.make(name, size=64)
    assert len(wb.grid(name, chunk_size=[32, 64], chunk_overlap=[0, 32])) == 3  # 32/32 skipped


def test_units_are_named_for_widgets_and_tables() -> None:
    params = wb.Variant.make("langchain_recursive", unit="chars").kwargs
    lc = wb.chunkers.get_strategy("langchain_recursive").params
    li = wb.chunkers.get_strategy("llamaindex_sentence").params
    assert lc["chunk_size"].title("chunk_size", params) == "chunk size (chars)"
    assert lc["chunk_overlap"].title("chunk_overlap", {"unit": "tokens"}) == "chunk overlap (tokens)"
    assert li["chunk_size"].title("chunk_size") == "chunk size (tokens)"


def test_cli_accepts_the_library_parameter_names() -> None:
    v = parse_variant("langchain_recursive:chunk_size=256,chunk_overlap=32")
    assert (v.strategy, v.kwargs) == ("langchain_recursive", {"chunk_size": 256, "chunk_overlap": 32, "unit": "tokens"})
    default = default_grid(Dataset("d", (), ()), 254)
    ours = next(v for v in default if v.strategy == "recursive")
    theirs = next(v for v in default if v.strategy == "langchain_recursive")
    # LangChain counts cl100k tokens only: two thirds of the size ours counts in the model's word pieces
    assert (theirs.kwargs["chunk_size"], theirs.kwargs["unit"]) == (2 * ours.kwargs["size"] // 3, ours.kwargs["unit"])
    assert ours.kwargs["tokenizer"] == "model"


def test_a_chunk_size_grid_sweeps_on_the_tiny_corpus(tiny: Dataset, fake_embedder: Embedder, tmp_path: Path) -> None:
    variants = [*wb.grid("langchain_recursive", chunk_size=[16, 48], chunk_overlap=4),
                wb.Variant.make("llamaindex_sentence", chunk_size=64, chunk_overlap=8)]
    result = wb.sweep(tiny, variants, ks=(1, 3), embedder=fake_embedder, store=IndexStore(tmp_path), progress=False)
    assert list(result.variants["chunk_size"]) == [16, 48, 64]
    assert set(result.grid_params) == {"chunk_size", "chunk_overlap", "unit"}
    chunks = list(result.variants["chunks"])
    assert chunks[0] > chunks[1]  # smaller chunks, more of them
    hit = result.summary[(result.summary.metric == "hit") & (result.summary.k == 3)]
    assert len(hit) == 3 and hit["mean"].min() >= 0.5  # real retrieval on an easy corpus


def test_user_factories_are_sweepable_and_checked_by_the_library() -> None:
    register_factory("test_lc_chars", lambda size, overlap: CharacterTextSplitter(
        separator="\n", chunk_size=size, chunk_overlap=overlap),
        {"size": Param(200, "characters", lo=1, unit="chars"), "overlap": Param(0, "characters", lo=0, unit="chars")})
    doc = load(REPO / "tests" / "data" / "semantic" / "httpx_readme.md")
    ref = CharacterTextSplitter(separator="\n", chunk_size=300, chunk_overlap=50).split_text(doc.text)
    check_exact(run_strategy("test_lc_chars", {"size": 300, "overlap": 50}, doc, ChunkEnv()), doc, ref)
    with pytest.raises(IncompatibleParams, match="test_lc_chars: Got a larger chunk overlap"):  # LangChain's check
        wb.Variant.make("test_lc_chars", size=10, overlap=20)

    register_factory("test_li_tokens", lambda chunk_size: TokenTextSplitter(chunk_size=chunk_size, chunk_overlap=4),
                     {"chunk_size": Param(64, "tokens", lo=1, unit="tokens")}, check=None)
    nodes = TokenTextSplitter(chunk_size=40, chunk_overlap=4).get_nodes_from_documents([LlamaDocument(text=doc.text)])
    chunks = run_strategy("test_li_tokens", {"chunk_size": 40}, doc, ChunkEnv())
    check_exact(chunks, doc, [n.get_content(metadata_mode=MetadataMode.NONE) for n in nodes])
    with pytest.raises(IncompatibleParams, match="test_li_tokens: .*chunk overlap"):  # LlamaIndex's check (4 > 2)
        wb.Variant.make("test_li_tokens", chunk_size=2)

    register_factory("test_rule", lambda a, b: CharacterTextSplitter(chunk_size=a, chunk_overlap=b),
                     {"a": Param(10, "size", lo=1), "b": Param(0, "overlap", lo=0)}, check=check_overlap("a", "b"))
    with pytest.raises(IncompatibleParams, match=r"test_rule: parameter 'b' must be in \[0, a\)"):
        wb.Variant.make("test_rule", a=5, b=5)  # equal: LangChain accepts it, our rule does not

    register_factory("test_not_a_splitter", lambda: "text", {})
    with pytest.raises(TypeError, match="'test_not_a_splitter': the factory returned str"):
        wb.Variant.make("test_not_a_splitter")
    with pytest.raises(ValueError, match="'llamaindex_sentence' is built in"):
        register_factory("llamaindex_sentence", llamaindex_sentence_like, {})


def llamaindex_sentence_like() -> SentenceSplitter:
    return SentenceSplitter()
