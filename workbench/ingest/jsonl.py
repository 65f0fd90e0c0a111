"""The shared format: `corpus.jsonl` (one document per line) and `questions.jsonl` (one question
per line, answers as character spans). Each error names the file, the line and the field."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from workbench.dataset import DatasetError, Document, Loaded, Question, Span, answer_problem


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


def field(obj: dict, key: str, kind: type, path: Path, line: int, optional: bool = False) -> Any:
    """obj[key], which must be a `kind` (an int is never a bool); None when optional and absent."""
    if key not in obj:
        if optional:
            return None
        raise DatasetError(path, line, key, "is missing")
    value = obj[key]
    if kind is int and isinstance(value, bool) or not isinstance(value, kind):
        raise DatasetError(path, line, key, f"must be {kind.__name__}, got {type(value).__name__} {value!r:.40}")
    return value


def read_corpus(path: Path) -> list[Loaded]:
    """Every document of a corpus.jsonl: doc_id and text required, title (default: the id) and group optional."""
    docs: list[Loaded] = []
    seen: dict[str, int] = {}
    for n, obj in read_jsonl(path):
        doc_id = field(obj, "doc_id", str, path, n)
        text = field(obj, "text", str, path, n)
        title = field(obj, "title", str, path, n, optional=True) or doc_id
        group = field(obj, "group", str, path, n, optional=True)
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


def read_questions(path: Path, docs: Mapping[str, Document], skipped: Mapping[str, str]) -> list[Question]:
    """Every question of a questions.jsonl, its answer spans checked against `docs` (`skipped`: the ids
    of documents left out -> why, which an answer is told when it points into one)."""
    questions: list[Question] = []
    seen: dict[str, int] = {}
    for n, obj in read_jsonl(path):
        qid = field(obj, "qid", str, path, n)
        text = field(obj, "question", str, path, n)
        answers = field(obj, "answers", list, path, n)
        if qid in seen:
            raise DatasetError(path, n, "qid", f"duplicate id {qid!r} (first on line {seen[qid]})")
        if not text.strip():
            raise DatasetError(path, n, "question", f"question {qid!r} is empty")
        if not answers:
            raise DatasetError(path, n, "answers", f"question {qid!r} has no answer spans")
        spans = []
        for i, a in enumerate(answers):
            f = f"answers[{i}]"
            if not isinstance(a, dict):
                raise DatasetError(path, n, f, f"must be an object with doc_id, start, end; got {a!r:.40}")
            doc_id = field(a, "doc_id", str, path, n)
            start, end = field(a, "start", int, path, n), field(a, "end", int, path, n)
            broken = answer_problem(docs, skipped, doc_id, start, end, a.get("text"))
            if broken is not None:
                raise DatasetError(path, n, f + broken[0], broken[1])
            spans.append(Span(doc_id, start, end))
        seen[qid] = n
        questions.append(Question(qid, text, tuple(spans)))
    if not questions:
        raise DatasetError(path, None, None, "no questions")
    return questions
