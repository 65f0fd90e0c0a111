"""One question under the microscope: what each retrieved span was, and why the evidence was missed.

Averages say *that* a variant loses; this says *why*, one question at a time: the top-k table
with each hit's overlap with the evidence, and a one-line diagnosis of the miss.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from workbench.chunkers import where
from workbench.core.chunk import make_chunk
from workbench.dataset import Dataset, Hit, Question
from workbench.evaluation.evidence import by_doc, clip, overlap, total

COLUMNS = ["rank", "score", "doc_id", "where", "start", "end", "tokens", "touches_evidence", "covered_chars", "text"]


def _preview(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def drilldown(dataset: Dataset, question: Question, ranked: Sequence[Hit], k: int, preview: int = 120) -> pd.DataFrame:
    """The top-k hits, one row each: rank, score, doc_id, where (path, pages, heading path or enclosing
    function, see `where`), start, end, tokens (cl100k_base), touches_evidence, covered_chars (evidence
    characters inside this hit, counted even if an earlier hit already covered them) and a
    whitespace-collapsed text preview."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    ev = by_doc(question.answers)
    rows = []
    for rank, hit in enumerate(ranked[:k], 1):
        s = hit.span
        covered = total(clip(ev.get(s.doc_id, []), s.start, s.end))
        doc = dataset.docs[s.doc_id]
        chunk = make_chunk(doc, s.start, s.end)
        tokens = hit.tokens.get("cl100k_base")
        rows.append((rank, hit.score, s.doc_id, where(doc, chunk), s.start, s.end, tokens,
                     covered > 0, covered, _preview(chunk.text, preview)))
    return pd.DataFrame(rows, columns=COLUMNS)


def miss_reason(question: Question, ranked: Sequence[Hit], k: int) -> str:
    """A one-line diagnosis of the top k, from worst to best:

    - "nothing retrieved"
    - "evidence in another document not retrieved" (no top-k hit is in an evidence document)
    - "retrieved the right document but not the span" (with the distance of the nearest hit)
    - "partial coverage" (with the share of evidence characters retrieved)
    - "complete" (every evidence character is in some top-k hit)
    """
    top = list(ranked[:k])
    if not top:
        return "nothing retrieved"
    ev = by_doc(question.answers)
    same_doc = [h.span for h in top if h.span.doc_id in ev]
    if not same_doc:
        return f"evidence in another document not retrieved: all {len(top)} hits are from other documents"
    got = by_doc(h.span for h in top)
    covered = sum(overlap(ev[d], got[d]) for d in ev if d in got)
    if covered == 0:
        gap = min(max(a - s.end, s.start - b) for s in same_doc for a, b in ev[s.doc_id])
        return (
            f"retrieved the right document but not the span: {len(same_doc)} hit(s) in the evidence document, "
            f"nearest {gap} chars away"
        )
    need = sum(total(v) for v in ev.values())
    if covered < need:
        return f"partial coverage: {covered} of {need} evidence chars ({covered / need:.0%})"
    return "complete"
