"""The shared format: `corpus.jsonl` (one document per line) and `questions.jsonl` (one question
per line, answers as character spans, or as quotes located in the text; reference answers, where a
set has them, in `reference_answer`, `reference_summary` or as SQuAD's `alt_answers`, see
`read_references`). Each error names the file, the line and the field's full path (`answers[0].start`),
and a malformed line gets a valid one to copy."""

from __future__ import annotations

import json
import warnings
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from workbench.core.locate import Located, QuoteError, locate_quote, verify_quote
from workbench.dataset import DatasetError, DatasetWarning, Document, Loaded, Question, Span, answer_problem

CORPUS_EXAMPLE = '{"doc_id": "billing", "title": "Billing", "text": "Refunds are paid within five days."}'
QUOTE_EXAMPLE = ('{"qid": "q1", "question": "How long do refunds take?", '
                 '"answers": [{"doc_id": "billing", "quote": "Refunds are paid within five days."}]}')
OFFSETS_EXAMPLE = ('{"qid": "q1", "question": "How long do refunds take?", '
                   '"answers": [{"doc_id": "billing", "start": 0, "end": 34, '
                   '"quote": "Refunds are paid within five days."}]}')
HINTS = {"occurrence": int, "near": int, "context": str}  # what picks one of several equal matches of a quote


def read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for each non-blank line, with a precise error on bad JSON."""
    try:
        handle = path.open(encoding="utf-8")
    except OSError as e:
        raise DatasetError(path, None, None, f"cannot open: {e.strerror}") from e
    with handle:
        try:
            for n, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as e:
                    raise DatasetError(path, n, None, f"invalid JSON ({e.msg} at column {e.colno})") from e
                if not isinstance(obj, dict):
                    raise DatasetError(path, n, None, f"expected a JSON object, got {type(obj).__name__}")
                yield n, obj
        except UnicodeDecodeError as e:
            raise DatasetError(path, None, None, f"not UTF-8 text ({e.reason} at byte {e.start})") from e


def field(obj: dict, key: str, kind: type, path: Path, line: int, optional: bool = False, at: str = "",
          example: str = "") -> Any:
    """obj[key], which must be a `kind` (an int is never a bool); None when optional and absent. `at`
    prefixes the field's name in errors (`answers[0].`); `example` is a valid line they show."""
    if key not in obj:
        if optional:
            return None
        raise DatasetError(path, line, at + key, "is missing", example)
    value = obj[key]
    if kind is int and isinstance(value, bool) or not isinstance(value, kind):
        raise DatasetError(path, line, at + key, f"must be {kind.__name__}, got {type(value).__name__} {value!r:.40}",
                           example)
    return value


def read_corpus(path: Path) -> list[Loaded]:
    """Every document of a corpus.jsonl: doc_id and text required, title (default: the id) and group optional."""
    docs: list[Loaded] = []
    seen: dict[str, int] = {}
    for n, obj in read_jsonl(path):
        doc_id = field(obj, "doc_id", str, path, n, example=CORPUS_EXAMPLE)
        text = field(obj, "text", str, path, n, example=CORPUS_EXAMPLE)
        title = field(obj, "title", str, path, n, optional=True, example=CORPUS_EXAMPLE) or doc_id
        group = field(obj, "group", str, path, n, optional=True, example=CORPUS_EXAMPLE)
        if group is not None and not group.strip():
            raise DatasetError(path, n, "group",
                               f"document {doc_id!r} has an empty group (leave the field out instead)")
        if doc_id in seen:
            raise DatasetError(path, n, "doc_id", f"duplicate id {doc_id!r} (first on line {seen[doc_id]})")
        seen[doc_id] = n
        docs.append(Loaded(Document(doc_id, title, text, group, kind="jsonl", path=path.name), path, n))
    if not docs:
        raise DatasetError(path, None, None, "no documents")
    return docs


def question_fields(obj: dict, path: Path, line: int, seen: dict[str, int]) -> tuple[str, str, list]:
    """A question line's qid (recorded in `seen`: qid -> line), question text and raw answers, checked."""
    qid = field(obj, "qid", str, path, line, example=QUOTE_EXAMPLE)
    text = field(obj, "question", str, path, line, example=QUOTE_EXAMPLE)
    answers = field(obj, "answers", list, path, line, example=QUOTE_EXAMPLE)
    if qid in seen:
        raise DatasetError(path, line, "qid", f"duplicate id {qid!r} (first on line {seen[qid]})")
    if not text.strip():
        raise DatasetError(path, line, "question", f"question {qid!r} is empty")
    if not answers:
        raise DatasetError(path, line, "answers", f"question {qid!r} has no answer spans", QUOTE_EXAMPLE)
    seen[qid] = line
    return qid, text, answers


def read_answer(
    a: object, docs: Mapping[str, Document], skipped: Mapping[str, str], path: Path, line: int, at: str
) -> tuple[Span, Located | None]:
    """One answer (`at`: its field path, "answers[0]") and how its quote matched (None: offsets alone).

    Offsets: doc_id, start, end, and an optional quote that must still match them (exactly, normalised
    or fuzzily; else it drifted, and the error says where the quote is now). A quote alone: located in
    `doc_id` when given, else in the whole corpus, the hints picking one of several equal matches."""
    if not isinstance(a, dict):
        raise DatasetError(path, line, at, f"must be an object with a quote, or doc_id, start and end; got {a!r:.40}",
                           QUOTE_EXAMPLE)
    if "text" in a:
        raise DatasetError(path, line, at + ".text", "is now called 'quote' (the text the span holds): rename it",
                           OFFSETS_EXAMPLE)
    doc_id = field(a, "doc_id", str, path, line, optional=True, at=at + ".", example=QUOTE_EXAMPLE)
    start = field(a, "start", int, path, line, optional=True, at=at + ".", example=OFFSETS_EXAMPLE)
    end = field(a, "end", int, path, line, optional=True, at=at + ".", example=OFFSETS_EXAMPLE)
    quote = field(a, "quote", str, path, line, optional=True, at=at + ".", example=QUOTE_EXAMPLE)
    hints = {k: field(a, k, kind, path, line, optional=True, at=at + ".", example=QUOTE_EXAMPLE)
             for k, kind in HINTS.items()}
    if (start is None) != (end is None):
        raise DatasetError(path, line, f"{at}.{'end' if end is None else 'start'}",
                           "is missing (offsets are a start and an end; or give a quote alone)", OFFSETS_EXAMPLE)
    if start is None and quote is None:
        raise DatasetError(path, line, at, "has neither offsets (doc_id, start, end) nor a quote", QUOTE_EXAMPLE)
    if start is not None and doc_id is None:
        raise DatasetError(path, line, at + ".doc_id", "is missing (offsets count in one document)", OFFSETS_EXAMPLE)
    if doc_id is not None:
        broken = answer_problem(docs, skipped, doc_id, start, end)
        if broken is not None:
            raise DatasetError(path, line, at + broken[0], broken[1])
    try:
        if quote is None:
            return Span(doc_id, start, end), None
        if start is None:
            found = locate_quote(docs, quote, doc_id, **hints)
        else:
            found = verify_quote(docs, quote, doc_id, start, end, **hints)
    except QuoteError as e:
        raise DatasetError(path, line, f"{at}.{e.field}", str(e)) from e
    return Span(found.doc_id, found.start, found.end), found


REFERENCE_FIELDS = ("reference_answer", "reference_summary")  # a reference text, or a list of them


def read_references(obj: dict, answers: tuple[Span, ...], docs: Mapping[str, Document], skipped: Mapping[str, str],
                    path: Path, line: int) -> tuple[str, ...]:
    """The reference answers of a question line, distinct, in order: the texts of REFERENCE_FIELDS,
    then, when the line has `alt_answers` (SQuAD: other annotators' spans, alternatives to the
    answer's span, so every one of them is a short answer), the texts of its answers and of those."""
    refs: list[str] = []
    for key in REFERENCE_FIELDS:
        value = obj.get(key)
        texts = [value] if isinstance(value, str) else value
        if value is not None and not (isinstance(texts, list) and all(isinstance(t, str) for t in texts)):
            raise DatasetError(path, line, key, f"must be a string or a list of strings, got {value!r:.40}")
        refs += texts or []
    alts = field(obj, "alt_answers", list, path, line, optional=True)
    if alts is not None:
        spans = [*answers, *(read_answer(a, docs, skipped, path, line, f"alt_answers[{i}]")[0]
                             for i, a in enumerate(alts))]
        refs += [docs[s.doc_id].text[s.start : s.end] for s in spans]
    return tuple(dict.fromkeys(r for r in refs if r.strip()))


def read_questions(path: Path, docs: Mapping[str, Document], skipped: Mapping[str, str]) -> list[Question]:
    """Every question of a questions.jsonl, its answers located and checked against `docs` (`skipped`: the
    ids of documents left out -> why, which an answer is told when it points into one). One
    DatasetWarning counts the quotes that matched only normalised or fuzzily."""
    questions: list[Question] = []
    seen: dict[str, int] = {}
    for n, obj in read_jsonl(path):
        qid, text, answers = question_fields(obj, path, n, seen)
        read = [read_answer(a, docs, skipped, path, n, f"answers[{i}]") for i, a in enumerate(answers)]
        spans = tuple(s for s, _ in read)
        questions.append(Question(qid, text, spans, tuple(h for _, h in read),
                                  read_references(obj, spans, docs, skipped, path, n)))
    if not questions:
        raise DatasetError(path, None, None, "no questions")
    loose = [h for q in questions for h in q.located if h is not None and h.how != "exact"]
    if loose:
        counts = Counter(h.how for h in loose)
        lowest = min((h.score for h in loose if h.how == "fuzzy"), default=None)
        fuzzy = f", {counts['fuzzy']} fuzzily (lowest score {lowest:.0f})" if lowest is not None else ""
        warnings.warn(f"{path}: {len(loose)} quote(s) matched the text only loosely: {counts['normalised']} once "
                      f"normalised{fuzzy}; `python -m workbench labels check <data folder>` lists them",
                      DatasetWarning, stacklevel=3)
    return questions
