"""User chunkers wrapped as strategies: plain functions and LlamaIndex node parsers."""

from __future__ import annotations

import json
import subprocess
import sys
from itertools import pairwise

import cloudpickle
import pytest
from conftest import REPO
from hypothesis import given, settings
from llama_index.core import Document as LlamaDocument
from llama_index.core.node_parser import MarkdownNodeParser, SentenceSplitter, TokenTextSplitter
from llama_index.core.schema import MetadataMode
from textgen import documents

from workbench.chunkers import STRATEGIES, ChunkEnv, Param, run_strategy, unregister
from workbench.chunkers.adapters import locate, register_factory, register_function, register_node_parser
from workbench.chunkers.registry import strategy
from workbench.dataset import Document
from workbench.run import registries
from workbench.variant import Variant

UNICODE = "Café naïve 😀.\n\n  中文段落。日本語です。 \n\nZürich —  end."


@pytest.fixture(scope="module")
def speech() -> Document:
    """A real text: the first 3000 characters of the State of the Union (it opens with a repeat)."""
    with open(REPO / "data" / "chroma_small" / "corpus.jsonl", encoding="utf-8") as f:
        row = json.loads(f.readline())
    assert row["doc_id"] == "state_of_the_union"
    return Document(row["doc_id"], row["title"], row["text"][:3000])


def spans(chunks) -> list[tuple[int, int]]:
    return [(c.start, c.end) for c in chunks]


def test_function_paragraphs_give_exact_spans_on_non_ascii_text():
    register_function("test_paragraphs", lambda t: [p.strip() for p in t.split("\n\n")])
    doc = Document("u", "U", UNICODE)
    chunks = run_strategy("test_paragraphs", {}, doc, ChunkEnv())
    assert spans(chunks) == [(0, 13), (17, 28), (31, 45)]  # counted by hand, in code points
    assert [c.text for c in chunks] == ["Café naïve 😀.", "中文段落。日本語です。", "Zürich —  end."]


def test_function_with_collapsed_whitespace_is_located_modulo_whitespace():
    register_function("test_collapsed", lambda t: [" ".join(p.split()) for p in t.split("\n\n")])
    chunks = run_strategy("test_collapsed", {}, Document("u", "U", UNICODE), ChunkEnv())
    assert spans(chunks) == [(0, 13), (17, 28), (31, 45)]
    assert chunks[2].text == "Zürich —  end."  # the source text, not the function's "Zürich — end."


def test_overlapping_and_repeated_pieces_are_found_in_order():
    doc = Document("r", "R", "Yes. No. Yes. No.")
    register_function("test_overlap", lambda t: ["Yes. No.", "No. Yes.", "Yes. No.", "  "])
    chunks = run_strategy("test_overlap", {}, doc, ChunkEnv())
    assert spans(chunks) == [(0, 8), (5, 13), (9, 17)]  # the blank piece is dropped


def test_node_offsets_are_used_only_when_the_source_confirms_them():
    doc = Document("h", "H", "abc abc abc")
    chunks = locate("hints", doc, [("abc", 0), ("abc", 0), ("abc", 99)])
    assert spans(chunks) == [(0, 3), (4, 7), (8, 11)]
    assert spans(locate("hints", doc, [("abc", 4)])) == [(4, 7)]  # a confirmed hint beats an earlier match
    with pytest.raises(ValueError, match="chunk 3 of document 'h'"):  # no 4th "abc" after offset 9
        locate("hints", doc, [("abc", 0), ("abc", 0), ("abc", 99), ("abc", 8)])


def test_text_not_in_document_raises_naming_strategy_doc_and_text():
    register_function("test_invents", lambda t: [t[:5], "This sentence is not in the source at all"])
    with pytest.raises(ValueError) as err:
        run_strategy("test_invents", {}, Document("doc-7", "T", "Hello world. Bye."), ChunkEnv())
    message = str(err.value)
    assert "'test_invents'" in message and "'doc-7'" in message and "This sentence is not in" in message
    assert "chunk 1" in message


def test_reregistering_replaces_an_adapter_but_never_a_builtin():
    doc = Document("d", "D", "a b")
    register_function("test_again", lambda t: ["a"])
    register_function("test_again", lambda t: ["b"])
    assert spans(run_strategy("test_again", {}, doc, ChunkEnv())) == [(2, 3)]
    with pytest.raises(ValueError, match="'fixed' is built in"):
        register_function("fixed", lambda t: [t])


def test_function_version_is_part_of_the_variant_key():
    register_function("test_versioned", str.split, version=1)
    v1 = Variant.make("test_versioned").key
    register_function("test_versioned", str.split, version=2)
    assert Variant.make("test_versioned").key != v1


@pytest.mark.parametrize(
    "parser", [SentenceSplitter(chunk_size=64, chunk_overlap=8), TokenTextSplitter(chunk_size=64, chunk_overlap=8)]
)
def test_llamaindex_splitters_give_exact_spans_and_the_parser_texts(parser, speech):
    name = f"test_{type(parser).__name__}"
    register_node_parser(name, parser)
    chunks = run_strategy(name, {}, speech, ChunkEnv())
    nodes = parser.get_nodes_from_documents([LlamaDocument(text=speech.text)])
    texts = [n.get_content(metadata_mode=MetadataMode.NONE) for n in nodes]
    # Exact comparison, no whitespace normalisation: on this text both splitters return
    # substrings of the source, so every chunk is the parser's text at the parser's offset.
    assert [c.text for c in chunks] == texts
    assert spans(chunks) == [(n.start_char_idx, n.end_char_idx) for n in nodes]
    assert all(c.text == speech.text[c.start : c.end] for c in chunks)
    assert len(chunks) > 5 and chunks[0].start == 0
    assert any(b.start < a.end for a, b in pairwise(chunks))  # the overlap survives


def test_markdown_node_parser_sections_with_a_repeated_section():
    text = (
        "# Title\n\nIntro  text here.\n\n## Sub\n\nBody line one.\nBody   line two.\n\n"
        "```\n# not a header\n```\n\n## Sub\n\nBody line one.\n"
    )
    register_node_parser("test_markdown", MarkdownNodeParser())
    chunks = run_strategy("test_markdown", {}, Document("m", "M", text), ChunkEnv())
    assert spans(chunks) == [(0, 26), (28, 91), (93, 115)]
    assert chunks[2].text == "## Sub\n\nBody line one."


def test_parser_settings_change_the_variant_key():
    register_node_parser("test_sized", SentenceSplitter(chunk_size=64, chunk_overlap=8))
    small = Variant.make("test_sized").key
    register_node_parser("test_sized", SentenceSplitter(chunk_size=128, chunk_overlap=8))
    large = Variant.make("test_sized").key
    register_node_parser("test_sized", SentenceSplitter(chunk_size=64, chunk_overlap=8))
    assert small != large
    assert Variant.make("test_sized").key == small  # the same settings give the same key again
    register_node_parser("test_sized", TokenTextSplitter(chunk_size=64, chunk_overlap=8))
    assert Variant.make("test_sized").key != small  # so does another parser class


@settings(max_examples=50, deadline=None)
@given(doc=documents)
def test_wrapped_functions_keep_the_chunk_contract_on_random_text(doc: Document) -> None:
    """Paragraphs stripped and words with collapsed whitespace, on random Unicode text: exact
    spans, in order, covering every non-space character, deterministic."""
    register_function("test_prop_paragraphs", lambda t: [p.strip() for p in t.split("\n\n")])
    register_function("test_prop_lines", lambda t: [" ".join(line.split()) for line in t.splitlines()])
    for name in ("test_prop_paragraphs", "test_prop_lines"):
        chunks = run_strategy(name, {}, doc, ChunkEnv())
        covered = [False] * len(doc.text)
        for c in chunks:
            assert c.text == doc.text[c.start:c.end] and c.text.strip()
            covered[c.start:c.end] = [True] * (c.end - c.start)
        assert all(covered[i] or ch.isspace() for i, ch in enumerate(doc.text))
        assert [c.start for c in chunks] == sorted(c.start for c in chunks)
        assert run_strategy(name, {}, doc, ChunkEnv()) == chunks


@settings(max_examples=25, deadline=None)
@given(doc=documents)
def test_wrapped_llamaindex_splitter_gives_exact_spans_on_random_text(doc: Document) -> None:
    register_node_parser("test_prop_li", SentenceSplitter(chunk_size=24, chunk_overlap=4))
    chunks = run_strategy("test_prop_li", {}, doc, ChunkEnv())
    assert chunks and all(c.text == doc.text[c.start:c.end] for c in chunks)


def test_a_piece_is_not_placed_inside_the_previous_one() -> None:
    """Found by the property test: lines of "the the \\n the" must not put the second "the" at 4."""
    register_function("test_lines", lambda t: [" ".join(line.split()) for line in t.splitlines()])
    assert spans(run_strategy("test_lines", {}, Document("d", "T", "the the \n the"), ChunkEnv())) == [(0, 7), (10, 13)]


def test_unregister_removes_a_strategy_and_refuses_an_unknown_name():
    register_function("test_gone", str.split)
    assert unregister("test_gone").name == "test_gone"
    with pytest.raises(ValueError, match="unknown strategy 'test_gone'"):
        Variant.make("test_gone")
    with pytest.raises(ValueError, match="cannot unregister unknown strategy 'test_gone'; registered: .*'fixed'"):
        unregister("test_gone")


def test_a_registration_is_undone_after_its_test() -> None:
    """conftest's registry fixture undoes what a test registers or unregisters: registry_leak.py's two
    tests, in their file's order in a pytest of their own (in the suite's random order the checking
    test could run first and check nothing)."""
    leak = REPO / "tests" / "chunkers" / "registry_leak.py"
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:random_order", "-p", "no:cacheprovider",
                          str(leak)], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and "2 passed" in run.stdout, run.stdout[-3000:] + run.stderr[-2000:]


def test_a_registry_restored_from_a_copy_of_its_table_forgets_adapted_names():
    """What may be replaced is part of the one registry table, so even restoring a plain copy of
    it (as conftest did before `registries.snapshot`) undoes a registration completely."""
    saved = dict(STRATEGIES)
    register_function("test_once_adapted", str.split)
    STRATEGIES.clear()
    STRATEGIES.update(saved)
    strategy("test_once_adapted", "built in", {})(lambda doc, env: [])
    with pytest.raises(ValueError, match="'test_once_adapted' is built in"):
        register_function("test_once_adapted", str.split)


CHILD = """
import json, sys
import cloudpickle
saved = cloudpickle.loads(open(sys.argv[1], "rb").read())  # before any workbench import, as in a Ray worker
from workbench.run import registries
from workbench.chunkers import STRATEGIES, ChunkEnv, register_function, run_strategy
from workbench.dataset import Document
registries.restore(saved)
doc = Document("d", "D", sys.argv[2])
out = {"names": list(STRATEGIES)}
for name in ("test_remote_lines", "test_remote_li", "fixed"):
    out[name] = [[c.start, c.end] for c in run_strategy(name, {}, doc, ChunkEnv())]
register_function("test_remote_lines", str.split)  # still an adapter there: may be replaced
try:
    register_function("fixed", str.split)
except ValueError as e:
    out["refused"] = str(e)
open(sys.argv[3], "w").write(json.dumps(out))
"""


def test_a_snapshot_rebuilds_the_registry_in_another_process(tmp_path, speech):
    """A worker process (Ray pickles with cloudpickle) gets the user's strategies, built-ins
    removed stay removed, and adapters stay replaceable while built-ins do not."""
    register_function("test_remote_lines", lambda t: [line for line in t.splitlines() if line.strip()])
    register_factory("test_remote_li", lambda chunk_size: SentenceSplitter(chunk_size=chunk_size, chunk_overlap=0),
                     {"chunk_size": Param(96, "maximum chunk length", lo=1, unit="tokens")})
    unregister("sentence")
    here = {name: [[c.start, c.end] for c in run_strategy(name, {}, speech, ChunkEnv())]
            for name in ("test_remote_lines", "test_remote_li", "fixed")}
    (tmp_path / "registry.pkl").write_bytes(cloudpickle.dumps(registries.snapshot()))
    child = subprocess.run([sys.executable, "-c", CHILD, tmp_path / "registry.pkl", speech.text,
                            tmp_path / "out.json"], capture_output=True, text=True)
    assert child.returncode == 0, child.stderr
    there = json.loads((tmp_path / "out.json").read_text())
    assert there["names"] == list(STRATEGIES) and "sentence" not in there["names"]
    assert {name: there[name] for name in here} == here and len(here["test_remote_li"]) > 5
    assert "'fixed' is built in and cannot be replaced" in there["refused"]
