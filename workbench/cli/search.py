"""`search`: the best variants of a space of hundreds for a share of sweeping them all (workbench.run.search),
with the sweep's options otherwise; it ends like a sweep, then with the race round by round."""

from __future__ import annotations

import argparse
import textwrap

from workbench.cli.options import EPILOG, WIDTH, sweep_arguments
from workbench.cli.sweep import answer, measure, metric_argument
from workbench.results.result import SweepResult
from workbench.run.search import BUDGET, FINALISTS, Space


def add_parser(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser(
        "search",
        help="find the best variants of a space of hundreds for a share of sweeping them all",
        description="Preview every variant of the space, calibrate the preview on a few real measurements, then "
        "measure for real at rising fidelity (a sample of the corpus, then the whole) and drop each variant the "
        "paired evidence puts behind the best. Writes what a sweep writes, of the last round, with race.csv and "
        "the race in the report. How often its best is in the full sweep's tied set: bench/search.md.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    s.add_argument("--space", type=space_file, required=True, metavar="FILE",
                   help='JSON or YAML: {"strategies": {"fixed": {"size": "64:512:64", "overlap": [0, 32]}, '
                   '"recursive": {"size": "64:512:64"}}, "retrievers": ["dense", "hybrid"], "contextual_header": '
                   '[false, true], "models": [...]}')
    sweep_arguments(s)
    metric_argument(s, "what the race and the verdict judge: a metric at a cut-off, recall@5, mrr@10 (default: "
                    "recall at the default k)")
    s.add_argument("--spend", type=float, default=BUDGET, metavar="SHARE",
                   help="the share of the full sweep's embedding the search may spend (default: %(default)s)")
    s.add_argument("--seed", type=int, default=0, help="draws the sample of the corpus (default: %(default)s)")
    s.add_argument("--finalists", type=int, default=FINALISTS,
                   help="variants measured on the whole corpus at the end (default: %(default)s)")
    s.add_argument("--no-refine", action="store_true",
                   help="do not try the leader's numbers halfway to their neighbours in the space")


def space_file(text: str) -> Space:
    """--space's type: the Space the file holds, or argparse's one-line error naming the file and key."""
    try:
        return Space.of(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def run(args: argparse.Namespace) -> None:
    if args.variant or args.grid:
        raise SystemExit("error: --variant and --grid name a sweep's variants; a search's are its --space")
    if args.preview:
        raise SystemExit("error: --preview: a search previews every variant itself")
    args.model = [*(args.model or []), *args.space.models] or None
    result, _, judged = measure(args, space=args.space)
    print("\n".join(answer(result, args.top, judged) + race_lines(result)))


def race_lines(result: SweepResult) -> list[str]:
    """The race in a few lines: per round, what was scored and how many left, with one reason each."""
    race = result.race
    out = ["", "The race:"]
    for (round_, stage), rows in race.groupby(["round", "stage"], sort=True):
        left = rows[rows["status"] == "dropped"]
        line = (f"round {round_} ({stage}, {rows['documents'].iloc[0]} documents): {len(rows)} scored, "
                f"{len(left)} dropped")
        if len(left):
            line += f", e.g. {left['variant'].iloc[0]}: {left['reason'].iloc[0]}"
        out += textwrap.wrap(line, WIDTH, initial_indent="  ", subsequent_indent="    ")
    return out
