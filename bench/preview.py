"""Does a preview sweep rank chunking variants as a real sweep does, and what does it cost?

For each dataset (data/chroma_small, and four SQuAD v1.1 dev articles with 300 of their
questions from ../shared), over a grid of 22 variants (fixed and recursive at 128/256/512
cl100k tokens x overlap 0/64, sentence at the same sizes x overlap 0/1 sentences, semantic at
four percentiles), recall@5 per variant from:
  real      sweep(...)                        real chunk embeddings
  preview   sweep(..., preview=True)          pooled from the float16 token cache (the default:
                                              a chunk longer than the model window pools its
                                              first tokens, as its real embedding is truncated)
  whole     the same, pooling every token of a long chunk
  float32   the same with a float32 token cache: does float16 move anything?
  sem-real  preview, but semantic cuts from real sentence-group embeddings (not pooled)
Spearman's rho (scipy.stats.spearmanr) and top-3 agreement of each ranking against the real one.

Cost, side by side in one run, each from its own empty cache (model load, question embedding
and, for the preview, the token pass included): ONE real variant (fixed, 256 tokens) vs the
whole preview grid. The machine is shared, so only ratios of things run together are reported.

Run from the repo root: python bench/preview.py  (about 35 minutes on 2 cores shared with other jobs)
"""

from __future__ import annotations

import argparse
import datetime
import platform
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

import workbench.retrieval.preview
from workbench.chunkers import ChunkEnv
from workbench.dataset import Dataset
from workbench.ingest import load_dataset
from workbench.models.embed import Embedder
from workbench.sweep import SweepResult, sweep
from workbench.variant import Variant, grid

REPO = Path(__file__).resolve().parents[1]
SQUAD = REPO.parent / "shared" / "datasets" / "squad_v11_dev"
SQUAD_DOCS = ("squad-dev-00", "squad-dev-07", "squad-dev-08", "squad-dev-09")  # 85k characters
SQUAD_QUESTIONS = 300
K = 5
TOP = 3
SIZES = [128, 256, 512]

GRID = [
    *grid("fixed", size=SIZES, overlap=[0, 64]),
    *grid("recursive", size=SIZES, overlap=[0, 64]),
    *grid("sentence", size=SIZES, overlap=[0, 1]),
    *grid("semantic", breakpoint_percentile=[70.0, 85.0, 95.0, 98.0]),
]
ONE = Variant.make("fixed", size=256)  # the "one real variant" of the cost ratio


def squad_subset() -> Dataset:
    """Four SQuAD articles and every len // 300-th of their questions (evidence inside them)."""
    full = load_dataset(SQUAD)
    docs = tuple(d for d in full.documents if d.doc_id in SQUAD_DOCS)
    questions = [q for q in full.questions if all(a.doc_id in SQUAD_DOCS for a in q.answers)]
    step = max(1, len(questions) // SQUAD_QUESTIONS)
    return Dataset(f"squad_v11_dev[{len(docs)} articles]", docs, tuple(questions[::step][:SQUAD_QUESTIONS]))


def timed(run: Callable[[], SweepResult]) -> tuple[float, SweepResult]:
    t0 = time.perf_counter()
    out = run()
    return time.perf_counter() - t0, out


def run(data: Dataset, variants: list[Variant], root: Path, cache: Path | None = None, **kw) -> SweepResult:
    """A quiet sweep with its own store `root` (and vector cache `cache`, default the same)."""
    embedder = Embedder(cache_dir=cache or root, progress=False)
    return sweep(data, variants, ks=(K,), budgets=(), embedder=embedder, store=root, progress=False, **kw)


def recall(result: SweepResult) -> pd.Series:
    rows = result.summary.query("metric == 'recall' and k == @K")
    return rows.set_index("key")["mean"]


def measure(data: Dataset, tmp: Path) -> tuple[dict, pd.DataFrame]:
    t_one, _ = timed(lambda: run(data, [ONE], tmp / "one"))
    t_preview, preview = timed(lambda: run(data, GRID, tmp / "preview", preview=True))
    t_real, real = timed(lambda: run(data, GRID, tmp / "real"))

    seen = workbench.retrieval.preview.TokenCache.seen
    workbench.retrieval.preview.TokenCache.seen = lambda self, chunk, window: chunk  # no window: pool the whole chunk
    whole = run(data, GRID, tmp / "preview", cache=tmp / "real", preview=True)
    workbench.retrieval.preview.TokenCache.seen = seen

    workbench.retrieval.preview.DTYPE = np.float32
    f32 = run(data, GRID, tmp / "f32", preview=True)
    workbench.retrieval.preview.DTYPE = np.float16

    pooled_env = workbench.retrieval.preview.TokenCache.env  # semantic cuts from the real (cached) group vectors
    workbench.retrieval.preview.TokenCache.env = lambda self, doc, emb: ChunkEnv(embed=emb.encode,
                                                                                 model_tokenizer=emb.tokenizer)
    sem_real = run(data, GRID, tmp / "preview", cache=tmp / "real", preview=True)  # groups cached by `real`
    workbench.retrieval.preview.TokenCache.env = pooled_env

    table = pd.DataFrame({"variant": [v.label for v in GRID], "real": recall(real)[[v.key for v in GRID]].to_numpy()})
    row = {"dataset": data.name, "documents": len(data.documents), "questions": len(data.questions),
           "characters": data.n_chars, "variants": len(GRID)}
    for name, res in (("preview", preview), ("whole", whole), ("float32", f32), ("sem-real", sem_real)):
        table[name] = recall(res)[[v.key for v in GRID]].to_numpy()
        best_real = set(table.nlargest(TOP, "real")["variant"])
        row[f"rho {name}"] = spearmanr(table[name], table["real"]).statistic
        row[f"top-{TOP} {name}"] = len(best_real & set(table.nlargest(TOP, name)["variant"]))
        row[f"mean |diff| {name}"] = float((table[name] - table["real"]).abs().mean())
    table["rank real"] = table["real"].rank(ascending=False, method="min").astype(int)
    table["rank preview"] = table["preview"].rank(ascending=False, method="min").astype(int)
    row |= {"s one real": t_one, "s preview grid": t_preview, "s real grid": t_real,
            "preview grid / one real": t_preview / t_one, "real grid / preview grid": t_real / t_preview}
    print(row, flush=True)
    return row, table.sort_values("rank real")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, default=REPO / "bench" / "preview.md")
    args = p.parse_args()
    rows, tables = [], []
    for data in (load_dataset(REPO / "data" / "chroma_small"), squad_subset()):
        with tempfile.TemporaryDirectory() as tmp:
            row, table = measure(data, Path(tmp))
        rows.append(row)
        tables.append((data.name, table))
    summary = pd.DataFrame(rows).set_index("dataset").T
    md = [
        "# Preview mode: rankings and cost (bench/preview.py)",
        "",
        (f"Run {datetime.date.today()}, Python {platform.python_version()}, on a machine of 2 cores shared with "
        "other engineers' jobs: seconds drift between runs, so the cost is given as ratios of runs made side by "
        "side; each run starts from its own empty cache (model load, question embedding and, for the preview, "
        "the token pass included)."),
        "",
        (f"recall@{K} of each of {len(GRID)} variants, real sweep vs preview. rho = Spearman's rho against the "
        f"real ranking; top-{TOP} = how many of the real top {TOP} the other ranking also puts in its top {TOP}. "
        "preview = the default (float16 token cache, long chunks pooled over the model window, semantic cuts "
        "from pooled group vectors); whole = long chunks pooled whole; float32 = a float32 token cache; "
        "sem-real = semantic cuts from the real sentence-group embeddings."),
        "",
        summary.to_markdown(floatfmt=".3f"),
        "",
    ]
    for name, table in tables:
        md += [f"## {name}: recall@{K} per variant, by real rank", "", table.to_markdown(index=False, floatfmt=".3f"),
               ""]
    args.out.write_text("\n".join(md))
    print("\n".join(md))


if __name__ == "__main__":
    main()
