"""Every label of a questions file and how its evidence locates now: `labels check` and `labels resolve`.

Reads the file as `load_dataset` does (the same `read_answer`), but reports every label instead of
stopping at the first bad one. Labels keep their quote beside their offsets, so when a document
changes, the offsets that no longer hold their quote (drift) are listed with where the quote is now,
and `resolve_labels` writes them there.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

from workbench.core.io import write_text
from workbench.core.locate import AmbiguousQuote, QuoteDrift, QuoteNotFound
from workbench.dataset import DatasetError, Document, Span
from workbench.ingest.folder import load_documents
from workbench.ingest.jsonl import question_fields, read_answer, read_jsonl

Status = Literal["offsets", "exact", "normalised", "fuzzy", "ambiguous", "missing", "drift", "invalid"]
BROKEN = ("ambiguous", "missing", "drift", "invalid")  # what load_dataset refuses
STALE_HINTS = ("occurrence", "near")  # offsets written by resolve supersede them (a drifted label is sought near start)


@dataclass(frozen=True, slots=True)
class LabelStatus:
    """One answer of one question line (or the line itself, when the question is malformed)."""

    line: int
    qid: str | None
    field: str  # "answers[0]", or the question field that is wrong
    status: Status
    span: Span | None  # where the evidence is now (what resolve writes); None when it cannot be located
    score: float | None  # 100 for exact and normalised, rapidfuzz's for fuzzy; None without a quote
    detail: str  # why, for a person: the best candidate, the equal matches, the drift
    matches: tuple[Span, ...] = ()  # the equal matches of an ambiguous quote, in corpus order

    def describe(self) -> str:
        what = {"fuzzy": f"fuzzy (score {self.score or 0:.0f})",
                "ambiguous": f"ambiguous ({len(self.matches)})"}.get(self.status, self.status)
        where = f" {self.span.doc_id!r} [{self.span.start}, {self.span.end})" if self.span else ""
        return f"line {self.line} {self.qid or '?'} {self.field}: {what}{where}" + (
            f": {self.detail}" if self.detail else "")


def _failed(line: int, qid: str, at: str, e: DatasetError) -> LabelStatus:
    """What an answer that `read_answer` refused is: drift, ambiguous, missing, or else invalid."""
    cause = e.__cause__
    if isinstance(cause, QuoteDrift):
        now = cause.now
        span = None if now is None else Span(now.doc_id, now.start, now.end)
        return LabelStatus(line, qid, at, "drift", span, None if now is None else now.score,
                           f"offsets [{cause.start}, {cause.end}) no longer hold the quote; {cause.why}")
    if isinstance(cause, AmbiguousQuote):
        return LabelStatus(line, qid, at, "ambiguous", None, None, str(cause),
                           tuple(Span(w.doc_id, w.start, w.end) for w in cause.where))
    if isinstance(cause, QuoteNotFound):
        return LabelStatus(line, qid, at, "missing", None, None if cause.best is None else cause.best.score,
                           str(cause))
    return LabelStatus(line, qid, e.field or at, "invalid", None, None, e.problem)


def _read(qpath: Path, docs: dict[str, Document], skipped: dict[str, str]) -> Iterator[tuple[dict, list[LabelStatus]]]:
    """Each question line and the status of each of its answers."""
    seen: dict[str, int] = {}
    for n, obj in read_jsonl(qpath):
        try:
            qid, _, answers = question_fields(obj, qpath, n, seen)
        except DatasetError as e:
            qid = obj.get("qid") if isinstance(obj.get("qid"), str) else None
            yield obj, [LabelStatus(n, qid, e.field or "", "invalid", None, None, e.problem)]
            continue
        statuses = []
        for i, a in enumerate(answers):
            at = f"answers[{i}]"
            try:
                span, found = read_answer(a, docs, skipped, qpath, n, at)
            except DatasetError as e:
                statuses.append(_failed(n, qid, at, e))
                continue
            statuses.append(LabelStatus(n, qid, at, "offsets" if found is None else found.how, span,
                                        None if found is None else found.score, ""))
        yield obj, statuses


def _load(data: str | Path, questions: str | Path | None) -> tuple[Path, list[tuple[dict, list[LabelStatus]]]]:
    doc_list, skipped, qpath = load_documents(data, questions)
    return qpath, list(_read(qpath, {d.doc_id: d for d in doc_list}, skipped))


def check_labels(data: str | Path, questions: str | Path | None = None) -> list[LabelStatus]:
    """The status of every label of a dataset folder (`questions`: its questions file, if not
    <data>/questions.jsonl), in file order."""
    return [s for _, statuses in _load(data, questions)[1] for s in statuses]


def summary(statuses: list[LabelStatus]) -> str:
    """'30 labels: 27 exact, 2 normalised, 1 missing', in the order of Status."""
    counts = Counter(s.status for s in statuses)
    return f"{len(statuses)} labels: " + ", ".join(f"{counts[k]} {k}" for k in get_args(Status) if counts[k])


def resolve_labels(data: str | Path, out: str | Path, questions: str | Path | None = None) -> list[LabelStatus]:
    """Write the questions of `data` to `out` with every answer as offsets (drifted ones moved to where
    their quote is now), keeping quotes so that a later check sees drift; written whole or not at all.
    Raises ValueError naming every label that cannot be located (ambiguous, missing, invalid)."""
    qpath, read = _load(data, questions)
    statuses = [s for _, ss in read for s in ss]
    broken = [s for s in statuses if s.span is None]
    if broken:
        shown = "\n".join(s.describe() for s in broken[:20]) + (f"\n... and {len(broken) - 20} more"
                                                                 if len(broken) > 20 else "")
        raise ValueError(f"{qpath}: {len(broken)} label(s) cannot be resolved, nothing written:\n{shown}")
    lines = []
    for obj, ss in read:
        answers = []
        for a, s in zip(obj["answers"], ss, strict=True):
            rest = {k: v for k, v in a.items() if k not in ("doc_id", "start", "end", *STALE_HINTS)}
            answers.append({"doc_id": s.span.doc_id, "start": s.span.start, "end": s.span.end, **rest})
        lines.append(json.dumps({**obj, "answers": answers}, ensure_ascii=False))
    write_text(out, "\n".join(lines) + "\n")
    return statuses
