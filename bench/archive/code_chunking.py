"""Throughput of the `code` strategy against LlamaIndex's CodeSplitter and LangChain's Python
splitter (RecursiveCharacterTextSplitter.from_language(PYTHON)) on the same source files.

Every contender cuts at 1,500 characters (CodeSplitter's default max_chars; `code` with
unit="chars", size=1500; LangChain with chunk_size=1500, chunk_overlap=0), so chunk counts and
sizes sit beside the times. Each runs once to warm up, then the best of `--repeats` interleaved
rounds, so load from other jobs on this shared machine hits all alike; times are ratios to
`code` in the same run. The files are the workbench's own Python sources (real code, offline).

Run from the repo root: python -m bench.archive.code_chunking  (about 20 s on 2 cores)
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable
from pathlib import Path

from bench.harness import BENCH, REPO, best, header, interleaved, table
from workbench.chunkers import ChunkEnv
from workbench.dataset import Dataset, Document
from workbench.variant import Variant

SIZE = 1500  # characters, CodeSplitter's default max_chars


def sources() -> list[Document]:
    files = sorted((REPO / "workbench").rglob("*.py"))
    return [Document(str(p.relative_to(REPO)), p.stem, p.read_text(encoding="utf-8"), path=str(p.relative_to(REPO)),
                     language="python") for p in files if p.read_text(encoding="utf-8").strip()]


def contenders(docs: list[Document]) -> dict[str, Callable[[], list[str]]]:
    """name -> a call chunking every document, returning the chunk texts."""
    from langchain_text_splitters import Language, RecursiveCharacterTextSplitter
    from llama_index.core.node_parser import CodeSplitter

    variant = Variant.make("code", size=SIZE, unit="chars")
    dataset = Dataset("sources", tuple(docs), ())
    llama = CodeSplitter(language="python", max_chars=SIZE)
    lang = RecursiveCharacterTextSplitter.from_language(Language.PYTHON, chunk_size=SIZE, chunk_overlap=0)
    return {
        f"workbench code (size={SIZE} chars)": lambda: [c.text for c in variant.chunk(dataset, ChunkEnv())],
        f"LlamaIndex CodeSplitter(max_chars={SIZE})": lambda: [t for d in docs for t in llama.split_text(d.text)],
        f"LangChain from_language(PYTHON, {SIZE})": lambda: [t for d in docs for t in lang.split_text(d.text)],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=BENCH / "archive" / "code_chunking.md")
    args = parser.parse_args()
    head = header("`code` chunking throughput vs LlamaIndex CodeSplitter and LangChain's Python splitter")
    docs = sources()
    runs = contenders(docs)
    chunks = {name: fn() for name, fn in runs.items()}  # the warm-up, and what each one cut
    fastest = {name: best(laps).wall_s for name, laps in interleaved(runs, args.repeats).items()}
    base = fastest[next(iter(runs))]
    n_chars = sum(len(d.text) for d in docs)
    lines = [
        head,
        "A shared machine: only ratios within one run mean anything.",
        f"Corpus: the {len(docs)} Python files of `workbench/` ({n_chars:,} characters). Best of {args.repeats} "
        "interleaved rounds after a warm-up; ratio = seconds / seconds of `code` (below 1: faster than `code`).", "",
        table(["contender", "seconds", "ratio to code", "chunks", "mean chars", "max chars"],
              [[name, f"{fastest[name]:.3f}", f"x{fastest[name] / base:.2f}", len(texts),
                f"{statistics.mean(len(t) for t in texts):.0f}", max(len(t) for t in texts)]
               for name, texts in chunks.items()]),
    ]
    lines += ["", "`code` returns exact spans (offsets into the file) and a header per chunk (path, class, "
              "signature); the other two return strings only."]
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
