"""Chunking throughput of the workbench's fixed, recursive and sentence chunkers against
LlamaIndex's SentenceSplitter(chunk_size=256, chunk_overlap=0), the splitter users run today.

Each contender chunks the same documents through its normal public path (the workbench's
`Variant.chunk`, LlamaIndex's `get_nodes_from_documents`), once to warm up, then best of
`--repeats` rounds run interleaved, so a burst of load from other jobs on this shared machine
hits every contender alike. Each workbench call gets a fresh ChunkEnv and clears the process's
memos (workbench.core.memo.forget), so nothing carries over from the warm-up or an earlier round
but process-wide loads (tokenizers, punkt's model): one chunking from scratch. The result is a
ratio: LlamaIndex seconds / workbench seconds (higher is faster). chunk_overlap=0 (not LlamaIndex's
default of 200) because the workbench variants are measured at overlap 0: like for like.

Corpora: data/chroma_small, and the longest chroma_general document (finance, 738k
characters) when ../shared is beside the repo.

Run from the repo root: python -m bench.chunk_throughput  (about 30 s on 2 cores)
bench/perf.py imports `measure()` for the same rows.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from bench.harness import SHARED, SMALL, best, header, interleaved, table
from workbench.chunkers import ChunkEnv
from workbench.core.chunk import Chunk
from workbench.core.memo import forget
from workbench.dataset import Dataset
from workbench.ingest import load_dataset
from workbench.variant import Variant

GENERAL = SHARED / "chroma_general"
SIZE = 256  # chunk size in cl100k tokens, for every contender
VARIANTS = [Variant.make("fixed", size=SIZE), Variant.make("recursive", size=SIZE), Variant.make("sentence", size=SIZE)]
TARGETS = {"fixed": 6.0, "recursive": 6.0, "sentence": 2.0}  # issue 10: x faster than SentenceSplitter(256)


def corpora() -> list[Dataset]:
    """data/chroma_small, plus chroma_general's longest document when the shared data is present."""
    out = [load_dataset(SMALL)]
    if (GENERAL / "corpus.jsonl").exists():
        longest = max(load_dataset(GENERAL).documents, key=lambda d: len(d.text))
        out.append(Dataset(f"chroma_general/{longest.doc_id}", (longest,), ()))
    return out


def llamaindex_chunker(dataset: Dataset) -> Callable[[], object]:
    """SentenceSplitter(chunk_size=SIZE, chunk_overlap=0) over `dataset`'s documents."""
    from llama_index.core import Document as LlamaDocument
    from llama_index.core.node_parser import SentenceSplitter

    splitter = SentenceSplitter(chunk_size=SIZE, chunk_overlap=0)
    docs = [LlamaDocument(text=d.text, id_=d.doc_id) for d in dataset.documents]
    return lambda: splitter.get_nodes_from_documents(docs)


def workbench_chunker(variant: Variant, dataset: Dataset) -> Callable[[], object]:
    """`variant` chunking `dataset` through its public path (these variants need no model), with
    a fresh ChunkEnv and nothing kept from an earlier call (workbench.core.memo.forget): the process
    keeps what a sweep's chunkings share (a document's sentence spans and token boundaries), so a
    second call would time a lookup, not one chunking from scratch."""
    def run() -> list[Chunk]:
        forget()
        return variant.chunk(dataset, ChunkEnv())
    return run


def measure(repeats: int = 5, datasets: list[Dataset] | None = None) -> pd.DataFrame:
    """One row per (corpus, workbench variant): seconds of both and ratio = llamaindex / workbench."""
    rows = []
    for data in datasets or corpora():
        contenders = ({"llamaindex": llamaindex_chunker(data)}
                      | {v.strategy: workbench_chunker(v, data) for v in VARIANTS})
        for fn in contenders.values():  # the warm-up: tokenizers, punkt, imports
            fn()
        fastest = {name: best(laps).wall_s for name, laps in interleaved(contenders, repeats).items()}
        for v in VARIANTS:
            rows.append({
                "corpus": data.name,
                "chars": data.n_chars,
                "variant": v.label,
                "llamaindex_s": fastest["llamaindex"],
                "workbench_s": fastest[v.strategy],
                "ratio": fastest["llamaindex"] / fastest[v.strategy],
                "target": TARGETS[v.strategy],
            })
    return pd.DataFrame(rows)


def markdown(df: pd.DataFrame) -> str:
    return table(["corpus (chars)", "variant", "x faster than SentenceSplitter(256)", "target"],
                 [[f"{r.corpus} ({r.chars:,})", r.variant, f"x{r.ratio:.1f}", f"x{r.target:g}"]
                  for r in df.itertuples()])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=5, help="interleaved timed rounds; the best of each is kept")
    p.add_argument("--out", type=Path, default=None, help="write the markdown table here (default: print only)")
    args = p.parse_args()
    md = header("Chunking throughput vs LlamaIndex's SentenceSplitter(256)")
    df = measure(args.repeats)
    md += f"\nShared with other jobs: ratios, not seconds.\n\n{markdown(df)}\n"
    print(md)
    if args.out:
        args.out.write_text(md)


if __name__ == "__main__":
    main()
