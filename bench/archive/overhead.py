"""Issue 21: the overhead of a CLI sweep, cold and warm, before and after, against chunklab, in one run.

On peers.py's small corpus (data/chroma_small's 3 documents as .md files cut to their first
CORPUS_CHARS characters, with their questions) and chunklab's four example strategies, each a fresh
process timed whole (wall and CPU seconds, the load when it started):
  `python -m workbench sweep ...` with plots and report.html, of each git revision given (`--rev`,
  default: BEFORE and HEAD, each checked out with `git worktree add`), and chunklab `run` with its
  HTML report, the same local all-MiniLM-L6-v2 for all;
  cold = empty caches, then warm = the same command again on them (best of `--warm-repeats`);
  the contenders interleaved, so a burst of load from other jobs hits each alike.
Then, per revision, what `python -X importtime` says a `--help` and a warm sweep import (torch,
sentence_transformers, matplotlib, in seconds; "-" when not imported at all).
Run from the repo root: python -m bench.archive.overhead [--rev A --rev B] [--out bench/archive/overhead.md]
(about 5 minutes on 2 cores). Needs requirements-bench.txt (chunklab).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.harness import BENCH, REPO, SMALL, Start, Timed, header, load, table, timed
from bench.peers import OFFLINE, QUESTIONS_PER_DOC, STRATEGIES, build_corpus, chunklab_config
from bench.perf import sides
from workbench.core.offline import bundled_tiktoken
from workbench.ingest import load_dataset

BEFORE = "b06992d"  # the last commit before this overhead work
CORPUS_CHARS = 4_000
HEAVY = ("torch", "sentence_transformers", "matplotlib")  # what a run that needs none should not import


def sweep_cmd(tree_docs: Path, cache: Path, out: Path) -> list[str]:
    specs = [a for _, _, spec in STRATEGIES for a in ("-v", spec)]
    return ["-m", "workbench", "sweep", "--data", str(tree_docs), "--cache", str(cache), "--out", str(out),
            "--quiet", *specs]


def heavy_imports(cmd: list[str], env: dict[str, str], cwd: Path) -> dict[str, float]:
    """Cumulative import seconds of each HEAVY package in one run of `cmd` under -X importtime, at
    whatever depth it was first imported (absent: not imported)."""
    done = subprocess.run([sys.executable, "-X", "importtime", *cmd], cwd=cwd, env=env, capture_output=True,
                          text=True, check=True)
    found = re.finditer(r"^import time:\s+\d+ \|\s+(\d+) \|\s*(\S+)$", done.stderr, re.M)
    return {m.group(2): int(m.group(1)) / 1e6 for m in found if m.group(2) in HEAVY}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rev", action="append", help=f"git revisions to measure (default: {BEFORE} and HEAD)")
    p.add_argument("--warm-repeats", type=int, default=3, help="warm runs of each contender; the best is kept")
    p.add_argument("--out", type=Path, default=BENCH / "archive" / "overhead.md")
    args = p.parse_args()
    revs = args.rev or [BEFORE, "HEAD"]
    start = Start()
    base = os.environ | OFFLINE | {"TIKTOKEN_CACHE_DIR": str(bundled_tiktoken())}
    with tempfile.TemporaryDirectory(prefix="overhead-") as tmp, sides(revs, Path(tmp)) as measured:
        work = Path(tmp)
        build_corpus(work / "corpus", load_dataset(SMALL), CORPUS_CHARS, QUESTIONS_PER_DOC)
        docs = work / "corpus" / "docs"
        # each revision run from its own tree: `python -m` puts the working folder before PYTHONPATH
        cmds = {s.name: ([sys.executable, *sweep_cmd(docs, work / f"cache-{i}", work / f"out-{i}")],
                         base | {"PYTHONPATH": str(s.tree)}, s.tree) for i, s in enumerate(measured)}
        cmds["chunklab"] = ([sys.executable, "-m", "chunklab", "run", "--docs", str(docs), "--questions",
                             str(work / "corpus" / "questions.yaml"), "--config",
                             str(chunklab_config(work / "corpus", True)), "--out", str(work / "chunklab")],
                            base | {"CHUNKLAB_CACHE_DIR": str(work / "chunklab-cache")}, REPO)
        runs: dict[tuple[str, str], Timed] = {}
        for state, repeats in (("cold", 1), ("warm", args.warm_repeats)):
            for _ in range(repeats):
                for name, (cmd, env, cwd) in cmds.items():
                    print(f"[{time.strftime('%H:%M:%S')}] {name} {state}", file=sys.stderr, flush=True)
                    t = timed(cmd, cwd, env)
                    if (name, state) not in runs or t.wall_s < runs[name, state].wall_s:
                        runs[name, state] = t
        imports = {s.name: {"--help": heavy_imports(["-m", "workbench", "--help"], cmds[s.name][1], s.tree),
                            "warm sweep": heavy_imports(cmds[s.name][0][1:], cmds[s.name][1], s.tree)}
                   for s in measured}
        commits = {s.name: s.commit for s in measured}
    md = markdown(revs, commits, runs, imports, start)
    print(md)
    args.out.write_text(md)


def markdown(revs: list[str], commits: dict[str, str], runs: dict[tuple[str, str], Timed],
             imports: dict[str, dict[str, dict[str, float]]], start: Start) -> str:
    names = [*revs, "chunklab"]
    rows = []
    for state in ("cold", "warm"):
        new, old, peer = runs[revs[-1], state], runs[revs[0], state], runs["chunklab", state]
        rows.append([f"{state}, with the report",
                     *(f"{runs[n, state].wall_s:.1f} ({runs[n, state].cpu_s:.1f}, {runs[n, state].load:.1f})"
                       for n in names),
                     f"x{peer.wall_s / new.wall_s:.2f} / x{peer.cpu_s / new.cpu_s:.2f}",
                     f"x{old.wall_s / new.wall_s:.2f} / x{old.cpu_s / new.cpu_s:.2f}"])
    out = [header("CLI sweep overhead, cold and warm (issue 21)", start),
           f"{start.elapsed_s() / 60:.1f} min, shared with other engineers' jobs: load average (1/5/15 min) "
           f"{start.load} at the start, {load()} at the end. Seconds move with that load; the ratios, measured side "
           "by side, much less.", "",
           f"Corpus: data/chroma_small's 3 documents as .md files cut to their first {CORPUS_CHARS:,} characters, "
           f"with their questions (bench/peers.py's corpus); chunklab's example strategies against the workbench's "
           f"closest variants ({', '.join(f'`{s}`' for _, _, s in STRATEGIES)}), the bundled all-MiniLM-L6-v2, "
           "top 5, with plots and report.html (chunklab: its HTML report). Each run a fresh process timed whole: "
           "cold on empty caches, warm the same command again (best of the warm runs). Wall s (CPU s, load at "
           "start).", "",
           table(["run", *(f"`{r}` ({commits[r]})" for r in revs), "chunklab",
                  f"`{revs[-1]}` x faster than chunklab (wall / CPU)",
                  f"`{revs[-1]}` x faster than `{revs[0]}` (wall / CPU)"], rows),
           "", "Heavy imports (`python -X importtime`, cumulative s of each package at whatever depth it was first "
           "imported; - = not imported):", "",
           table(["revision", "command", *HEAVY],
                 [[f"`{rev}`", what, *(f"{found[h]:.2f}" if h in found else "-" for h in HEAVY)]
                  for rev in revs for what, found in imports[rev].items()])]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    main()
