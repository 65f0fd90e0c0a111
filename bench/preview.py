"""Does a preview sweep rank chunking variants as a real sweep does, and what does it cost?

For each dataset (data/chroma_small; from ../shared, the shortest SQuAD v1.1 dev articles and the
QMSum val meetings with all their questions, see DATASETS), over a grid of 22 variants (fixed and
recursive at 128/256/512 cl100k tokens x overlap 0/64, sentence at the same sizes x overlap 0/1
sentences, semantic at four percentiles), recall@5 per variant from:
  real      sweep(...)                        real chunk embeddings
  preview   sweep(..., preview=True)          pooled from the float16 token cache (the default:
                                              the token pass on the int8 export, a chunk longer
                                              than the model window pools its first tokens, as
                                              its real embedding is truncated)
  float     the same, the token pass on the float model (the default before 2 Dec 2026), timed
  whole     the same, pooling every token of a long chunk
  float32   the same with a float32 token cache: does float16 move anything?
  sem-real  preview, but semantic cuts from real sentence-group embeddings (not pooled)
Spearman's rho (scipy.stats.spearmanr) and top-3 agreement of each ranking against the real one.

Cost, side by side in one run, each from its own empty cache (model load, question embedding
and, for the preview, the token pass included): ONE real variant (fixed, 256 tokens) vs the
whole preview grid, with either token pass, measured two ways:
  in process    after a warm-up (every strategy of the grid, real and preview, on the dataset's
                first document, in a throwaway cache: the ONNX exports exist, modules and punkt
                are loaded), with the process's memos of earlier runs cleared, so that neither
                side profits from the other (until 3 Dec the one real variant ran first and paid
                the process's imports, and on a fresh machine the model's export, for both)
  fresh process each side as its own `python` process, timed from its start to its sweep's end:
                what a command-line user waits, imports and model loads included
Each way runs REPEATS rounds, the sides interleaved within a round, and a side's seconds are the
median of its rounds (each round from empty caches again); the ratio of each round is shown too.
The machine is shared, so only ratios of things run together are reported.

The preview's own uncertainty (stats.ranking_ties, as SweepResult.ties): which neighbours of each
ranking its paired bootstrap cannot order, the variants tied with its top, and over GRIDS random
grids of SUBGRID variants how often the real best is in the preview's tied-with-top set (what the
CLI confirms) and in its top 3.

Run from the repo root: python -m bench.preview  (about an hour for the three datasets on 2
quiet cores, hours on a loaded machine); --datasets picks some, --squad-articles and
--qmsum-meetings take fewer documents, --quick leaves out the ablations, --real-cache keeps the
real grids for a re-run.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

import workbench.retrieval.preview
from bench.harness import BENCH, REPO, SHARED, SMALL, Start, header, lap
from workbench.chunkers import ChunkEnv
from workbench.core import memo
from workbench.dataset import Dataset
from workbench.evaluation import stats
from workbench.ingest import load_dataset
from workbench.models.embed import Embedder
from workbench.results.result import SweepResult
from workbench.run.session import sweep
from workbench.variant import Variant, grid

SQUAD_ARTICLES = 16  # the shortest, with every one of their questions (see DATASETS)
QMSUM_MEETINGS = 33  # all of qmsum_val: 1.7M characters, 218 questions (see DATASETS)
K = 5
TOP = 3
GRIDS, SUBGRID = 40, 20  # the random grids of the tied-set rate: 40 draws of 20 of the 22 variants
REPEATS = 3  # rounds of the cost, sides interleaved; a side's seconds are the median of its rounds
SIZES = [128, 256, 512]

GRID = [
    *grid("fixed", size=SIZES, overlap=[0, 64]),
    *grid("recursive", size=SIZES, overlap=[0, 64]),
    *grid("sentence", size=SIZES, overlap=[0, 1]),
    *grid("semantic", breakpoint_percentile=[70.0, 85.0, 95.0, 98.0]),
]
ONE = Variant.make("fixed", size=256)  # the "one real variant" of the cost ratio


def shortest(name: str, n: int, unit: str) -> Dataset:
    """The n shortest documents of a shared dataset with every question whose evidence is inside them."""
    full = load_dataset(SHARED / name)
    docs = tuple(sorted(full.documents, key=lambda d: len(d.text))[:n])
    ids = {d.doc_id for d in docs}
    questions = tuple(q for q in full.questions if all(a.doc_id in ids for a in q.answers))
    return Dataset(f"{name}[{n} {unit}]", docs, questions)


DATASETS = {  # name -> how to load it, given (SQuAD articles, QMSum meetings)
    "chroma_small": lambda sizes: load_dataset(SMALL),
    # SQuAD: more questions, not longer articles, is what separates variants (a variant's interval
    # narrows with the square root of the questions): every question of the shortest articles, whose
    # real grid's cost grows with the characters
    "squad": lambda sizes: shortest("squad_v11_dev", sizes[0], "articles"),
    # QMSum: meetings of long evidence and few questions; all 33 of them take a real grid of 22
    # variants about 15 minutes on 2 quiet cores
    "qmsum": lambda sizes: shortest("qmsum_val", sizes[1], "meetings"),
}


def run(data: Dataset, variants: list[Variant], root: Path, cache: Path | None = None, **kw) -> SweepResult:
    """A quiet sweep with its own store `root` (and vector cache `cache`, default the same)."""
    embedder = Embedder(cache_dir=cache or root, progress=False)
    return sweep(data, variants, ks=(K,), budgets=(), embedder=embedder, store=root, progress=False, **kw)


def warm_up(data: Dataset, root: Path) -> None:
    """Load what a process loads once (modules, punkt, the ONNX exports, made here if missing)
    by sweeping the grid, real and with both token passes, on the first document."""
    small = data.select([data.documents[0].doc_id])
    in_process(small, GRID, root / "real")
    for backend in ("onnx", "onnx-int8"):
        in_process(small, GRID, root / backend, backend=backend, preview=True)


def forget() -> None:
    """Clear the process's memos that one timed run would leave to the next (bootstrap draws per
    question count, each document's sentences and token boundaries: workbench.core.memo)."""
    stats._counts.cache_clear()
    memo.forget()


def in_process(data: Dataset, variants: list[Variant], root: Path, backend: str = "onnx-int8",
               **kw) -> tuple[float, SweepResult]:
    """A sweep's seconds and result in this process, after `forget`."""
    forget()
    workbench.retrieval.preview.TOKEN_PASS_BACKEND = backend
    try:
        result, took = lap(lambda: run(data, variants, root, **kw))
        return took.wall_s, result
    finally:
        workbench.retrieval.preview.TOKEN_PASS_BACKEND = "onnx-int8"


SIDES = {  # a fresh process's side: (variants, preview, token pass backend)
    "one": ([ONE], False, "onnx-int8"),
    "preview": (GRID, True, "onnx-int8"),
    "float": (GRID, True, "onnx"),
}


def fresh_process(side: str, name: str, sizes: tuple[int, int], root: Path) -> float:
    """Seconds from starting `python -m bench.preview --side ...` to the end of its sweep (it
    prints that moment; saving nothing after it)."""
    start = time.time()
    out = subprocess.run([sys.executable, "-m", "bench.preview", "--side", side, name, str(sizes[0]), str(sizes[1]),
                          str(root)], check=True, capture_output=True, text=True, cwd=REPO)
    return float(out.stdout.split()[-1]) - start


def side_main(side: str, name: str, squad: str, qmsum: str, root: str) -> None:
    """The body of a fresh process: one side's sweep, then the moment it ended."""
    variants, preview, backend = SIDES[side]
    workbench.retrieval.preview.TOKEN_PASS_BACKEND = backend
    run(DATASETS[name]((int(squad), int(qmsum))), variants, Path(root), preview=preview)
    print(time.time(), flush=True)


def recall(result: SweepResult) -> pd.Series:
    rows = result.summary.query("metric == 'recall' and k == @K")
    return rows.set_index("key")["mean"]


def ranked(result: SweepResult, keys: list[str], seed: int = 0) -> pd.DataFrame:
    """stats.ranking_ties of the variants `keys` of a result (recall@K, at the sweep's confidence)."""
    pq = result.per_question[result.per_question["key"].isin(keys)]
    return stats.ranking_ties(pq, "recall", K, result.confidence, seed=seed)


def noise(preview: SweepResult, real: SweepResult) -> dict:
    """What each ranking's own bootstrap can order on the whole grid, and, over GRIDS random grids
    of SUBGRID variants (each with its own bootstrap seed), how often the real best is in the
    preview's tied-with-top set and in its top 3."""
    keys = [v.key for v in GRID]
    p_all, r_all = ranked(preview, keys), ranked(real, keys)
    rng = np.random.default_rng(0)
    inside, top3, sizes, rhos = [], [], [], []
    for seed in range(GRIDS):
        sub = list(rng.choice(keys, SUBGRID, replace=False))
        p, r = ranked(preview, sub, seed), ranked(real, sub, seed)
        best = r["key"].iloc[0]
        inside.append(best in set(p.loc[p["tied_with_top"], "key"]))
        top3.append(best in set(p["key"].iloc[:TOP]))
        sizes.append(int(p["tied_with_top"].sum()))
        means = r.set_index("key")["mean"]
        rhos.append(spearmanr(p.set_index("key")["mean"][means.index], means).statistic)
    real_best_inside = r_all["key"].iloc[0] in set(p_all.loc[p_all["tied_with_top"], "key"])
    return {"preview: adjacent pairs apart": f"{int(p_all['apart_from_next'].sum())} of {len(keys) - 1}",
            "preview: tied with its top": int(p_all["tied_with_top"].sum()),
            "real best in preview's tied set": real_best_inside,
            "real: adjacent pairs apart": f"{int(r_all['apart_from_next'].sum())} of {len(keys) - 1}",
            "real: tied with its top": int(r_all["tied_with_top"].sum()),
            f"grids of {SUBGRID}: real best in preview's tied set": float(np.mean(inside)),
            f"grids of {SUBGRID}: real best in preview's top {TOP}": float(np.mean(top3)),
            f"grids of {SUBGRID}: preview's tied set, mean size": float(np.mean(sizes)),
            f"grids of {SUBGRID}: mean rho": float(np.mean(rhos))}


def rounds(side: list[float], one: list[float]) -> str:
    """Each round's ratio of a side to the one real variant."""
    return " / ".join(f"{a / b:.2f}" for a, b in zip(side, one, strict=True))


def measure(data: Dataset, name: str, sizes: tuple[int, int], tmp: Path, real_root: Path,
            quick: bool) -> tuple[dict, pd.DataFrame]:
    load = os.getloadavg()[0]
    warm_up(data, tmp / "warm-up")  # first: a fresh machine exports the models here, not in a timed run
    fresh: dict[str, list[float]] = {side: [] for side in SIDES}
    inside: dict[str, list[float]] = {side: [] for side in SIDES}
    last: dict[str, SweepResult] = {}
    for i in range(REPEATS):
        for side in SIDES:
            fresh[side].append(fresh_process(side, name, sizes, tmp / f"fresh-{side}-{i}"))
        for side, (variants, preview_, backend) in SIDES.items():
            t, last[side] = in_process(data, variants, tmp / f"{side}-{i}", backend=backend, preview=preview_)
            inside[side].append(t)
    t_one, t_preview, t_float = (float(np.median(inside[side])) for side in ("one", "preview", "float"))
    preview, results_float = last["preview"], last["float"]
    cold = not real_root.exists()
    real, took = lap(lambda: run(data, GRID, real_root))
    t_real = took.wall_s
    results = {"preview": preview, "float": results_float}
    if not quick:
        seen = workbench.retrieval.preview.TokenCache.seen
        workbench.retrieval.preview.TokenCache.seen = lambda self, chunk, window: chunk  # pool the whole chunk
        results["whole"] = run(data, GRID, tmp / "preview", cache=real_root, preview=True)
        workbench.retrieval.preview.TokenCache.seen = seen

        workbench.retrieval.preview.DTYPE = np.float32
        results["float32"] = run(data, GRID, tmp / "f32", preview=True)
        workbench.retrieval.preview.DTYPE = np.float16

        pooled_env = workbench.retrieval.preview.TokenCache.env  # semantic cuts from the real (cached) group vectors
        workbench.retrieval.preview.TokenCache.env = lambda self, doc, emb: ChunkEnv(embed=emb.encode,
                                                                                     model_tokenizer=emb.tokenizer)
        results["sem-real"] = run(data, GRID, tmp / "preview", cache=real_root, preview=True)  # groups cached by real
        workbench.retrieval.preview.TokenCache.env = pooled_env

    table = pd.DataFrame({"variant": [v.label for v in GRID], "real": recall(real)[[v.key for v in GRID]].to_numpy()})
    row = {"dataset": data.name, "documents": len(data.documents), "questions": len(data.questions),
           "characters": data.n_chars, "variants": len(GRID)}
    for name, res in results.items():
        table[name] = recall(res)[[v.key for v in GRID]].to_numpy()
        best_real = set(table.nlargest(TOP, "real")["variant"])
        row[f"rho {name}"] = spearmanr(table[name], table["real"]).statistic
        row[f"top-{TOP} {name}"] = len(best_real & set(table.nlargest(TOP, name)["variant"]))
        row[f"mean |diff| {name}"] = float((table[name] - table["real"]).abs().mean())
    row |= noise(preview, real)
    ties = preview.ties(k=K)
    table = table.merge(ties[["variant", "apart_from_next", "tied_with_top"]], on="variant")
    table["rank real"] = table["real"].rank(ascending=False, method="min").astype(int)
    table["rank preview"] = table["preview"].rank(ascending=False, method="min").astype(int)
    row |= {"s one real": t_one, "s preview grid": t_preview, "s real grid": t_real if cold else float("nan"),
            "s preview grid, float pass": t_float, "preview grid / one real": t_preview / t_one,
            "preview grid, float pass / one real": t_float / t_one,
            "preview grid / one real, per round": rounds(inside["preview"], inside["one"]),
            "fresh process: s one real": float(np.median(fresh["one"])),
            "fresh process: s preview grid": float(np.median(fresh["preview"])),
            "fresh process: preview grid / one real": float(np.median(fresh["preview"]) / np.median(fresh["one"])),
            "fresh process: preview grid / one real, per round": rounds(fresh["preview"], fresh["one"]),
            "fresh process: preview grid, float pass / one real": float(np.median(fresh["float"])
                                                                         / np.median(fresh["one"])),
            "real grid / preview grid": t_real / t_preview if cold else float("nan"),
            "load average (1 min), start / end": f"{load:.1f} / {os.getloadavg()[0]:.1f}"}
    print(row, flush=True)
    return row, table.sort_values("rank real")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, default=BENCH / "preview.md")
    p.add_argument("--datasets", nargs="+", choices=list(DATASETS), default=list(DATASETS))
    p.add_argument("--squad-articles", type=int, default=SQUAD_ARTICLES, help="the shortest SQuAD articles taken "
                   "(default: %(default)s)")
    p.add_argument("--qmsum-meetings", type=int, default=QMSUM_MEETINGS, help="the shortest QMSum meetings taken "
                   "(default: %(default)s, all)")
    p.add_argument("--quick", action="store_true", help="only the default preview (no whole/float32/sem-real)")
    p.add_argument("--real-cache", type=Path, help="keep the real grids' store here, so a re-run reuses them "
                   "(its real-grid seconds are then left out); default: a fresh one per run")
    p.add_argument("--side", nargs=5, metavar=("SIDE", "DATASET", "SQUAD", "QMSUM", "ROOT"),
                   help="internal: one side of the fresh-process cost (see fresh_process)")
    args = p.parse_args()
    if args.side:
        side_main(*args.side)
        return
    start = Start()
    rows, tables = [], []
    for name in args.datasets:
        sizes = (args.squad_articles, args.qmsum_meetings)
        data = DATASETS[name](sizes)
        with tempfile.TemporaryDirectory() as tmp:
            real_root = (args.real_cache or Path(tmp) / "real") / name
            row, table = measure(data, name, sizes, Path(tmp), real_root, args.quick)
        rows.append(row)
        tables.append((data.name, table))
    summary = pd.DataFrame(rows).set_index("dataset").T.map(lambda v: f"{v:.3f}" if isinstance(v, float) else v)
    md = [
        header("Preview mode: rankings and cost (bench/preview.py)", start),
        ("Seconds drift between runs, so the cost "
         "is given as ratios of runs made side by side; each run starts from its own empty cache (model load, "
         "question embedding and, for the preview, the token pass included). In process: after a warm-up that "
         "loads what a process loads once, each side with the process's memos cleared; fresh process: each "
         "side its own `python` process, from its start to its sweep's end (bench/preview.py's docstring)."),
        "",
        (f"recall@{K} of each of {len(GRID)} variants, real sweep vs preview. rho = Spearman's rho against the "
        f"real ranking; top-{TOP} = how many of the real top {TOP} the other ranking also puts in its top {TOP}. "
        "preview = the default (float16 token cache from the int8 model's token pass, long chunks pooled over "
        "the model window, semantic cuts from pooled group vectors); float = the token pass on the float model; "
        "whole = long chunks pooled whole; float32 = a float32 token cache; "
        "sem-real = semantic cuts from the real sentence-group embeddings."),
        "",
        summary.to_markdown(),
        "",
    ]
    for name, table in tables:
        md += [f"## {name}: recall@{K} per variant, by real rank", "", table.to_markdown(index=False, floatfmt=".3f"),
               ""]
    args.out.write_text("\n".join(md))
    print("\n".join(md))


if __name__ == "__main__":
    main()
