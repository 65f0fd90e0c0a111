"""Parameter schemas, shared by every registered component (chunking strategies, retrieval stages).

Why one module: a strategy and a stage are validated, labelled, swept and shown the same way, so a
parameter is one `Param` with its default, range and unit, and `resolve` is the one place that fills
defaults and names what is wrong (scikit-learn's rule: validate up front, before any work).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")

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
    # a valid value -> its canonical form, what names the variant (two spellings of one value, one key);
    # raises ValueError naming what is wrong
    normalize: Callable[[Any], Any] | None = None

    def title(self, name: str, params: Mapping[str, Any] | None = None) -> str:
        """The name with its unit, for people: "overlap (sentences)", "size (tokens)"."""
        unit = (params or {}).get("unit", "units") if self.unit == UNIT_PARAM else self.unit
        return f"{name.replace('_', ' ')} ({unit})" if unit else name.replace("_", " ")

    def validate(self, owner: str, name: str, value: Any) -> Any:
        kind = type(self.default)
        where = f"{owner}: parameter '{name}'"
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
        if self.normalize is not None:
            try:
                return self.normalize(value)
            except ValueError as e:
                raise ValueError(f"{where}: {e}") from None
        return value


def resolve(owner: str, schema: Mapping[str, Param], params: Mapping[str, Any],
            check: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Defaults filled in and every value validated; raises ValueError naming the parameter and its
    range, and IncompatibleParams when `check` (cross-parameter rules) refuses the combination."""
    unknown = sorted(set(params) - set(schema))
    if unknown:
        raise ValueError(f"{owner}: unknown parameter(s) {unknown}; known: {sorted(schema)}")
    out = {k: p.validate(owner, k, params.get(k, p.default)) for k, p in schema.items()}
    if check is not None:
        try:
            check(out)
        except ValueError as e:
            raise IncompatibleParams(f"{owner}: {e}") from None
    return out


def add_entry(table: MutableMapping[str, T], kind: str, name: str, entry: T) -> None:
    """Put a component in its registry table; a name is registered once (an adapter replaces
    its own entry by unregistering it first)."""
    if name in table:
        raise ValueError(f"{kind} {name!r} registered twice")
    table[name] = entry


def get_entry(table: Mapping[str, T], kind: str, name: str) -> T:
    """A registered component, or a ValueError listing the known names."""
    if name not in table:
        raise ValueError(f"unknown {kind} {name!r}; choose one of {sorted(table)}")
    return table[name]


def short_value(value: Any) -> str:
    """95.0 -> "95", 0.25 -> "0.25"; a float that 6 digits would round prints in full
    (95.0000001), so labels of different values never look alike."""
    if not isinstance(value, float):
        return str(value)
    short = f"{value:g}"
    return short if float(short) == value else repr(value)


def parse_value(raw: str) -> Any:
    """'256' -> 256, '0.5' -> 0.5, 'true' (or a label's 'True') -> True, anything else stays a string."""
    if raw in ("True", "False"):  # as a variant's label writes a switch
        return raw == "True"
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


def split_outside(text: str, sep: str) -> list[str]:
    """Split on `sep` except inside JSON strings and brackets (and parentheses), so a value may be a
    JSON list, or a strategy written as its label: code(size=256, header=False)."""
    parts, depth, start, in_string, escaped = [], 0, 0, False, False
    for i, ch in enumerate(text):
        if in_string:
            escaped, in_string = (not escaped and ch == "\\"), in_string and (escaped or ch != '"')
        elif ch == '"':
            in_string = True
        elif ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    return [*parts, text[start:]]
