"""`strategies`: every strategy, modifier and retrieval stage with its parameters, from the registries."""


from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import TYPE_CHECKING

from workbench.chunkers import STRATEGIES
from workbench.core.params import Param
from workbench.core.stages import DENSE, STAGES
from workbench.variant import CONTEXT_PARAMS, MODIFIERS

if TYPE_CHECKING:
    pass


def print_params(params: Mapping[str, Param]) -> None:
    for pname, prm in params.items():
        rng = f" one of {list(prm.choices)}" if prm.choices else (
            f" in [{prm.lo if prm.lo is not None else '-inf'}, {prm.hi if prm.hi is not None else 'inf'}]"
            if prm.lo is not None or prm.hi is not None else "")
        print(f"    {pname} = {prm.default!r}{rng}: {prm.help}")


def add_parser(sub: argparse._SubParsersAction) -> None:
    sub.add_parser("strategies", help="list chunking strategies, +modifiers and retrieval stages with their parameters")


def run(args: argparse.Namespace) -> None:
    """Every registered strategy, modifier and retrieval stage, from the registries themselves."""
    for name, s in sorted(STRATEGIES.items()):
        print(f"{name}: {s.help}")
        print_params(s.params)
    print("\nmodifiers (after the parameters, e.g. fixed:size=256+header):")
    for name, meaning in MODIFIERS.items():
        print(f"+{name}: {meaning}")
        if name == "context":
            print_params(CONTEXT_PARAMS)
    print(f"\nretrieval stages (last, +name or +name:param=value, e.g. fixed:size=256+hybrid:rrf_k=30; {DENSE} "
          "without one):")
    for name, stage in STAGES.items():
        place = "" if stage.first else " (after a retriever: reorders its candidates)"
        print(f"+{name}: {stage.help}{place}")
        print_params(stage.params)
