"""What each chunking strategy costs, measured side by side in one run (docs/strategies.md cites it).

Per variant on data/chroma_small: chunking time (no embedding; semantic's sentence-group
embeddings are timed apart), chunk count and size, the texts the model must embed, chunks the
model truncates, and characters stored twice because chunks or returned parents overlap. On
one of its documents (state_of_the_union, to keep the run short): embedding time and what
retrieval hands the LLM (cl100k tokens per hit and in the top 5). Then chunking time alone on
the longest shared document (finance, 738k characters) for the strategies that need no model.
Times are ratios to `fixed` at 256 tokens: the machine is shared, so absolute seconds drift
between runs while ratios taken in the same run hold better. Each variant gets its own empty
embedding cache, so nothing is reused across rows.

Run from the repo root: python -m bench.chunker_costs  (about 2 minutes on 2 cores)
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.harness import BENCH, SHARED, SMALL, Start, best, header, lap, repeat, table
from workbench.chunkers import ChunkEnv
from workbench.core.chunk import Chunk, make_chunk
from workbench.core.tokens import TiktokenTokenizer
from workbench.dataset import Dataset, Document
from workbench.ingest import load_dataset
from workbench.models.cache import VectorCache
from workbench.models.embed import Embedder
from workbench.models.late import late_vectors
from workbench.retrieval.index import ChunkIndex, embed_texts, flat_index, overlap_chars, returned_token_counts
from workbench.retrieval.search import search
from workbench.variant import Variant

LONG = SHARED / "chroma_general"
LONG_DOC = "finance"
SUBSET_DOC = "state_of_the_union"  # embedding and retrieval columns: one document keeps the run short
K = 5
REPEATS = 5  # chunking is timed this many times; the fastest run is kept (least disturbed by others)

VARIANTS = [
    Variant.make("fixed", size=256),
    Variant.make("fixed", size=256, overlap=64),
    Variant.make("recursive", size=256),
    Variant.make("markdown", size=256),
    Variant.make("sentence", size=256),
    Variant.make("semantic", breakpoint_percentile=90, max_size=256),
    Variant.make("parent_child", child_size=64, parent="fixed", parent_size=512),
    Variant.make("sentence_window", window=3),
    Variant.make("fixed", size=256, contextual_header=True),
    Variant.make("fixed", size=256, late=True),
]
BASE = VARIANTS[0]

CL100K = TiktokenTokenizer("cl100k_base")


def late_windows(dataset: Dataset, embedder: Embedder) -> int:
    """Model passes late chunking makes: windows of the model's size over each whole document."""
    n = 0
    for d in dataset.documents:
        tokens = len(embedder.tokenizer(d.text, add_special_tokens=False, verbose=False)["input_ids"])
        n += len(embedder.token_windows(tokens))
    return n


def chunk_timed(variant: Variant, dataset: Dataset, embedder: Embedder) -> tuple[float, float, list[Chunk]]:
    """Chunk `dataset`: (seconds spent splitting, seconds spent embedding sentence groups, chunks)."""
    embed_seconds = 0.0

    def timed_embed(texts: list[str]) -> np.ndarray:
        nonlocal embed_seconds
        out, took = lap(lambda: embedder.encode(texts, desc="sentence groups"))
        embed_seconds += took.wall_s
        return out

    env = ChunkEnv(embed=timed_embed, model_tokenizer=embedder.tokenizer)
    chunks, took = lap(lambda: variant.chunk(dataset, env))
    return took.wall_s - embed_seconds, embed_seconds, chunks


def fresh_cache(embedder: Embedder, cache_dir: Path) -> None:
    """Give `embedder` a new empty vector cache, so nothing is reused from an earlier step."""
    if embedder.cache is not None:
        embedder.cache.close()
    embedder.cache = VectorCache(Path(tempfile.mkdtemp(dir=cache_dir)) / "vectors.sqlite")


def measure(variant: Variant, dataset: Dataset, subset: Dataset, embedder: Embedder, qvecs: np.ndarray,
            cache_dir: Path) -> dict:
    """Static columns on the whole `dataset`; embedding and retrieval on `subset` (one document).
    Embedding is timed best of 2, each time with an empty cache."""
    group_seconds = float("inf")
    for _ in range(2):
        fresh_cache(embedder, cache_dir)
        group_seconds = min(group_seconds, chunk_timed(variant, subset, embedder)[1])  # semantic embeds here
    embedder.stats.reset()
    fresh_cache(embedder, cache_dir)
    runs = [chunk_timed(variant, dataset, embedder) for _ in range(REPEATS)]  # semantic embeds in run 1
    chunk_seconds, chunks = min(r[0] for r in runs), runs[-1][2]
    groups_embedded = embedder.stats.embedded

    texts = embed_texts(chunks)
    mine = [c for c in chunks if c.doc_id in subset.docs]

    def embed() -> np.ndarray:
        fresh_cache(embedder, cache_dir)
        if variant.late:
            return late_vectors(subset.docs, mine, embedder)
        return embedder.encode(embed_texts(mine), desc="chunks")

    vectors, laps = repeat(embed, 2)
    embed_seconds = best(laps).wall_s
    embedded = late_windows(dataset, embedder) if variant.late else len(set(texts))

    index = ChunkIndex(mine, flat_index(vectors), returned_token_counts(mine, subset), {})
    hits = search(index, subset.questions, qvecs, K)
    per_hit = [h.tokens["cl100k_base"] for hs in hits for h in hs]
    units = [make_chunk(dataset.docs[s.doc_id], s.start, s.end) for s in dict.fromkeys(c.returned for c in chunks)]
    return {
        "variant": variant.label,
        "chunk_s": chunk_seconds,
        "group_embed_s": group_seconds,
        "groups_embedded": groups_embedded,
        "chunks": len(chunks),
        "chunk_tokens": float(np.mean(CL100K.count_many([c.text for c in chunks]))),
        "embedded_tokens": float(np.mean(CL100K.count_many(texts))),
        "texts_embedded": embedded + groups_embedded,
        "embed_s": embed_seconds,
        "truncated": 0 if variant.late else embedder.count_truncated(texts),
        "overlap_chars": overlap_chars(chunks),
        "returned_overlap": overlap_chars(units),  # distinct returned spans (parents, windows)
        "hit_tokens": float(np.mean(per_hit)),
        "context_tokens": float(np.mean([sum(h.tokens["cl100k_base"] for h in hs) for hs in hits])),
    }


def long_doc_seconds(variants: list[Variant], doc: Document) -> dict[str, tuple[float, int]]:
    """Chunking seconds (best of 2) and chunk count on one long document, strategies without a model."""
    data = Dataset("long", (doc,), ())
    env = ChunkEnv()
    out = {}
    for v in variants:
        chunks, laps = repeat(lambda v=v: v.chunk(data, env), 2)
        out[v.label] = (best(laps).wall_s, len(chunks))
    return out


def ratio(x: float, base: float) -> str:
    return f"x{x / base:.1f}" if base > 0 else "n/a"


def markdown_table(rows: list[dict], corpus_chars: int, long: dict[str, tuple[float, int]]) -> str:
    base = rows[0]
    lb = long[base["variant"]][0]
    cells = []
    for r in rows:
        texts = f"{r['texts_embedded']:,}"
        if r["groups_embedded"]:
            texts += f" ({r['groups_embedded']:,} sentence groups)"
        if r["variant"].endswith("+late"):
            texts += " windows"
        chunk_tokens = f"{r['chunk_tokens']:.0f}"
        if abs(r["embedded_tokens"] - r["chunk_tokens"]) >= 1:
            chunk_tokens += f" (embedded: {r['embedded_tokens']:.0f})"
        embed = ratio(r["embed_s"], base["embed_s"])
        if r["group_embed_s"]:
            embed += f" + sentence groups {ratio(r['group_embed_s'], base['embed_s'])}"
        lg = long.get(r["variant"])
        cells.append([
            r["variant"], ratio(r["chunk_s"], base["chunk_s"]), f"{r['chunks']:,}", chunk_tokens, texts,
            r["truncated"], f"{r['overlap_chars']:,} ({100 * r['overlap_chars'] / corpus_chars:.0f}%)",
            f"{r['returned_overlap']:,} ({100 * r['returned_overlap'] / corpus_chars:.0f}%)",
            embed, f"{r['hit_tokens']:.0f}", f"{r['context_tokens']:.0f}",
            ratio(lg[0], lb) + f" ({lg[1]:,})" if lg else "not run",
        ])
    return table(["variant", "chunking time vs fixed", "chunks", "mean chunk tokens", "texts to embed",
                  "chunks over model window", "chars stored twice (overlap)", "returned units overlapping",
                  f"embedding time vs fixed ({SUBSET_DOC})", "tokens per hit", f"tokens in top-{K}",
                  f"{LONG_DOC}: chunking time vs fixed (chunks)"], cells)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, default=BENCH / "chunker_costs.md")
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    args = p.parse_args()
    start = Start()

    small = load_dataset(SMALL)
    subset = small.select([SUBSET_DOC])
    long_doc = next(d for d in load_dataset(LONG).documents if d.doc_id == LONG_DOC)
    embedder = Embedder(cache_dir=None, threads=args.threads, progress=False)
    warm = subset.documents[0].text
    embedder.encode([warm[i : i + 1000] for i in range(0, len(warm), 1500)])  # load the model, warm its kernels
    CL100K.boundaries("warm-up")
    t_all = time.perf_counter()
    qvecs = embedder.encode([q.question for q in subset.questions])
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for v in VARIANTS:
            rows.append(measure(v, small, subset, embedder, qvecs, Path(tmp)))
            print(f"{v.label}: chunking {rows[-1]['chunk_s']:.2f} s, embedding {rows[-1]['embed_s']:.1f} s", flush=True)
        embedder.cache.close()
    fast = [v for v in VARIANTS if v.strategy != "semantic" and not v.late and not v.contextual_header]
    long = long_doc_seconds(fast, long_doc)
    total = time.perf_counter() - t_all

    corpus_chars = small.n_chars
    base, lb = rows[0], long[BASE.label][0]
    md = f"""{header("Chunker costs, measured side by side", start)}
Embedding model all-MiniLM-L6-v2 on CPU, {total:.0f} s in all. The
machine is shared with other jobs and may be noisy: read the times as ratios to
`{BASE.label}` measured in the same run, not as absolute speeds. For scale, in this run
`{BASE.label}` chunked data/chroma_small ({len(small.documents)} documents, {corpus_chars:,} characters)
in {base['chunk_s']:.2f} s, embedded the {SUBSET_DOC} chunks ({subset.n_chars:,} characters) in
{base['embed_s']:.1f} s, and chunked `{LONG_DOC}` ({len(long_doc.text):,} characters) in {lb:.2f} s.

{markdown_table(rows, corpus_chars, long)}

Columns (whole data/chroma_small unless the header names a subset):
- *chunking time*: splitting only, best of {REPEATS} runs. Semantic's embedding of its sentence
  groups is subtracted here and shown under *embedding time*.
- *mean chunk tokens*: cl100k tokens of the searched span; "embedded" is the text the model sees
  when it differs (a contextual header adds the title and heading path).
- *texts to embed*: model inputs at index time with an empty cache: distinct chunk texts, plus
  semantic's sentence groups (each sentence with its neighbours); for late chunking, the
  model-sized windows read over each whole document instead.
- *chunks over model window*: embedded texts longer than the model's 256 word pieces; the model
  never sees their tails (late chunking reads windows, so none).
- *chars stored twice*: `workbench.retrieval.index.overlap_chars` of the chunks (sum of lengths minus their
  union), as a share of the corpus. *returned units overlapping*: the same over the distinct spans
  a hit can return (parents, windows): text the LLM may be handed more than once across queries
  or within one ranking.
- *embedding time* ({SUBSET_DOC} only, {subset.n_chars:,} characters, to keep the run short): embedding
  its chunks with an empty cache, best of 2 (late: reading its windows and pooling); for semantic,
  plus embedding its sentence groups at chunking time (also best of 2).
- *tokens per hit*, *tokens in top-{K}*: cl100k tokens of what retrieval hands the LLM (the parent
  for small-to-big, each parent once per ranking), mean over the {len(subset.questions)} {SUBSET_DOC}
  questions, searching that document's chunks.
- *{LONG_DOC}*: chunking alone on the longest shared document (from chroma_general), best of 2;
  strategies that need the model (semantic) or only modify another (+header, +late) are not run.
"""
    print(md)
    args.out.write_text(md)


if __name__ == "__main__":
    main()
