"""A grid as typed: strategies and, per parameter, values ("128, 256", "64:512:64"), crossed with
retrievers and modifiers; parsed and validated up front (ValueError naming the parameter), then
expanded into variants with the combinations that clash named. The sweeper's grid and a search's
space (workbench.run.search) are written this way."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from workbench.chunkers import STRATEGIES
from workbench.core.params import Param, split_outside
from workbench.core.stages import first_stages
from workbench.variant import Variant, expand

MAX_VALUES = 200  # per parameter: a typo like "1:100000:1" must not become a week-long sweep


def sweepable(p: Param) -> bool:
    """Parameters typed as values or choices (numbers, text, switches); JSON-typed ones (tuples
    such as custom separators) keep their default in a sweep."""
    return p.choices is not None or isinstance(p.default, bool | int | float | str)


def parameters(strategies: Sequence[str]) -> dict[str, Param]:
    """The sweepable parameters of the strategies, in schema order, each with the schema of the
    first strategy that has it (its type and hint)."""
    out: dict[str, Param] = {}
    for name in strategies:
        for pname, p in STRATEGIES[name].params.items():
            if sweepable(p):
                out.setdefault(pname, p)
    return out


def hint(p: Param) -> str:
    """What to type in a parameter's box: its default (used when empty) and the syntax."""
    if p.choices is not None:
        return f"default {p.default}; any of {', '.join(map(str, p.choices))}"
    if isinstance(p.default, bool):
        return f"default {p.default}; true, false"
    if isinstance(p.default, int | float):
        bounds = f" in [{'-inf' if p.lo is None else p.lo}, {'inf' if p.hi is None else p.hi}]"
        return f"default {p.default}{bounds}; e.g. 128, 256 or 64:512:64"
    return f"default {p.default!r}; comma-separated"


def _number(name: str, text: str, kind: type) -> int | float:
    try:
        return kind(text)
    except ValueError:
        raise ValueError(f"parameter '{name}': {text!r} is not {'an integer' if kind is int else 'a number'}") from None


def parse_values(name: str, text: str, p: Param) -> list[Any]:
    """User text -> values of parameter `name`: "128, 256, 512", "64:512:64" (start:stop:step,
    stop included) or both mixed; "" is [] (the default); a strategy written as its label stays whole
    ("code(size=128, header=False), code(size=256)", a route's members). ValueError naming the parameter."""
    kind = type(p.default)
    values: list[Any] = []
    for item in filter(None, (part.strip() for part in split_outside(text, ","))):  # a label's commas stay
        if p.choices is None and kind in (int, float):
            if ":" in item:
                values.extend(_range(name, item, kind))
            else:
                values.append(_number(name, item, kind))
        elif kind is bool:
            if item.lower() not in ("true", "false"):
                raise ValueError(f"parameter '{name}': {item!r} is not true or false")
            values.append(item.lower() == "true")
        else:
            values.append(item)
        if len(values) > MAX_VALUES:
            raise ValueError(f"parameter '{name}': more than {MAX_VALUES} values in {text!r}")
    return list(dict.fromkeys(values))


def _range(name: str, item: str, kind: type) -> list[int | float]:
    parts = item.split(":")
    if len(parts) != 3:
        raise ValueError(f"parameter '{name}': {item!r} is not start:stop:step, e.g. 64:512:64")
    start, stop, step = (_number(name, x.strip(), kind) for x in parts)
    if step <= 0 or stop < start:
        raise ValueError(f"parameter '{name}': {item!r} needs step > 0 and start <= stop")
    n = math.floor((stop - start) / step + 1e-9) + 1  # stop included despite float rounding
    if n > MAX_VALUES:
        raise ValueError(f"parameter '{name}': {item!r} gives {n} values, more than {MAX_VALUES}")
    return [start + i * step if kind is int else round(start + i * step, 10) for i in range(n)]


@dataclass(frozen=True)
class Expansion:
    """The variants of a grid, and the combinations skipped because their values clash."""

    variants: list[Variant]
    skipped: list[str]  # one reason per skipped combination

    def summary(self) -> str:
        text = f"{len(self.variants)} variant{'s' * (len(self.variants) != 1)}"
        if self.skipped:
            text += f"; {len(self.skipped)} invalid combination(s) skipped, e.g. {self.skipped[0]}"
        return text


@dataclass(frozen=True)
class GridSpec:
    """Strategies to include and, per parameter, the values to sweep as typed: "128, 256",
    "64:512:64" or a list. A parameter left empty (or absent) keeps each strategy's default; a
    parameter applies to the strategies whose schema has it. The retrievers and the modifier
    values (False, True or both) are three more dimensions, crossed with every strategy."""

    strategies: Sequence[str]
    ranges: Mapping[str, str | Sequence[Any]] = field(default_factory=dict)
    retrievers: Sequence[str] = ("dense",)  # a retriever never changes the chunks: no re-embedding
    contextual_header: Sequence[bool] = (False,)
    late: Sequence[bool] = (False,)

    def values(self) -> dict[str, list[Any]]:
        """Parsed and validated values by parameter (swept ones only); ValueError naming the
        parameter (unknown, badly typed or out of range for a strategy) or the dimension."""
        if not self.strategies:
            raise ValueError("strategies: choose at least one strategy")
        unknown = sorted(set(self.strategies) - set(STRATEGIES))
        if unknown:
            raise ValueError(f"strategies: unknown {unknown}; known: {sorted(STRATEGIES)}")
        self._check_dimensions()
        schema = parameters(self.strategies)
        out = {}
        for name, raw in self.ranges.items():
            if name not in schema:
                raise ValueError(f"parameter '{name}' belongs to none of {list(self.strategies)}")
            values = parse_values(name, raw, schema[name]) if isinstance(raw, str) else list(raw)
            for s in self.strategies:  # each value alone, against every strategy that has it
                if name in STRATEGIES[s].params:
                    values = [STRATEGIES[s].params[name].validate(s, name, v) for v in values]
            if values:
                out[name] = values
        return out

    def _check_dimensions(self) -> None:
        if not self.retrievers:
            raise ValueError("retrievers: choose at least one retriever")
        unknown = sorted(set(self.retrievers) - set(first_stages()))
        if unknown:
            raise ValueError(f"retrievers: unknown {unknown}; known: {list(first_stages())}")
        for name, values in (("contextual_header", self.contextual_header), ("late", self.late)):
            if not values or not all(isinstance(v, bool) for v in values):
                raise ValueError(f"{name}: give False, True or both, got {list(values)!r}")

    def variants(self) -> Expansion:
        """Every valid combination, per strategy, duplicates (same key) removed; ValueError when
        the text is bad or when no combination is valid. Clashing values (overlap >= size, a
        contextual header with late chunking) are skipped with their reason."""
        values = self.values()
        found: dict[str, Variant] = {}
        skipped: list[str] = []
        for s in self.strategies:
            swept = {name: vals for name, vals in values.items() if name in STRATEGIES[s].params}
            made, clashes = expand(s, {**swept, "contextual_header": list(self.contextual_header),
                                       "late": list(self.late), "retriever": list(self.retrievers)})
            skipped += clashes
            for v in made:
                found.setdefault(v.key, v)
        if not found:
            raise ValueError(f"no valid variant: all {len(skipped)} combinations clash, e.g. {skipped[0]}")
        return Expansion(list(found.values()), skipped)
