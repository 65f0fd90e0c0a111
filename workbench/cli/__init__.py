"""`python -m workbench COMMAND`: one module per command, each with `add_parser` and `run`."""

from __future__ import annotations

import argparse
import sys

from workbench.cli import answers, audit, check, export, labels, search, strategies, sweep
from workbench.cli.sweep import answer

__all__ = ["answer", "main"]

COMMANDS = {"sweep": sweep, "search": search, "audit": audit, "check": check, "answers": answers,
            "strategies": strategies, "labels": labels, "import": labels, "export": export}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m workbench", description="Chunking workbench for RAG retrieval.")
    sub = p.add_subparsers(dest="command", required=True)
    for module in dict.fromkeys(COMMANDS.values()):
        module.add_parser(sub)
    return p


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    args.argv = sys.argv[1:] if argv is None else argv  # kept in the result, to run it again
    try:
        COMMANDS[args.command].run(args)
    except KeyboardInterrupt:  # one line, never a traceback (a sweep says what finished: cli.sweep.interrupted)
        raise SystemExit("interrupted: what finished is cached (every cache write is whole or absent); run the "
                         "same command again to go on") from None


if __name__ == "__main__":
    main(sys.argv[1:])
