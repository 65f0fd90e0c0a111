"""Documents, questions and their answer spans: validation and fingerprints (workbench.ingest reads them).

Answers are character spans into the source text, never chunk ids, so one set of labels scores
every chunking variant. Everything is validated up front, and every error names the file, the
line and the field, so a bad label never surfaces as a wrong number later.
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import json
import random
import statistics
import warnings
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from itertools import pairwise
from pathlib import Path, PurePosixPath
from typing import Literal

import numpy as np

EMPTY_DOCS = ("skip", "error")  # what load_dataset does with empty or whitespace-only documents
_NAMED_EMPTY = 5  # how many skipped ids a warning lists


class DatasetError(ValueError):
    """Bad input data; the message names file, line and field."""

    def __init__(self, path: Path | str, line: int | None, field: str | None, problem: str, example: str = ""):
        where = str(path) + (f", line {line}" if line is not None else "")
        what = f" field '{field}'" if field else ""
        shown = f"\n  a valid line: {example}" if example else ""
        super().__init__(f"{where}:{what} {problem}{shown}")
        self.path, self.line, self.field, self.problem, self.example = str(path), line, field, problem, example


class DatasetWarning(UserWarning):
    """Data that loads but not as written (e.g. empty documents skipped): filter it by category."""


@dataclass(frozen=True, slots=True)
class Span:
    """Half-open character range [start, end) of one document."""

    doc_id: str
    start: int
    end: int

    def __len__(self) -> int:
        return self.end - self.start


@dataclass(frozen=True, slots=True)
class Hit:
    """One retrieved unit, after parent expansion and deduplication: what the LLM would get."""

    span: Span  # the returned span (the parent for small-to-big variants)
    score: float  # retriever score of the best searched chunk that returned it (cosine, BM25 or RRF)
    chunk_id: int  # row of that searched chunk in the variant's chunk table
    tokens: Mapping[str, int]  # tiktoken size of the returned text: {"cl100k_base": n, "o200k_base": m}


@dataclass(frozen=True, eq=False)
class RankedHits(Sequence[list[Hit]]):
    """Every question's hits, best first, as columns: one row per hit, question i's in rows
    bounds[i]:bounds[i + 1]. What a sweep ranks and scores: one Hit object per rank cost more than
    the ranking itself (a preview of 22 variants over 2,057 SQuAD questions). As a sequence it is
    what a list of hit lists is (`[i]`: question i's Hits, e.g. to drill down), equal to one with
    the same hits; `of` turns such a list into columns."""

    bounds: np.ndarray  # int64, one more than the questions: where each question's rows start, then the total
    doc_id: np.ndarray  # object: each hit's returned document
    start: np.ndarray  # int64: its returned span
    end: np.ndarray  # int64
    score: np.ndarray  # float64
    chunk_id: np.ndarray  # int64: the row of the searched chunk that returned it
    tokens: Mapping[str, np.ndarray]  # tiktoken encoding -> int64 size of each hit's returned text

    @classmethod
    def of(cls, rankings: Sequence[Sequence[Hit]]) -> RankedHits:
        """`rankings` (one list of Hits per question) as columns; itself when it is already."""
        if isinstance(rankings, RankedHits):
            return rankings
        flat = [h for hits in rankings for h in hits]
        n = len(flat)

        def ints(values: Iterator[int]) -> np.ndarray:
            return np.fromiter(values, dtype=np.int64, count=n)

        return cls(cls.bounds_of([len(hits) for hits in rankings]),
                   np.array([h.span.doc_id for h in flat], dtype=object), ints(h.span.start for h in flat),
                   ints(h.span.end for h in flat), np.fromiter((h.score for h in flat), dtype=np.float64, count=n),
                   ints(h.chunk_id for h in flat),
                   {enc: ints(h.tokens[enc] for h in flat) for enc in (flat[0].tokens if flat else ())})

    @staticmethod
    def bounds_of(lengths: Sequence[int] | np.ndarray) -> np.ndarray:
        """`bounds` of questions with these numbers of hits."""
        return np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)]).astype(np.int64)

    @property
    def lengths(self) -> np.ndarray:
        """How many hits each question has."""
        return np.diff(self.bounds)

    @property
    def question(self) -> np.ndarray:
        """Each hit's question (its position in the sequence)."""
        return np.repeat(np.arange(len(self)), self.lengths)

    @property
    def rank(self) -> np.ndarray:
        """Each hit's rank in its question's hits, from 0."""
        return np.arange(len(self.doc_id)) - np.repeat(self.bounds[:-1], self.lengths)

    def top(self, k: int) -> RankedHits:
        """The first k hits of every question."""
        if (self.lengths <= k).all():
            return self
        keep = self.rank < k
        return RankedHits(self.bounds_of(np.minimum(self.lengths, k)), self.doc_id[keep], self.start[keep],
                          self.end[keep], self.score[keep], self.chunk_id[keep],
                          {enc: t[keep] for enc, t in self.tokens.items()})

    def take(self, questions: np.ndarray) -> RankedHits:
        """The hits of these questions (positions, repeats allowed), as questions in that order: one
        ranking scored against each alternative of its question."""
        lengths = self.lengths[questions]
        bounds = self.bounds_of(lengths)
        rows = np.repeat(self.bounds[:-1][questions] - bounds[:-1], lengths) + np.arange(bounds[-1])
        return RankedHits(bounds, self.doc_id[rows], self.start[rows], self.end[rows], self.score[rows],
                          self.chunk_id[rows], {enc: t[rows] for enc, t in self.tokens.items()})

    def sizes(self, encoding: str) -> np.ndarray:
        """Each hit's tiktoken size in `encoding` (none when there is no hit, whatever the encoding)."""
        return self.tokens[encoding] if len(self.doc_id) else np.zeros(0, dtype=np.int64)

    def totals(self, encoding: str) -> np.ndarray:
        """Each question's tokens of `encoding` over all its hits."""
        return np.bincount(self.question, weights=self.sizes(encoding), minlength=len(self)).astype(np.int64)

    def __len__(self) -> int:
        return len(self.bounds) - 1

    def __getitem__(self, i: int | slice) -> list[Hit]:  # type: ignore[override]
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]  # type: ignore[return-value]
        i = range(len(self))[i]  # a negative i counts from the end; out of range raises IndexError
        rows = range(int(self.bounds[i]), int(self.bounds[i + 1]))
        encodings = list(self.tokens)
        return [Hit(Span(self.doc_id[r], int(self.start[r]), int(self.end[r])), float(self.score[r]),
                    int(self.chunk_id[r]), {enc: int(self.tokens[enc][r]) for enc in encodings}) for r in rows]

    def __iter__(self) -> Iterator[list[Hit]]:
        return (self[i] for i in range(len(self)))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str):
            return NotImplemented
        return len(self) == len(other) and all(a == list(b) for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  (equal by value, and its arrays are not frozen)


@dataclass(frozen=True, slots=True)
class Document:
    """One source text. Provenance (kind, path, pages, language) says where it came from, for people and
    viewers; like `group` it changes no chunk, so no fingerprint includes it, except `language`,
    which a code chunker reads."""

    doc_id: str
    title: str
    text: str
    group: str | None = None  # the kind of text (e.g. one corpus of several): for per-group summaries
    kind: str | None = None  # the format it was read as ("markdown", "text", "jsonl"); None when made in memory
    path: str | None = None  # the file it was read from, relative to the dataset folder; None when made in memory
    pages: tuple[int, ...] = ()  # start offset of each page (PDF), from 0, ascending; () when the format has none
    language: str | None = None  # the programming language of source code ("python", "go"), else None

    def __post_init__(self) -> None:
        p = self.pages
        if p and (p[0] != 0 or p[-1] > len(self.text) or any(a > b for a, b in pairwise(p))):
            raise ValueError(f"document {self.doc_id!r}: field 'pages' must ascend from 0 to at most "
                             f"len(text) = {len(self.text)}, got {p[:5]}{'...' if len(p) > 5 else ''}")

    def page_of(self, offset: int) -> int | None:
        """The page (from 1, as viewers count) holding text[offset]; None when the document has no pages."""
        if not 0 <= offset < len(self.text):
            raise ValueError(f"document {self.doc_id!r}: offset {offset} out of range [0, {len(self.text)})")
        return bisect.bisect_right(self.pages, offset) if self.pages else None


GROUPINGS = ("group", "prefix")  # how Dataset.groups_of_questions names a document's group
MIXED = "mixed"  # the group of a question whose evidence lies in documents of two or more groups


def doc_group(doc: Document, by: Literal["group", "prefix"]) -> str | None:
    """`doc.group` (by="group"), or (by="prefix") the doc id up to its first "/": the folder of a
    text-folder dataset, and the whole id when it has none (chroma_general's five corpora are one
    document each: state_of_the_union, wikitexts, chatlogs, finance, pubmed; cutting at "_" would
    name the first "state")."""
    return doc.group if by == "group" else doc.doc_id.split("/", 1)[0]


Match = Literal["exact", "normalised", "fuzzy"]  # str.find; equal once normalised; rapidfuzz alignment


@dataclass(frozen=True, slots=True)
class Located:
    """Where a quote is (found by workbench.core.locate): an exact span of its document's text, how it
    was found and how well it matched."""

    doc_id: str
    start: int
    end: int
    how: Match
    score: float  # 100 when exact or normalised; the rapidfuzz alignment score (0..100) when fuzzy


@dataclass(frozen=True, slots=True)
class Question:
    """A question whose evidence is the union of `answers` (all spans jointly required), or, when it has
    `alternatives`, any one of `answers` and those: the same fact in the code that sets it and in the page
    that documents it. Each alternative is jointly required spans; the metrics score every alternative and
    take the best (docs/metrics.md). `answers` stays the first alternative, for every reader that needs one
    set of evidence; `any_of` lists them all.

    `located` says, per answer of `any_of` in order, how its quote matched (None: offsets without a quote);
    it is no part of the label's identity (equality, `Dataset.fingerprint`): a quote resolved to offsets is
    the same label. `references`: the answer texts a generated answer is graded against
    (workbench.results.answers), where the dataset has them; not part of the identity either, since no
    retrieval score reads them. `probe`: the line is marked as a question that probes the cuts (the
    report ranks the variants on those apart from the others)."""

    qid: str
    question: str
    answers: tuple[Span, ...]
    located: tuple[Located | None, ...] = field(default=(), compare=False)
    references: tuple[str, ...] = field(default=(), compare=False)
    alternatives: tuple[tuple[Span, ...], ...] = ()  # the other alternatives to `answers`, each non-empty
    probe: bool = field(default=False, compare=False)  # written to probe the cuts (labels generate --probe-cuts)

    def __post_init__(self) -> None:
        if not all(self.alternatives):
            raise ValueError(f"question {self.qid!r}: an alternative needs at least one answer span")

    @property
    def any_of(self) -> tuple[tuple[Span, ...], ...]:
        """Every alternative set of evidence, `answers` first: finding any one answers the question."""
        return (self.answers, *self.alternatives)

    @property
    def spans(self) -> tuple[Span, ...]:
        """Every answer span of every alternative, in order: where the question has evidence at all."""
        return tuple(a for alt in self.any_of for a in alt)

    def within(self, doc_ids: set[str]) -> Question | None:
        """This question with only its alternatives that lie wholly in `doc_ids` (None when none does)."""
        hows = iter(self.located)
        kept = [(alt, tuple(itertools.islice(hows, len(alt)))) for alt in self.any_of]
        kept = [(alt, h) for alt, h in kept if all(a.doc_id in doc_ids for a in alt)]
        if len(kept) == len(self.any_of) or not kept:
            return self if kept else None
        return replace(self, answers=kept[0][0], alternatives=tuple(alt for alt, _ in kept[1:]),
                       located=tuple(x for _, h in kept for x in h))


@dataclass(frozen=True)
class Dataset:
    name: str
    documents: tuple[Document, ...]
    questions: tuple[Question, ...]
    # what loading it said (files skipped, quotes matched loosely, labels dropped), one line each: carried to
    # a result's provenance, so its report says it too; no fingerprint includes it
    notes: tuple[str, ...] = field(default=(), compare=False)

    @cached_property
    def docs(self) -> dict[str, Document]:
        return {d.doc_id: d for d in self.documents}

    @cached_property
    def corpus_fingerprint(self) -> str:
        """Hash of the documents only: names chunk and index caches (questions may change freely).
        Groups and provenance are left out (a set language is in), here and in `fingerprint`: they
        change no chunk and no per-question score, so labelling groups after a sweep keeps its
        caches and still matches its result."""
        h = hashlib.sha256()
        for d in self.documents:
            # a code chunker reads the language; hashed only when set, so prose corpora keep their keys
            for part in (d.doc_id, d.title, d.text, *([f"language={d.language}"] if d.language else [])):
                b = part.encode("utf-8")
                h.update(len(b).to_bytes(8, "little") + b)
        return h.hexdigest()[:16]

    @cached_property
    def fingerprint(self) -> str:
        """Hash of documents and questions: identifies the data behind a set of results."""
        h = hashlib.sha256(self.corpus_fingerprint.encode())
        for q in self.questions:  # alternatives hashed only where there are some: other questions keep their key
            spans = [[[a.doc_id, a.start, a.end] for a in alt] for alt in q.any_of]
            h.update(json.dumps([q.qid, q.question, *spans[:1], *([spans[1:]] if q.alternatives else [])]).encode())
        return h.hexdigest()[:16]

    @property
    def grouping(self) -> Literal["group", "prefix"]:
        """What groups_of_questions splits by unless told: "group" when any document has a group
        field, else "prefix" (the folder in the doc id, or the document itself when it has none)."""
        return "group" if any(d.group is not None for d in self.documents) else "prefix"

    def groups_of_questions(self, by: Literal["group", "prefix"] | None = None) -> dict[str, str]:
        """qid -> the group of its evidence documents, of every alternative (MIXED when they differ), in
        question order.

        by="group" reads each document's `group` field, by="prefix" its id (see `doc_group`);
        None takes `grouping`."""
        by = self.grouping if by is None else by
        if by not in GROUPINGS:
            raise ValueError(f"groups_of_questions: parameter 'by' must be one of {list(GROUPINGS)}, got {by!r}")
        out = {}
        for q in self.questions:
            names = {doc_group(self.docs[a.doc_id], by) for a in q.spans}
            if None in names:
                bare = next(a.doc_id for a in q.spans if self.docs[a.doc_id].group is None)
                raise ValueError(f"groups_of_questions: document {bare!r} (evidence of question {q.qid!r}) has no "
                                 "'group' field; give every document one, or use by='prefix'")
            out[q.qid] = names.pop() if len(names) == 1 else MIXED
        return out

    @property
    def evidence_chars(self) -> float:
        """The median length of an answer span in characters: what a chunk's precision is bounded by."""
        return float(statistics.median(len(a) for q in self.questions for a in q.spans))

    @property
    def main_document(self) -> tuple[str, int]:
        """(doc id, how many questions have evidence in it) for the document holding the most
        questions' evidence, the first in corpus order on a tie: a set that mostly asks about one
        document measures chunking on that document."""
        counts = Counter(doc_id for q in self.questions for doc_id in {a.doc_id for a in q.spans})
        return max(((d.doc_id, counts[d.doc_id]) for d in self.documents), key=lambda c: c[1])

    @property
    def n_chars(self) -> int:
        return sum(len(d.text) for d in self.documents)

    def select(
        self, doc_ids: list[str] | None = None, max_questions: int | None = None, seed: int = 0
    ) -> Dataset:
        """A smaller dataset: only `doc_ids` (and their questions, each with the alternatives that lie in
        them), and at most `max_questions` questions drawn with a fixed seed (so the subset, and its
        fingerprint, are reproducible)."""
        docs = self.documents
        if doc_ids is not None:
            unknown = sorted(set(doc_ids) - set(self.docs))
            if unknown:
                raise KeyError(f"doc_ids not in dataset {self.name!r}: {unknown}")
            keep = set(doc_ids)
            docs = tuple(d for d in docs if d.doc_id in keep)
        kept = {d.doc_id for d in docs}
        qs = [q for q in (q.within(kept) for q in self.questions) if q is not None]
        if max_questions is not None and len(qs) > max_questions:
            picked = set(random.Random(seed).sample(range(len(qs)), max_questions))
            qs = [q for i, q in enumerate(qs) if i in picked]
        return Dataset(self.name, docs, tuple(qs), self.notes)

    def with_distractors(self, n: int, seed: int = 0) -> Dataset:
        """The documents holding some question's evidence plus `n` of the others drawn with a fixed
        seed, every question kept, in corpus order: a big corpus's retrieval at a fraction of its
        embedding cost (fewer distractors make retrieval easier: measure it, as bench/scale.md does)."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"with_distractors: n must be an int >= 0, got {n!r}")
        evidence = {a.doc_id for q in self.questions for a in q.spans}
        others = [d.doc_id for d in self.documents if d.doc_id not in evidence]
        if n > len(others):
            raise ValueError(f"with_distractors: n = {n} but dataset {self.name!r} has only {len(others)} documents "
                             f"without evidence (of {len(self.documents)})")
        keep = evidence | set(random.Random(seed).sample(others, n))
        name = f"{self.name}+{n}distractors" + (f"-seed{seed}" if seed else "")
        return Dataset(name, tuple(d for d in self.documents if d.doc_id in keep), self.questions, self.notes)


@dataclass(frozen=True, slots=True)
class Loaded:
    """A document and where a reader found it, so that a later rule can still name file and line."""

    doc: Document
    path: Path
    line: int | None


def drop_empty(loaded: list[Loaded], empty_docs: str, where: Path) -> list[Document]:
    """Documents with text, warning (DatasetWarning) about the empty ones or, with
    empty_docs="error", raising on the first, naming its file, line and field."""
    empty = [x for x in loaded if not x.doc.text.strip()]
    if empty and empty_docs == "error":
        x = empty[0]
        raise DatasetError(x.path, x.line, "text", f"document {x.doc.doc_id!r} is empty or whitespace-only "
                           f"({len(empty)} such documents; load_dataset(..., empty_docs='skip') skips them)")
    docs = [x.doc for x in loaded if x.doc.text.strip()]
    if not docs:
        raise DatasetError(where, None, None, f"all {len(empty)} documents are empty or whitespace-only")
    if empty:
        named = ", ".join(repr(x.doc.doc_id) for x in empty[:_NAMED_EMPTY])
        more = f" and {len(empty) - _NAMED_EMPTY} more" if len(empty) > _NAMED_EMPTY else ""
        warnings.warn(f"{where}: skipped {len(empty)} empty or whitespace-only document(s): {named}{more} "
                      "(load_dataset(..., empty_docs='error') refuses them)", DatasetWarning, stacklevel=4)
    return docs


def _loose(doc_id: str) -> str:
    """A doc id without its extension, in lower case: what two ids differing only so share."""
    return str(PurePosixPath(doc_id).with_suffix("")).lower() if PurePosixPath(doc_id).suffix else doc_id.lower()


def did_you_mean(doc_id: str, docs: Mapping[str, Document], skipped: Mapping[str, str]) -> str:
    """' (did you mean 'a.py'?)' for the ids that differ from `doc_id` only by extension or case, else ''."""
    near = sorted(d for d in [*docs, *skipped] if _loose(d) == _loose(doc_id))
    named = ", ".join(repr(d) + (f", skipped ({skipped[d]})" if d in skipped else "") for d in near)
    return f" (did you mean {named}?)" if near else ""


def answer_problem(
    docs: Mapping[str, Document], skipped: Mapping[str, str], doc_id: str, start: int | None, end: int | None
) -> tuple[str, str] | None:
    """The first rule an answer breaks (`skipped`: doc id -> why it was left out), as (its field:
    ".doc_id" or "" for the span itself; the problem), or None; a span of None, None (a quote still to
    locate) is not checked. Whatever reads labels checks them here, so a bad label is refused where it
    is written, never surfacing later as a wrong number."""
    if doc_id in skipped:
        return ".doc_id", f"document {doc_id!r} was skipped ({skipped[doc_id]}): no answer can point into it"
    if doc_id not in docs:
        return ".doc_id", f"unknown document {doc_id!r}" + did_you_mean(doc_id, docs, skipped)
    size = len(docs[doc_id].text)
    if start is not None and end is not None and not 0 <= start < end <= size:
        return "", f"span [{start}, {end}) out of range for {doc_id!r} (0 <= start < end <= {size})"
    return None
