"""Issue 10's performance table: the workbench against a plain LlamaIndex loop, side by side in one run.

Every row is a ratio of two things measured in this run on this machine (2 cores, shared with
other jobs): seconds move with the load, ratios much less. Each measurement is a fresh process
timed whole, like a user's command, and runs once (a cold sweep takes minutes); the CPU seconds
of each process (user + sys) are shown too, since they suffer less from other jobs' load.

The grid is the one an engineer writes by hand, on data/chroma_small: recursive with chunk size
128/256/512 cl100k tokens x overlap 0/20%, and semantic with breakpoint percentile 80/90/95.
  1. cold sweep vs LlamaIndex loop: `python -m workbench sweep --no-report` on an empty cache vs
     bench/llamaindex_loop.py (SentenceSplitter / SemanticSplitterNodeParser + VectorStoreIndex
     + top-5 retrieval of every question, per variant).
  2. cold sweep vs its embedding floor: a fresh process that loads the model on the revision's
     default backend and embeds, batch 32 in length order, every distinct text the cold sweep
     embedded (chunks, semantic sentence groups, questions), and nothing else. The texts are
     regenerated with the measured workbench's own chunkers and checked against the keys of the
     cold sweep's vector cache.
  3. warm re-run (the same command on the cold run's cache) vs LlamaIndex loop; 3b the same with
     plots and report.html to a new --out, after a first report (what a user re-running a sweep gets:
     its figures read back from the cache's figure store, drawn once per content whatever the --out),
     and 3c that first report on the warm cache (every figure drawn once).
  4. 10 semantic percentiles vs 1, each on an empty cache.
  5. chunking throughput vs SentenceSplitter(256): bench/chunk_throughput.py's `measure()`.
  6. widget redraw: copied from bench/widgets.md (not re-run here).
recall@5 of the loop (scored with the workbench's metric from its retrieved spans) and of the
workbench, variant by variant, shows the two do comparable work.

`--rev REV` (repeatable) measures the workbench of that git revision, checked out with
`git worktree add` in a temporary folder and run with PYTHONPATH pointing at it (same .venv, same
data): `--rev 557fef0 --rev HEAD` gives before and after columns (557fef0: the last commit before
issue 21's work). Without --rev: the working tree. The texts, floor and throughput steps run the
measured revision's own copy of this script, so each side regenerates its texts with its own code.
Needs requirements-bench.txt. Run from the repo root: python -m bench.perf --rev 557fef0 --rev HEAD
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.harness import BENCH, OFFLINE, REPO, SMALL, Start, Timed, commit, git, header, table, timed

SIZES = (128, 256, 512)  # chunk sizes in cl100k tokens
OVERLAP_SHARE = 0.2  # the 20% overlap
PERCENTILES = (80, 90, 95)  # semantic breakpoint percentiles of the grid
MANY_PERCENTILES = tuple(range(50, 100, 5))  # row 4: ten percentiles, against the last one alone
FLOOR_BATCH = 32
# issue 21 (issue 10 where 21 names no target): (what it said "now", target)
ISSUE = {
    "cold_vs_loop": ("x2.3 faster (torch)", ">= x3 faster, default backend"),
    "cold_vs_floor": ("1.07x", "<= 1.10x (issue 10)"),
    "warm_vs_loop": ("x134 faster", ">= x80 faster (issue 10)"),
    "warm_report_vs_loop": ("x29 faster (5.9 s)", ">= x80 faster"),
    "first_report_vs_loop": ("", ""),
    "many_vs_one": ("1.8x (issue 10)", "preview mode (bench/preview.md)"),
    "throughput": ("fixed, recursive x7, sentence x1.7", "sentence >= x2"),
    "widgets": ("417 ms / 707 ms (issue 10)", "< 150 ms (issue 10)"),
}


def grid() -> list[tuple[str, str]]:
    """(workbench variant, LlamaIndex loop variant) pairs of the hand-written grid."""
    pairs = [(f"recursive:size={s},overlap={o}", f"sentence:chunk_size={s},chunk_overlap={o}")
             for s in SIZES for o in (0, round(s * OVERLAP_SHARE))]
    return pairs + [(f"semantic:breakpoint_percentile={p}", f"semantic:breakpoint_percentile_threshold={p}")
                    for p in PERCENTILES]


@dataclass
class Side:
    """One workbench measured: a git revision checked out in `tree` (or the working tree)."""

    name: str
    commit: str
    tree: Path
    work: Path  # its caches, outputs and texts
    runs: dict[str, Timed] = field(default_factory=dict)
    throughput: str = "not measured"  # chunk_throughput.measure()'s ratios, or why there are none
    recall: list[float] = field(default_factory=list)  # recall@5 of its cold sweep, in grid order
    distinct_texts: int = 0  # how many texts its cold sweep embedded

    @property
    def texts(self) -> Path:
        """The distinct texts its cold sweep embedded (JSON list)."""
        return self.work / "texts.json"

    @property
    def script(self) -> str:
        """This revision's own copy of this script: its texts, floor and throughput steps use its own code.
        Run by path, as every revision's copy can be (a revision's own bench/ sits on its PYTHONPATH)."""
        return str(self.tree / "bench" / "perf.py")

    @property
    def env(self) -> dict[str, str]:
        return os.environ | {"PYTHONPATH": str(self.tree)}

    def run(self, what: str, cmd: list[str]) -> Timed:
        print(f"[{time.strftime('%H:%M:%S')}] {self.name}: {what}", file=sys.stderr, flush=True)
        self.runs[what] = timed(cmd, self.tree, self.env)
        return self.runs[what]

    def sweep(self, what: str, data: Path, cache: Path, out: Path, specs: list[str], report: bool = False) -> Timed:
        cmd = [sys.executable, "-m", "workbench", "sweep", "--data", str(data), "--cache", str(cache),
               "--out", str(out), "--quiet", *([] if report else ["--no-report"])]
        return self.run(what, cmd + [a for s in specs for a in ("-v", s)])


@contextmanager
def sides(revs: list[str], tmp: Path) -> Iterator[list[Side]]:
    """A worktree per revision (removed afterwards), or the working tree when there is none."""
    if not revs:
        yield [Side("working tree", commit(), REPO, tmp / "side0")]
        return
    made = []
    try:
        for i, rev in enumerate(revs):
            tree = tmp / f"rev{i}"
            git("worktree", "add", "--detach", str(tree), rev)
            made.append(Side(rev, git("rev-parse", "--short", rev), tree, tmp / f"side{i}"))
        yield made
    finally:
        for s in made:
            git("worktree", "remove", "--force", str(s.tree))


def collect_texts(data: Path, cache: Path, out: Path, specs: list[str]) -> None:
    """Write every distinct text the cold sweep embedded (questions, semantic sentence groups,
    chunks), regenerated with this workbench's chunkers since the vector cache keeps only sha256
    keys. Fails unless they are exactly the cache's texts: all cached, nothing else in it."""
    from workbench.chunkers import ChunkEnv
    from workbench.ingest import load_dataset
    from workbench.models.cache import text_key
    from workbench.models.embed import Embedder
    from workbench.retrieval.index import embed_texts
    from workbench.variant import parse_variant

    dataset = load_dataset(data)
    embedder = Embedder(cache_dir=cache, progress=False)
    texts = [q.question for q in dataset.questions]

    def recording(batch: list[str]) -> Any:
        texts.extend(batch)
        return embedder.encode(batch)

    env = ChunkEnv(embed=recording, model_tokenizer=embedder.tokenizer)
    for spec in specs:
        texts += embed_texts(parse_variant(spec).chunk(dataset, env))
    distinct = list(dict.fromkeys(texts))
    cached = embedder.cache.get_many([text_key(t) for t in distinct])
    if embedder.stats.embedded or len(cached) != len(distinct) or len(embedder.cache) != len(distinct):
        raise SystemExit(f"--texts: {len(distinct)} distinct texts regenerated, {len(cached)} of them in the cache "
                         f"{embedder.cache.path} of {len(embedder.cache)} vectors: not the cold sweep's texts")
    out.write_text(json.dumps(distinct))


def embed_floor(texts: Path, model: Path) -> None:
    """The floor: load the model on the backend a new cache gets and embed every text once, in
    batches of FLOOR_BATCH in length order, nothing else: onnxruntime on the exported model
    (OnnxEncoder, what backend="auto" runs) or, where that is torch, sentence-transformers."""
    from workbench.models.embed import Embedder

    ordered = sorted(json.loads(texts.read_text()), key=len)
    # no cache folder: the backend a new cache gets (the default folder, results/cache under the working
    # directory, turns "auto" into torch once a torch vector file sits there)
    encoder = Embedder(model, cache_dir=None, progress=False).onnx_encoder
    if encoder is not None:
        encoder.encode(ordered, FLOOR_BATCH)
        return
    from sentence_transformers import SentenceTransformer

    SentenceTransformer(str(model), device="cpu").encode(ordered, batch_size=FLOOR_BATCH, normalize_embeddings=True)


def write_throughput(out: Path) -> None:
    from bench import chunk_throughput  # this revision's; its workbench is the one on PYTHONPATH

    chunk_throughput.measure().to_json(out)


def loop_recall(data: Path, retrieved: Path) -> dict[str, float]:
    """Mean recall@5 of each loop variant, scored by the workbench's metric from the retrieved spans."""
    from workbench.dataset import Hit, Span
    from workbench.evaluation.metrics import score_rankings
    from workbench.ingest import load_dataset

    questions = load_dataset(data).questions
    untokenized = {"cl100k_base": 0, "o200k_base": 0}
    out = {}
    for spec, ranked in json.loads(retrieved.read_text()).items():
        hits = [[Hit(Span(*span), 0.0, i, untokenized) for i, span in enumerate(r)] for r in ranked]
        scores = score_rankings(questions, hits, [5])
        out[spec] = float(scores.loc[scores.metric == "recall", "value"].mean())
    return out


def workbench_recall(out: Path) -> list[float]:
    """Mean recall@5 of each variant of a sweep's output folder, in grid order."""
    import pandas as pd

    summary = pd.read_csv(out / "summary.csv")
    order = pd.read_csv(out / "variants.csv")["variant"].tolist()
    rows = summary[(summary.metric == "recall") & (summary.k == 5) & (summary.budget == 0)].set_index("variant")
    return [float(rows.loc[v, "mean"]) for v in order]


@dataclass
class Measured:
    """Everything measured so far: the table is written after every step, so a run stopped early
    (or still going) leaves the rows it finished."""

    sides: list[Side]
    loop: Timed | None = None
    loop_recall: dict[str, float] = field(default_factory=dict)  # recall@5 per LlamaIndex variant
    done: bool = False


def export_model(model: Path) -> None:
    """The default backend's ONNX export of `model`, made now, untimed, if the model store lacks it:
    it is made once per machine (about 7 to 17 s), so on a new machine the first timed cold sweep
    would pay it and no later one (found on 4 Dec, the first run of this script on a new machine)."""
    from workbench.models.embed import Embedder

    Embedder(model, progress=False).onnx_encoder  # noqa: B018  (the property exports when needed)


def measure(revs: list[str], data: Path, tmp: Path, save: Callable[[Measured], None]) -> None:
    """Every process of the table, the same kind for every side back to back, the most wanted rows first."""
    from workbench.models.embed import default_model_path

    model = default_model_path()
    wb_specs, loop_specs = (list(specs) for specs in zip(*grid(), strict=True))
    with sides(revs, tmp) as measured:
        m = Measured(measured)
        export_model(model)
        for s in measured:
            s.sweep("cold", data, s.work / "cache", s.work / "cold", wb_specs)
            s.recall = workbench_recall(s.work / "cold")
            save(m)
        loop_out = tmp / "loop.json"
        print(f"[{time.strftime('%H:%M:%S')}] LlamaIndex loop", file=sys.stderr, flush=True)
        m.loop = timed([sys.executable, str(BENCH / "llamaindex_loop.py"), "--model", str(model), "--data", str(data),
                        "--out", str(loop_out), *[a for s in loop_specs for a in ("-v", s)]],
                       REPO, {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | OFFLINE)
        m.loop_recall = loop_recall(data, loop_out)
        save(m)
        # the last re-runs the one before it to a new --out: its figures come from the cache, not the folder
        for what, out in (("warm", "warm"), ("first report", "warm"), ("warm + report", "warm-new-out")):
            for s in measured:
                s.sweep(what, data, s.work / "cache", s.work / out, wb_specs, report=what != "warm")
            save(m)
        for s in measured:  # each revision's floor runs on its own default backend
            s.run("texts", [sys.executable, s.script, "--data", str(data), "--texts", str(s.work / "cache"),
                            str(s.texts), *wb_specs])
            s.distinct_texts = len(json.loads(s.texts.read_text()))
            s.run("floor", [sys.executable, s.script, "--floor", str(s.texts), str(model)])
            save(m)
        for n, percentiles in (("1 percentile", MANY_PERCENTILES[-1:]), ("10 percentiles", MANY_PERCENTILES)):
            for s in measured:
                s.sweep(n, data, s.work / n / "cache", s.work / n / "out",
                        [f"semantic:breakpoint_percentile={p}" for p in percentiles])
            save(m)
        for s in measured:
            if not (s.tree / "bench" / "chunk_throughput.py").exists():
                s.throughput = "bench/chunk_throughput.py does not exist yet"
                continue
            s.run("throughput", [sys.executable, s.script, "--throughput", str(s.work / "throughput.json")])
            s.throughput = throughput_cell(s.work / "throughput.json")
            save(m)
        m.done = True
        save(m)


def throughput_cell(rows: Path) -> str:
    """chunk_throughput.measure()'s ratios, one line per corpus."""
    import pandas as pd

    df = pd.read_json(rows)
    return "<br>".join(f"{corpus}: " + ", ".join(f"{r.variant.split('(')[0]} x{r.ratio:.1f}" for r in g.itertuples())
                       for corpus, g in df.groupby("corpus", sort=False))


def widgets_table() -> str:
    """bench/widgets.md but its title: its stamp (when, where), what it measured, its table."""
    lines = (BENCH / "widgets.md").read_text().splitlines()
    return "\n".join(ln for ln in lines if not ln.startswith("#")).strip()


def both(num: Timed | None, den: Timed | None, faster: bool) -> str:
    """`num / den` by wall time, then by CPU time; `faster` phrases it as x N faster."""
    if num is None or den is None:
        return "not measured"
    wall, cpu = num.wall_s / den.wall_s, num.cpu_s / den.cpu_s
    return f"x{wall:.1f} faster (CPU x{cpu:.1f})" if faster else f"{wall:.2f}x (CPU {cpu:.2f}x)"


def seconds(t: Timed | None) -> str:
    return "" if t is None else f"{t.wall_s:.1f} / {t.cpu_s:.1f} / {t.load:.1f}"


def markdown(m: Measured, start: Start, data: Path) -> str:
    rows: list[tuple[str, str, Callable[[Side], str]]] = [
        ("1. cold sweep vs LlamaIndex loop (`--no-report`)", "cold_vs_loop",
         lambda s: both(m.loop, s.runs.get("cold"), True)),
        ("2. cold sweep vs its embedding floor", "cold_vs_floor",
         lambda s: both(s.runs.get("cold"), s.runs.get("floor"), False)),
        ("3. warm re-run vs LlamaIndex loop (`--no-report`)", "warm_vs_loop",
         lambda s: both(m.loop, s.runs.get("warm"), True)),
        ("3b. warm re-run with plots + report.html to a new `--out` vs LlamaIndex loop (after a first report)",
         "warm_report_vs_loop", lambda s: both(m.loop, s.runs.get("warm + report"), True)),
        ("3c. first report on the warm cache (every figure drawn) vs LlamaIndex loop", "first_report_vs_loop",
         lambda s: both(m.loop, s.runs.get("first report"), True)),
        ("4. 10 semantic percentiles vs 1, each from an empty cache", "many_vs_one",
         lambda s: both(s.runs.get("10 percentiles"), s.runs.get("1 percentile"), False)),
        ("5. chunking throughput vs SentenceSplitter(256)", "throughput", lambda s: s.throughput),
        ("6. widget redraw, median (k change / variant switch)", "widgets", lambda s: "bench/widgets.md, below"),
    ]
    names = [f"{s.name} ({s.commit})" for s in m.sides]
    partial = "" if m.done else " **Partial: the run had not finished all its steps when this was written.**"
    processes = list(dict.fromkeys(what for s in m.sides for what in s.runs))
    out = [
        header("Performance: the workbench against a plain LlamaIndex loop", start),
        (f"After {start.elapsed_s() / 60:.0f} min. The machine was **shared** with other engineers' tests and "
         "benchmarks (load average column below): every row is a ratio of processes run back to back in this one run, "
         "each once, timed whole as a fresh process (wall clock; CPU seconds, user + sys, in brackets, since "
         "they suffer less from the load). Torch threads: library default for every process. The default "
         "backend's ONNX export of the model, made once per machine into the model store, is made before the "
         f"first timed process.{partial}"),
        "",
        f"Grid on `{os.path.relpath(data, REPO)}`: "
        + ", ".join(f"`{w}`" for w, _ in grid()) + ". The LlamaIndex loop (bench/llamaindex_loop.py) runs the "
        "same grid as " + ", ".join(f"`{lp}`" for _, lp in grid()) + " with HuggingFaceEmbedding of the same "
        "local model (its default batch of 10), a VectorStoreIndex per variant and a top-5 retriever query per "
        "question. Its recursive stand-in is SentenceSplitter, the splitter LlamaIndex users run.",
        "",
        table(["measure", "issue 21 (3b: issue 48) said", "target", *names],
              [[label, *ISSUE[key], *(cell(s) for s in m.sides)] for label, key, cell in rows]),
        "", "## Every process", "",
        table(["process", *(f"{n}: wall s / CPU s / load" for n in names)],
              [["LlamaIndex loop (one run, shared by every column)", *(seconds(m.loop) for _ in m.sides)]]
              + [[what, *(seconds(s.runs.get(what)) for s in m.sides)] for what in processes]),
        "",
        "Distinct texts the cold sweep embedded (the floor embeds exactly these): "
        + ", ".join(f"{n}: {s.distinct_texts:,}" for n, s in zip(names, m.sides, strict=True)) + ". "
        "A cold sweep with plots and report.html costs about its `--no-report` time plus the difference of the "
        "first report and warm rows.",
        "",
        "## recall@5, variant by variant",
        "",
        ("The loop's retrieved spans scored with the workbench's own recall@5 (share of evidence characters "
         "in the top 5): the two do comparable work. Chunkers differ by design (recursive vs SentenceSplitter; "
         "the workbench's semantic splits sentences at line breaks too)."),
        "",
        table(["workbench variant", "LlamaIndex variant", "LlamaIndex", *names],
              [[f"`{w}`", f"`{lp}`", f"{m.loop_recall[lp]:.3f}" if lp in m.loop_recall else "",
                *(f"{s.recall[i]:.3f}" if s.recall else "" for s in m.sides)] for i, (w, lp) in enumerate(grid())]),
        "", "## Widget redraw (row 6)", "",
        ("Copied from bench/widgets.md (`python -m bench.widgets`, not re-run by this script; it measures "
         "only the current widgets). Its 'old way' row is the redraw before the widget work."), "",
        widgets_table(), "", "## Commands", "",
        "Temporary folders shown as they were; `PYTHONPATH` = the measured revision's worktree.", "",
    ]
    ran = ([("LlamaIndex loop", m.loop)] if m.loop else []) + list(m.sides[-1].runs.items())
    out += [f"- {what}: `{t.command}`" for what, t in ran]
    return "\n".join(out) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rev", action="append", default=[], help="git revision to measure (repeatable), e.g. 557fef0")
    p.add_argument("--out", type=Path, default=BENCH / "perf.md", help="markdown to write (default: bench/perf.md)")
    p.add_argument("--data", type=Path, default=SMALL,
                   help="dataset folder (default: %(default)s)")
    p.add_argument("--texts", nargs=2, type=Path, metavar=("CACHE", "OUT"), help=argparse.SUPPRESS)
    p.add_argument("--floor", nargs=2, type=Path, metavar=("TEXTS", "MODEL"), help=argparse.SUPPRESS)
    p.add_argument("--throughput", type=Path, metavar="OUT", help=argparse.SUPPRESS)
    p.add_argument("specs", nargs="*", help=argparse.SUPPRESS)  # the variants of --texts
    args = p.parse_args()
    if args.texts:  # the subprocesses of `measure`, each in a fresh process
        return collect_texts(args.data, *args.texts, args.specs)
    if args.floor:
        return embed_floor(*args.floor)
    if args.throughput:
        return write_throughput(args.throughput)
    start = Start()

    def save(m: Measured) -> None:
        args.out.write_text(markdown(m, start, args.data))

    with tempfile.TemporaryDirectory(prefix="perf-") as tmp:
        measure(args.rev, args.data.resolve(), Path(tmp), save)
    print(args.out.read_text())


if __name__ == "__main__":
    main()
