"""What reading each document once buys `+context`: the chunk contexts of long documents written
with prefix reuse (the document's KV cache computed once and continued for every chunk, as
`+context` does) against without (every chunk's prompt read whole), in one run, same model,
same chunks, both uncached. Both must write the same text (greedy decoding; checked).

Documents: the longest of ../shared/datasets/qmsum_val when it is there (meeting transcripts of
tens of thousands of tokens), else of the bundled data/chroma_small; each holds at least 2,000
tokens. Each document's first `--chunks` chunks are contextualized, all in its first window of
`doc_tokens` = 2,048 tokens, so every prompt reads 2,048 tokens of document and its chunk.

Run from the repo root: python -m bench.archive.context [--docs 2] [--chunks 6] [--out bench/archive/context.md]
"""

from __future__ import annotations

import argparse
import os
from functools import partial
from pathlib import Path

from bench.harness import BENCH, REPO, SHARED, SMALL, Start, header, lap, table
from workbench.chunkers import ChunkEnv
from workbench.core.tokens import TiktokenTokenizer
from workbench.dataset import Dataset
from workbench.ingest import load_dataset
from workbench.models.context import CONTEXT, contextualize
from workbench.models.llm import LLM
from workbench.variant import parse_variant

SOURCES = (SHARED / "qmsum_val", SMALL)
VARIANT = "fixed:size=128+context:max_tokens=16"
MIN_TOKENS = 2000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=2)
    ap.add_argument("--chunks", type=int, default=6, help="chunks contextualized per document")
    ap.add_argument("--cache", type=Path, default=REPO / "results" / "cache", help="where the GGUF is converted")
    ap.add_argument("--out", type=Path, default=BENCH / "archive" / "context.md")
    args = ap.parse_args()
    start = Start()
    source = next(p for p in SOURCES if (p / "corpus.jsonl").exists())
    ds = load_dataset(source)
    docs = sorted(ds.documents, key=lambda d: -len(d.text))[: args.docs]
    tokens = [TiktokenTokenizer().count(d.text) for d in docs]
    assert min(tokens) >= MIN_TOKENS, f"documents of {tokens} tokens: need {MIN_TOKENS}"
    variant = parse_variant(VARIANT)
    params = dict(variant.context)
    chunks = [c for d in docs for c in variant.chunk(Dataset(ds.name, (d,), ()), ChunkEnv())[: args.chunks]]
    model = LLM(cache_dir=args.cache, progress=False)._local  # loaded (a GGUF converted once) outside the timings
    times, texts, made = {}, {}, {}
    load = [os.getloadavg()[0]]
    for reuse in (None, True, False):  # None: a warm-up
        llm = LLM(cache_dir=None, progress=False)  # nothing cached: both ways generate everything
        llm.__dict__["_local"] = model
        if reuse is None:
            llm.generate(CONTEXT, [{"document": "warm", "chunk": "up"}], max_tokens=2)
            continue
        (out, _), took = lap(partial(contextualize, {d.doc_id: d for d in docs}, chunks, llm,
                                     doc_tokens=params["doc_tokens"], max_tokens=params["max_tokens"], reuse=reuse))
        times[reuse], texts[reuse], made[reuse] = took.wall_s, [c.context for c in out], llm.stats
        load.append(os.getloadavg()[0])
    assert texts[True] == texts[False], "prefix reuse changed the generated text"
    ratio = times[False] / times[True]
    sizes = ", ".join(f"{d.doc_id}: {t:,}" for d, t in zip(docs, tokens, strict=True))
    rows = [("prefix reuse (the document read once per window)", True), ("no reuse (every prompt read whole)", False)]
    lines = [
        header("+context: prefix reuse against reading the document for every chunk", start),
        "The bundled SmolLM2-135M-Instruct in float32 on CPU. "
        f"{len(docs)} documents of `{source.name}` ({sizes} "
        f"cl100k tokens), the first {args.chunks} chunks of `{VARIANT}` of each ({len(chunks)} chunks), all in "
        f"the document's first window of {params['doc_tokens']:,} tokens; at most {params['max_tokens']} tokens "
        f"per context, batches of {llm.batch_size}. Both ways write the same {len(chunks)} contexts (checked). "
        f"Load average {', '.join(f'{x:.1f}' for x in load)} (start, after each), the machine "
        "shared with other jobs: absolute times grow with it; the ratio is one run's.",
        "",
        table(["contexts written", "seconds", "prompt tokens", "tokens generated", "s per chunk", "vs reuse"],
              [[name, f"{times[r]:.1f}", f"{made[r].prompt_tokens:,}", made[r].generated_tokens,
                f"{times[r] / len(chunks):.1f}", f"{times[r] / times[True]:.2f}x"] for name, r in rows]),
        "",
        f"Prefix reuse is {ratio:.1f}x faster (target: at least 3x). Prompt tokens count what each prompt holds "
        "(the same both ways); with reuse the document's share of them is read once per window.",
        "",
    ]
    args.out.write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
