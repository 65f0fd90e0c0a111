"""What a folder load read and what it did not: one warning (or, strict, one error) for every file left out.

Why one report: a new user points the workbench at a real project folder; a file skipped without a
word surfaces later as a question that fails on an "unknown document", far from its cause.
"""

from __future__ import annotations

import warnings
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from workbench.dataset import DatasetError, DatasetWarning, Document

REASONS = ("unknown type", "binary", "unreadable", "empty", "hidden")  # why a file was left out, the report's groups
NAMED = 5  # how many files of one group the report names


class Unreadable(DatasetError):
    """A reader's refusal of one file (`reason` one of REASONS): the folder load reports it and goes on."""

    def __init__(self, path: Path | str, reason: str, problem: str):
        super().__init__(path, None, None, problem)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Skip:
    """A file (or folder) left out of the dataset, and why."""

    name: str  # its path relative to the dataset folder, as its doc_id would have been
    reason: str  # one of REASONS
    problem: str  # the detail, for people ("not UTF-8 text (invalid start byte at byte 3)"), "" when the reason says it

    @property
    def suffix(self) -> str:
        return Path(self.name).suffix.lower() or "(no extension)"

    def why(self) -> str:
        """The sentence a question pointing into this file is told."""
        return self.reason + (f": {self.problem}" if self.problem else "")


def kinds(docs: list[Document]) -> str:
    """'40 markdown, 3 code (2 python, 1 go)': the documents read, by kind (code by language)."""
    by_kind = Counter(d.kind or "?" for d in docs)
    langs = Counter(d.language for d in docs if d.language)
    parts = []
    for kind, n in sorted(by_kind.items(), key=lambda kv: (-kv[1], kv[0])):
        detail = ", ".join(f"{m} {lang}" for lang, m in sorted(langs.items(), key=lambda kv: (-kv[1], kv[0])))
        parts.append(f"{n} {kind}" + (f" ({detail})" if kind == "code" and detail else ""))
    return ", ".join(parts)


def describe(docs: list[Document], skips: list[Skip]) -> str:
    """The report: documents read by kind, then the skipped files grouped by extension and reason, each named."""
    lines = [f"read {len(docs)} file(s) ({kinds(docs) or 'none'}); skipped {len(skips)}:"]
    groups: dict[tuple[str, str], list[Skip]] = {}
    for s in sorted(skips, key=lambda s: (s.suffix, REASONS.index(s.reason), s.name)):
        groups.setdefault((s.suffix, s.reason), []).append(s)
    for (suffix, reason), group in groups.items():
        named = "; ".join(repr(s.name) + (f": {s.problem}" if s.problem else "") for s in group[:NAMED])
        more = f"; and {len(group) - NAMED} more" if len(group) > NAMED else ""
        lines.append(f"  {suffix}: {len(group)} {reason} ({named}{more})")
    return "\n".join(lines)


def report(folder: Path, docs: list[Document], skips: list[Skip], strict: bool) -> None:
    """Warn (DatasetWarning) once about every skipped file; with `strict`, raise a DatasetError instead;
    raise either way when nothing was read."""
    if not docs:
        raise DatasetError(folder, None, None, "no readable documents: " + describe(docs, skips))
    if not skips:
        return
    if strict:
        raise DatasetError(folder, None, None, "files were skipped (strict): " + describe(docs, skips))
    warnings.warn(f"{folder}: {describe(docs, skips)}\n(load_dataset(..., strict=True) or --strict makes this an "
                  "error)", DatasetWarning, stacklevel=4)
