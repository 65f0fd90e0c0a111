"""Our fixed-token chunker and precision-Ω against Chroma's published definitions.

Chroma's "Evaluating Chunking Strategies for Retrieval" (Smith & Troynikov, 2024) scores chunkers on
this very dataset (chroma_general). This bench re-implements, independently and from their
documented behaviour, the two things needed to compare with our numbers:

- their FixedTokenChunker: encode the corpus with tiktoken, take windows of `size` token ids
  stepping by `size - overlap` (the last window ends at the last token), decode each window;
- their chunk locating: a decoded chunk is found in the corpus by text search (one trailing "."
  dropped, first exact occurrence, else a case- and whitespace-insensitive match); their last
  resort, a fuzzy sentence match (fuzzywuzzy, not installed here), is counted as a failure;
- their precision-Ω: every chunk whose closed range meets an excerpt (touching counts) is
  retrieved; Ω = |excerpts ∩ chunks| / |excerpts ∪ chunks|, computed here on plain character sets.

Run: python -m bench.chroma_metrics [dataset folder]   (about a minute; prints a Markdown table, which
bench/chroma_metrics.md keeps with a reading written by hand)
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bench.harness import SHARED, header, lap, table
from workbench.chunkers import ChunkEnv, run_strategy
from workbench.core.tokens import tiktoken_encoding
from workbench.dataset import Dataset
from workbench.evaluation.metrics import score_omega
from workbench.ingest import load_dataset
from workbench.variant import Variant

CONFIGS = ((800, 400), (400, 200), (250, 125), (200, 0))  # (size, overlap) in cl100k_base tokens
DEFAULT_DATA = SHARED / "chroma_general"
# The report's results table could not be retrieved offline (see bench/chroma_metrics.md): no values.
PUBLISHED: dict[tuple[int, int], float] = {}


def chroma_split(text: str, size: int, overlap: int, encoding: str = "cl100k_base") -> list[str]:
    """Chroma's FixedTokenChunker output: decoded windows of token ids."""
    enc = tiktoken_encoding(encoding)
    ids = enc.encode(text)
    out, start = [], 0
    while start < len(ids):
        out.append(enc.decode(ids[start : start + size]))
        if start + size >= len(ids):
            break
        start += size - overlap
    return out


def chroma_locate(corpus: str, chunk: str) -> tuple[int, int, str] | None:
    """Where Chroma's evaluation places a chunk: (start, end, how) or None when only their fuzzy
    sentence matching could have placed it."""
    target = chunk[:-1] if chunk.endswith(".") else chunk
    at = corpus.find(target)
    if at >= 0:
        return at, at + len(target), "exact"
    words = " ".join(target.split()).split()
    m = re.compile(r"\s*".join(map(re.escape, words)), re.IGNORECASE).search(corpus) if words else None
    return (m.start(), m.end(), "regex") if m else None


def chroma_omega(
    excerpts: Sequence[tuple[int, int]], chunks: Sequence[tuple[int, int]], touching: bool = True
) -> float:
    """Chroma's precision-Ω of one question on character sets (one corpus)."""
    relevant = set().union(*(range(s, e) for s, e in excerpts))

    def meets(c: tuple[int, int], r: tuple[int, int]) -> bool:
        lo, hi = max(c[0], r[0]), min(c[1], r[1])
        return lo <= hi if touching else lo < hi

    picked = set().union(*(range(s, e) for s, e in chunks if any(meets((s, e), r) for r in excerpts)))
    union = relevant | picked
    return len(relevant & picked) / len(union) if union else 0.0


def question_excerpts(dataset: Dataset) -> list[tuple[str, list[tuple[int, int]]]]:
    out = []
    for q in dataset.questions:
        docs = {a.doc_id for a in q.answers}
        if len(docs) != 1:
            raise ValueError(f"{q.qid}: Chroma's questions have all excerpts in one corpus, got {sorted(docs)}")
        out.append((docs.pop(), [(a.start, a.end) for a in q.answers]))
    return out


def compare(dataset: Dataset, size: int, overlap: int) -> dict[str, float]:
    """Ours vs Chroma's definitions for one configuration."""
    env = ChunkEnv()
    tok = env.tokenizer("cl100k_base")
    v = Variant.make("fixed", size=size, overlap=overlap, unit="tokens", tokenizer="cl100k_base")
    ours = [c for d in dataset.documents for c in run_strategy(v.strategy, v.kwargs, d, env)]
    ours_by_doc: dict[str, list[tuple[int, int]]] = {}
    for c in ours:
        ours_by_doc.setdefault(c.doc_id, []).append((c.start, c.end))

    theirs_by_doc: dict[str, list[tuple[int, int]]] = {}
    theirs_tokens, how = [], {"exact": 0, "regex": 0, "failed": 0, "trimmed": 0, "moved": 0}
    for d in dataset.documents:
        our_spans = set(ours_by_doc.get(d.doc_id, []))
        our_starts = {s for s, _ in our_spans}
        for text in chroma_split(d.text, size, overlap):
            theirs_tokens.append(tok.count(text))
            found = chroma_locate(d.text, text)
            if found is None:
                how["failed"] += 1
                continue
            start, end, kind = found
            how[kind] += 1
            if (start, end) not in our_spans:  # a trailing "." dropped, or an earlier copy of the text found
                how["trimmed" if start in our_starts else "moved"] += 1
            theirs_by_doc.setdefault(d.doc_id, []).append((start, end))

    excerpts = question_excerpts(dataset)
    omega_ours = score_omega(dataset.questions, [c.returned for c in ours])["value"].to_numpy()
    on_ours = [chroma_omega(ex, ours_by_doc.get(doc, []), touching=False) for doc, ex in excerpts]
    on_ours_touch = [chroma_omega(ex, ours_by_doc.get(doc, [])) for doc, ex in excerpts]
    pipeline = [chroma_omega(ex, theirs_by_doc.get(doc, [])) for doc, ex in excerpts]
    return {
        "chunks_ours": len(ours),
        "chunks_chroma": len(theirs_tokens),
        "tokens_ours": float(np.mean([tok.count(c.text) for c in ours])),
        "tokens_chroma": float(np.mean(theirs_tokens)),
        "omega_ours": float(omega_ours.mean()),
        "omega_chroma_def_on_our_chunks": float(np.mean(on_ours)),
        "max_abs_diff_strict": float(np.max(np.abs(np.array(on_ours) - omega_ours))),
        "omega_chroma_def_touching": float(np.mean(on_ours_touch)),
        "omega_chroma_pipeline": float(np.mean(pipeline)),
        **{f"located_{k}": float(n) for k, n in how.items()},
    }


def row(size: int, overlap: int, r: dict[str, float]) -> list[str]:
    pub = PUBLISHED.get((size, overlap))
    return [f"{size}/{overlap}", f"{r['chunks_ours']} / {r['chunks_chroma']}",
            f"{r['tokens_ours']:.1f} / {r['tokens_chroma']:.1f}", f"{100 * r['omega_ours']:.2f}%",
            f"{100 * r['omega_chroma_def_on_our_chunks']:.2f}% (max abs Δ {r['max_abs_diff_strict']:.1e})",
            f"{100 * r['omega_chroma_def_touching']:.2f}%", f"{100 * r['omega_chroma_pipeline']:.2f}%",
            f"{100 * (r['omega_chroma_pipeline'] - r['omega_ours']):+.2f} pt",
            f"{r['located_exact']:.0f} / {r['located_regex']:.0f} / {r['located_failed']:.0f}",
            f"{r['located_trimmed']:.0f} / {r['located_moved']:.0f}", "n/a" if pub is None else f"{100 * pub:.1f}%"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("data", type=Path, nargs="?", default=DEFAULT_DATA, help="dataset folder (default: %(default)s)")
    dataset = load_dataset(p.parse_args().data)
    print(header("Fixed-token chunks and precision-Ω against Chroma's definitions"))
    print(f"dataset {dataset.name}: {len(dataset.documents)} documents, {len(dataset.questions)} questions\n")
    rows = []
    for size, overlap in CONFIGS:
        r, took = lap(lambda size=size, overlap=overlap: compare(dataset, size, overlap))
        rows.append(row(size, overlap, r))
        print(f"<!-- {size}/{overlap}: {took.wall_s:.1f} s -->", file=sys.stderr, flush=True)
    print(table(["size/overlap", "chunks ours / Chroma", "mean tokens ours / Chroma", "Ω ours",
                 "Ω Chroma def. (strict) on our chunks", "Ω + touching chunks", "Ω Chroma pipeline",
                 "Δ pipeline − ours", "placed exact / regex / failed", "trimmed / moved", "published"], rows))


if __name__ == "__main__":
    main()
