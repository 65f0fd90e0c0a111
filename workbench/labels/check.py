"""Every label of a questions file and how its evidence locates now: `labels check` and `labels resolve`.

Reads the file as `load_dataset` does (the same `question_fields` and `read_answer`), but reports every
label instead of stopping at the first bad one, each alternative's answers under their own field
(`alternatives[1][0]`). Labels keep their quote beside their offsets, so when a document changes, the
offsets that no longer hold their quote (drift) are listed with where the quote is now, and
`resolve_labels` writes them there.
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
from workbench.ingest.jsonl import UNLOCATED, QuestionLine, named, question_fields, read_answer, read_jsonl

Status = Literal["offsets", "exact", "normalised", "fuzzy", "ambiguous", "missing", "drift", "invalid"]
BROKEN = ("ambiguous", "missing", "drift", "invalid")  # what load_dataset refuses
SKIPPED = tuple(UNLOCATED.values())  # what load_dataset(..., missing="skip") leaves out instead
STALE_HINTS = ("occurrence", "near")  # offsets written by resolve supersede them (a drifted label is sought near start)


@dataclass(frozen=True, slots=True)
class LabelStatus:
    """One answer of one question line (or the line itself, when the question is malformed)."""

    line: int
    qid: str | None
    field: str  # "answers[0]", "alternatives[1][0]", "evidence", or the question field that is wrong
    status: Status
    span: Span | None  # where the evidence is now (what resolve writes); None when it cannot be located
    score: float | None  # 100 for exact and normalised, rapidfuzz's for fuzzy; None without a quote
    detail: str  # why, for a person: the best candidate, the equal matches, the drift, "did you mean"
    matches: tuple[Span, ...] = ()  # the equal matches of an ambiguous quote, in corpus order
    example: str = ""  # a valid line, for an invalid one

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
    return LabelStatus(line, qid, e.field or at, "invalid", None, None, e.problem, example=e.example)


Read = tuple[dict, QuestionLine | None, list[LabelStatus]]  # a line, as read (None: malformed), its statuses


def _read(qpath: Path, docs: dict[str, Document], skipped: dict[str, str]) -> Iterator[Read]:
    """Each question line, what `question_fields` read of it, and the status of each of its answers."""
    seen: dict[str, int] = {}
    for n, obj in read_jsonl(qpath):
        try:
            line = question_fields(obj, qpath, n, seen)
        except DatasetError as e:
            qid = obj.get("qid") if isinstance(obj.get("qid"), str) else None
            yield obj, None, [LabelStatus(n, qid, e.field or "", "invalid", None, None, e.problem, example=e.example)]
            continue
        statuses = []
        for raw in (raw for alternative in line.any_of for raw in alternative):
            try:
                span, found = read_answer(raw, docs, skipped, qpath, n)
            except DatasetError as e:
                statuses.append(_failed(n, line.qid, raw.at, e))
                continue
            statuses.append(LabelStatus(n, line.qid, raw.at, "offsets" if found is None else found.how, span,
                                        None if found is None else found.score, ""))
        yield obj, line, statuses


def _load(data: str | Path, questions: str | Path | None) -> tuple[Path, list[Read]]:
    doc_list, skipped, qpath = load_documents(data, questions)
    return qpath, list(_read(qpath, {d.doc_id: d for d in doc_list}, skipped))


def check_labels(data: str | Path, questions: str | Path | None = None) -> list[LabelStatus]:
    """The status of every label of a dataset folder (`questions`: its questions file, if not
    <data>/questions.jsonl), in file order."""
    return [s for _, _, statuses in _load(data, questions)[1] for s in statuses]


def summary(statuses: list[LabelStatus]) -> str:
    """'30 labels: 27 exact, 2 normalised, 1 missing', in the order of Status."""
    counts = Counter(s.status for s in statuses)
    return f"{len(statuses)} labels: " + ", ".join(f"{counts[k]} {k}" for k in get_args(Status) if counts[k])


def skip_summary(statuses: list[LabelStatus]) -> str:
    """What `--skip-missing` (load_dataset(..., missing="skip")) would leave out of these labels: the
    labels not located, and the questions (lines) none of whose answers is; '' when nothing."""
    left = [s for s in statuses if s.status in SKIPPED]
    if not left:
        return ""
    by_line: dict[int, list[LabelStatus]] = {}
    for s in statuses:
        by_line.setdefault(s.line, []).append(s)
    gone = [ss[0].qid or f"line {n}" for n, ss in by_line.items() if all(s.status in SKIPPED for s in ss)]
    counts = Counter(s.status for s in left)
    still = sum(s.status == "invalid" for s in statuses)
    return (f"--skip-missing would leave out {len(left)} label(s) (" + ", ".join(f"{n} {k}" for k, n in counts.items())
            + ")" + (f" and {len(gone)} question(s) left with no answer: {named(gone)}" if gone else "")
            + (f"; {still} invalid label(s) would stop it still" if still else ""))


def resolve_labels(data: str | Path, out: str | Path, questions: str | Path | None = None) -> list[LabelStatus]:
    """Write the questions of `data` to `out` with every answer as offsets (drifted ones moved to where
    their quote is now), keeping quotes so that a later check sees drift; written whole or not at all.
    A line of the flat shape or with a default document is written as `answers`, one with alternatives
    as `alternatives` (lists of answers). Raises ValueError naming every label that cannot be located
    (ambiguous, missing, invalid)."""
    qpath, read = _load(data, questions)
    statuses = [s for _, _, ss in read for s in ss]
    broken = [s for s in statuses if s.span is None]
    if broken:
        shown = "\n".join(s.describe() for s in broken[:20]) + (f"\n... and {len(broken) - 20} more"
                                                                 if len(broken) > 20 else "")
        raise ValueError(f"{qpath}: {len(broken)} label(s) cannot be resolved, nothing written:\n{shown}")
    lines = []
    for obj, line, ss in read:
        spans = iter(s.span for s in ss)
        any_of = [[_resolved(raw.value, next(spans)) for raw in alternative] for alternative in line.any_of]
        evidence = {"answers": any_of[0]} if len(any_of) == 1 else {"alternatives": any_of}
        rest = {k: v for k, v in obj.items() if k not in line.fields}
        lines.append(json.dumps({"qid": obj["qid"], "question": obj["question"], **evidence, **rest},
                                ensure_ascii=False))
    write_text(out, "\n".join(lines) + "\n")
    return statuses


def _resolved(answer: dict, span: Span) -> dict:
    """An answer as offsets, its other fields (the quote) kept but for the hints the offsets supersede."""
    rest = {k: v for k, v in answer.items() if k not in ("doc_id", "start", "end", *STALE_HINTS)}
    return {"doc_id": span.doc_id, "start": span.start, "end": span.end, **rest}
