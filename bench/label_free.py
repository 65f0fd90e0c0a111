"""How far to trust the label-free measures (workbench.results.label_free): on labelled datasets, rank
a grid of chunkings (all retrieved densely, so only the chunking differs) by each measure and by
recall@5, and report Spearman's rho between the two rankings with a 95% interval from resampling
the questions (the labelled ranking is itself uncertain), and where the measure's pick lands.

Run from the repo root: python -m bench.label_free (the shared datasets when ../shared is there;
the cache is results/cache, so a re-run embeds nothing). Writes bench/label_free.md.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

import workbench as wb
from bench.harness import BENCH, REPO, SHARED, SMALL, Start, header, table
from workbench.dataset import Dataset
from workbench.evaluation.metrics import MetricAt
from workbench.results.label_free import MEASURES

GRID = ["fixed:size=64,tokenizer=model", "fixed:size=128,tokenizer=model", "fixed:size=238,tokenizer=model",
        "fixed:size=238,overlap=59,tokenizer=model", "recursive:size=128,tokenizer=model",
        "recursive:size=238,tokenizer=model", "langchain_recursive:chunk_size=158", "sentence:size=238,tokenizer=model",
        "semantic:breakpoint_percentile=80,max_size=238,tokenizer=model",
        "semantic:breakpoint_percentile=95,max_size=238,tokenizer=model", "markdown:size=238,tokenizer=model"]
K = 5
RESAMPLES = 1000


def datasets() -> dict[str, Dataset]:
    """The bundled data, and the shared SQuAD and QMSum subsets bench/defaults.py uses, when they are there."""
    out = {"chroma_small": wb.load_dataset(SMALL)}
    if SHARED.is_dir():
        squad = wb.load_dataset(SHARED / "squad_v11_dev")
        out["squad_v11_dev[16]"] = squad.select(doc_ids=[d.doc_id for d in squad.documents[:16]])
        qmsum = wb.load_dataset(SHARED / "qmsum_val")
        out["qmsum_val[10]"] = qmsum.select(doc_ids=[d.doc_id for d in qmsum.documents[:10]])
    return out


def rho_with_interval(measure: pd.Series, per_question: pd.DataFrame, rng: np.random.Generator) -> tuple[float, ...]:
    """Spearman's rho of `measure` (per variant key) against mean recall, and its 95% percentile interval
    over resamples of the questions (`per_question`: a row per question, a column per variant key)."""
    keys = list(measure.index)
    wide = per_question[keys].to_numpy()
    rho = spearmanr(measure.to_numpy(), wide.mean(axis=0)).statistic
    draws = rng.integers(0, len(wide), size=(RESAMPLES, len(wide)))
    boot = [spearmanr(measure.to_numpy(), wide[d].mean(axis=0)).statistic for d in draws]
    lo, hi = np.nanpercentile(boot, [2.5, 97.5])
    return rho, lo, hi


def main() -> None:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    start = Start()
    variants = [wb.parse_variant(v) for v in GRID]
    rng = np.random.default_rng(0)
    summary, every = [], []
    for name, ds in datasets().items():
        with wb.Session(ds, cache=REPO / "results" / "cache", ks=(K,), progress=False) as session:
            result = session.sweep(variants)
            measures = session.label_free(variants).set_index("key")
        wide = MetricAt("recall", K).rows(result.per_question).pivot(index="qid", columns="key", values="value")
        recall = wide.mean()
        best = recall.max()
        for m in MEASURES:
            rho, lo, hi = rho_with_interval(measures[m], wide, rng)
            pick = measures[m].idxmax()
            summary.append([name, len(ds.questions), m, f"{rho:+.2f}", f"[{lo:+.2f}, {hi:+.2f}]",
                            measures.loc[pick, "label"], f"{recall[pick]:.3f}", f"{best:.3f}"])
        for key, r in measures.iterrows():
            every.append([name, r["label"], r["chunks"], f"{r['cut_contrast']:+.3f}", f"{r['cohesion']:.3f}",
                          f"{recall[key]:.3f}"])
        print(name, "done")
    text = (header("Label-free measures against recall", start)
            + f"\nEach dataset's {len(GRID)} chunkings (dense retrieval, the bundled all-MiniLM-L6-v2) ranked by "
            f"each measure of workbench/results/label_free.py and by recall@{K}; Spearman's rho between the two "
            f"rankings, its 95% interval from {RESAMPLES} resamples of the questions, the variant the measure ranks "
            f"first and its recall@{K} beside the best's.\n\n## Agreement\n\n"
            + table(["dataset", "questions", "measure", "rho", "95% interval", "the measure's pick", f"its recall@{K}",
                     f"best recall@{K}"], summary, ["---", "---:", "---", "---:", "---", "---", "---:", "---:"])
            + "\n\n## Every chunking\n\n"
            + table(["dataset", "variant", "chunks", "cut_contrast", "cohesion", f"recall@{K}"], every,
                    ["---", "---", "---:", "---:", "---:", "---:"]) + "\n")
    (BENCH / "label_free.md").write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
