"""The Ray engine against the in-process run: the same cold sweep (bench.scale's GRID on the smallest
documents of a shared dataset, each run on an empty cache folder) embedded in this process, then on
a local Ray instance with 1 and with 2 workers, after an untimed warm-up sweep (the driver's own
imports and model loads would otherwise fall on whichever run is first). Writes bench/ray_scale.md
(until 6 Dec a section of bench/scale.md, which scale.py's next run overwrote) with wall times, the
1-to-2-worker ratio and whether every table and cached vector equals the in-process run's.

Every Embedder has threads=1, so that 2 workers use the 2 CPUs of the local instance and each
computes what the in-process run does (torch's float sums change with the thread count).

Run from the repo root: python -m bench.ray_scale  (about 10 minutes on 2 busy cores; needs ../shared)
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
from pathlib import Path

import pandas as pd
import ray

from bench.harness import BENCH, SHARED, Start, header, lap
from bench.scale import GRID, smallest
from workbench.ingest import load_dataset
from workbench.models.cache import cache_file
from workbench.models.embed import Embedder
from workbench.run.engine import LOCAL_CPUS, RayEngine
from workbench.run.session import sweep
from workbench.variant import parse_variant


def run(dataset, cache: Path, engine: RayEngine | None) -> dict:
    """One cold sweep; its wall time, what it embedded, its tables and its cached vectors."""
    embedder = Embedder(cache_dir=cache, threads=1, progress=False, engine=engine)
    result, took = lap(lambda: sweep(dataset, [parse_variant(v) for v in GRID], embedder=embedder, store=cache,
                                     progress=False))
    with sqlite3.connect(cache_file(cache, "embeddings", embedder.fingerprint)) as db:
        vectors = dict(db.execute("SELECT key, v FROM vec"))
    return {"wall_s": took.wall_s, "texts_embedded": result.provenance.computed.texts_embedded, "result": result,
            "vectors": vectors}


def same(a: dict, b: dict) -> bool:
    tables = ("per_question", "summary", "hits")
    return a["vectors"] == b["vectors"] and all(getattr(a["result"], t).equals(getattr(b["result"], t)) for t in tables)


def markdown(rows: pd.DataFrame, args: argparse.Namespace, n_chars: int, n_questions: int, start: Start) -> str:
    ratio = rows.loc[rows.engine == "ray, 1 worker", "wall_s"].item() / rows.loc[rows.engine == "ray, 2 workers",
                                                                                   "wall_s"].item()
    return "\n".join([
        header("Ray engine: the same sweep in-process and on a local Ray instance with 1 and 2 workers", start),
        f"A {LOCAL_CPUS}-CPU local Ray instance on a machine shared with other jobs. "
        f"{args.data}: {n_chars:,} characters, {n_questions:,} questions; grid {', '.join(GRID)}; every run "
        "cold (its own empty cache folder) after an untimed warm-up sweep of one document in this process, "
        "threads=1 per model. wall_s includes Ray's actors loading the model (a few seconds each), not Ray's "
        "start.",
        "",
        rows.to_markdown(index=False, floatfmt=".1f"),
        "",
        f"1 worker / 2 workers: {ratio:.2f}x. Only the embedding of uncached texts runs on the workers; "
        "chunking, FAISS builds and scoring stay in the driver, so the ratio is bounded by their share.",
        "",
    ])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default="chroma_general=3", metavar="NAME=N",
                   help="the shared dataset and how many of its smallest documents (default: %(default)s)")
    p.add_argument("--out", type=Path, default=BENCH / "ray_scale.md")
    args = p.parse_args()
    start = Start()
    name, n = args.data.split("=")
    dataset = smallest(load_dataset(SHARED / name), int(n))
    rows, runs = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        run(smallest(dataset, 1), Path(tmp) / "warm-up", None)  # the driver's one-off loads, untimed
        runs["in-process"] = run(dataset, Path(tmp) / "local", None)
        ray.init(num_cpus=LOCAL_CPUS, include_dashboard=False, log_to_driver=False)
        for workers in (1, 2):
            label = f"ray, {workers} worker{'s' * (workers > 1)}"
            with RayEngine(workers=workers) as engine:
                runs[label] = run(dataset, Path(tmp) / label, engine)
        ray.shutdown()
    for label, r in runs.items():
        rows.append({"engine": label, "texts_embedded": r["texts_embedded"], "wall_s": r["wall_s"],
                     "equal_to_in_process": same(r, runs["in-process"])})
    text = markdown(pd.DataFrame(rows), args, dataset.n_chars, len(dataset.questions), start)
    args.out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
