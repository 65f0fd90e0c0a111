"""Throughput of the `code` strategy against LlamaIndex's CodeSplitter and LangChain's Python
splitter (RecursiveCharacterTextSplitter.from_language(PYTHON)) on the same source files.

Every contender cuts at 1,500 characters (CodeSplitter's default max_chars; `code` with
unit="chars", size=1500; LangChain with chunk_size=1500, chunk_overlap=0), so chunk counts and
sizes sit beside the times. Each runs once to warm up, then the best of `--repeats` interleaved
rounds, so load from other jobs on this shared machine hits all alike; times are ratios to
`code` in the same run. The files are the workbench's own Python sources (real code, offline).

Run from the repo root: python bench/code_chunking.py  (about 20 s on 2 cores)
"""

from __future__ import annotations

import argparse
import datetime
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from workbench.chunkers import ChunkEnv
from workbench.dataset import Dataset, Document
from workbench.variant import Variant

REPO = Path(__file__).resolve().parents[1]
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
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "code_chunking.md")
    args = parser.parse_args()
    docs = sources()
    runs = contenders(docs)
    chunks = {name: fn() for name, fn in runs.items()}  # the warm-up, and what each one cut
    best = dict.fromkeys(runs, float("inf"))
    for _ in range(args.repeats):
        for name, fn in runs.items():
            t0 = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t0)
    base = best[next(iter(runs))]
    n_chars = sum(len(d.text) for d in docs)
    started = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# `code` chunking throughput vs LlamaIndex CodeSplitter and LangChain's Python splitter", "",
        f"`python bench/code_chunking.py --repeats {args.repeats}`, run {started} on {platform.machine()} "
        f"({platform.system()}), a shared 2-core machine: only ratios within one run mean anything.",
        f"Corpus: the {len(docs)} Python files of `workbench/` ({n_chars:,} characters). Best of {args.repeats} "
        "interleaved rounds after a warm-up; ratio = seconds / seconds of `code` (below 1: faster than `code`).", "",
        "| contender | seconds | ratio to code | chunks | mean chars | max chars |", "|---|---|---|---|---|---|",
    ]
    for name, texts in chunks.items():
        sizes = [len(t) for t in texts]
        lines.append(f"| {name} | {best[name]:.3f} | x{best[name] / base:.2f} | {len(texts)} | "
                     f"{statistics.mean(sizes):.0f} | {max(sizes)} |")
    lines += ["", "`code` returns exact spans (offsets into the file) and a header per chunk (path, class, "
              "signature); the other two return strings only."]
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
