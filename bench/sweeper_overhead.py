"""What the sweeper panel adds to a sweep: the same grid through `wb.sweep` and through the
Sweeper's Run path (progress, figures filled in as variants finish), side by side in one process.

Each pass gets its own empty cache (cold: chunking and embedding dominate) and is then rerun on it
(warm: everything is loaded, so drawing weighs most). After one untimed warm-up pass, passes
alternate A, B, B, A so that a machine that slows down over time favours neither, and the faster
of each pair is kept (the run least disturbed by other work). Writes bench/sweeper_overhead.md.

    python bench/sweeper_overhead.py [--questions 120]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from workbench import grid, load_dataset, sweep
from workbench.dataset import Dataset
from workbench.models.embed import Embedder
from workbench.widgets import Sweeper

REPO = Path(__file__).resolve().parents[1]
GRID = {"size": "128, 256", "overlap": "0, 32"}  # the grid typed into the panel
KS = (1, 3, 5, 10)


def through_sweep(ds: Dataset, cache: Path) -> float:
    t0 = time.perf_counter()
    variants = grid("fixed", size=[128, 256], overlap=[0, 32])
    sweep(ds, variants, ks=KS, embedder=Embedder(cache_dir=cache, progress=False), store=cache, progress=False)
    return time.perf_counter() - t0


def through_panel(ds: Dataset, cache: Path) -> float:
    t0 = time.perf_counter()
    panel = Sweeper(ds, Embedder(cache_dir=cache, progress=False), cache, ks=KS, background=False, restore=False)
    panel.strategies.value = ("fixed",)
    for name, text in GRID.items():
        panel.ranges[name].value = text
    panel.run_button.click()
    if panel.run is None or panel.run.error:
        raise RuntimeError(f"the panel's sweep failed: {panel.message.value}")
    return time.perf_counter() - t0


def passes(ds: Dataset, order: list[tuple[str, Callable]]) -> dict[str, dict[str, list[float]]]:
    times: dict[str, dict[str, list[float]]] = {}
    for name, fn in order:
        with tempfile.TemporaryDirectory() as tmp:
            cold = fn(ds, Path(tmp))
            warm = fn(ds, Path(tmp))
        slot = times.setdefault(name, {"cold": [], "warm": []})
        slot["cold"].append(cold)
        slot["warm"].append(warm)
        print(f"{name}: cold {cold:.1f} s, warm {warm:.2f} s", flush=True)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=120, help="questions sampled from chroma_small")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "sweeper_overhead.md")
    args = parser.parse_args()
    ds = load_dataset(REPO / "data" / "chroma_small").select(max_questions=args.questions)
    a, b = ("wb.sweep", through_sweep), ("Sweeper Run", through_panel)
    passes(ds, [b])  # warm-up: imports, the model's files in the page cache, first figures
    times = passes(ds, [a, b, b, a])
    rows = []
    for kind in ("cold", "warm"):
        base = min(times["wb.sweep"][kind])
        mine = min(times["Sweeper Run"][kind])
        rows.append(f"| {kind} | {base:.2f} s | {mine:.2f} s | {mine / base - 1:+.1%} |")
    text = "\n".join([
        "# The sweeper panel's overhead over `wb.sweep`",
        "",
        f"{datetime.date.today()}, {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
        f"`python bench/sweeper_overhead.py --questions {args.questions}`.",
        "",
        f"The same grid (fixed, size {GRID['size']} x overlap {GRID['overlap']}: 4 variants) on chroma_small "
        f"({len(ds.documents)} documents, {len(ds.questions)} questions), ks {list(KS)}. Each pass has an empty "
        "cache (cold), then runs again on it (warm); after a warm-up, passes alternate A B B A and the faster "
        "of each pair is shown.",
        "The panel path is the Run button of `wb.widgets.Sweeper` (background=False): grid parsing, the sweep "
        "step by step with progress, and the figures drawn while it runs (within the panel's drawing budget).",
        "",
        "| cache | wb.sweep | Sweeper Run | overhead |",
        "|---|---|---|---|",
        *rows,
        "",
        "Target: within 5% on a cold sweep, the one a user waits for. A warm sweep takes about a second, "
        "so drawing the three figures once weighs more there (see the first and last draw in DrawBudget).",
        "",
    ])
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
