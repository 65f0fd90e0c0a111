"""Scale study: how the headless sweep's wall time and peak memory grow with the corpus and the
questions, and whether memory grows with the number of variants in one sweep.

Every measurement is `python -m workbench sweep --no-report --quiet` as a subprocess, on a
subset written to a temporary folder (corpus.jsonl + questions.jsonl), with an empty cache
folder (cold) unless said otherwise. Peak RSS is the subprocess's own ru_maxrss (os.wait4).
Subsets keep the n smallest documents and only the questions whose evidence lies in them
(Dataset.select), so every answer span stays valid and the sizes are nested.

Sizes: each dataset at 3 document counts with GRID, cold; the largest again on its cache (warm).
Variants: 1, 3 and 6 fixed-size variants of nearly the same size (similar indexes) on one
subset, cold (own cache each), then warm on the 6-variant cache; then, in this process, what a
variant's result tables hold per row (the memory a sweep keeps per variant).

Approximate search (`--only ann`, a few minutes, also part of the full run): flat against IVF and HNSW
(workbench.retrieval.ann) at three corpus sizes, in this process. Real vectors: the fixed:size=256
chunks of squad's DISTRACTOR_DOCS smallest documents and the questions of its DISTRACTOR_BASE smallest,
embedded by the bundled model into --cache (so a re-run embeds nothing); each size adds noisy copies of
the chunk vectors (cosine about 0.7 to their original) up to ANN_SIZES vectors. Per index: build time,
bytes on disk, RSS added by reading it (heap, and memory-mapped), search time per question and recall@10
against exact search. Then distractors: the same questions swept (recall@5) on their documents plus 0, a
few and all the other DISTRACTOR_DOCS documents (Dataset.with_distractors).

Runs go cheapest first, the two datasets interleaved; a run still going at --until is killed
and the rest are skipped (listed in the .md), so the largest sizes are the ones a busy machine drops.

Run from the repo root: python -m bench.scale  (about 40 minutes on 2 busy cores; needs ../shared)
"""

from __future__ import annotations

import argparse
import ctypes
import datetime
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import faiss
import numpy as np
import pandas as pd
import psutil

from bench.harness import BENCH, REPO, SHARED, Start, header, lap, stamp, table
from workbench.core.io import CACHE_DIR
from workbench.dataset import Dataset
from workbench.ingest import load_dataset
from workbench.models.embed import Embedder
from workbench.retrieval.ann import Ann, recall
from workbench.retrieval.index import IndexStore, flat_index
from workbench.run.session import sweep, sweep_steps
from workbench.variant import parse_variant

SIZES = {"squad_v11_dev": (12, 24, 48), "chroma_general": (3, 4, 5)}  # documents kept, smallest first
GRID = ("fixed:size=256", "recursive:size=512,overlap=102")  # overlap 102 tokens = 20% of 512
SAME_SIZE = tuple(f"fixed:size={s}" for s in (256, 254, 252, 250, 248, 246))  # the variant-count study
VARIANT_COUNTS = (1, 3, 6)
STUDY = "squad_v11_dev=4"
COMPACT = {"key": "category", "variant": "category", "qid": "category", "metric": "category", "k": "int16",
           "budget": "int16"}  # per_question dtypes that would hold the same values in fewer bytes
INT_COLUMNS = ("documents", "characters", "questions", "chunks", "texts_embedded", "indexes_built")
COLUMNS = ["dataset", "cache", "variants", "documents", "characters", "questions", "chunks", "texts_embedded",
           "indexes_built", "wall_s", "build_s", "peak_rss_mb"]
ANN_SIZES = (5_000, 20_000, 50_000)  # vectors in the index
ANNS = (Ann("ivf", above=0), Ann("hnsw", above=0))  # the defaults but the threshold
DISTRACTOR_VARIANT = "fixed:size=256"
DISTRACTOR_DOCS, DISTRACTOR_BASE, DISTRACTOR_COUNTS = 9, 3, (0, 3, 6)  # squad: smallest 9; questions of 3
ANN_HEADING = "## Approximate search (IVF, HNSW) and distractors"


@dataclass(frozen=True)
class Run:
    section: str  # "sizes" or "variants"
    dataset: str
    n_docs: int
    cache: str  # folder name under the run's temporary folder
    state: str  # "cold" (the folder is new) or "warm"
    variants: tuple[str, ...]


def smallest(dataset: Dataset, n_docs: int) -> Dataset:
    """The n smallest documents and the questions whose every evidence span lies in them."""
    docs = sorted(dataset.documents, key=lambda d: (len(d.text), d.doc_id))[:n_docs]
    return dataset.select([d.doc_id for d in docs])


def write_dataset(dataset: Dataset, folder: Path) -> Path:
    """The shared on-disk format (corpus.jsonl + questions.jsonl) that `sweep --data` reads."""
    folder.mkdir(parents=True)
    docs = [{"doc_id": d.doc_id, "title": d.title, "text": d.text} | ({"group": d.group} if d.group else {})
            for d in dataset.documents]
    questions = [{"qid": q.qid, "question": q.question,
                  "answers": [{"doc_id": a.doc_id, "start": a.start, "end": a.end} for a in q.answers]}
                 for q in dataset.questions]
    for name, rows in (("corpus.jsonl", docs), ("questions.jsonl", questions)):
        (folder / name).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return folder


def run_sweep(data: Path, cache: Path, variants: tuple[str, ...], until: datetime.datetime) -> dict:
    """Wall time and peak RSS of one CLI sweep, with what it did (from its config and variants
    table); a sweep still running at `until` is killed and gives only its time so far."""
    out = cache.parent / f"out-{time.monotonic_ns()}"
    cmd = [sys.executable, "-m", "workbench", "sweep", "--data", str(data), "--cache", str(cache),
           "--out", str(out), "--no-report", "--quiet", *(a for v in variants for a in ("-v", v))]
    with open(out.with_suffix(".log"), "w+") as log:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=REPO)
        while True:  # os.wait4: this child's own peak RSS (RUSAGE_CHILDREN is the max over all children)
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if datetime.datetime.now(datetime.UTC) > until:
                proc.kill()
                os.wait4(proc.pid, 0)
                return {"killed_after_s": round(time.perf_counter() - t0)}
            time.sleep(0.2)
        wall = time.perf_counter() - t0
        if os.waitstatus_to_exitcode(status):
            log.seek(0)
            raise SystemExit(f"{' '.join(cmd)} failed:\n{log.read()}")
    config = json.loads((out / "config.json").read_text())
    table = pd.read_csv(out / "variants.csv")
    return {"documents": config["documents"], "characters": config["characters"], "questions": config["questions"],
            "chunks": int(table["chunks"].sum()), "texts_embedded": config["texts_embedded"],
            "indexes_built": int(table["built"].sum()), "wall_s": wall,
            "build_s": float(table.loc[table["built"], "seconds"].sum()), "peak_rss_mb": usage.ru_maxrss / 1024}


def plan(sizes: dict[str, tuple[int, ...]], study: tuple[str, int]) -> list[Run]:
    """Every run, cheapest first: the datasets' sizes interleaved (largest warm right after its
    cold run), the variant study after the smallest sizes."""
    runs = []
    for rank in range(max(map(len, sizes.values()))):
        for name, counts in sizes.items():
            if rank < len(counts):
                n = counts[rank]
                runs.append(Run("sizes", name, n, f"{name}-{n}", "cold", GRID))
                if rank == len(counts) - 1:
                    runs.append(Run("sizes", name, n, f"{name}-{n}", "warm", GRID))
        if rank == 0:
            name, n = study
            runs += [Run("variants", name, n, f"study-{c}", "cold", SAME_SIZE[:c]) for c in VARIANT_COUNTS]
            last = f"study-{VARIANT_COUNTS[-1]}"  # its cache holds every variant of the study
            runs += [Run("variants", name, n, last, "warm", SAME_SIZE[:c]) for c in VARIANT_COUNTS]
    return runs


def measure(runs: list[Run], tmp: Path, until: datetime.datetime) -> pd.DataFrame:
    loaded: dict[str, Dataset] = {}
    rows = []
    for run in runs:
        data = tmp / f"{run.dataset}-{run.n_docs}-data"
        if not data.exists():
            full = loaded.setdefault(run.dataset, load_dataset(SHARED / run.dataset))
            write_dataset(smallest(full, run.n_docs), data)
        row = {"section": run.section, "dataset": run.dataset, "cache": run.state, "variants": len(run.variants),
               "n_docs": run.n_docs}
        if datetime.datetime.now(datetime.UTC) > until:
            row["skipped"] = "yes"
        else:
            row |= run_sweep(data, tmp / run.cache, run.variants, until)
        rows.append(row)
        print(json.dumps(row), flush=True)
    return pd.DataFrame(rows)


def held_per_variant(study: tuple[str, int], cache: Path) -> pd.DataFrame:
    """Bytes per per_question row by column, as swept and in COMPACT dtypes, from the study's warm
    cache (a sweep keeps this table for every variant until it returns)."""
    name, n = study
    dataset = smallest(load_dataset(SHARED / name), n)
    result = sweep(dataset, [parse_variant(v) for v in SAME_SIZE], embedder=Embedder(cache_dir=cache, progress=False),
                   store=IndexStore(cache), progress=False)
    pq = result.per_question
    return pd.DataFrame({"dtype": pq.dtypes.astype(str),
                         "bytes_per_row": pq.memory_usage(deep=True, index=False) / len(pq),
                         "compact_dtype": pd.Series(COMPACT).reindex(pq.columns).fillna(pq.dtypes.astype(str)),
                         "compact_bytes_per_row": pq.astype(COMPACT).memory_usage(deep=True, index=False) / len(pq),
                         }).rename_axis("column").reset_index().assign(
        rows_per_question=len(pq) / len(dataset.questions) / len(SAME_SIZE))


def rss_per_step(name: str, cache: Path) -> pd.DataFrame:
    """This process's RSS after each step of a cold `sweep_steps` of SAME_SIZE on the smallest
    document (steps kept, as `sweep` keeps them), before and after glibc's malloc_trim: live
    memory versus freed heap the allocator has not returned (which ru_maxrss also counts)."""
    libc = ctypes.CDLL("libc.so.6")
    me = psutil.Process()
    steps, rows = [], []
    embedder = Embedder(cache_dir=cache, progress=False)
    dataset = smallest(load_dataset(SHARED / name), 1)
    for step in sweep_steps(dataset, [parse_variant(v) for v in SAME_SIZE], embedder=embedder, store=IndexStore(cache),
                            progress=False):
        steps.append(step)
        gc.collect()
        before = me.memory_info().rss / 2**20
        libc.malloc_trim(0)
        rows.append({"variants": len(steps), "rss_mb": before, "rss_after_trim_mb": me.memory_info().rss / 2**20})
    return pd.DataFrame(rows)


def slope(x: pd.Series, y: pd.Series) -> float:
    """Growth exponent: the slope of log y on log x (1 = linear)."""
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def linear_fit(rows: pd.DataFrame, y: str) -> tuple[float, float, float]:
    """Least squares y = base + a * (characters / 1000) + b * (questions / 1000): (base, a, b)."""
    design = np.column_stack([np.ones(len(rows)), rows["characters"] / 1000, rows["questions"] / 1000])
    base, a, b = np.linalg.lstsq(design, rows[y].to_numpy(dtype=float), rcond=None)[0]
    return float(base), float(a), float(b)


def md_table(rows: pd.DataFrame, columns: list[str]) -> str:
    def cell(v: object) -> str:
        if isinstance(v, float):
            return f"{v:,.1f}" if not v.is_integer() or abs(v) < 100 else f"{v:,.0f}"
        return f"{v:,}" if isinstance(v, int | np.integer) else str(v)

    return table(columns, [list(map(cell, r)) for r in rows[columns].itertuples(index=False)])  # dtypes kept


def growth(cold: pd.DataFrame) -> str:
    """Per dataset: exponents of time and peak RSS in characters and questions, and the linear
    slopes; over both datasets, the least-squares fit in characters and questions together."""
    lines = ["| dataset | time ~ chars^ | time ~ questions^ | RSS ~ chars^ | RSS ~ questions^ | s per 1k chars "
             "| MB per 1k chars |",
             "|---|---|---|---|---|---|---|"]
    for name, g in cold.groupby("dataset", sort=False):
        if len(g) < 2:
            continue
        lines.append(f"| {name} | {slope(g.characters, g.wall_s):.2f} | {slope(g.questions, g.wall_s):.2f} "
                     f"| {slope(g.characters, g.peak_rss_mb):.2f} | {slope(g.questions, g.peak_rss_mb):.2f} "
                     f"| {np.polyfit(g.characters / 1000, g.wall_s, 1)[0]:.3f} "
                     f"| {np.polyfit(g.characters / 1000, g.peak_rss_mb, 1)[0]:.3f} |")
    if len(cold) >= 3:
        for y, unit in (("wall_s", "s"), ("peak_rss_mb", "MB")):
            base, a, b = linear_fit(cold, y)
            lines.append(f"\n{y} = {base:.1f} {unit} + {a:.3f} {unit} per 1k characters + {b:.3f} {unit} per 1k "
                         f"questions (least squares over the {len(cold)} cold runs of both datasets)")
    return "\n".join(lines)


def per_variant(variants: pd.DataFrame) -> str:
    """Peak RSS added per variant (least-squares slope over the variant counts), cold and warm."""
    parts = [f"{state} {np.polyfit(g.variants, g.peak_rss_mb, 1)[0]:.1f} MB"
             for state, g in variants.groupby("cache", sort=False) if g["variants"].nunique() > 1]
    return "Peak RSS per added variant (slope over the variant counts): " + ", ".join(parts) + "." if parts else ""


def markdown(rows: pd.DataFrame, held: pd.DataFrame | None, trim: pd.DataFrame, args: argparse.Namespace,
             start: Start) -> str:
    done = rows[rows["wall_s"].notna()] if "wall_s" in rows else rows.iloc[:0]
    done = done.astype({c: int for c in INT_COLUMNS if c in done})  # NaN of unmeasured runs made them floats
    sizes, variants = (done[done["section"] == s] for s in ("sizes", "variants"))
    missing = rows[rows["wall_s"].isna()] if "wall_s" in rows else rows
    sizes_txt = "; ".join(f"{k}: {', '.join(map(str, v))}" for k, v in args.sizes.items())
    out = [f"""{header("Scale: sweep time and memory against corpus size, questions and variants", start)}
Shared with other engineers' jobs while this ran, so times are rough: read the ratios and growth exponents
({start.elapsed_s() / 60:.0f} minutes).

Each row is one `python -m workbench sweep --no-report --quiet` subprocess (tables only: no
plots and no report.html, which would add their own cost; default ks and budgets), on a subset
of a shared dataset written to a temporary folder: the n smallest documents ({sizes_txt}) and
only the questions whose evidence lies in them, so every span stays valid and sizes are nested.
chroma_general has 5 documents of very different sizes (finance alone is 51% of it), so its
sizes are 3, 4 and 5 documents. Cold = an empty cache folder (every text embedded, every index
built); warm = the same command again on that cache. wall_s is the subprocess's wall time (model
load included); build_s the sum of the variants' index builds (chunk, embed, FAISS); peak_rss_mb
the subprocess's ru_maxrss.

Grid: {', '.join(f'`{v}`' for v in GRID)} (overlap = 20% of 512). No semantic variant: on the
full corpora `semantic:breakpoint_percentile=95` would add the embedding of every sentence group
(10,474 on squad, 11,468 on chroma_general, against 2,150 and 2,126 chunks for the two variants
together), so its rows would measure that embedding more than the corpus's growth; what each
strategy costs against `fixed` is bench/chunker_costs.md's table.

## Sizes

{md_table(sizes, COLUMNS)}

## Growth (cold runs)

Exponents are slopes on log-log over each dataset's cold runs (1 = linear). Within a dataset
characters and questions grow together; the two datasets differ in questions per character
(squad about 6.6 per 1k characters, chroma_general about 0.3), which is what separates the two
terms of the least-squares fit.

{growth(sizes[sizes["cache"] == "cold"])}

## Variants in one sweep

{', '.join(f'`{v}`' for v in SAME_SIZE)}: the first 1, 3 and 6, on `{args.study}` documents.
Cold runs have their own empty cache each; warm runs use the 6-variant cache.

{md_table(variants, COLUMNS)}

{per_variant(variants)}
"""]
    if held is not None:
        pq_row = held["bytes_per_row"].sum()
        per_q = held['rows_per_question'].iloc[0]
        swept_mb = 10_570 * per_q * pq_row / 2**20
        compact_mb = 10_570 * per_q * held['compact_bytes_per_row'].sum() / 2**20
        columns = ["column", "dtype", "bytes_per_row", "compact_dtype", "compact_bytes_per_row"]
        out.append(f"""What a variant's result holds, per row of `per_question` (in this process, `wb.sweep` of the 6
variants on the warm cache; {held['rows_per_question'].iloc[0]:.0f} rows per question per variant, so
{pq_row:.0f} bytes per row is {pq_row * held['rows_per_question'].iloc[0] / 1024:.1f} KiB per question per variant;
compact = the same values in the dtypes beside them). At squad_v11_dev's 10,570 questions that is
{swept_mb:.0f} MB per variant as swept, {compact_mb:.0f} MB compact:

{md_table(held.drop(columns="rows_per_question"), columns)}
""")
    study = args.study.partition("=")[0]
    out.append(f"""In this process, a cold `sweep_steps` of the 6 variants on the smallest {study} document, steps
kept: RSS after each step, and after glibc's `malloc_trim(0)` returns the freed heap to the system
(live memory grows {np.polyfit(trim.variants, trim.rss_after_trim_mb, 1)[0]:.1f} MB per variant after trimming,
{np.polyfit(trim.variants, trim.rss_mb, 1)[0]:.1f} MB before):

{md_table(trim, ["variants", "rss_mb", "rss_after_trim_mb"])}
""")
    if len(missing):
        out.append("## Not measured (the run's --until was reached)\n\n"
                   + md_table(missing.astype(object).fillna(""),
                              [c for c in ("section", "dataset", "cache", "variants", "n_docs", "killed_after_s",
                                           "skipped") if c in missing]) + "\n")
    return "\n".join(out)


def distractor_data() -> tuple[Dataset, Dataset]:
    """(squad's DISTRACTOR_DOCS smallest documents, the same with only the questions of its
    DISTRACTOR_BASE smallest)."""
    pool = smallest(load_dataset(SHARED / "squad_v11_dev"), DISTRACTOR_DOCS)
    base = smallest(pool, DISTRACTOR_BASE)
    return pool, Dataset(pool.name, pool.documents, base.questions)


def rss_added(read: Callable[[], faiss.Index]) -> tuple[faiss.Index, float]:
    """(what `read` returns, the RSS in MB it added)."""
    gc.collect()
    before = psutil.Process().memory_info().rss
    value = read()
    return value, (psutil.Process().memory_info().rss - before) / 2**20


def ann_study(cache: Path, tmp: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(flat, IVF and HNSW at each of ANN_SIZES, the distractor sweeps): see the module docstring."""
    pool, asked = distractor_data()
    embedder = Embedder(cache_dir=cache, progress=False)
    variant = parse_variant(DISTRACTOR_VARIANT)
    sweeps = []
    for n in DISTRACTOR_COUNTS:
        data = asked.with_distractors(n)
        r = sweep(data, [variant], ks=(5,), budgets=(), embedder=embedder, store=IndexStore(cache), progress=False)
        row = r.summary.query("metric == 'recall'").iloc[0]
        sweeps.append({"distractors": n, "documents": len(data.documents), "chunks": int(r.variants["chunks"][0]),
                       "questions": len(data.questions), "recall@5": row["mean"], "ci_low": row["ci_low"],
                       "ci_high": row["ci_high"]})
        print(json.dumps(sweeps[-1]), flush=True)
    entry = IndexStore(cache).get(variant, pool, embedder)  # the last sweep's: every document of the pool
    real = entry.exact.reconstruct_n(0, entry.exact.ntotal)
    queries = embedder.encode([q.question for q in asked.questions])
    rng = np.random.default_rng(0)
    rows = []
    for size in ANN_SIZES:
        base = real[rng.integers(0, len(real), size - len(real))]
        noisy = base + rng.standard_normal(base.shape, dtype=np.float32) / np.sqrt(base.shape[1])
        vectors = np.concatenate([real, noisy / np.linalg.norm(noisy, axis=1, keepdims=True)]).astype(np.float32)
        exact, took = lap(partial(flat_index, vectors))
        builds = {"flat": (exact, took.wall_s)}
        for ann in ANNS:
            index, took = lap(partial(ann.build, vectors))
            builds[ann.name(size)] = (index, took.wall_s)
        del vectors
        for name, (index, build_s) in builds.items():
            file = tmp / f"ann-{size}.faiss"
            faiss.write_index(index, str(file))
            row = {"vectors": size, "index": name, "build_s": build_s, "file_mb": file.stat().st_size / 2**20}
            for how, flags in (("heap", 0), ("mmap", faiss.IO_FLAG_MMAP_IFC)):
                loaded, row[f"rss_{how}_mb"] = rss_added(lambda flags=flags: faiss.read_index(str(file), flags))
                if name != "flat":
                    next(a for a in ANNS if a.name(size) == name).prepare(loaded)
                took = lap(partial(loaded.search, queries, 10))[1]
                row[f"search_{how}_ms_per_q"] = took.wall_s / len(queries) * 1000
                del loaded
            row["recall@10_vs_exact"] = recall(index, exact, queries, 10)
            rows.append(row)
            print(json.dumps(row), flush=True)
        del builds, exact
    return pd.DataFrame(rows), pd.DataFrame(sweeps)


def ann_markdown(indexes: pd.DataFrame, sweeps: pd.DataFrame, start: Start) -> str:
    shares = {c: lambda x: f"{x:.3f}" for c in ("recall@10_vs_exact", "recall@5", "ci_low", "ci_high")}
    indexes, sweeps = (t.transform({c: shares.get(c, lambda x: x) for c in t.columns}) for t in (indexes, sweeps))
    return f"""{ANN_HEADING}

{stamp(start)}: {start.elapsed_s() / 60:.0f} minutes in this process, the same busy machine; faiss
{faiss.__version__}. Real vectors: {DISTRACTOR_VARIANT} chunks of squad_v11_dev's {DISTRACTOR_DOCS} smallest
documents and the {int(sweeps["questions"].iloc[0])} questions of its {DISTRACTOR_BASE} smallest (bundled
model, cached in --cache); each size is topped up with noisy copies of the chunk vectors. IVF: nlist = 4 sqrt(n),
nprobe 16, k-means seed 0; HNSW: m 32, ef_construction 40 (inserted on one thread, for one graph), ef_search 64.
rss_heap_mb / rss_mmap_mb: RSS added by reading the index file without and with `IO_FLAG_MMAP_IFC` (what
`IndexStore(mmap=True)` and `--mmap` do; in this process, so heap that earlier indexes freed can be reused:
a lower bound, file_mb is what a heap read holds); search_*: 10 neighbours for each question, one batch; recall@10
against exact search over the same vectors (ann.recall, what a sweep shows as `ann_recall`).

{md_table(indexes, list(indexes.columns))}

Distractors: `{DISTRACTOR_VARIANT}` on the same questions, their {DISTRACTOR_BASE} documents plus n of the other
{DISTRACTOR_DOCS - DISTRACTOR_BASE} (`Dataset.with_distractors(n)`, seed 0; `--distractors N`), recall@5 with its
95% interval:

{md_table(sweeps, list(sweeps.columns))}
"""


def with_section(text: str, section: str) -> str:
    """`text` with its ANN_HEADING section (to the end) replaced by `section`, or `section` appended."""
    head = text.split(ANN_HEADING)[0].rstrip("\n")
    return f"{head}\n\n{section}"


def parse_sizes(items: list[str]) -> dict[str, tuple[int, ...]]:
    """NAME=N,N,... -> {NAME: (N, ...)}; errors name the option."""
    out = {}
    for item in items:
        name, _, counts = item.partition("=")
        try:
            out[name] = tuple(int(n) for n in counts.split(","))
        except ValueError as e:
            raise SystemExit(f"error: --sizes {item!r}: expected NAME=N,N,... ({e})") from e
    return out



def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", action="append", metavar="NAME=N,N,...",
                   help="documents kept at each size, smallest first (repeatable; default: "
                   + " ".join(f"{k}={','.join(map(str, v))}" for k, v in SIZES.items()) + ")")
    p.add_argument("--study", default=STUDY, metavar="NAME=N",
                   help="subset of the variant-count study (default: %(default)s)")
    p.add_argument("--until", default="23:59", metavar="HH:MM",
                   help="UTC time after which runs are killed or skipped (default: %(default)s)")
    p.add_argument("--md", type=Path, default=BENCH / "scale.md",
                   help="write the tables here (default: %(default)s)")
    p.add_argument("--only", choices=("ann",), help="run only this study and replace its section of --md")
    p.add_argument("--cache", type=Path, default=CACHE_DIR,
                   help="the approximate-search study's vector and index cache (default: %(default)s)")
    args = p.parse_args()
    start = Start()
    if args.only == "ann":
        with tempfile.TemporaryDirectory(prefix="scale-ann-") as tmp:
            section = ann_markdown(*ann_study(args.cache, Path(tmp)), start)
        args.md.write_text(with_section(args.md.read_text() if args.md.exists() else "", section))
        print(f"wrote {args.md}")
        return
    args.sizes = parse_sizes(args.sizes) if args.sizes else SIZES
    name, _, n = args.study.partition("=")
    study = (name, int(n))
    hour, minute = map(int, args.until.split(":"))
    until = datetime.datetime.now(datetime.UTC).replace(hour=hour, minute=minute, second=0, microsecond=0)
    with tempfile.TemporaryDirectory(prefix="scale-") as tmp:
        rows = measure(plan(args.sizes, study), Path(tmp), until)
        study_cache = Path(tmp) / f"study-{VARIANT_COUNTS[-1]}"
        warm = rows[(rows["section"] == "variants") & (rows["cache"] == "warm")]
        held = held_per_variant(study, study_cache) if "wall_s" in warm and warm["wall_s"].notna().any() else None
        trim = rss_per_step(study[0], Path(tmp) / "trim")
        ann_start = Start()
        section = ann_markdown(*ann_study(args.cache, Path(tmp)), ann_start)
    args.md.write_text(with_section(markdown(rows, held, trim, args, start), section))
    print(f"wrote {args.md}")

if __name__ == "__main__":
    main()
