"""What every study shares, so that each times, names its machine and stamps its result file the same way:
the repo's paths, a timer for an in-process step and one for a whole command as a fresh process, the
machine (CPU, cores, load), Markdown tables, and the stamp under every result file's title (when, on what
machine, at which commit, by which command), which bench/results.py reads back.

Studies run from the repo root as modules of this package: python -m bench.<study>.
"""

from __future__ import annotations

import datetime
import os
import platform
import re
import resource
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
SMALL = REPO / "data" / "chroma_small"  # the bundled corpus: every fresh clone has it
SHARED = REPO.parent / "shared" / "datasets"  # the shared data beside the repo, for the studies that need more
# for a child process that loads a model through Hugging Face (the LlamaIndex loop, chunklab): nothing may be
# downloaded (`import workbench` sets these for its own process only)
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


# ---- timers ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Lap:
    """One in-process step: wall seconds, and this process's CPU seconds (user + sys, every thread)."""

    wall_s: float
    cpu_s: float


def lap(fn: Callable[[], T]) -> tuple[T, Lap]:
    """`fn()`, and how long it took."""
    w0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, Lap(time.perf_counter() - w0, time.process_time() - c0)


def repeat(fn: Callable[[], T], times: int) -> tuple[T, list[Lap]]:
    """The last call's output and every call's lap, of `times` calls of `fn` in a row."""
    laps = []
    for _ in range(times):
        out, took = lap(fn)
        laps.append(took)
    return out, laps


def interleaved(contenders: Mapping[str, Callable[[], object]], repeats: int) -> dict[str, list[Lap]]:
    """Every contender's laps over `repeats` rounds, each round calling every contender once in turn: a
    burst of load from other jobs on the shared machine then hits them alike. Warm them up first."""
    laps: dict[str, list[Lap]] = {name: [] for name in contenders}
    for _ in range(repeats):
        for name, fn in contenders.items():
            laps[name].append(lap(fn)[1])
    return laps


def best(laps: Iterable[Lap]) -> Lap:
    """The fastest lap: the one least disturbed by other work."""
    return min(laps, key=lambda x: x.wall_s)


@dataclass(frozen=True)
class Timed:
    """One command run as a fresh process, timed whole, as a user waits for it."""

    wall_s: float
    cpu_s: float  # user + sys of the process and its children
    load: float  # 1-minute load average when it started: how busy the shared machine was
    command: str


def timed(cmd: list[str], cwd: Path, env: Mapping[str, str]) -> Timed:
    """Run `cmd` as a fresh process; its wall and CPU seconds. Fails naming the command."""
    before, load_1 = resource.getrusage(resource.RUSAGE_CHILDREN), os.getloadavg()[0]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, check=False, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if done.returncode:
        raise SystemExit(f"{shlex.join(cmd)} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return Timed(wall, cpu, load_1, shlex.join(cmd))


# ---- the machine ----------------------------------------------------------------------------------------

def cpu_name() -> str:
    """The CPU's name, family and model, and its VNNI extensions: a VM's "AMD EPYC" names several
    generations, and onnxruntime's speed against torch went from 2.1x on 2 Dec to 1.2x on 4 Dec
    (bench/backends.md), torch's own unchanged, on machines that both called themselves that."""
    text = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    first = text.split("\n\n", 1)[0].splitlines()  # the first processor's block
    info = {k.strip(): v.strip() for k, _, v in (ln.partition(":") for ln in first)}
    if "model name" not in info:
        return platform.processor() or "unknown CPU"
    flags = info.get("flags", "").split()
    vnni = ", ".join(f for f in ("avx512_vnni", "avx_vnni") if f in flags) or "no VNNI"
    return f"{info['model name']}, family {info.get('cpu family', '?')} model {info.get('model', '?')}, {vnni}"


def cores() -> int:
    return os.cpu_count() or 1


def load() -> str:
    """The 1, 5 and 15-minute load averages, as "1.5/1.7/1.7": how busy the shared machine is."""
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def machine() -> str:
    """What a result depends on beyond the code: cores, CPU, system and Python."""
    return f"{cores()} cores ({cpu_name()}), {platform.system()}, Python {platform.python_version()}"


def git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(REPO), *args], check=True, capture_output=True, text=True).stdout.strip()


def commit() -> str:
    """HEAD's short id, and whether the measured code (workbench/, bench/*.py) differs from it; result
    files rewritten by earlier studies of the same `make bench` do not count."""
    try:
        head = git("rev-parse", "--short", "HEAD")
        changed = git("status", "--porcelain", "--untracked-files=no", "--", "workbench", ":(glob)bench/**/*.py")
    except (OSError, subprocess.CalledProcessError):
        return "unknown (no git checkout)"
    return head + (" + uncommitted changes" if changed else "")


def command() -> str:
    """This process's command as typed from the repo root: `python -m bench.perf --rev HEAD`, with
    `nice -n N` when it ran niced."""
    spec = getattr(sys.modules["__main__"], "__spec__", None)
    head = ["-m", spec.name] if spec else [os.path.relpath(sys.argv[0], REPO)]
    niceness = os.nice(0)
    return shlex.join([*(["nice", "-n", str(niceness)] if niceness else []), "python", *head, *sys.argv[1:]])


# ---- result files ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Start:
    """When a study started and how busy the machine was then: what its stamp says."""

    at: datetime.datetime = field(default_factory=lambda: datetime.datetime.now(datetime.UTC))
    load: str = field(default_factory=load)

    def elapsed_s(self) -> float:
        """Seconds since the start, by the wall clock: how long the study has run."""
        return (datetime.datetime.now(datetime.UTC) - self.at).total_seconds()


# what `stamp` writes; bench/results.py reads a result file's date and machine with it
STAMP = re.compile(r"^Run (?P<date>\d{4}-\d\d-\d\d \d\d:\d\d UTC) on (?P<machine>[^;]+); "
                   r"load (?P<load>[\d./]+) at the start; commit (?P<commit>[^;]+); `(?P<command>[^`]+)`", re.M)


def stamp(start: Start | None = None) -> str:
    """When (UTC), on what machine, how busy, at which commit and by which command a result was made."""
    start = start or Start()
    return (f"Run {start.at:%Y-%m-%d %H:%M} UTC on {machine()}; load {start.load} at the start; "
            f"commit {commit()}; `{command()}`")


def header(title: str, start: Start | None = None) -> str:
    """A result file's first lines: its title, then its stamp."""
    return f"# {title}\n\n{stamp(start)}\n"


def table(head: Sequence[str], rows: Iterable[Sequence[object]], align: Sequence[str] | None = None) -> str:
    """A Markdown table of cells formatted by the caller; `align`: each column's rule ("---", "---:")."""
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(align or ["---"] * len(head)) + "|"]
    return "\n".join(lines + ["| " + " | ".join(map(str, row)) + " |" for row in rows])
