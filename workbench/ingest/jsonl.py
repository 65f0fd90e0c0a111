"""The shared format: `corpus.jsonl` (one document per line) and `questions.jsonl` (one question
per line, answers as character spans, or as quotes located in the text; reference answers, where a
set has them, in `reference_answer`, `reference_summary` or as SQuAD's `alt_answers`, see
`read_references`). A question's evidence is `answers`, `alternatives` (any one of several sets of
answers), or the flat shape people write: a quote or a list of quotes in `evidence` (`quote`, `answer`)
with its document in `source` (`file`, `doc`, `doc_id`). Each error names the file, the line and the
field's full path (`answers[0].start`), a field that looks like a known one gets "did you mean", and a
malformed line gets a valid one to copy."""

from __future__ import annotations

import difflib
import json
import warnings
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from workbench.core.locate import (
    AmbiguousQuote,
    Located,
    QuoteDrift,
    QuoteError,
    QuoteNotFound,
    locate_quote,
    verify_quote,
)
from workbench.dataset import DatasetError, DatasetWarning, Document, Loaded, Question, Span, answer_problem

CORPUS_EXAMPLE = '{"doc_id": "billing", "title": "Billing", "text": "Refunds are paid within five days."}'
QUOTE_EXAMPLE = ('{"qid": "q1", "question": "How long do refunds take?", '
                 '"answers": [{"doc_id": "billing", "quote": "Refunds are paid within five days."}]}')
OFFSETS_EXAMPLE = ('{"qid": "q1", "question": "How long do refunds take?", '
                   '"answers": [{"doc_id": "billing", "start": 0, "end": 34, '
                   '"quote": "Refunds are paid within five days."}]}')
FLAT_EXAMPLE = ('{"qid": "q1", "question": "How long do refunds take?", "source": "billing", '
                '"evidence": "Refunds are paid within five days."}')
HINTS = {"occurrence": int, "near": int, "context": str}  # what picks one of several equal matches of a quote
ANSWER_FIELDS = ("doc_id", "start", "end", "quote", *HINTS)
ANSWER_ALIASES = {**dict.fromkeys(("source", "file", "doc", "document"), "doc_id"),
                  **dict.fromkeys(("evidence", "answer"), "quote")}  # the flat shape's names, inside an answer
EVIDENCE_FIELDS = ("answers", "alternatives", "evidence", "quote", "answer")  # where a line gives its evidence
FLAT_EVIDENCE = EVIDENCE_FIELDS[2:]  # a quote, or a list of quotes, jointly required
DOCUMENT_FIELDS = ("source", "file", "doc", "doc_id")  # the document of the line's quotes that name none
REFERENCE_FIELDS = ("reference_answer", "reference_summary")  # a reference text, or a list of them
LINE_FIELDS = ("qid", "question", *EVIDENCE_FIELDS, *DOCUMENT_FIELDS, *REFERENCE_FIELDS, "alt_answers",
               "document_level", "probe")  # every field a question line has a meaning for
Missing = Literal["error", "skip"]  # what read_questions does with a label whose evidence is not located
MISSING = ("error", "skip")
UNLOCATED = {QuoteNotFound: "missing", AmbiguousQuote: "ambiguous", QuoteDrift: "drift"}  # labels missing="skip" drops
_NAMED = 10  # how many dropped labels or questions a warning names


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


def near_misses(obj: Mapping[str, Any], known: Iterable[str], aliases: Mapping[str, str] | None = None
                ) -> dict[str, str]:
    """The fields of `obj` that no reader reads but that look like a known one it lacks: field -> that one
    (a close spelling, else its name in `aliases`), for "did you mean"."""
    known = tuple(known)
    unknown = [k for k in obj if k not in known]
    absent = [k for k in known if k not in obj] if unknown else []
    out = {}
    for key in unknown:
        alias = (aliases or {}).get(key)
        guess = alias if alias in absent else next(iter(difflib.get_close_matches(key, absent, 1, 0.8)), None)
        if guess is not None:
            out[key] = guess
    return out


def did_you_mean(misses: Mapping[str, str]) -> str:
    """'; field 'sources' is not read: did you mean 'source'?' for each of `misses`."""
    return "".join(f"; field {k!r} is not read: did you mean {v!r}?" for k, v in misses.items())


@dataclass(frozen=True, slots=True)
class RawAnswer:
    """One answer as its line gives it: `value` (an answer object; a quote string or the line's document
    filled in), `at` its field ("answers[0]", "alternatives[1][0]", "evidence"), and `names`, the line's
    field of a key where it is not `at.key` (a quote string is `at` itself; the line's document, 'source')."""

    value: object
    at: str
    names: tuple[tuple[str, str], ...] = ()

    def name(self, key: str = "") -> str:
        """The field path of `key` of this answer ("": of the answer itself), as the line has it."""
        return dict(self.names).get(key) or (f"{self.at}.{key}" if key else self.at)


@dataclass(frozen=True, slots=True)
class QuestionLine:
    """A question line, checked: its evidence as alternatives of raw answers (a single one unless the line
    has `alternatives`) and the fields that gave it (what a rewrite of the line replaces)."""

    qid: str
    question: str
    any_of: tuple[tuple[RawAnswer, ...], ...]
    fields: tuple[str, ...]


def _raw(item: object, at: str, doc: tuple[str, str] | None) -> RawAnswer:
    """An answer (an object, or a quote string) with the line's document filled in where it names none."""
    value = {"quote": item} if isinstance(item, str) else item
    names = (("quote", at),) if isinstance(item, str) else ()
    if doc is not None and isinstance(value, dict) and "doc_id" not in value:
        value, names = {**value, "doc_id": doc[1]}, (*names, ("doc_id", doc[0]))
    return RawAnswer(value, at, names)


def _answers(items: object, at: str, doc: tuple[str, str] | None, path: Path, line: int,
             example: str) -> tuple[RawAnswer, ...]:
    """A list of answers (jointly required), or a single answer or quote, as raw answers."""
    if isinstance(items, str | dict):
        return (_raw(items, at, doc),)
    if not isinstance(items, list) or not items:
        raise DatasetError(path, line, at, f"must be a non-empty list of answers, got {items!r:.40}", example)
    return tuple(_raw(a, f"{at}[{i}]", doc) for i, a in enumerate(items))


NO_EVIDENCE = ("is missing: give the evidence as 'answers' (a list of answers), 'alternatives' (a list of answer "
               "lists, any one of which answers the question), or flat, a quote or a list of quotes in 'evidence' "
               "('quote', 'answer') with their document in 'source' ('file', 'doc', 'doc_id'; none: the whole corpus)")


def question_fields(obj: dict, path: Path, line: int, seen: dict[str, int]) -> QuestionLine:
    """A question line's qid (recorded in `seen`: qid -> line; without one, `line-<n>`, as people write
    questions with no id), question text and raw evidence, checked:
    `answers` (one set of answers, jointly required), `alternatives` (a list of such sets, or of single
    answers or quotes: any one answers the question), or flat, a quote or list of quotes in `evidence`
    (`quote`, `answer`). `source` (`file`, `doc`, `doc_id`) is the document of every quote that names
    none (else the whole corpus is searched). A field no reader reads that looks like one of these is an
    error, with "did you mean": read as written, it would be lost."""
    given = [k for k in EVIDENCE_FIELDS if k in obj]
    docs_given = [k for k in DOCUMENT_FIELDS if k in obj]
    misses = near_misses(obj, LINE_FIELDS)
    example = QUOTE_EXAMPLE if given and given[0] in ("answers", "alternatives") else FLAT_EXAMPLE
    if "question" not in obj:
        raise DatasetError(path, line, "question", "is missing" + did_you_mean(misses), example)
    if not given:
        raise DatasetError(path, line, "answers", NO_EVIDENCE + did_you_mean(misses), FLAT_EXAMPLE)
    if misses:
        key, guess = next(iter(misses.items()))
        raise DatasetError(path, line, key, f"is not read: did you mean {guess!r}?"
                           + did_you_mean(dict(list(misses.items())[1:])), example)
    if len(given) > 1:
        raise DatasetError(path, line, given[1], f"and {given[0]!r} both give evidence: give it in one field"
                           + (" (a reference answer's text goes in 'reference_answer')" if "answer" in given else ""),
                           example)
    if len(docs_given) > 1:
        raise DatasetError(path, line, docs_given[1], f"and {docs_given[0]!r} both name the document: give one",
                           example)
    qid = field(obj, "qid", str, path, line, optional=True, example=example) or f"line-{line}"
    text = field(obj, "question", str, path, line, example=example)
    doc = (docs_given[0], field(obj, docs_given[0], str, path, line, example=example)) if docs_given else None
    if qid in seen:
        raise DatasetError(path, line, "qid", f"duplicate id {qid!r} (first on line {seen[qid]})")
    if not text.strip():
        raise DatasetError(path, line, "question", f"question {qid!r} is empty")
    key, value = given[0], obj[given[0]]
    if key in FLAT_EVIDENCE:
        quotes = [value] if isinstance(value, str) else value
        if not isinstance(quotes, list) or not quotes or not all(isinstance(q, str) for q in quotes):
            raise DatasetError(path, line, key, f"must be a quote or a non-empty list of quotes, got {value!r:.40}",
                               example)
        any_of = (_answers(value, key, doc, path, line, example),)
    elif key == "alternatives":
        if not isinstance(value, list) or not value:
            raise DatasetError(path, line, key, f"must be a non-empty list of alternatives, got {value!r:.40}", example)
        any_of = tuple(_answers(a, f"{key}[{i}]", doc, path, line, example) for i, a in enumerate(value))
    else:
        if not field(obj, key, list, path, line, example=example):
            raise DatasetError(path, line, key, f"question {qid!r} has no answer spans", example)
        any_of = (_answers(value, key, doc, path, line, example),)
    seen[qid] = line
    return QuestionLine(qid, text, any_of, ("qid", "question", key, *docs_given))


def read_answer(
    raw: RawAnswer, docs: Mapping[str, Document], skipped: Mapping[str, str], path: Path, line: int
) -> tuple[Span, Located | None]:
    """One answer and how its quote matched (None: offsets alone).

    Offsets: doc_id, start, end, and an optional quote that must still match them (exactly, normalised
    or fuzzily; else it drifted, and the error says where the quote is now). A quote alone: located in
    `doc_id` when given, else in the whole corpus, the hints picking one of several equal matches."""
    a, at = raw.value, raw.at
    if not isinstance(a, dict):
        raise DatasetError(path, line, at, f"must be an object with a quote, or doc_id, start and end; got {a!r:.40}",
                           QUOTE_EXAMPLE)
    if "text" in a:
        raise DatasetError(path, line, at + ".text", "is now called 'quote' (the text the span holds): rename it",
                           OFFSETS_EXAMPLE)
    misses = near_misses(a, ANSWER_FIELDS, ANSWER_ALIASES)
    if misses:
        key, guess = next(iter(misses.items()))
        raise DatasetError(path, line, f"{at}.{key}", f"is not read: did you mean {guess!r}?", QUOTE_EXAMPLE)
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
            raise DatasetError(path, line, raw.name(broken[0].lstrip(".")), broken[1])
    try:
        if quote is None:
            return Span(doc_id, start, end), None
        if start is None:
            found = locate_quote(docs, quote, doc_id, **hints)
        else:
            found = verify_quote(docs, quote, doc_id, start, end, **hints)
    except QuoteError as e:
        raise DatasetError(path, line, raw.name(e.field), str(e)) from e
    return Span(found.doc_id, found.start, found.end), found


def unlocated(e: DatasetError) -> str | None:
    """How an answer `read_answer` refused is not located ("missing", "ambiguous", "drift"): what
    missing="skip" leaves out; None for an invalid one, which is refused still."""
    return next((why for kind, why in UNLOCATED.items() if isinstance(e.__cause__, kind)), None)


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
        spans = [*answers, *(read_answer(RawAnswer(a, f"alt_answers[{i}]"), docs, skipped, path, line)[0]
                             for i, a in enumerate(alts))]
        refs += [docs[s.doc_id].text[s.start : s.end] for s in spans]
    return tuple(dict.fromkeys(r for r in refs if r.strip()))


def named(items: list[str]) -> str:
    """The first few of `items`, and how many more."""
    return ", ".join(items[:_NAMED]) + (f" and {len(items) - _NAMED} more" if len(items) > _NAMED else "")


def read_questions(path: Path, docs: Mapping[str, Document], skipped: Mapping[str, str],
                   missing: Missing = "error") -> list[Question]:
    """Every question of a questions.jsonl, its answers located and checked against `docs` (`skipped`: the
    ids of documents left out -> why, which an answer is told when it points into one). One
    DatasetWarning counts the quotes that matched only normalised or fuzzily. missing="skip" leaves out
    each answer whose evidence is not located (a quote not found, found in several places, or offsets
    that no longer hold their quote), then each alternative and each question left with none, and
    names them in one DatasetWarning; an invalid answer is refused still."""
    questions: list[Question] = []
    seen: dict[str, int] = {}
    left_out: list[str] = []  # "line 3 q7 answers[0] (missing)"
    gone: list[str] = []  # the questions left with no answer
    for n, obj in read_jsonl(path):
        q = question_fields(obj, path, n, seen)
        any_of = []
        for alternative in q.any_of:
            read = []
            for raw in alternative:
                try:
                    read.append(read_answer(raw, docs, skipped, path, n))
                except DatasetError as e:
                    why = unlocated(e)
                    if why is None:
                        raise
                    if missing == "error":
                        raise DatasetError(e.path, e.line, e.field, e.problem + " (load_dataset(..., missing='skip'),"
                                           " sweep --skip-missing: leave such labels out)") from e.__cause__
                    left_out.append(f"line {n} {q.qid} {raw.at} ({why})")
            if read:
                any_of.append(read)
        if not any_of:
            gone.append(repr(q.qid))
            continue
        spans = [tuple(s for s, _ in alternative) for alternative in any_of]
        questions.append(Question(q.qid, q.question, spans[0], tuple(h for alt in any_of for _, h in alt),
                                  read_references(obj, spans[0], docs, skipped, path, n), tuple(spans[1:]),
                                  probe=bool(obj.get("probe"))))
    if left_out:
        warnings.warn(f"{path}: left out {len(left_out)} label(s) whose evidence is not located (missing='skip'): "
                      f"{named(left_out)}" + (f"; and {len(gone)} question(s) left with no answer: {named(gone)}"
                                               if gone else "")
                      + "; `python -m workbench labels check <data folder>` lists them", DatasetWarning, stacklevel=3)
    if not questions:
        raise DatasetError(path, None, None, "no questions" + (f" ({len(gone)} left out, none located)"
                                                               if gone else ""))
    loose = [h for q in questions for h in q.located if h is not None and h.how != "exact"]
    if loose:
        counts = Counter(h.how for h in loose)
        lowest = min((h.score for h in loose if h.how == "fuzzy"), default=None)
        fuzzy = f", {counts['fuzzy']} fuzzily (lowest score {lowest:.0f})" if lowest is not None else ""
        warnings.warn(f"{path}: {len(loose)} quote(s) matched the text only loosely: {counts['normalised']} once "
                      f"normalised{fuzzy}; `python -m workbench labels check <data folder>` lists them",
                      DatasetWarning, stacklevel=3)
    return questions
