"""How often the search (workbench.run.search) finds what sweeping the whole space finds, and at what cost.

On each dataset a space of SPACE's 216 variants (36 chunkings x 3 retrievers x contextual header or not)
is swept whole in its own cache: the exhaustive answer is its tied set at recall@5 (every variant whose
paired bootstrap interval to the top holds 0, workbench.evaluation.stats.ranking_ties). Then the search
runs on that cache, seed 0 on the whole space and seeds 1.. on a random SUBSPACE share of it each, each
judged against the exhaustive tied set of the same candidates. A search's cost in texts is what it
embedded for real, counted per chunking and corpus as the search counts it (the race's texts column);
the exhaustive sweep's is every embedding chunking's chunks. Beside it, a random search given the same
texts: random variants measured on the whole corpus until their chunkings' texts reach the search's, its
best by mean taken. All of it at the first of --budgets (the search's default) on every dataset, and at the
others on the --timing datasets (and wherever --reuse finds them measured before). On the --timing datasets
the exhaustive sweep and the search at each budget also run cold, each in an empty cache, back to back in
one process: the wall-time ratio.

Run from the repo root: python -m bench.search [--seeds N] [--budgets B ...] [--only NAME ...]
[--timing NAME ...] [--reuse] (the shared datasets when ../shared is there). Writes bench/search.md after each
dataset; results/bench_search/<dataset>/ holds the caches, rates-<budget>.json and timing.json.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import time
from dataclasses import replace

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

import workbench as wb
from bench.harness import BENCH, REPO, SHARED, SMALL, Start, header, load, table
from workbench.dataset import Dataset
from workbench.evaluation import stats
from workbench.run.search import BUDGET, Space

SPACE = {"strategies": {"fixed": {"size": "32:256:32", "overlap": [0, 16], "tokenizer": "model"},
                        "recursive": {"size": "32:256:32", "tokenizer": "model"},
                        "sentence": {"size": "32:256:32", "tokenizer": "model"},
                        "semantic": {"breakpoint_percentile": "80:95:5", "max_size": 238, "tokenizer": "model"}},
         "retrievers": ["dense", "hybrid", "bm25"], "contextual_header": [False, True]}
K = 5
SUBSPACE = 0.85  # each seeded run searches this share of the space, drawn by its seed
ROOT = REPO / "results" / "bench_search"
PUBMED_CHARS = 200_000  # of chroma_general's 500,000-character PubMed text: its exhaustive sweep fits the study's time


def datasets(only: list[str]) -> dict[str, Dataset]:
    """The bundled corpora, then the shared ones when ../shared is there: SQuAD and QMSum subsets and
    PubMed's long paper text with its short answers (chroma_general)."""
    out = {"chroma_small": lambda: wb.load_dataset(SMALL), "mixed (docs and code)": lambda: wb.load_dataset(
        REPO / "data" / "mixed")}
    if SHARED.is_dir():
        def squad() -> Dataset:
            d = wb.load_dataset(SHARED / "squad_v11_dev")
            return d.select(doc_ids=[x.doc_id for x in d.documents[:4]])

        def qmsum() -> Dataset:
            d = wb.load_dataset(SHARED / "qmsum_val")  # the shortest meetings: the most questions per character
            return d.select(doc_ids=[x.doc_id for x in sorted(d.documents, key=lambda x: len(x.text))[:8]])

        def pubmed() -> Dataset:  # a long scientific text with short answers: its first PUBMED_CHARS
            d = wb.load_dataset(SHARED / "chroma_general").select(doc_ids=["pubmed"])
            doc = d.documents[0]
            kept = tuple(q for q in d.questions if all(a.end <= PUBMED_CHARS for a in q.spans))
            return Dataset(f"pubmed[:{PUBMED_CHARS}]", (replace(doc, text=doc.text[:PUBMED_CHARS]),), kept)

        out |= {"squad_v11_dev[4]": squad, "qmsum_val[8 shortest]": qmsum, "pubmed (chroma_general, its first "
                f"{PUBMED_CHARS:,} characters)": pubmed}
    return {name: make() for name, make in out.items() if not only or re.split(r"[\[ ]", name)[0] in only}


def texts_of(result: wb.SweepResult, keys: list[str]) -> int:
    """Texts a cold sweep of `keys` embeds: the chunks of each distinct chunking that embeds."""
    v = result.variants.set_index("key").loc[keys]
    specs = {k: result.variant(k) for k in keys}
    seen: dict[str, int] = {}
    for k in keys:
        if specs[k].embeds:
            seen.setdefault(specs[k].chunking_key, int(v.loc[k, "chunks"]))
    return sum(seen.values())


def tied(per_question: pd.DataFrame) -> set[str]:
    ties = stats.ranking_ties(per_question, "recall", K)
    return set(ties.loc[ties["tied_with_top"], "key"])


def random_search(full: wb.SweepResult, keys: list[str], texts: int, rng: random.Random) -> str:
    """The best by mean of random variants measured until their texts reach `texts` (one at least)."""
    means = full.ranking("recall", K).set_index("key")["mean"]
    order = keys[:]
    rng.shuffle(order)
    picked: list[str] = []
    for key in order:
        if picked and texts_of(full, [*picked, key]) > texts:
            continue
        picked.append(key)
    return max(picked, key=lambda k: means[k])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", type=int, default=8, help="searches per dataset")
    p.add_argument("--only", nargs="*", default=[], help="datasets by first word (chroma_small, mixed, ...)")
    p.add_argument("--budgets", nargs="*", type=float, default=[BUDGET, 0.2],
                   help="the search's budgets measured (the first is the one the tables show in full)")
    p.add_argument("--timing", nargs="*", default=["chroma_small"],
                   help="datasets whose search (at each budget) and exhaustive sweep are also timed cold")
    p.add_argument("--reuse", action="store_true", help="read what was measured before from its json files")
    args = p.parse_args()
    start = Start()
    variants = Space.of(SPACE).variants().variants
    done = {}
    for name, ds in datasets(args.only).items():
        folder = ROOT / name.split()[0]
        folder.mkdir(parents=True, exist_ok=True)
        timing = name.split()[0] in args.timing
        done[name] = {"rates": {b: measured(folder / f"rates-{b:g}.json", args.reuse,
                                            lambda b=b: rates(name, ds, variants, folder, args.seeds, b))
                                for b in args.budgets if timing or b == args.budgets[0]
                                or (args.reuse and (folder / f"rates-{b:g}.json").is_file())}}
        if timing:
            done[name]["timing"] = measured(folder / "timing.json", args.reuse,
                                            lambda: timed(ds, variants, folder, args.budgets))
        write(start, done, args.budgets)


def measured(saved, reuse: bool, measure) -> dict:
    """What `measure()` returns, saved as json; read back instead when `reuse` and it is there."""
    if not (reuse and saved.is_file()):
        saved.write_text(json.dumps(measure()))
    return json.loads(saved.read_text())


def rates(name: str, ds: Dataset, variants: list, folder, seeds: int, budget: float) -> dict:
    """The exhaustive sweep (cached in folder/full), then `seeds` searches at `budget` on its cache, each judged
    against the exhaustive tied set of the candidates it searched; the preview's error on the whole space."""
    with wb.Session(ds, cache=folder / "full", ks=(K,), budgets=(), progress=False) as s:
        full = s.sweep(variants)
        preview = s.preview(variants)  # the preview alone, as `sweep --preview` ranks: its own tied set
    every = list(full.keys)
    real_best = full.ranking("recall", K)["key"].iloc[0]
    runs, previews = [], []
    for seed in range(seeds):
        rng = random.Random(seed)
        keys = every if seed == 0 else sorted(rng.sample(every, round(SUBSPACE * len(every))), key=every.index)
        with wb.Session(ds, cache=folder / "full", ks=(K,), budgets=(), progress=False) as s:
            found = s.search([full.variant(k) for k in keys], k=K, seed=seed, budget=budget)
        best = found.ranking("recall", K)["key"].iloc[0]
        pq = full.per_question[full.per_question["key"].isin(keys)]
        if best not in keys:  # a refined variant: judged against the exhaustive rows
            pq = pd.concat([pq, found.per_question[found.per_question["key"] == best]], ignore_index=True)
        truth = tied(pq)
        texts = int(found.race["texts"].sum())
        rand = random_search(full, keys, texts, rng)
        if seed == 0:  # the preview's error on the whole space, before and after the search calibrates it
            first = found.race[found.race["round"] == 1].set_index("key")
            real = full.ranking("recall", K).set_index("key")["mean"]
            own = preview.ties("recall", K)
            tied_own = set(own.loc[own["tied_with_top"], "key"])
            previews = [f"{spearmanr(first['mean'], real[first.index]).statistic:.2f}",
                        f"{spearmanr(first['corrected'], real[first.index]).statistic:.2f}",
                        len(tied_own), bool(real_best in tied_own), int((first["status"] == "kept").sum()),
                        bool(first.loc[real_best, "status"] == "kept"),
                        f"{int(own.set_index('key').loc[real_best, 'rank'])} of {len(own)}"]
        runs.append({"seed": seed, "candidates": len(keys), "best": found.label_of(best),
                     "in_tied_set": bool(best in truth), "tied_set": len(truth), "texts": texts,
                     "texts_share": texts / texts_of(full, keys), "random_in_tied_set": bool(rand in truth),
                     "last_round": len(found.keys)})
        print(name, runs[-1], flush=True)
    return {"documents": len(ds.documents), "questions": len(ds.questions), "characters": ds.n_chars,
            "variants": len(every), "exhaustive_texts": texts_of(full, every), "runs": runs, "preview": previews}


def timed(ds: Dataset, variants: list, folder, budgets: list[float]) -> dict:
    """The exhaustive sweep and the search (seed 0) at each budget, each cold in a fresh cache, back to back
    in this process (the model loaded once before them all): wall seconds, texts the model embedded, the load."""
    out = {}
    for what in ("exhaustive", *(f"{b:g}" for b in budgets)):
        cache = folder / "cold"
        shutil.rmtree(cache, ignore_errors=True)
        load0 = load()
        t0 = time.perf_counter()
        with wb.Session(ds, cache=cache, ks=(K,), budgets=(), progress=False) as s:
            s.search(variants, k=K, budget=float(what)) if what != "exhaustive" else s.sweep(variants)
            embedded = s.embedder.stats.embedded
        out[what] = {"wall_s": time.perf_counter() - t0, "embedded": embedded, "load": f"{load0} / {load()}"}
        shutil.rmtree(cache, ignore_errors=True)
        print(what, out[what], flush=True)
    return out


def write(start: Start, done: dict[str, dict], budgets: list[float]) -> None:
    n = len(Space.of(SPACE).variants().variants)
    rows, previews, every, timings, trade = [], [], [], [], []
    for b in budgets:
        r = pd.DataFrame([x for d in done.values() if b in d["rates"] for x in d["rates"][b]["runs"]])
        t = [d["timing"] for d in done.values() if "timing" in d]
        trade.append([f"{b:g}", ", ".join(name.split()[0] for name, d in done.items() if b in d["rates"]),
                      f"{r['in_tied_set'].mean():.3f} ({r['in_tied_set'].sum()}/{len(r)})",
                      f"{r['random_in_tied_set'].mean():.2f}", f"{r['texts_share'].mean():.3f}",
                      "; ".join(f"{x[f'{b:g}']['wall_s'] / x['exhaustive']['wall_s']:.3f}" for x in t) or "-"])
    for name, whole in done.items():
        d = whole["rates"][budgets[0]]
        r = pd.DataFrame(d["runs"])
        rows.append([name, d["documents"], d["questions"], f"{d['characters']:,}", d["variants"],
                     f"{r['in_tied_set'].mean():.2f} ({r['in_tied_set'].sum()}/{len(r)})",
                     f"{r['random_in_tied_set'].mean():.2f}", f"{r['tied_set'].mean():.1f}",
                     f"{r['texts_share'].mean():.3f}", f"{d['exhaustive_texts']:,}"])
        previews.append([name, *d["preview"]])
        every += [[name, x["seed"], x["candidates"], x["best"], x["in_tied_set"], x["tied_set"], x["texts"],
                   f"{x['texts_share']:.3f}", x["random_in_tied_set"], x["last_round"]] for x in d["runs"]]
        for b in budgets if "timing" in whole else ():
            t, e = whole["timing"][f"{b:g}"], whole["timing"]["exhaustive"]
            timings.append([name, f"{b:g}", f"{t['wall_s']:.0f}", f"{e['wall_s']:.0f}",
                            f"{t['wall_s'] / e['wall_s']:.3f}", f"{t['embedded']:,} / {e['embedded']:,}",
                            f"{t['embedded'] / e['embedded']:.3f}", f"{t['load']}; {e['load']}"])
    text = (header("Search against the exhaustive sweep", start)
            + f"\nThe space: {n} variants ({SPACE}); recall@{K}; the search's defaults (budget {budgets[0]:g}, "
            "5 anchors, 5 finalists, alpha 0.05, refining on). Seed 0 searches the whole space, seeds 1.. a random "
            f"{SUBSPACE:.0%} of it each, on the exhaustive sweep's cache. 'in tied set': how often the search's best "
            "is in the exhaustive sweep's tied set of the same candidates (the variants the questions cannot tell "
            "from its top at 95%); 'random': a random search given the same texts; 'texts': what the search embedded "
            "for real (the race's texts column: chunks per chunking and corpus) against what the exhaustive sweep "
            "of the same candidates embeds.\n\n"
            + table(["dataset", "documents", "questions", "characters", "variants", "in tied set", "random",
                     "tied set size", "texts (share)", "exhaustive texts"], rows)
            + "\n\n## Budget against rate\n\nEvery seeded run at each budget (the share of the exhaustive "
            "sweep's embedding, in whole-corpus passes, the search may spend; the default on every dataset, the "
            "others where measured): how often its best is in the exhaustive tied set, a random search's rate "
            "with the same texts, the texts share, and the cold wall ratio where timed (below).\n\n"
            + table(["budget", "datasets", "in tied set", "random", "texts share", "cold wall ratio"], trade)
            + "\n\n## Cold, side by side\n\nThe exhaustive sweep and the search (seed 0, the whole space) at each "
            "budget, each from an empty cache, one after the other in one process (the model loaded before them): "
            "wall seconds and the texts the model embedded (questions, semantic's sentence groups and chunks, as "
            "Embedder.stats counts them); load average (1 min) at the start / end of each.\n\n"
            + table(["dataset", "budget", "search s", "exhaustive s", "wall ratio",
                     "texts embedded (search / exhaustive)", "texts ratio", "load"], timings)
            + "\n\n## The preview's error, and the search's calibration of it\n\nSeed 0, the whole space: Spearman's "
            f"rho of the preview's recall@{K} against the real one, raw and as the search corrects it (a line in log2 "
            "tokens per chunk fitted on its anchors, whose own real scores stand in); the preview's own tied set "
            "(`sweep --preview`) and whether it holds the real best; the candidates the search kept past its "
            "preview and whether they hold it; the real best's rank in the raw preview.\n\n"
            + table(["dataset", "rho raw", "rho corrected", "preview's tied set", "holds the real best",
                     "kept past the preview", "holds the real best", "real best's preview rank"], previews)
            + "\n\n## Every run\n\n"
            + table(["dataset", "seed", "candidates", "search's best", "in tied set", "tied set", "texts",
                     "texts share", "random in tied set", "last round"], every) + "\n")
    (BENCH / "search.md").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
