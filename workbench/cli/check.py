"""`check`: a CI gate, each variant against a baseline run (workbench.results.gate)."""


from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

import pandas as pd

if TYPE_CHECKING:
    from workbench.results.result import SweepResult
from pathlib import Path

from workbench.cli.options import CHECK_OUT, EPILOG, sweep_arguments
from workbench.cli.sweep import measure
from workbench.evaluation import metrics
from workbench.results.gate import DEFAULT_MAX_DROP


def _gate(args: argparse.Namespace) -> tuple[pd.DataFrame, SweepResult, SweepResult]:
    from workbench.results.gate import compare
    from workbench.results.result import SweepResult

    try:
        baseline = SweepResult.load(args.baseline)
    except (OSError, ValueError) as e:
        raise SystemExit(f"error: --baseline: {e}") from e
    if args.current:
        try:
            current = SweepResult.load(args.current)
        except (OSError, ValueError) as e:
            raise SystemExit(f"error: --current: {e}") from e
    else:
        current = measure(args)[0]
    try:
        return compare(baseline, current, args.metric, args.k, args.max_drop), baseline, current
    except ValueError as e:
        raise SystemExit(f"error: {e}") from e


def add_parser(sub: argparse._SubParsersAction) -> None:
    g = sub.add_parser(
        "check",
        help="a CI gate: compare each variant with a baseline run, paired, and exit 1 on a real drop",
        description="Sweep the variants (from the caches when they were measured) with the same options as "
        "`sweep`, or read a saved run with --current, and compare each variant with the same variant of the "
        "--baseline run on the questions both answered. A variant fails when the confidence interval of its "
        "difference lies below zero and the drop exceeds --max-drop; a baseline variant not measured fails "
        "too. Exit status: 0 pass, 1 fail, 2 error.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    g.add_argument("--baseline", type=Path, required=True, help="a saved run (`sweep --out`) to compare against")
    g.add_argument("--current", type=Path, help="a saved run to check instead of sweeping")
    g.add_argument("--metric", choices=metrics.METRICS, default="recall", help="metric compared (default: %(default)s)")
    g.add_argument("--k", type=int, help="its cut-off (default: the current run's, 5 when it was swept)")
    g.add_argument("--max-drop", type=float, default=DEFAULT_MAX_DROP,
                   help="largest real drop of the metric that passes, absolute (default: %(default)s)")
    sweep_arguments(g, out=CHECK_OUT)


def run(args: argparse.Namespace) -> None:
    """Exit 1 when a variant dropped (see workbench.results.gate), after printing the comparison; 2 on an
    error, so a CI job tells a failed gate from a broken one."""
    try:
        table, baseline, current = _gate(args)
    except SystemExit as e:
        if isinstance(e.code, str):
            print(e.code, file=sys.stderr)
            raise SystemExit(2) from None
        raise
    old, new = baseline.provenance, current.provenance
    for what, a, b in (("dataset", old.dataset.fingerprint, new.dataset.fingerprint),
                       ("model", [m.fingerprint for m in old.models], [m.fingerprint for m in new.models])):
        if a != b:
            print(f"note: the runs differ in {what} ({a} -> {b}); each variant is compared on the questions both "
                  "answered")
    shown = table.drop(columns="key").rename(columns={"n": "questions"})
    print(shown.to_string(index=False, float_format=lambda x: f"{x:.3f}", na_rep=""))
    k = current.default_k if args.k is None else args.k
    drops, missing = (int((table["status"] == s).sum()) for s in ("drop", "missing"))
    from workbench.results.gate import failed

    if failed(table):
        print(f"FAIL: {drops} variant(s) dropped {args.metric}@{k} by more than {args.max_drop} with the "
              f"interval below 0; {missing} baseline variant(s) not measured")
        raise SystemExit(1)
    print(f"PASS: no variant's {args.metric}@{k} dropped by more than {args.max_drop} "
          f"({len(table)} compared or new)")
