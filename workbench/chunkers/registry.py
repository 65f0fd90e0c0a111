"""Strategy name -> chunking function and its parameter schema.

Every chunker module registers its strategies here with `@strategy(...)`; adding a strategy
touches its own module, one import in `chunkers/__init__.py` and its tests. Parameters are
validated when a Variant is made, long before any chunking or embedding starts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from workbench.chunkers.base import Chunk, ChunkEnv
from workbench.dataset import Document

ChunkFn = Callable[..., list[Chunk]]  # fn(doc, env, **params) -> chunks


UNIT_PARAM = "<unit>"  # Param.unit of sizes counted in whatever the strategy's `unit` parameter says


class IncompatibleParams(ValueError):
    """Each parameter is valid alone, but not together (e.g. overlap >= size)."""


@dataclass(frozen=True)
class Param:
    default: Any
    help: str
    lo: float | None = None  # inclusive bounds for numbers
    hi: float | None = None
    choices: tuple[Any, ...] | None = None
    label: bool = False  # always shown in variant labels (else only when not the default)
    slider_hi: float | None = None  # where the widget's slider ends when `hi` is open (counts, not sizes)
    unit: str | None = None  # what the number counts ("sentences", "tokens"); UNIT_PARAM: the `unit` parameter's

    def title(self, name: str, params: Mapping[str, Any] | None = None) -> str:
        """The name with its unit, for people: "overlap (sentences)", "size (tokens)"."""
        unit = (params or {}).get("unit", "units") if self.unit == UNIT_PARAM else self.unit
        return f"{name.replace('_', ' ')} ({unit})" if unit else name.replace("_", " ")

    def validate(self, strategy: str, name: str, value: Any) -> Any:
        kind = type(self.default)
        where = f"{strategy}: parameter '{name}'"
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if kind is tuple and isinstance(value, list):
            value = tuple(value)
        if self.default is not None and (type(value) is not kind):
            raise ValueError(f"{where} must be {kind.__name__}, got {value!r}")
        if self.choices is not None and value not in self.choices:
            raise ValueError(f"{where} must be one of {list(self.choices)}, got {value!r}")
        if self.lo is not None and value < self.lo or self.hi is not None and value > self.hi:
            lo = "-inf" if self.lo is None else self.lo
            hi = "inf" if self.hi is None else self.hi
            raise ValueError(f"{where} must be in [{lo}, {hi}], got {value!r}")
        return value


@dataclass(frozen=True)
class Strategy:
    name: str
    fn: ChunkFn
    params: Mapping[str, Param]
    help: str
    check: Callable[[dict[str, Any]], None] | None = None  # cross-parameter rules
    version: int = 1  # bump when the output for the same parameters changes: invalidates caches

    def resolve(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """Fill defaults and validate; raises ValueError naming the parameter and its range."""
        unknown = sorted(set(params) - set(self.params))
        if unknown:
            raise ValueError(f"{self.name}: unknown parameter(s) {unknown}; known: {sorted(self.params)}")
        out = {k: p.validate(self.name, k, params.get(k, p.default)) for k, p in self.params.items()}
        if self.check is not None:
            try:
                self.check(out)
            except ValueError as e:
                raise IncompatibleParams(f"{self.name}: {e}") from None
        return out


STRATEGIES: dict[str, Strategy] = {}


def strategy(
    name: str,
    help: str,
    params: Mapping[str, Param],
    check: Callable[[dict[str, Any]], None] | None = None,
    version: int = 1,
) -> Callable[[ChunkFn], ChunkFn]:
    def register(fn: ChunkFn) -> ChunkFn:
        if name in STRATEGIES:
            raise ValueError(f"strategy {name!r} registered twice")
        STRATEGIES[name] = Strategy(name, fn, dict(params), help, check, version)
        return fn

    return register


def get_strategy(name: str) -> Strategy:
    if name not in STRATEGIES:
        raise ValueError(f"unknown strategy {name!r}; choose one of {sorted(STRATEGIES)}")
    return STRATEGIES[name]


def unregister(name: str) -> Strategy:
    """Remove strategy `name` and return it, e.g. a user function that was only an experiment
    (re-registering an adapter replaces it without this)."""
    if name not in STRATEGIES:
        raise ValueError(f"cannot unregister unknown strategy {name!r}; registered: {sorted(STRATEGIES)}")
    return STRATEGIES.pop(name)


def check_overlap(size_key: str = "size", overlap_key: str = "overlap") -> Callable[[dict[str, Any]], None]:
    """Cross-parameter rule shared by sized chunkers: 0 <= overlap < size."""

    def check(p: dict[str, Any]) -> None:
        if not 0 <= p[overlap_key] < p[size_key]:
            raise ValueError(
                f"parameter '{overlap_key}' must be in [0, {size_key}) = [0, {p[size_key]}), got {p[overlap_key]}"
            )

    return check


def run_strategy(name: str, params: Mapping[str, Any], doc: Document, env: ChunkEnv) -> list[Chunk]:
    s = get_strategy(name)
    return s.fn(doc, env, **s.resolve(params))
