"""The Ray engine against the in-process run: the same cold sweep (scale.py's GRID on the smallest
documents of a shared dataset, each run on an empty cache folder) embedded in this process, then on
a local Ray instance with 1 and with 2 workers, after an untimed warm-up sweep (the driver's own
imports and model loads would otherwise fall on whichever run is first). Writes its section of
bench/scale.md (between the markers below; the rest of the file is scale.py's) with wall times,
the 1-to-2-worker ratio and whether every table and cached vector equals the in-process run's.

Every Embedder has threads=1, so that 2 workers use the 2 CPUs of the local instance and each
computes what the in-process run does (torch's float sums change with the thread count).

Run from the repo root: python bench/ray_scale.py  (about 10 minutes on 2 busy cores; needs ../shared)
"""

from __future__ import annotations

import argparse
import datetime
import platform
import sqlite3
import subprocess
import tempfile
import time
from pathlib import Path

import pandas as pd
import ray
from scale import GRID, REPO, SHARED, smallest

from workbench.ingest import load_dataset
from workbench.models.cache import cache_file
from workbench.models.embed import Embedder
from workbench.run.engine import LOCAL_CPUS, RayEngine
from workbench.run.session import sweep
from workbench.variant import parse_variant

BEGIN, END = "<!-- ray_scale.py begin -->", "<!-- ray_scale.py end -->"


def run(dataset, cache: Path, engine: RayEngine | None) -> dict:
    """One cold sweep; its wall time, what it embedded, its tables and its cached vectors."""
    embedder = Embedder(cache_dir=cache, threads=1, progress=False, engine=engine)
    t0 = time.perf_counter()
    result = sweep(dataset, [parse_variant(v) for v in GRID], embedder=embedder, store=cache, progress=False)
    wall = time.perf_counter() - t0
    with sqlite3.connect(cache_file(cache, "embeddings", embedder.fingerprint)) as db:
        vectors = dict(db.execute("SELECT key, v FROM vec"))
    return {"wall_s": wall, "texts_embedded": result.provenance.computed.texts_embedded, "result": result,
            "vectors": vectors}


def same(a: dict, b: dict) -> bool:
    tables = ("per_question", "summary", "hits")
    return a["vectors"] == b["vectors"] and all(getattr(a["result"], t).equals(getattr(b["result"], t)) for t in tables)


def section(rows: pd.DataFrame, args: argparse.Namespace, n_chars: int, n_questions: int) -> str:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO).stdout
    ratio = rows.loc[rows.engine == "ray, 1 worker", "wall_s"].item() / rows.loc[rows.engine == "ray, 2 workers",
                                                                                   "wall_s"].item()
    return "\n".join([
        BEGIN,
        "## Ray engine: the same sweep in-process and on a local Ray instance with 1 and 2 workers",
        "",
        f"{datetime.date.today()}, {platform.machine()}, {LOCAL_CPUS}-CPU local Ray instance on a 2-core machine "
        f"shared with other jobs; commit {commit.strip()}; `python bench/ray_scale.py --data {args.data}`. "
        f"{args.data}: {n_chars:,} characters, {n_questions:,} questions; grid {', '.join(GRID)}; every run "
        "cold (its own empty cache folder) after an untimed warm-up sweep of one document in this process, "
        "threads=1 per model. wall_s includes Ray's actors loading the model (a few seconds each), not Ray's "
        "start.",
        "",
        rows.to_markdown(index=False, floatfmt=".1f"),
        "",
        f"1 worker / 2 workers: {ratio:.2f}x. Only the embedding of uncached texts runs on the workers; "
        "chunking, FAISS builds and scoring stay in the driver, so the ratio is bounded by their share.",
        END,
    ])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default="chroma_general=3", metavar="NAME=N",
                   help="the shared dataset and how many of its smallest documents (default: %(default)s)")
    p.add_argument("--md", type=Path, default=REPO / "bench" / "scale.md")
    args = p.parse_args()
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
    text = section(pd.DataFrame(rows), args, dataset.n_chars, len(dataset.questions))
    md = args.md.read_text(encoding="utf-8")
    before, found, rest = md.partition(BEGIN)  # this script's section replaced, or added at the end
    after = rest.partition(END)[2] if found else "\n"
    args.md.write_text(before.rstrip("\n") + "\n\n" + text + after, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
