"""`export`: a variant's chunking as a Python file for a library, checked on a corpus (workbench.export)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from workbench.export import DEFAULT_DATA, TARGETS


def add_parser(sub: argparse._SubParsersAction) -> None:
    e = sub.add_parser(
        "export",
        help="write a variant's chunking as a Python file for LangChain, LlamaIndex, Chonkie or plain Python, "
        "checked to cut what the workbench cut",
        description="Write VARIANT's chunking as a runnable Python file defining chunk(text) -> list[str], built "
        "with the library --to names, and check it: run on every document of --data, its chunks must be the "
        "workbench's (the same texts, in order). When the library's closest construction cuts otherwise, the "
        "export says which parameters it cannot express and how far its chunks are, and writes the plain-Python "
        "export instead (the workbench's own chunker, copied), which reproduces them. Exit status: 0 when the "
        "file written reproduces the chunks, 1 when it does not, 2 on an error.",
    )
    e.add_argument("variant", metavar="VARIANT", help="the variant, as sweep's -v writes it (e.g. the verdict's): "
                   "recursive:size=238,tokenizer=model")
    e.add_argument("--to", choices=TARGETS, required=True, help="the library to build the chunking in")
    e.add_argument("--data", type=Path, default=DEFAULT_DATA,
                   help="the corpus the file is checked on, as sweep reads it (default: %(default)s)")
    e.add_argument("--out", type=Path, help="where to write the file (default: print it)")
    e.add_argument("--model", help="the embedding model the variant was swept with, a local sentence-transformers "
                   "folder: its tokenizer counts tokenizer=model, semantic embeds with it (default: the bundled "
                   "all-MiniLM-L6-v2)")


def run(args: argparse.Namespace) -> None:
    """Print the check's verdict (to stderr when the file goes to stdout) and write the file."""
    from workbench.cli.options import documents_of
    from workbench.export import export_code
    from workbench.export.parity import ExportRunError
    from workbench.models.embed import Embedder

    try:
        if not args.data.exists():
            raise ValueError(f"export: --data: {args.data} does not exist")
        embedder = Embedder(args.model, progress=False) if args.model else None
        export = export_code(args.variant, to=args.to, dataset=documents_of(args.data, strict=False),
                             embedder=embedder)
    except (ValueError, ExportRunError) as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    said = sys.stderr if args.out is None else sys.stdout
    print("\n".join(export.verdict), file=said)
    if args.out is None:
        print(export.code, end="")
    else:
        args.out.write_text(export.code, encoding="utf-8")
        print(f"wrote {args.out}", file=said)
    if not export.exact:
        raise SystemExit(1)
