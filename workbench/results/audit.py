"""The chunk audit: what each variant's chunks do to the text, found from the chunks alone, before
any of them is scored.

Why: a chunker can fail silently in ways no retrieval score names: text in no chunk, chunks longer
than the model reads, fragments of a few tokens, a heading alone, one text twice, sentences,
functions, code blocks and table rows torn apart. Each check is one small function of a document's
chunks (`Cuts`) and of what the document holds (`Structure`, found once for every variant);
`audit_chunks` runs them all on one chunking, `row` and `table` make the tidy table (one row per
variant, a column per check of CHECKS) and `warnings` says, one sentence each, where a check is past
its threshold, naming the worst examples (document id and character offsets).

A unit (a sentence, a function, a code block) counts as cut only when a chunk over part of it is at
least FIT times as long as it: that chunk could have held it whole, whatever unit the chunker
measures its size in. A unit longer than the chunks has to be cut, and is no defect.
"""

from __future__ import annotations

import heapq
import json
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import accumulate
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from workbench.chunkers.code import definition_spans
from workbench.chunkers.markdown import line_offset, parse_blocks
from workbench.chunkers.sentence import sentence_spans
from workbench.chunkers.tables import Table, tables_and_code
from workbench.core.chunk import Bounds, Chunk, strip_span
from workbench.core.io import write_text
from workbench.core.tokens import TiktokenTokenizer
from workbench.dataset import Dataset, Document, Span
from workbench.results.verdict import TRUNCATED_SHARE
from workbench.variant import Variant

# Bump when a check counts otherwise: it names the audit's cache entries (Session.audit).
AUDIT_VERSION = 1
EXAMPLES = 3  # worst examples a finding keeps, and a warning names
FRAGMENT_TOKENS = 5  # a chunk of fewer cl100k_base tokens is a fragment (unless it is its whole document)
FIT = 2  # a unit counts as cut when a chunk over part of it is at least this many times as long


@dataclass(frozen=True)
class Check:
    """A column of the audit: `says` words a warning ({n} of {of}, {share}: what the check found),
    `limit` the share (n / of) past which it warns (None: never), `share`: the column holds n / of
    (else n)."""

    says: str
    limit: float | None
    share: bool = False


# Every check, in the table's order, with its threshold: the one place they are set.
CHECKS = {
    "dropped_share": Check("{share} of the documents' text is in no chunk ({n:,} of {of:,} non-space characters)",
                           0.0, share=True),
    "overlap_share": Check("{share} of the documents' text is in more than one chunk ({n:,} of {of:,} non-space "
                           "characters)", 0.5, share=True),
    "truncated": Check("{n:,} of its {of:,} chunks ({share}) are longer than the model's window, their tails never "
                       "embedded", TRUNCATED_SHARE),
    "fragments": Check(f"{{n:,}} of its {{of:,}} chunks ({{share}}) are fragments under {FRAGMENT_TOKENS} tokens",
                       0.05),
    "cut_sentences": Check("{n:,} of its {of:,} chunk ends ({share}) fall mid-sentence", None, share=True),
    "split_code_units": Check("{n:,} of {of:,} functions and classes ({share}) are split across chunks", 0.25),
    "split_table_rows": Check("{n:,} of {of:,} table rows ({share}) are in a chunk without their table's header row",
                              0.0),
    "split_code_blocks": Check("{n:,} of {of:,} code blocks ({share}) are split across chunks", 0.25),
    "heading_only": Check("{n:,} of its {of:,} chunks ({share}) hold only a heading", 0.01),
    "duplicates": Check("{n:,} of its {of:,} chunks ({share}) repeat another chunk's exact text", 0.05),
}


@dataclass(frozen=True)
class Finding:
    """What one check found: `n` defects among `of` (characters, chunks, chunk ends, units) and the
    worst of them, as (how bad, where), worst first."""

    n: int
    of: int
    worst: tuple[tuple[float, Span], ...] = ()

    @property
    def share(self) -> float:
        return self.n / self.of if self.of else 0.0

    @property
    def examples(self) -> tuple[Span, ...]:
        return tuple(span for _, span in self.worst)

    def __add__(self, other: Finding) -> Finding:
        return found(self.n + other.n, self.of + other.of, self.worst + other.worst)


def found(n: int, of: int, candidates: Iterable[tuple[float, Span]]) -> Finding:
    """A Finding keeping the EXAMPLES worst candidates (the first of equals)."""
    return Finding(n, of, tuple(heapq.nlargest(EXAMPLES, candidates, key=lambda c: c[0])))


@dataclass(frozen=True)
class Audit:
    """One chunking's findings by check (the keys of CHECKS), and its number of chunks."""

    chunks: int
    findings: dict[str, Finding]


@dataclass(frozen=True)
class Structure:
    """What the checks read of a document, found once for every variant: its sentences (lines, then
    punkt), and source code's definitions or else Markdown's code blocks, tables and heading lines,
    each a span trimmed of white space."""

    sentences: list[Bounds]
    code_units: list[Bounds]
    code_blocks: list[Bounds]
    tables: list[Table]
    headings: list[Bounds]


def structure(doc: Document) -> Structure:
    """The document's Structure: source code (a `language`) is read by its grammar, any other text as
    Markdown, as the `code` and `table` strategies read them."""
    text = doc.text
    if doc.language:
        return Structure(sentence_spans(text), definition_spans(doc), [], [], [])
    tables, code = tables_and_code(text)
    tokens, lines = parse_blocks(text)
    heads = [strip_span(text, line_offset(lines, t.map[0]), line_offset(lines, t.map[1]))
             for t in tokens if t.type == "heading_open" and t.map]
    blocks = [strip_span(text, s, e) for s, e in code]
    return Structure(sentence_spans(text), [], [b for b in blocks if b], tables, [h for h in heads if h])


class Cuts:
    """One document's chunks sorted by start, and what the checks ask of them."""

    def __init__(self, doc: Document, chunks: Sequence[Chunk]):
        self.doc = doc
        self.chunks = sorted(chunks, key=lambda c: (c.start, c.end))
        self.starts = [c.start for c in self.chunks]
        self.reach = list(accumulate((c.end for c in self.chunks), max))  # the furthest end so far
        self.longest = max((c.end - c.start for c in self.chunks), default=0)

    def over(self, start: int, end: int) -> list[Chunk]:
        """The chunks holding some of [start, end)."""
        lo, hi = bisect_left(self.starts, start - self.longest + 1), bisect_left(self.starts, end)
        return [c for c in self.chunks[lo:hi] if c.end > start]

    def holds(self, start: int, end: int) -> bool:
        """Whether one chunk holds all of [start, end)."""
        i = bisect_right(self.starts, start) - 1
        return i >= 0 and self.reach[i] >= end

    def cuts(self, start: int, end: int) -> bool:
        """Whether the unit [start, end) is in no chunk whole though a chunk over part of it is FIT
        times as long (see the module docstring)."""
        return not self.holds(start, end) and any(c.end - c.start >= FIT * (end - start) for c in self.over(start, end))

    def span(self, bounds: Bounds) -> Span:
        return Span(self.doc.doc_id, *bounds)

    @cached_property
    def depth(self) -> np.ndarray:
        """How many chunks hold each character."""
        steps = np.zeros(len(self.doc.text) + 1, dtype=np.int32)
        np.add.at(steps, [c.start for c in self.chunks], 1)
        np.add.at(steps, [c.end for c in self.chunks], -1)
        return np.cumsum(steps[:-1])

    @cached_property
    def solid(self) -> np.ndarray:
        """Whether each character is other than white space (str.isspace)."""
        codes = np.frombuffer(self.doc.text.encode("utf-32-le"), dtype=np.uint32)
        return ~np.isin(codes, _SPACES)


_SPACES = np.array([c for c in range(0x3001) if chr(c).isspace()], dtype=np.uint32)  # U+3000 is the last


def _runs(mask: np.ndarray) -> list[Bounds]:
    """The [start, end) runs where `mask` is true."""
    edges = np.flatnonzero(np.diff(np.concatenate(([0], mask.view(np.int8), [0]))))
    return list(zip(edges[::2].tolist(), edges[1::2].tolist(), strict=True))


def dropped(cuts: Cuts) -> Finding:
    """Non-space characters in no chunk, among the document's; worst: the longest gaps."""
    gap = cuts.depth == 0
    lost = gap & cuts.solid
    runs = (strip_span(cuts.doc.text, s, e) for s, e in _runs(gap))
    return found(int(lost.sum()), int(cuts.solid.sum()),
                 ((float(lost[r[0] : r[1]].sum()), cuts.span(r)) for r in runs if r))


def overlap(cuts: Cuts) -> Finding:
    """Non-space characters in more than one chunk, among the document's; worst: the longest stretches."""
    shared = cuts.depth > 1
    runs = (strip_span(cuts.doc.text, s, e) for s, e in _runs(shared))
    return found(int((shared & cuts.solid).sum()), int(cuts.solid.sum()),
                 ((float(r[1] - r[0]), cuts.span(r)) for r in runs if r))


def fragments(cuts: Cuts) -> Finding:
    """Chunks under FRAGMENT_TOKENS cl100k_base tokens, unless one is all the document holds; worst: the fewest."""
    whole = strip_span(cuts.doc.text, 0, len(cuts.doc.text))
    tokens = TiktokenTokenizer("cl100k_base").count_many([c.text for c in cuts.chunks])
    small = [(-float(n), cuts.span((c.start, c.end))) for c, n in zip(cuts.chunks, tokens, strict=True)
             if n < FRAGMENT_TOKENS and (c.start, c.end) != whole]
    return found(len(small), len(cuts.chunks), small)


def cut_sentences(cuts: Cuts, sentences: Sequence[Bounds]) -> Finding:
    """Chunk ends inside a sentence the chunk is FIT times as long as, among the chunk ends before the
    document's last sentence ends; worst: the cuts deepest inside their sentence."""
    starts, last = [s for s, _ in sentences], sentences[-1][1] if sentences else 0
    inner = [c for c in cuts.chunks if c.end < last]
    cut = []
    for c in inner:
        i = bisect_left(starts, c.end) - 1
        if i >= 0 and sentences[i][1] > c.end and FIT * (sentences[i][1] - sentences[i][0]) <= c.end - c.start:
            s, e = sentences[i]
            cut.append((float(min(c.end - s, e - c.end)), cuts.span((s, e))))
    return found(len(cut), len(inner), cut)


def split_units(cuts: Cuts, units: Sequence[Bounds]) -> Finding:
    """Units (functions and classes, or code blocks) that `cuts` cuts (Cuts.cuts); worst: the shortest."""
    cut = [(-float(e - s), cuts.span((s, e))) for s, e in units if cuts.cuts(s, e)]
    return found(len(cut), len(units), cut)


def split_table_rows(cuts: Cuts, tables: Sequence[Table]) -> Finding:
    """Rows of tables with a header row that sit in a chunk whose embedded text (its text, or its
    embed_text) lacks that header; worst: the first."""
    rows, torn = 0, []
    for table in tables:
        header = table.header
        if header is None:
            continue
        for bounds in table.rows[1:]:
            row = strip_span(cuts.doc.text, *bounds)
            if row is None:
                continue
            rows += 1
            if any(header not in (c.text if c.embed_text is None else c.embed_text) for c in cuts.over(*row)):
                torn.append((0.0, cuts.span(row)))
    return found(len(torn), rows, torn)


def heading_only(cuts: Cuts, headings: Sequence[Bounds]) -> Finding:
    """Chunks whose text is heading lines and nothing else, unless one is all the document holds;
    worst: the longest."""
    text, whole = cuts.doc.text, strip_span(cuts.doc.text, 0, len(cuts.doc.text))
    ends = [e for _, e in headings]
    bare = []
    for c in cuts.chunks:
        pos, heads = c.start, 0
        for s, e in headings[bisect_right(ends, c.start) :]:
            if s >= c.end or text[pos:s].strip():
                break
            pos, heads = max(pos, e), heads + 1
        if heads and not text[pos : c.end].strip() and (c.start, c.end) != whole:
            bare.append((float(c.end - c.start), cuts.span((c.start, c.end))))
    return found(len(bare), len(cuts.chunks), bare)


def truncated(chunks: Sequence[Chunk], over: Sequence[bool]) -> Finding:
    """Chunks whose embedded text is over the model's window (`over`, Embedder.truncated); worst: the longest."""
    long = [(float(c.end - c.start), c.span) for c, o in zip(chunks, over, strict=True) if o]
    return found(len(long), len(chunks), long)


def duplicates(chunks: Sequence[Chunk]) -> Finding:
    """Chunks whose exact text an earlier chunk has; worst: the longest."""
    seen: set[str] = set()
    again = []
    for c in chunks:
        if c.text in seen:
            again.append((float(len(c.text)), c.span))
        seen.add(c.text)
    return found(len(again), len(chunks), again)


def audit_chunks(dataset: Dataset, chunks: Sequence[Chunk], over: Sequence[bool],
                 structures: dict[str, Structure]) -> Audit:
    """Every check on one chunking of `dataset`; `over`: which chunks the model truncates; `structures`:
    the documents' Structure by doc id, filled here for those missing (pass one dict for every variant)."""
    by_doc: dict[str, list[Chunk]] = {}
    for c in chunks:
        by_doc.setdefault(c.doc_id, []).append(c)
    total = {name: Finding(0, 0) for name in CHECKS}
    for doc in dataset.documents:
        cuts = Cuts(doc, by_doc.get(doc.doc_id, []))
        if doc.doc_id not in structures:
            structures[doc.doc_id] = structure(doc)
        s = structures[doc.doc_id]
        here = {"dropped_share": dropped(cuts), "overlap_share": overlap(cuts), "fragments": fragments(cuts),
                "cut_sentences": cut_sentences(cuts, s.sentences), "split_code_units": split_units(cuts, s.code_units),
                "split_table_rows": split_table_rows(cuts, s.tables),
                "split_code_blocks": split_units(cuts, s.code_blocks), "heading_only": heading_only(cuts, s.headings)}
        total = {name: total[name] + here[name] if name in here else total[name] for name in CHECKS}
    total |= {"truncated": truncated(chunks, over), "duplicates": duplicates(chunks)}
    return Audit(len(chunks), total)


def row(variant: Variant, audit: Audit, key: str | None = None) -> dict[str, Any]:
    """The variant's row: key (the result's key of the variant with the model audited, default the
    variant's), label, chunks, a value per check (its share, or its count) and the findings.
    Truncation counts only for a variant that ranks by vectors and not with +late (BM25 reads a whole
    chunk; late chunking pools windows of the whole document)."""
    findings = dict(audit.findings)
    if variant.late or not variant.embeds:
        findings["truncated"] = Finding(0, audit.chunks)
    values = {name: f.share if CHECKS[name].share else f.n for name, f in findings.items()}
    return {"key": key or variant.key, "label": variant.label, "chunks": audit.chunks, **values, "findings": findings}


def table(rows: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """The audit table: one row per variant, in order (`row`)."""
    return pd.DataFrame(list(rows), columns=["key", "label", "chunks", *CHECKS, "findings"])


def past(name: str, finding: Finding) -> bool:
    """Whether check `name` found more than its threshold (CHECKS) allows: a warning."""
    limit = CHECKS[name].limit
    return limit is not None and finding.share > limit


def warning(label: str, name: str, finding: Finding) -> str:
    """The sentence of a check past its threshold: the variant, the check, the count, the worst examples."""
    said = CHECKS[name].says.format(n=finding.n, of=finding.of, share=f"{finding.share:.1%}")
    worst = ", ".join(f"{s.doc_id} [{s.start}, {s.end})" for s in finding.examples)
    return f"Warning: {label} ({name}): {said}; worst: {worst}."


def warnings(audit: pd.DataFrame) -> list[str]:
    """Every warning of an audit table, by variant then check."""
    return [warning(r.label, name, f) for r in audit.itertuples(index=False) for name, f in r.findings.items()
            if past(name, f)]


def cache_file(root: Path, entry: str) -> Path:
    """Where the audit of the chunking whose index entry is named `entry` (IndexStore.path) is kept."""
    return root / "audit" / f"{entry}-a{AUDIT_VERSION}.json"


def save(path: Path, audit: Audit) -> None:
    findings = {name: {"n": f.n, "of": f.of, "worst": [[w, s.doc_id, s.start, s.end] for w, s in f.worst]}
                for name, f in audit.findings.items()}
    write_text(path, json.dumps({"chunks": audit.chunks, "findings": findings}))


def load(path: Path) -> Audit | None:
    """The audit kept at `path`, or None when there is none."""
    if not path.exists():
        return None
    kept = json.loads(path.read_text(encoding="utf-8"))
    return Audit(kept["chunks"], {name: Finding(f["n"], f["of"], tuple((w, Span(d, s, e)) for w, d, s, e in f["worst"]))
                                  for name, f in kept["findings"].items()})
