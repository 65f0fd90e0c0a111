"""The labeller's state, apart from drawing (no ipywidgets here, so it is tested alone): the documents
to browse and search, the labels and the one being written, undo, and questions.jsonl written whole.

Offsets are Python code points throughout. The browser reports a selection with the text it saw;
`evidence_from` refuses a selection whose text is not `doc.text[start:end]` (a UTF-16 slip in the
front end), so what is stored is always an exact span with its quote.
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from workbench.chunkers import ChunkEnv
from workbench.core.chunk import Chunk
from workbench.core.io import write_text
from workbench.dataset import Dataset, DatasetError, Document, answer_problem, drop_empty
from workbench.figures.viewer import pieces
from workbench.ingest.folder import read_folder
from workbench.ingest.jsonl import RawAnswer, question_fields, read_corpus, read_jsonl
from workbench.ingest.jsonl import field as json_field
from workbench.ingest.report import Skip, report
from workbench.models.embed import Embedder
from workbench.variant import Variant, parse_variant

UNDO_DEPTH = 100  # actions `undo` can take back, newest first


@dataclass(frozen=True, slots=True)
class Evidence:
    """One answer span with its quote (`quote == doc.text[start:end]`, checked when made)."""

    doc_id: str
    start: int
    end: int
    quote: str

    def json(self) -> dict[str, Any]:
        return {"doc_id": self.doc_id, "start": self.start, "end": self.end, "quote": self.quote}


Answer = Evidence | Mapping[str, Any]  # placed evidence, or an answer kept as written (a quote without offsets)


def _json(answer: Answer) -> dict[str, Any]:
    return answer.json() if isinstance(answer, Evidence) else dict(answer)


@dataclass(frozen=True)
class Label:
    """A question and its evidence. A label read from the file and never edited is written back as it
    was read (`raw`), fields the labeller does not know included; an edited one keeps those fields
    (`extra`) and the answers it cannot place (`kept`: quotes without offsets, for `labels resolve`).
    With `alternatives` (as Question has them), any one of its alternatives answers the question;
    `answers` and `kept` are the first."""

    qid: str
    question: str
    answers: tuple[Evidence, ...]
    kept: tuple[Mapping[str, Any], ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)
    raw: Mapping[str, Any] | None = None
    alternatives: tuple[tuple[Answer, ...], ...] = ()  # the others, each as read or drawn

    @property
    def any_of(self) -> tuple[tuple[Answer, ...], ...]:
        """Every alternative, the first (`answers`, then `kept`) first."""
        return ((*self.answers, *self.kept), *self.alternatives)

    @property
    def evidence(self) -> tuple[Evidence, ...]:
        """The placed evidence of every alternative: what the document view marks."""
        return tuple(a for alt in self.any_of for a in alt if isinstance(a, Evidence))

    def json(self) -> dict[str, Any]:
        if self.raw is not None:
            return dict(self.raw)
        any_of = [[_json(a) for a in alt] for alt in self.any_of]
        evidence = {"answers": any_of[0]} if len(any_of) == 1 else {"alternatives": any_of}
        return {"qid": self.qid, "question": self.question, **evidence, **self.extra}


@dataclass(frozen=True)
class Draft:
    """The label being written: `qid` of the one being edited, None for a new one; `evidence` the
    alternative being drawn, with the answers of it the labeller cannot place (`kept`); `alternatives`
    those drawn before it (`LabelerState.add_alternative`)."""

    qid: str | None = None
    question: str = ""
    evidence: tuple[Evidence, ...] = ()
    kept: tuple[Mapping[str, Any], ...] = ()
    alternatives: tuple[tuple[Answer, ...], ...] = ()

    @property
    def any_of(self) -> tuple[tuple[Answer, ...], ...]:
        """Every non-empty alternative, the one being drawn last: what `commit` writes."""
        return tuple(alt for alt in (*self.alternatives, (*self.evidence, *self.kept)) if alt)


@dataclass(frozen=True, slots=True)
class Piece:
    """A run of the shown document that is marked alike: the chunks holding it, whether it is evidence
    of the draft, the questions it is evidence of, whether it is the current search match."""

    start: int
    end: int
    chunks: tuple[int, ...]
    draft: bool
    labels: tuple[str, ...]
    match: bool


def load_documents(source: Dataset | str | Path, questions: str | Path | None = None) -> tuple[list[Document], Path]:
    """The documents to label and the questions file to write: a Dataset's documents (then `questions` is
    required), or a folder read as `load_dataset` reads one (questions default: its questions.jsonl),
    which may have no questions yet."""
    if isinstance(source, Dataset):
        if questions is None:
            raise ValueError("Labeler: parameter 'questions' is required with a Dataset: the questions.jsonl to write")
        return list(source.documents), Path(questions)
    root = Path(source)
    if not root.is_dir():
        raise DatasetError(root, None, None, "is not a folder (a Dataset, or a folder of documents or corpus.jsonl)")
    qpath = Path(questions) if questions is not None else root / "questions.jsonl"
    if (root / "corpus.jsonl").exists():
        return drop_empty(read_corpus(root / "corpus.jsonl"), "skip", root / "corpus.jsonl"), qpath
    loaded, skips = read_folder(root, {qpath.absolute(), (root / "questions.jsonl").absolute()})
    docs = [x.doc for x in loaded if x.doc.text.strip()]
    report(root, docs, skips + [Skip(x.doc.doc_id, "empty", "") for x in loaded if not x.doc.text.strip()], False)
    return docs, qpath


def read_labels(path: Path, docs: Mapping[str, Document]) -> list[Label]:
    """The questions of an existing file, in any shape load_dataset reads (`question_fields`), every span
    checked against `docs` (errors name line and field); answers without offsets are kept as written."""
    labels: list[Label] = []
    seen: dict[str, int] = {}
    for n, obj in read_jsonl(path):
        line = question_fields(obj, path, n, seen)
        any_of = tuple(tuple(_read_answer(raw, docs, path, n) for raw in alt) for alt in line.any_of)
        first = any_of[0]
        extra = {k: v for k, v in obj.items() if k not in line.fields}
        labels.append(Label(line.qid, line.question, tuple(a for a in first if isinstance(a, Evidence)),
                            tuple(a for a in first if not isinstance(a, Evidence)), extra, obj, any_of[1:]))
    return labels


def _read_answer(raw: RawAnswer, docs: Mapping[str, Document], path: Path, line: int) -> Answer:
    """One answer: its evidence when it has offsets that hold its quote, else (a quote alone) as written."""
    a = raw.value
    if not isinstance(a, dict):
        raise DatasetError(path, line, raw.at, f"must be an object with doc_id, start, end; got {a!r:.40}")
    if "start" not in a and "end" not in a and isinstance(a.get("quote"), str):
        return a
    doc_id = json_field(a, "doc_id", str, path, line, at=raw.at + ".")
    start = json_field(a, "start", int, path, line, at=raw.at + ".")
    end = json_field(a, "end", int, path, line, at=raw.at + ".")
    broken = answer_problem(docs, {}, doc_id, start, end)
    if broken is None and isinstance(a.get("quote"), str) and docs[doc_id].text[start:end] != a["quote"]:
        broken = ".quote", f"does not match the document text at [{start}, {end})"
    if broken is not None:
        raise DatasetError(path, line, raw.name(broken[0].lstrip(".")), broken[1])
    return Evidence(doc_id, start, end, docs[doc_id].text[start:end])


class LabelerState:
    """Documents, labels, the draft, the search and the undo history of one labelling session.

    Every change to the labels is saved at once (`autosave`), atomically: a crash leaves the file as it
    was before the last action or after it, never half written.
    """

    def __init__(self, documents: Sequence[Document], path: str | Path, embedder: Embedder | None = None,
                 autosave: bool = True, undo_depth: int = UNDO_DEPTH):
        if not documents:
            raise ValueError("Labeler: no documents to label")
        if undo_depth < 1:
            raise ValueError(f"Labeler: parameter 'undo_depth' must be >= 1, got {undo_depth}")
        self.docs = {d.doc_id: d for d in documents}
        self.path = Path(path)
        self.labels: tuple[Label, ...] = tuple(read_labels(self.path, self.docs)) if self.path.exists() else ()
        self.draft = Draft()
        self.doc_id = documents[0].doc_id
        self.autosave = autosave
        self.env = ChunkEnv() if embedder is None else ChunkEnv(embed=lambda t: embedder.encode(t, desc="sentences"),
                                                                  model_tokenizer=embedder.tokenizer)
        self.matches: list[Evidence] = []
        self.match_at = -1
        self._history: deque[tuple[tuple[Label, ...], Draft, str]] = deque(maxlen=undo_depth)
        self._chunks: dict[tuple[str, str], list[Chunk]] = {}

    @classmethod
    def open(cls, source: Dataset | str | Path, questions: str | Path | None = None, **kwargs: Any) -> LabelerState:
        docs, path = load_documents(source, questions)
        return cls(docs, path, **kwargs)

    @property
    def doc(self) -> Document:
        return self.docs[self.doc_id]

    # ------------------------------------------------------------------------------ browsing

    def documents(self, filter: str = "") -> list[Document]:
        """The documents whose id or title holds `filter` (any case), in corpus order."""
        f = filter.strip().casefold()
        return [d for d in self.docs.values() if f in d.doc_id.casefold() or f in d.title.casefold()]

    def select(self, doc_id: str) -> None:
        if doc_id not in self.docs:
            raise KeyError(f"doc_id {doc_id!r} is not among the {len(self.docs)} documents")
        self.doc_id = doc_id

    def search(self, query: str) -> list[Evidence]:
        """Every occurrence of `query` (any case) in every document; the next `next_match` is the first."""
        if not query.strip():
            raise ValueError("search: type some text to find")
        pattern = re.compile(re.escape(query), re.IGNORECASE)
        self.matches = [Evidence(d.doc_id, m.start(), m.end(), m.group()) for d in self.docs.values()
                        for m in pattern.finditer(d.text)]
        self.match_at = -1
        return self.matches

    def next_match(self, step: int = 1) -> Evidence:
        """Go to the next (step -1: previous) match of the last search, cycling; its document is selected."""
        if not self.matches:
            raise ValueError("search: no matches to go to")
        self.match_at = (self.match_at + step) % len(self.matches)
        match = self.matches[self.match_at]
        self.doc_id = match.doc_id
        return match

    def chunks(self, variant: Variant | str) -> list[Chunk]:
        """The shown document's chunks by `variant` (a Variant or its text, "fixed:size=256"), made once."""
        v = parse_variant(variant) if isinstance(variant, str) else variant
        key = (v.chunking_key, self.doc_id)
        if key not in self._chunks:
            self._chunks[key] = v.chunk(Dataset("labeler", (self.doc,), ()), self.env)
        return self._chunks[key]

    def pieces(self, chunks: Sequence[Chunk] = ()) -> list[Piece]:
        """The shown document cut wherever a chunk, a piece of evidence or the current match begins or ends."""
        doc = self.doc
        mine = [(i, c) for i, c in enumerate(chunks) if c.doc_id == doc.doc_id]
        draft = [e for alt in self.draft.any_of for e in alt if isinstance(e, Evidence) and e.doc_id == doc.doc_id]
        labelled = [(lab.qid, e) for lab in self.labels for e in lab.evidence if e.doc_id == doc.doc_id]
        match = self.matches[self.match_at] if self.match_at >= 0 else None
        marks = [*draft, *(e for _, e in labelled), *([match] if match and match.doc_id == doc.doc_id else [])]
        out = []
        for a, b, holders in pieces(mine, 0, len(doc.text), [x for e in marks for x in (e.start, e.end)]):
            def inside(e: Evidence) -> bool:
                return e.start <= a and b <= e.end
            out.append(Piece(a, b, tuple(holders), any(map(inside, draft)),
                             tuple(dict.fromkeys(q for q, e in labelled if inside(e))),
                             match is not None and match.doc_id == doc.doc_id and inside(match)))
        return out

    # ------------------------------------------------------------------------------ the draft

    def evidence_from(self, start: int, end: int, seen: str | None = None, doc_id: str | None = None) -> Evidence:
        """Evidence [start, end) of `doc_id` (default: the shown document), its edge whitespace trimmed.
        `seen` is the text the page showed selected: it must be the document's text there."""
        doc = self.docs[doc_id or self.doc_id]
        if not (isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= len(doc.text)):
            raise ValueError(f"selection [{start}, {end}) is empty or out of range for {doc.doc_id!r} "
                             f"(0 <= start < end <= {len(doc.text)})")
        text = doc.text[start:end]
        if seen is not None and seen != text:
            raise ValueError(f"selection [{start}, {end}) reads {text[:40]!r} in {doc.doc_id!r} but {seen[:40]!r} "
                             "on the page: the offsets do not match the text, nothing was added")
        if not text.strip():
            raise ValueError(f"selection [{start}, {end}) is only whitespace")
        start += len(text) - len(text.lstrip())
        end -= len(text) - len(text.rstrip())
        return Evidence(doc.doc_id, start, end, doc.text[start:end])

    def add_evidence(self, evidence: Evidence) -> None:
        """Add a span to the draft (several per question, from any document); overlaps are refused."""
        doc = self.docs.get(evidence.doc_id)
        if doc is None or doc.text[evidence.start:evidence.end] != evidence.quote:
            raise ValueError(f"evidence {evidence.quote[:40]!r} is not the text of {evidence.doc_id!r} at "
                             f"[{evidence.start}, {evidence.end})")
        for i, e in enumerate(self.draft.evidence, 1):
            if e.doc_id == evidence.doc_id and e.start < evidence.end and evidence.start < e.end:
                raise ValueError(f"[{evidence.start}, {evidence.end}) overlaps evidence {i} [{e.start}, {e.end}) "
                                 "of this question: remove that one first")
        self._change(f"add evidence [{evidence.start}, {evidence.end})",
                     draft=replace(self.draft, evidence=(*self.draft.evidence, evidence)))

    def add_alternative(self) -> None:
        """Close the alternative being drawn and start another: evidence added next is a second place that
        answers the question (the code that sets a default, and the page that documents it); any one
        found counts. A label with one alternative is written as `answers`, with several as `alternatives`."""
        d = self.draft
        if not d.evidence and not d.kept:
            raise ValueError("add the evidence of this alternative first: an alternative needs at least one span")
        self._change(f"alternative {len(d.alternatives) + 2}",
                     draft=replace(d, alternatives=(*d.alternatives, (*d.evidence, *d.kept)), evidence=(), kept=()))

    def remove_alternative(self, index: int) -> None:
        """Drop alternative `index` of those drawn before the current one (0 is the first)."""
        alts = self.draft.alternatives
        if not 0 <= index < len(alts):
            raise IndexError(f"remove_alternative: parameter 'index' must be in [0, {len(alts)}), got {index}")
        self._change(f"remove alternative {index + 1}", draft=replace(self.draft, alternatives=alts[:index]
                                                                       + alts[index + 1:]))

    def remove_evidence(self, index: int) -> None:
        ev = self.draft.evidence
        if not 0 <= index < len(ev):
            raise IndexError(f"remove_evidence: parameter 'index' must be in [0, {len(ev)}), got {index}")
        self._change(f"remove evidence [{ev[index].start}, {ev[index].end})",
                     draft=replace(self.draft, evidence=ev[:index] + ev[index + 1:]))

    def new(self) -> None:
        """Start a new label (the draft is dropped; undo brings it back)."""
        self._change("new label", draft=Draft())

    def edit(self, qid: str) -> Draft:
        """Load label `qid` into the draft, its last alternative the one being drawn; `commit` replaces it."""
        label = self.label(qid)
        *before, last = label.any_of
        self._change(f"edit {qid}", draft=Draft(qid, label.question, tuple(a for a in last if isinstance(a, Evidence)),
                                                tuple(a for a in last if not isinstance(a, Evidence)), tuple(before)))
        return self.draft

    def label(self, qid: str) -> Label:
        found = next((lab for lab in self.labels if lab.qid == qid), None)
        if found is None:
            raise KeyError(f"no label with qid {qid!r}")
        return found

    # ------------------------------------------------------------------------------ labels

    def type_question(self, text: str) -> None:
        """The draft's question as typed (not an action of its own: undo keeps what was typed with the draft)."""
        self.draft = replace(self.draft, question=text)

    def commit(self, question: str | None = None) -> Label:
        """The draft (its question replaced by `question` if given) as a label: it replaces the one being
        edited, or is added with a new qid."""
        question = self.draft.question if question is None else question
        if not question.strip():
            raise ValueError("type the question first")
        any_of = self.draft.any_of
        if not any(isinstance(a, Evidence) for alt in any_of for a in alt):
            raise ValueError("select the evidence in the document and add it first")
        qid = self.draft.qid or self.next_qid()
        old = next((lab for lab in self.labels if lab.qid == qid), None)
        first = any_of[0]
        label = Label(qid, question.strip(), tuple(a for a in first if isinstance(a, Evidence)),
                      tuple(a for a in first if not isinstance(a, Evidence)), old.extra if old else {},
                      alternatives=any_of[1:])
        labels = (tuple(label if lab.qid == qid else lab for lab in self.labels) if old
                  else (*self.labels, label))
        self._change(f"{'update' if old else 'add'} {qid}", labels=labels, draft=Draft())
        return label

    def delete(self, qid: str) -> None:
        self.label(qid)
        draft = Draft() if self.draft.qid == qid else self.draft
        self._change(f"delete {qid}", labels=tuple(lab for lab in self.labels if lab.qid != qid), draft=draft)

    def next_qid(self) -> str:
        taken = {lab.qid for lab in self.labels}
        n = len(taken) + 1
        while f"q{n}" in taken:
            n += 1
        return f"q{n}"

    def undo(self) -> str:
        """Take back the last action (up to `undo_depth` of them); returns what was undone."""
        if not self._history:
            raise ValueError("nothing to undo")
        labels, draft, what = self._history[-1]
        if labels != self.labels and self.autosave:
            self.save(labels)  # first: a failed write undoes nothing
        self._history.pop()
        self.labels, self.draft = labels, draft
        return what

    @property
    def can_undo(self) -> bool:
        return bool(self._history)

    def _change(self, what: str, labels: tuple[Label, ...] | None = None, draft: Draft | None = None) -> None:
        """Record an action for undo and apply it; new labels are saved first, so a failed write changes nothing."""
        if labels is not None and labels != self.labels and self.autosave:
            self.save(labels)
        self._history.append((self.labels, self.draft, what))
        self.labels = self.labels if labels is None else labels
        self.draft = self.draft if draft is None else draft

    def save(self, labels: Sequence[Label] | None = None) -> Path:
        """Write every label (default: the current ones) to `path` at once: a temporary file beside it,
        renamed over it."""
        lines = "".join(json.dumps(lab.json(), ensure_ascii=False) + "\n"
                        for lab in (self.labels if labels is None else labels))
        return write_text(self.path, lines)
