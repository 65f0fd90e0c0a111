"""Should dense variants size chunks in the embedding model's tokens by default? Measured side by side.

Every sized strategy counts `size` in tokens of `tokenizer`: cl100k_base (what an LLM is billed
in, the default so far) or "model" (the embedding model's own word pieces, whose window of 256,
special tokens included, is what the model sees; longer chunks are embedded from their head).
Each strategy at each size is swept twice on the same questions, once per tokenizer, and the
table shows recall@5 with its interval, the share of chunks the model truncates, the cl100k
context tokens a top 5 hands the LLM, and recall at equal context budgets (the fair comparison
when the two tokenizers cut chunks of different cl100k lengths: word pieces per cl100k token,
shown per corpus, is what decides how different). The paired difference model - cl100k per pair
says whether the questions can tell the two apart.

Run from the repo root: python -m bench.archive.tokenizer_default [--data DIR] [--out FILE]
(about 10 minutes cold on 2 cores for data/chroma_small; vectors are cached in --cache).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from bench.harness import BENCH, REPO, SMALL, header
from workbench.core.tokens import TiktokenTokenizer
from workbench.evaluation import stats
from workbench.ingest import load_dataset
from workbench.models.embed import Embedder
from workbench.retrieval.index import IndexStore
from workbench.run.session import sweep
from workbench.variant import Variant

SIZED = [("fixed", {"size": 128}), ("fixed", {"size": 256}), ("fixed", {"size": 512}),
         ("recursive", {"size": 256}), ("recursive", {"size": 512}), ("sentence", {"size": 256}),
         ("semantic", {"breakpoint_percentile": 95, "max_size": 256})]
TOKENIZERS = ("cl100k_base", "model")
K = 5


def measure(data: Path, cache: Path) -> tuple[pd.DataFrame, dict]:
    dataset = load_dataset(data)
    embedder = Embedder(cache_dir=cache, progress=False)
    variants = [Variant.make(s, tokenizer=t, **p) for s, p in SIZED for t in TOKENIZERS]
    result = sweep(dataset, variants, embedder=embedder, store=IndexStore(cache), progress=False)
    summary = result.summary.set_index(["key", "metric", "k", "budget"])
    rows = []
    for (strategy, params), pair in zip(SIZED, zip(*[iter(variants)] * 2, strict=True), strict=True):
        base, model = pair
        diff = stats.paired_compare(result.per_question, base.key, model.key, "recall", K)
        for v, tokenizer in zip(pair, TOKENIZERS, strict=True):
            row = result.variants.set_index("key").loc[v.key]
            recall = summary.loc[(v.key, "recall", K, 0)]
            budgets = {f"recall@{b} tokens": summary.loc[(v.key, "recall", 0, b), "mean"] for b in result.budgets}
            rows.append({"strategy": strategy, **params, "tokenizer": tokenizer,
                         "recall@5": f"{recall['mean']:.3f} [{recall['ci_low']:.3f}, {recall['ci_high']:.3f}]",
                         "truncated": f"{row['truncated_chunks'] / row['chunks']:.0%}", "chunks": int(row["chunks"]),
                         "context tokens@5": round(summary.loc[(v.key, "context_tokens", K, 0), "mean"]),
                         **{k: round(x, 3) for k, x in budgets.items()},
                         "model - cl100k": "" if tokenizer != "model" else
                         f"{diff['diff']:+.3f} [{diff['ci_low']:+.3f}, {diff['ci_high']:+.3f}]"})
    texts = [d.text for d in dataset.documents]
    pieces = sum(len(ids) for ids in embedder.tokenizer(texts, add_special_tokens=False)["input_ids"])
    info = {"dataset": dataset.name, "questions": len(dataset.questions), "documents": len(dataset.documents),
            "model": embedder.name, "window": embedder.max_tokens,
            "ratio": pieces / sum(TiktokenTokenizer("cl100k_base").count_many(texts))}
    return pd.DataFrame(rows).astype(object).fillna(""), info


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", type=Path, action="append", help="dataset folder (repeatable; default chroma_small)")
    p.add_argument("--cache", type=Path, default=REPO / "results" / "cache")
    p.add_argument("--out", type=Path, default=BENCH / "archive" / "tokenizer_default.md")
    args = p.parse_args()
    parts = [header("Sizing in cl100k tokens or in the model's tokens"), f"\n{__doc__.split(chr(10) * 2)[1]}\n"]
    for data in args.data or [SMALL]:
        table, info = measure(data, args.cache)
        parts.append(f"\n## {info['dataset']}: {info['documents']} documents, {info['questions']} questions, "
                     f"{info['model']} (window {info['window']} word pieces); {info['ratio']:.2f} word pieces per "
                     f"cl100k token\n\n{table.to_markdown(index=False)}\n")
        print(parts[-1], flush=True)
    args.out.write_text("".join(parts), encoding="utf-8")


if __name__ == "__main__":
    main()
