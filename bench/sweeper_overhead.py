"""What the sweeper panel adds to a sweep: the same grid through `wb.sweep` and through the
Sweeper's Run path (progress, figures filled in as variants finish), side by side in one process.

Each pass gets its own empty cache (cold: chunking and embedding dominate) and is then rerun on it
(warm: everything is loaded, so drawing weighs most). After one untimed warm-up pass, passes
alternate A, B, B, A so that a machine that slows down over time favours neither, and the faster
of each pair is kept (the run least disturbed by other work). Writes bench/sweeper_overhead.md.

    python -m bench.sweeper_overhead [--questions 120]
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from bench.harness import BENCH, SMALL, Start, header, lap, table
from workbench import grid, load_dataset, sweep
from workbench.dataset import Dataset
from workbench.models.embed import Embedder
from workbench.widgets import Sweeper

GRID = {"size": "128, 256", "overlap": "0, 32"}  # the grid typed into the panel
KS = (1, 3, 5, 10)


def through_sweep(ds: Dataset, cache: Path) -> None:
    variants = grid("fixed", size=[128, 256], overlap=[0, 32])
    sweep(ds, variants, ks=KS, embedder=Embedder(cache_dir=cache, progress=False), store=cache, progress=False)


def through_panel(ds: Dataset, cache: Path) -> None:
    panel = Sweeper(ds, Embedder(cache_dir=cache, progress=False), cache, ks=KS, background=False, restore=False)
    panel.strategies.value = ("fixed",)
    for name, text in GRID.items():
        panel.ranges[name].value = text
    panel.run_button.click()
    if panel.run is None or panel.run.error:
        raise RuntimeError(f"the panel's sweep failed: {panel.message.value}")


def passes(ds: Dataset, order: list[tuple[str, Callable[[Dataset, Path], None]]]) -> dict[str, dict[str, list[float]]]:
    """Seconds of each pass, cold (an empty cache) then warm (the same cache again)."""
    times: dict[str, dict[str, list[float]]] = {}
    for name, fn in order:
        with tempfile.TemporaryDirectory() as tmp:
            cold = lap(partial(fn, ds, Path(tmp)))[1].wall_s
            warm = lap(partial(fn, ds, Path(tmp)))[1].wall_s
        slot = times.setdefault(name, {"cold": [], "warm": []})
        slot["cold"].append(cold)
        slot["warm"].append(warm)
        print(f"{name}: cold {cold:.1f} s, warm {warm:.2f} s", flush=True)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=120, help="questions sampled from chroma_small")
    parser.add_argument("--out", type=Path, default=BENCH / "sweeper_overhead.md")
    args = parser.parse_args()
    start = Start()
    ds = load_dataset(SMALL).select(max_questions=args.questions)
    a, b = ("wb.sweep", through_sweep), ("Sweeper Run", through_panel)
    passes(ds, [b])  # warm-up: imports, the model's files in the page cache, first figures
    times = passes(ds, [a, b, b, a])
    rows = []
    for kind in ("cold", "warm"):
        base = min(times["wb.sweep"][kind])
        mine = min(times["Sweeper Run"][kind])
        rows.append([kind, f"{base:.2f} s", f"{mine:.2f} s", f"{mine / base - 1:+.1%}"])
    text = "\n".join([
        header("The sweeper panel's overhead over `wb.sweep`", start),
        f"The same grid (fixed, size {GRID['size']} x overlap {GRID['overlap']}: 4 variants) on chroma_small "
        f"({len(ds.documents)} documents, {len(ds.questions)} questions), ks {list(KS)}. Each pass has an empty "
        "cache (cold), then runs again on it (warm); after a warm-up, passes alternate A B B A and the faster "
        "of each pair is shown.",
        "The panel path is the Run button of `wb.widgets.Sweeper` (background=False): grid parsing, the sweep "
        "step by step with progress, and the figures drawn while it runs (within the panel's drawing budget).",
        "",
        table(["cache", "wb.sweep", "Sweeper Run", "overhead"], rows),
        "",
        "Target: within 5% on a cold sweep, the one a user waits for. A warm sweep takes about a second, "
        "so drawing the three figures once weighs more there (see the first and last draw in DrawBudget).",
        "",
    ])
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
