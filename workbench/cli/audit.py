"""`audit`: the chunk health of every variant of a grid, from its chunks alone, before anything is scored
(workbench.results.audit): the table, then the warnings."""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from workbench.cli.options import EPILOG, documents_of, grid_of, variants_of
from workbench.core.errors import describe
from workbench.core.io import CACHE_DIR
from workbench.models.choose import embedders_of
from workbench.models.embed import AUTO, BACKENDS, DEFAULT_BACKEND
from workbench.results import audit as chunk_audit
from workbench.results.label_free import MEASURES, TRUST
from workbench.run.session import Session

PAST = "!"  # marks a value past its check's threshold


def add_parser(sub: argparse._SubParsersAction) -> None:
    a = sub.add_parser(
        "audit",
        help="check every variant's chunks before scoring them: text dropped or repeated, chunks over the model's "
        "window, fragments, cut sentences, split functions, table rows and code blocks, bare headings, duplicates",
        description="Chunk the documents of DATA with every variant (no embedding of chunks, no index; questions "
        "are not needed) and print the chunk health table, one row per variant, then a warning for each check past "
        "its threshold, naming the worst examples by document id and character offsets. The checks are defined in "
        "docs/metrics.md (Chunk health); the findings are cached with --cache.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    a.add_argument("data", type=Path, help="dataset folder: corpus.jsonl, or a folder of documents")
    a.add_argument("--variant", "-v", action="append", default=[], metavar="SPEC",
                   help="a variant to audit (repeatable); see below. Default: the default grid of the data and the "
                   "model, as `sweep` runs it")
    a.add_argument("--grid", type=Path, help="JSON file with a list of variants (added to --variant)")
    a.add_argument("--strict", action="store_true",
                   help="stop with an error when any file of DATA is skipped instead of warning")
    a.add_argument("--model", default="default",
                   help="the embedding model whose window and tokenizer the chunks are checked against and sized "
                   "in (tokenizer=model), and whose vectors place semantic cuts: a local sentence-transformers "
                   "folder, 'wordllama', or 'default' for the bundled all-MiniLM-L6-v2 (the default)")
    a.add_argument("--backend", choices=(AUTO, *BACKENDS), default=DEFAULT_BACKEND,
                   help="how the model runs when a strategy embeds as it chunks (semantic; default: %(default)s)")
    a.add_argument("--cache", type=Path, default=CACHE_DIR,
                   help="cache folder, shared with `sweep` (default: %(default)s)")
    a.add_argument("--label-free", action="store_true",
                   help="add quality measures that need no questions (cut_contrast, cohesion: docs/metrics.md), from "
                   "the model's vectors of every sentence; how far they follow recall is measured in "
                   "bench/label_free.md")
    a.add_argument("--quiet", action="store_true", help="print only the table and the warnings")


def health_lines(audit: pd.DataFrame) -> list[str]:
    """The chunk health table as lines: one row per variant, numbered, its label last; a value past its
    check's threshold marked PAST."""
    measures = [m for m in MEASURES if m in audit.columns]
    head = ["#", "chunks", *chunk_audit.CHECKS, *measures, "variant"]
    rows = []
    for i, r in enumerate(audit.to_dict("records"), 1):
        findings = r["findings"].items()
        values = [f"{f.share:.1%}" if chunk_audit.CHECKS[name].share else f"{f.n:,}" for name, f in findings]
        marks = [PAST if chunk_audit.past(name, f) else "" for name, f in findings]
        rows.append([str(i), f"{r['chunks']:,}", *(v + m for v, m in zip(values, marks, strict=True)),
                     *(f"{r[m]:+.3f}" for m in measures), r["label"]])
    widths = [max(len(row[c]) for row in [head, *rows]) for c in range(len(head) - 1)]
    return ["  ".join([*(cell.rjust(w) for cell, w in zip(row[:-1], widths, strict=True)), row[-1]])
            for row in [head, *rows]]


def run(args: argparse.Namespace) -> None:
    given = variants_of(args)
    dataset = documents_of(args.data, args.strict)
    try:
        models = embedders_of([None if args.model == "default" else args.model], args.cache, backend=args.backend,
                              progress=not args.quiet)
    except ValueError as e:
        raise SystemExit(f"error: --model: {e}") from e
    session = Session(dataset, cache=args.cache, models=models, progress=not args.quiet)
    variants = grid_of(session, given)
    try:
        table = session.audit(variants, label_free=args.label_free)
    except Exception as e:  # one line, never a traceback: what failed, where, and why
        raise SystemExit(f"error: {describe(e)}") from e
    model = session.embedder
    window = f", window {model.window_tokens} word pieces" if model.window_tokens else ""
    print(f"chunk health of {len(variants)} variants on {dataset.name} ({len(dataset.documents):,} documents), "
          f"model {model.name}{window}; {PAST}: past its threshold")
    print("\n".join(health_lines(table)))
    found = chunk_audit.warnings(table)
    print("\n".join(["", *found]) if found else "no check is past its threshold")
    if args.label_free:
        first = (table.loc[table["cut_contrast"].idxmax(), "label"] if table["cut_contrast"].notna().any()
                 else "none (no variant both keeps sentences together and cuts between them)")
        print(f"\nLabel-free: cut_contrast ranks first {first}; {TRUST}.")
