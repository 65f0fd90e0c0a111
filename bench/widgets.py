"""Redraw times of the sweeper's plots on data/chroma_small: scrub, k change, and the old way.

Scrub: a highlight change on a measured result, through widgets.render.Picture (background
pasted back, marks drawn, PNG at zlib level 1; measured uncached, and as a cache hit).
k change: a new base (build the overview at another k, draw it once, first PNG).
Old way: plots.overview(..., highlight=...) then figure_to_png_bytes, as the panel did.
The sweep itself comes from the cache folder; the first run builds every index (557 s on an empty
cache here, 2 shared cores under other jobs' load; the table's header says how long it took).
Warm, the whole run takes about 30 s.
Writes bench/widgets.md. Run from the repo root: python -m bench.widgets [--cache results/cache]
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np

import workbench as wb
from bench.harness import BENCH, SMALL, Start, header, lap, table
from workbench.figures import plots
from workbench.widgets.render import Picture

REPS = 24


def variants() -> list[wb.Variant]:
    return [*wb.grid("fixed", size=[128, 256, 512], overlap=[0, 64]),
            *wb.grid("recursive", size=[128, 256, 512]),
            *wb.grid("semantic", breakpoint_percentile=[80, 90, 95], max_size=256)]


def timed(step: Callable[[int], object], reps: int = REPS) -> list[float]:
    """Wall times in ms of step(0), step(1), ... (one untimed call first, to warm caches)."""
    step(reps)
    return [1000 * lap(partial(step, i))[1].wall_s for i in range(reps)]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cache", type=Path, default=Path("results/cache"), help="index store (default: %(default)s)")
    p.add_argument("--out", type=Path, default=BENCH / "widgets.md")
    args = p.parse_args()
    start = Start()
    ds = wb.load_dataset(SMALL)
    result, took = lap(lambda: wb.sweep(ds, variants(), store=args.cache, progress=False))
    sweep_s = took.wall_s
    keys, ks = result.keys, result.ks
    k = ks[-2]

    def key(i: int) -> str:
        return keys[i % len(keys)]

    base = Picture(plots.overview(result, k=k), cache_size=0)  # no cache: every scrub draws
    cached = Picture(plots.overview(result, k=k))
    for i in range(len(keys)):
        cached.png(key(i))
    size = Picture(plots.by_parameter(result, "size", k=k), cache_size=0)
    grid = Picture(plots.heatmap(result, "size", "overlap", k=k, strategy="fixed"), cache_size=0)
    rows = {
        "old way: overview(highlight=...) + figure_to_png_bytes":
            timed(lambda i: plots.figure_to_png_bytes(plots.overview(result, k=k, highlight=key(i)))),
        "scrub, overview (Picture.png of a new highlight)": timed(lambda i: base.png(key(i))),
        "scrub, overview, highlight seen before (cache hit)": timed(lambda i: cached.png(key(i))),
        "scrub, by_parameter(size), 3 panels": timed(lambda i: size.png(key(i))),
        "scrub, heatmap(size x overlap)": timed(lambda i: grid.png(key(i))),
        "k change: new base (overview at k, drawn once, first PNG)":
            timed(lambda i: Picture(plots.overview(result, k=ks[i % len(ks)])).png(key(i))),
    }
    old = statistics.median(next(iter(rows.values())))
    lines = [
        header("Widget redraw times", start),
        (f"{len(keys)} variants of data/chroma_small ({len(ds.questions)} questions), overview at k={k}, "
         f"dpi 100, {REPS} repetitions each after one warm-up, on a shared machine. "
         f"Sweep loaded from `{args.cache}` in {sweep_s:.1f} s."),
        "",
        table(["what", "median ms", "p90 ms", "median / old way"],
              [[name, f"{statistics.median(ms):.1f}", f"{np.percentile(ms, 90):.1f}",
                f"{statistics.median(ms) / old:.3f}"] for name, ms in rows.items()],
              align=["---", "---:", "---:", "---:"]),
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    args.out.write_text(text)


if __name__ == "__main__":
    main()
