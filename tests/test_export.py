"""`export`: every exported file is run in a fresh process on a small corpus, as a user would run it,
and its chunks compared here with the workbench's own; a library that cannot express a parameter
names it, and the difference it states is the one its code really makes.

Only semantic embeds: its tests take the bundled model (`embedder`, marked model); the others count
the model's word pieces with its tokenizer alone (`word_pieces`), in the fast tier."""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from conftest import BILLING, REPO, SPACE

from workbench.chunkers import ChunkEnv
from workbench.cli import main
from workbench.core.offline import bundled_tiktoken
from workbench.dataset import Dataset, Document
from workbench.export import export_code
from workbench.export.parity import run_export
from workbench.ingest import load_dataset
from workbench.models.embed import Embedder
from workbench.variant import parse_variant

ITSDANGEROUS = REPO / "tests" / "data" / "itsdangerous"
DEMO_BEST = "fixed:size=476,tokenizer=model+bm25"  # the verdict's best of `make demo` on data/chroma_small


def source(path: str) -> Document:
    text = (ITSDANGEROUS / path).read_text(encoding="utf-8")
    return Document(path, path, text, kind="code", path=path, language="python")


@pytest.fixture(scope="module")
def word_pieces() -> Embedder:
    """The bundled model as its tokenizer.json alone: its ONNX backend reads the tokenizer without
    loading the weights, and nothing here embeds."""
    return Embedder(cache_dir=None, progress=False, backend="onnx")


@pytest.fixture(scope="module")
def ascii_docs() -> Dataset:
    """Markdown, and Python source: no character a token window could cut in two."""
    return Dataset("small", (Document("billing.md", "Billing", BILLING, kind="markdown", path="billing.md"),
                             source("src/encoding.py"), source("src/_json.py")), ())


@pytest.fixture(scope="module")
def small(ascii_docs: Dataset) -> Dataset:
    """The same, and prose with accents and CJK."""
    return Dataset("small", (*ascii_docs.documents, Document("space.txt", "Voyager", SPACE, path="space.txt")), ())


def workbench_chunks(variant: str, dataset: Dataset, embedder: Embedder) -> list[dict[str, list[str]]]:
    """Per document, the workbench's chunk texts and (where chunks hand one back) parent texts."""
    env = ChunkEnv(embed=embedder.encode, model_tokenizer=embedder.tokenizer)
    chunks = parse_variant(variant).chunk(dataset, env)
    out = []
    for doc in dataset.documents:
        own = [c for c in chunks if c.doc_id == doc.doc_id]
        row = {"chunks": [c.text for c in own]}
        if any(c.parent_start is not None for c in own):
            row["parents"] = [doc.text[c.parent_start : c.parent_end] for c in own]
        out.append(row)
    return out


def imported(code: str) -> set[str]:
    """The top-level modules a file imports."""
    tree = ast.parse(code)
    return {(n.module or "").split(".")[0] if isinstance(n, ast.ImportFrom) else a.name.split(".")[0]
            for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom) for a in n.names}


PLAIN = [
    "fixed:size=40,overlap=8", "fixed:size=60,tokenizer=model", "fixed:size=300,unit=chars,overlap=30",
    "recursive:size=48,overlap=8", "recursive:size=200,unit=chars,separators=markdown",
    "sentence:size=40,overlap=1,tokenizer=model", "markdown:size=48,overlap=8", "code:size=64,tokenizer=model",
    "code:size=48,header=false", "parent_child:child_size=24,parent_size=96",
    "parent_child:parent=section,child=fixed,child_size=32",
    "parent_child:parent=window,window=1,child_size=24,max_parent_tokens=60", "sentence_window:window=1",
    "table:size=64", "auto_merging:chunk_sizes=[96,32]",
]


@pytest.mark.parametrize("variant", PLAIN)
def test_the_plain_python_file_cuts_what_the_workbench_cuts(variant: str, small: Dataset,
                                                             word_pieces: Embedder) -> None:
    export = export_code(variant, to="python", dataset=small, embedder=word_pieces)
    assert export.exact and not export.in_library
    assert run_export(export.code, small.documents) == workbench_chunks(variant, small, word_pieces)
    assert "workbench" not in imported(export.code)  # it stands alone (run_export hides the package, too)
    assert "this file's chunks are the workbench's on all 4 documents" in "\n".join(export.verdict)


def test_semantic_embeds_with_the_sweeps_model_through_sentence_transformers(small: Dataset,
                                                                              embedder: Embedder) -> None:
    variant = "semantic:breakpoint_percentile=80,max_size=40,tokenizer=model"
    export = export_code(variant, to="python", dataset=small, embedder=embedder)
    assert export.exact and "sentence_transformers" in imported(export.code)
    assert run_export(export.code, small.documents) == workbench_chunks(variant, small, embedder)
    assert any("sentence-transformers" in line for line in export.verdict)


def in_the_library(variant: str, to: str, dataset: Dataset, embedder: Embedder) -> None:
    """`variant` exported to `to` is built with it and cuts the workbench's chunks of `dataset`."""
    export = export_code(variant, to=to, dataset=dataset, embedder=embedder)
    assert export.in_library and export.exact
    assert {"langchain": "langchain_text_splitters", "llamaindex": "llama_index", "chonkie": "chonkie"}[to] in (
        imported(export.code))
    assert run_export(export.code, dataset.documents) == workbench_chunks(variant, dataset, embedder)


@pytest.mark.parametrize(("variant", "to"), [
    ("fixed:size=40,overlap=8", "langchain"), ("fixed:size=300,unit=chars,overlap=30", "langchain"),
    ("langchain_recursive:chunk_size=48,chunk_overlap=8", "langchain"),
    ("llamaindex_sentence:chunk_size=48", "llamaindex"),
    ("fixed:size=40,overlap=8", "chonkie"),
    ("fixed:size=300,unit=chars,overlap=30", "chonkie"),
])
def test_a_library_that_expresses_the_chunking_builds_the_file(variant: str, to: str, ascii_docs: Dataset,
                                                               word_pieces: Embedder) -> None:
    in_the_library(variant, to, ascii_docs, word_pieces)


def test_llamaindex_builds_semantic_on_its_own_sentences(ascii_docs: Dataset, embedder: Embedder) -> None:
    in_the_library("semantic:sentences=llamaindex,breakpoint_percentile=80", "llamaindex", ascii_docs, embedder)


# one variant of every strategy with a library counterpart, sized for the small corpus
COUNTERPARTS = [
    "fixed:size=40,overlap=8", "recursive:size=48,overlap=8", "sentence:size=40,overlap=1,tokenizer=model",
    "markdown:size=48", "code:size=64,tokenizer=model", "parent_child:child_size=24,parent_size=96",
    "parent_child:parent=section,child=fixed,child_size=32", "parent_child:parent=window,window=1,child_size=24",
]
# Chonkie 1.7's CodeChunker imports tree_sitter_language_pack.download_all, which the 0.13 requirements.txt pins lacks
TREE_SITTER_TOO_OLD = "ImportError: cannot import name 'download_all' from 'tree_sitter_language_pack'"


@pytest.mark.parametrize("to", ["langchain", "llamaindex", "chonkie"])
@pytest.mark.parametrize("variant", COUNTERPARTS)
def test_every_library_construction_runs_and_the_file_written_reproduces_the_chunks(
        variant: str, to: str, small: Dataset, word_pieces: Embedder) -> None:
    export = export_code(variant, to=to, dataset=small, embedder=word_pieces)
    said = "\n".join(export.verdict)
    if TREE_SITTER_TOO_OLD in said:
        assert f"Chonkie's closest construction failed to run: {TREE_SITTER_TOO_OLD}" in said
    else:  # the library's construction ran: its difference is measured, not guessed
        assert "failed to run" not in said
        assert (export.parity is not None) == (export.in_library or export.attempt is not None)
    assert export.exact  # whichever file was written
    if export.in_library:
        assert export.verdict[0].endswith("as the workbench cuts it.")
    else:
        assert export.gaps and export.verdict[0].endswith("as the workbench cuts it:")
        if export.parity is not None:
            assert not export.parity.exact and "- identical chunks: " in said
    assert run_export(export.code, small.documents) == workbench_chunks(variant, small, word_pieces)


def test_a_parameter_the_library_cannot_express_is_named_and_its_difference_measured(small: Dataset,
                                                                                      word_pieces: Embedder) -> None:
    variant = "sentence:size=40,overlap=1"
    export = export_code(variant, to="llamaindex", dataset=small, embedder=word_pieces)
    said = "\n".join(export.verdict)
    assert not export.in_library and export.exact  # the plain-Python file, which reproduces the chunks
    assert "LlamaIndex cannot build sentence(size=40, overlap=1)" in said
    assert any(gap.startswith("overlap: ") for gap in export.gaps) and "- overlap: the workbench repeats" in said
    # the stated difference is what LlamaIndex's closest construction really cuts
    theirs = run_export(export.attempt.render(""), small.documents)
    ours = workbench_chunks(variant, small, word_pieces)
    identical = sum(sum((Counter(a["chunks"]) & Counter(b["chunks"])).values()) for a, b in zip(ours, theirs,
                                                                                                 strict=True))
    chunks = sum(len(row["chunks"]) for row in ours)
    assert export.parity.identical == identical < chunks == export.parity.chunks
    assert f"- identical chunks: {identical} of the workbench's {chunks} ({identical / chunks:.0%})" in said
    assert run_export(export.code, small.documents) == ours
    code, _, kept = export.code.partition("# LlamaIndex's closest construction")
    assert "llama_index" not in imported(code) and "# SPLITTER = SentenceSplitter(" in kept


def test_a_token_window_cutting_a_character_is_why_langchain_differs(word_pieces: Embedder) -> None:
    text = "named a coffee after Voyager; 中文 visitors call it 旅行者号."  # 旅 is two cl100k tokens
    corpus = Dataset("cjk", (Document("cjk.txt", "CJK", text),), ())
    export = export_code("fixed:size=13", to="langchain", dataset=corpus, embedder=word_pieces)
    assert not export.in_library and export.exact
    assert any("U+FFFD" in gap for gap in export.gaps)
    assert "\ufffd" in run_export(export.attempt.render(""), corpus.documents)[0]["chunks"][0]
    assert export.parity.identical == 0 and export.parity.unplaced == 2


def test_a_strategy_without_a_counterpart_says_so_and_runs_nothing_of_the_library(small: Dataset,
                                                                                word_pieces: Embedder) -> None:
    export = export_code("sentence_window:window=1", to="langchain", dataset=small, embedder=word_pieces)
    assert export.exact and export.attempt is None and export.parity is None
    assert export.gaps == ("strategy 'sentence_window': LangChain has no counterpart",)
    assert "LangChain has no construction close to it, so nothing of it was run." in export.verdict


def test_a_modified_variant_exports_its_chunking_and_says_what_is_left_out(small: Dataset,
                                                                          word_pieces: Embedder) -> None:
    export = export_code("fixed:size=40+header+hybrid", to="langchain", dataset=small, embedder=word_pieces)
    assert any(line.startswith("Only the chunking is exported") for line in export.verdict)
    assert run_export(export.code, small.documents) == workbench_chunks("fixed:size=40", small, word_pieces)


@pytest.mark.parametrize(("variant", "to", "message"), [
    ("fixed", "haystack", "parameter 'to' must be one of ['langchain', 'llamaindex', 'chonkie', 'python']"),
    ("llm_chunk", "python", "has an LLM write its chunks"),
    ("route", "python", "export those one by one"),
    ("fixed", "chonkie", "Chonkie is not installed: pip install chonkie"),
])
def test_what_cannot_be_exported_is_one_error_saying_why(variant: str, to: str, message: str, small: Dataset,
                                                          word_pieces: Embedder,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Chonkie is in requirements.txt: its absence is made here, as a user without it has it."""
    found = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "chonkie" else found(name, *a))
    with pytest.raises(ValueError, match=re.escape(message)):
        export_code(variant, to=to, dataset=small, embedder=word_pieces)


@pytest.mark.parametrize("to", ["langchain", "llamaindex", "chonkie", "python"])
def test_the_demos_best_exports_to_each_target_as_a_file_that_runs_as_printed(
        to: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], word_pieces: Embedder) -> None:
    out = tmp_path / "chunker.py"
    main(["export", DEMO_BEST, "--to", to, "--data", str(REPO / "data" / "chroma_small"), "--out", str(out)])
    said = capsys.readouterr().out.splitlines()
    assert said[-1] == f"wrote {out}"
    assert "Checked on chroma_small: this file's chunks are the workbench's on all 3 documents" in "\n".join(said)
    if to != "python":  # each library states what it cannot express (the model's word pieces decoded, or
        # cuts between words) and how far its chunks are
        assert said[0].endswith("as the workbench cuts it:") and said[1].startswith("- ")
        assert any(line.startswith("- identical chunks: ") for line in said)
    dataset = load_dataset(REPO / "data" / "chroma_small")
    doc = dataset.documents[0]
    (tmp_path / "doc.txt").write_text(doc.text, encoding="utf-8")
    printed = subprocess.run([sys.executable, str(out), "doc.txt"], capture_output=True, text=True, check=True,
                             cwd=tmp_path).stdout
    chunks = workbench_chunks(DEMO_BEST, Dataset("one", (doc,), ()), word_pieces)[0]["chunks"]
    assert printed.count("--- chunk ") == len(chunks) and f"--- chunk 1 of {len(chunks)}, " in printed
    assert chunks[-1] in printed


def test_cli_writes_a_file_that_runs_as_printed(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                word_pieces: Embedder) -> None:
    out = tmp_path / "chunker.py"
    main(["export", "recursive:size=64", "--to", "langchain", "--data", str(ITSDANGEROUS), "--out", str(out)])
    said = capsys.readouterr().out
    assert "LangChain cannot build recursive(size=64, overlap=0)" in said and f"wrote {out}" in said
    assert "Checked on itsdangerous: this file's chunks are the workbench's on all 18 documents" in said
    doc = source("src/signer.py")
    env = dict(os.environ, TIKTOKEN_CACHE_DIR=str(bundled_tiktoken()))  # tiktoken's encoding, not downloaded
    printed = subprocess.run([sys.executable, str(out), str(ITSDANGEROUS / doc.path)], capture_output=True, text=True,
                             check=True, env=env, cwd=tmp_path).stdout
    chunks = workbench_chunks("recursive:size=64", Dataset("one", (doc,), ()), word_pieces)[0]["chunks"]
    assert printed.count("--- chunk ") == len(chunks) and f"--- chunk 1 of {len(chunks)}, " in printed
    assert chunks[-1] in printed


def test_a_plain_python_export_runs_offline_and_reads_no_questions(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """As a user runs it on a laptop with no network: no NLTK_DATA, no TIKTOKEN_CACHE_DIR, an empty home
    and temporary folder (no cache of either), the file finds punkt's tables and tiktoken's encoding in
    llama-index-core's copies. The folder's questions are not read: one quote matching nothing stops
    nothing, since the chunks need none."""
    data = shutil.copytree(ITSDANGEROUS / "docs", tmp_path / "docs")
    (data / "questions.jsonl").write_text('{"question": "?", "evidence": "a quote found nowhere at all"}\n',
                                          encoding="utf-8")
    out = tmp_path / "chunker.py"
    main(["export", "sentence:size=64", "--to", "python", "--data", str(data), "--out", str(out)])
    assert "this file's chunks are the workbench's on all 9 documents" in capsys.readouterr().out
    (tmp_path / "home").mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("NLTK_DATA", "TIKTOKEN_CACHE_DIR")}
    env |= {"HOME": str(tmp_path / "home"), "TMPDIR": str(tmp_path / "home")}
    printed = subprocess.run([sys.executable, str(out), str(data / "concepts.rst")], capture_output=True, text=True,
                             env=env, cwd=tmp_path)
    assert printed.returncode == 0, printed.stderr[-2000:]
    assert printed.stdout.startswith("--- chunk 1 of ") and "Error" not in printed.stderr


def test_cli_prints_the_file_and_says_the_verdict_apart(capsys: pytest.CaptureFixture[str]) -> None:
    main(["export", "fixed:size=128", "--to", "langchain", "--data", str(ITSDANGEROUS)])
    printed = capsys.readouterr()
    assert printed.out.startswith('"""Chunking fixed(size=128, overlap=0): built with LangChain')
    assert printed.err.startswith("LangChain builds fixed(size=128, overlap=0) as the workbench cuts it.")


@pytest.mark.parametrize(("args", "message"), [
    (["fixed:size=0", "--to", "python"], "error: fixed: parameter 'size' must be in [1, inf], got 0"),
    (["fixed", "--to", "python", "--data", "no/such/folder"], "error: export: --data: no/such/folder does not exist"),
])
def test_cli_errors_are_one_line(args: list[str], message: str) -> None:
    done = subprocess.run([sys.executable, "-m", "workbench", "export", *args], capture_output=True, text=True,
                          cwd=REPO)
    assert done.returncode == 2 and done.stderr.strip() == message
