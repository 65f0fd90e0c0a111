"""How fast the semantic explorer re-cuts (issue 8: under 300 ms on a chroma_small document).

For each data/chroma_small document, after the first cut (which embeds the sentence groups, or
looks them up in the vector cache): the median time of a re-cut at a few settings, for the state
alone (`ExplorerState.cut`), for the state plus the figure as PNG (what a slider move draws),
and for the whole widget redraw (that, plus the text view's HTML). Every re-cut reuses the
memoised group vectors: the script checks that nothing was embedded or even looked up.

Run from the repo root: python -m bench.explorer [--cache results/cache]  (seconds with a warm
cache; about 4 minutes on 2 cores when the 1,992 sentence groups must be embedded)
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable
from functools import partial

from bench.harness import BENCH, REPO, SMALL, Start, header, lap, repeat, table
from workbench.ingest import load_dataset
from workbench.models.embed import Embedder
from workbench.widgets.explorer import explorer, picture

REPS = 7  # timed repetitions per setting; the median is reported
SETTINGS = [  # (breakpoint_percentile, buffer_size, min_size, max_size): sliders only, one buffer size
    (95, 1, 0, 0),
    (80, 1, 0, 256),
    (50, 1, 64, 256),
    (90, 1, 128, 512),
]


def median_ms(fn: Callable[[], object]) -> float:
    return 1000 * statistics.median(x.wall_s for x in repeat(fn, REPS)[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", default=str(REPO / "results" / "cache"), help="vector cache folder")
    args = parser.parse_args()
    start = Start()
    ds = load_dataset(SMALL)
    embedder = Embedder(cache_dir=args.cache, progress=False)
    rows = []
    for doc in ds.documents:
        # the first cut: sentence groups embedded
        ex, took = lap(partial(explorer, ds, embedder, args.cache, doc_id=doc.doc_id))
        first, embedded = took.wall_s, embedder.stats.embedded
        if "color:#b00020" in ex.message.value:
            raise RuntimeError(f"{doc.doc_id}: {ex.message.value}")
        state, looked_up = ex.state, embedder.stats.cached
        for p, b, lo, hi in SETTINGS:
            ex.percentile.value, ex.buffer.value, ex.min_size.value, ex.max_size.value = p, b, lo, hi
            cut = state.cut(p, b, lo, hi)
            rows.append((doc, len(cut.sentences), first, embedded, cut.variant.label, cut.count,
                         median_ms(lambda: state.cut(p, b, lo, hi)),  # noqa: B023  (called at once)
                         median_ms(lambda: picture(state.cut(p, b, lo, hi))),  # noqa: B023
                         median_ms(ex._recut)))
        if (embedder.stats.embedded, embedder.stats.cached) != (embedded, looked_up):
            raise RuntimeError(f"{doc.doc_id}: a re-cut embedded or looked up sentence groups")
        embedder.stats.reset()

    lines = [
        header("Semantic explorer: re-cut times", start),
        ("Shared with other jobs: read the medians as upper bounds. Median of "
         f"{REPS} repetitions per setting, after the first cut of the "
         "document (whose time includes embedding its sentence groups, or fetching them from the vector cache). "
         "No re-cut embedded a text or even looked one up: the group vectors are memoised in the state."),
        "",
        table(["document", "chars", "sentences", "first cut (texts embedded)", "setting", "chunks", "re-cut: state",
               "+ figure + PNG", "whole widget redraw (+ text HTML)"],
              [[doc.doc_id, f"{len(doc.text):,}", f"{n:,}", f"{first:.1f} s ({embedded:,})", f"`{label}`", count,
                f"{state_ms:.0f} ms", f"{fig_ms:.0f} ms", f"{widget_ms:.0f} ms"]
               for doc, n, first, embedded, label, count, state_ms, fig_ms, widget_ms in rows]),
    ]
    out = BENCH / "explorer.md"
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
