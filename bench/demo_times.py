"""Cold and warm wall time of the demo sweep (`make demo`), measured side by side in one run.

Cold: an empty cache folder (every chunk, sentence and question embedded, every index built).
Warm: the same command again on that cache (everything loaded). Prints both and their ratio;
`--json PATH` also writes them, with the run's stamp. Run from the repo root: python -m bench.demo_times
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.harness import Start, lap, stamp


def run(cache: Path, out: Path, extra: list[str]) -> tuple[float, str]:
    # not --quiet: its "done in" line is the summary kept (progress bars go to stderr, captured)
    cmd = [sys.executable, "-m", "workbench", "sweep", "--cache", str(cache), "--out", str(out), *extra]
    done, took = lap(lambda: subprocess.run(cmd, capture_output=True, text=True))
    if done.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{done.stderr}")
    summary = next((line for line in done.stdout.splitlines() if line.startswith("done in")), "")
    return took.wall_s, summary


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--json", type=Path, help="also write the measurements here")
    p.add_argument("extra", nargs="*", help="extra arguments for `python -m workbench sweep`")
    args = p.parse_args()
    start = Start()
    with tempfile.TemporaryDirectory() as tmp:
        cache, out = Path(tmp) / "cache", Path(tmp) / "out"
        cold, cold_line = run(cache, out, args.extra)
        warm, warm_line = run(cache, out, args.extra)
    row = {"cold_s": round(cold, 1), "warm_s": round(warm, 1), "cold_over_warm": round(cold / warm, 1),
           "cold": cold_line, "warm": warm_line, "stamp": stamp(start)}
    print(json.dumps(row, indent=2))
    if args.json:
        args.json.write_text(json.dumps(row, indent=2) + "\n")


if __name__ == "__main__":
    main()
