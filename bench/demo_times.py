"""Cold and warm wall time of the demo sweep (`make demo`), measured side by side in one run.

Cold: an empty cache folder (every chunk, sentence and question embedded, every index built).
Warm: the same command again on that cache (everything loaded). Prints both and their ratio;
`--json PATH` also writes them. Run from the repo root: python bench/demo_times.py
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def run(cache: Path, out: Path, extra: list[str]) -> tuple[float, str]:
    # not --quiet: its "done in" line is the summary kept (progress bars go to stderr, captured)
    cmd = [sys.executable, "-m", "workbench", "sweep", "--cache", str(cache), "--out", str(out), *extra]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{done.stderr}")
    summary = next((line for line in done.stdout.splitlines() if line.startswith("done in")), "")
    return time.perf_counter() - t0, summary


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--json", type=Path, help="also write the measurements here")
    p.add_argument("extra", nargs="*", help="extra arguments for `python -m workbench sweep`")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cache, out = Path(tmp) / "cache", Path(tmp) / "out"
        cold, cold_line = run(cache, out, args.extra)
        warm, warm_line = run(cache, out, args.extra)
    row = {"cold_s": round(cold, 1), "warm_s": round(warm, 1), "cold_over_warm": round(cold / warm, 1),
           "cores": os.cpu_count(), "cold": cold_line, "warm": warm_line}
    print(json.dumps(row, indent=2))
    if args.json:
        args.json.write_text(json.dumps(row, indent=2) + "\n")


if __name__ == "__main__":
    main()
