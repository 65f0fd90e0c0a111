"""The report's "Where the cuts fall": the best and the runner-up on a few questions where they
differ, each one's retrieved chunks drawn over the evidence, and the lists of those questions.

It only renders: the chunks it draws are the hits the sweep kept (SweepResult.hits), so writing a
report never loads a model or an index.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import TYPE_CHECKING

from workbench.chunkers import where
from workbench.dataset import Dataset, Question, Span
from workbench.figures.viewer import around, chunk_html, span_chunks

if TYPE_CHECKING:
    from workbench.results.result import SweepResult
    from workbench.results.verdict import Verdict

CUT_QUESTIONS = 3  # questions drawn in "Where the cuts fall"
WORD_REACH = 40  # a passage end moves at most this far to reach a word boundary (a URL or a hash may have none)
_HEAD = '<section id="cuts"><h2>Where the cuts fall</h2>\n'


def missing(result: SweepResult, v: Verdict | None, dataset: Dataset | None) -> str:
    """Why the cuts cannot be drawn, or "" when they can."""
    if v is None or v.runner_up is None:
        return "it needs two variants scored on recall."
    if result.preview:
        return "this is a preview: its chunks were never embedded for real; a real sweep of the best shows their cuts."
    if dataset is None:
        return ("the report was written without the dataset (pass dataset= to report.export or write_report; "
                "the CLI does).")
    if not result.provenance.about(dataset):
        return f"the dataset given ({dataset.name}) is not the one this result was measured on."
    if not {v.best, v.runner_up} <= set(result.hits["key"].unique()):
        return "the result holds no retrieved chunks of these variants (it was measured before results kept them)."
    return ""


def left_out(why: str) -> str:
    """The section saying why it has no cuts (see `missing`)."""
    return f'{_HEAD}<p class="note">Left out: {html.escape(why)}</p></section>\n'


def section(result: SweepResult, v: Verdict, dataset: Dataset) -> str:
    """The section for the verdict's best and runner-up, from their kept hits."""
    assert v.runner_up is not None
    depth = v.k or result.default_k  # a verdict at a context budget: the chunks of the default cut-off
    kept = result.hits[result.hits["key"].isin([v.best, v.runner_up]) & (result.hits["rank"] <= depth)]
    spans: dict[tuple[str, str], list[Span]] = {}
    for r in kept.sort_values("rank", kind="stable").itertuples(index=False):
        spans.setdefault((r.key, r.qid), []).append(Span(r.doc_id, int(r.start), int(r.end)))
    pq = result.per_question
    at = v.at.rows(pq).pivot(index="qid", columns="key", values="value")
    diff = (at[v.best] - at[v.runner_up]).sort_values(kind="stable")
    wins, losses = diff[diff > 0].index[::-1], diff[diff < 0].index
    picked = [*wins[: CUT_QUESTIONS - min(1, len(losses))],
              *losses[: CUT_QUESTIONS - min(len(wins), CUT_QUESTIONS - 1)]]
    names = {key: result.label_of(key) for key in (v.best, v.runner_up)}
    order = {q.qid: i for i, q in enumerate(dataset.questions)}
    out = [_HEAD, f"<p>The best (the highest mean), <b>{html.escape(names[v.best])}</b>, and the runner-up, "
           f"<b>{html.escape(names[v.runner_up])}</b>, on questions where their {v.at.label} differs. Each "
           f"variant's top {depth} chunks are coloured over the passage around the evidence (underlined in red): "
           "evidence left uncoloured is evidence it did not retrieve.</p>\n"]
    for qid in picked:
        q = dataset.questions[order[qid]]
        scores = ", ".join(f"{html.escape(names[key])}: {at.at[qid, key]:.2f}" for key in names)
        out.append(f'<div class="cut"><h3>{html.escape(q.question)}</h3>\n<p class="note">{html.escape(qid)}, '
                   f"{v.at.label}: {scores}</p>\n"
                   + "".join(_retrieved(dataset, names[key], spans.get((key, qid), []), q) for key in names)
                   + "</div>\n")
    for key, ids in ((v.best, wins), (v.runner_up, losses)):
        other = names[v.runner_up if key == v.best else v.best]
        rows = "".join(f'<tr><td>{html.escape(i)}</td><td class="text">'
                       f"{html.escape(dataset.questions[order[i]].question)}</td><td>{at.at[i, key]:.2f}</td>"
                       f"<td>{at.at[i, v.runner_up if key == v.best else v.best]:.2f}</td></tr>\n" for i in ids)
        out.append(f"<details><summary>{len(ids)} questions where {html.escape(names[key])} retrieves more evidence "
                   f"than {html.escape(other)}, the largest difference first</summary>\n"
                   '<div class="scroll"><table>\n<tr><th>question id</th>'
                   f"<th>question</th><th>{html.escape(names[key])}</th><th>{html.escape(other)}</th></tr>\n{rows}"
                   "</table></div></details>\n")
    return "".join(out) + "</section>\n"


def _passages(dataset: Dataset, evidence: Sequence[Span], chars: int = 300) -> list[tuple[str, int, int]]:
    """One passage per document holding evidence: the evidence with about `chars` around it, its
    ends moved to the nearest word boundary (`_word_start`, `_word_end`), never into the evidence."""
    bounds: dict[str, tuple[int, int, int, int]] = {}  # doc -> passage start, end, evidence start, end
    for span in evidence:
        doc, start, end = around(span, chars)
        lo, hi, first, last = bounds.get(doc, (start, end, span.start, span.end))
        bounds[doc] = (min(lo, start), min(max(hi, end), len(dataset.docs[doc].text)), min(first, span.start),
                       max(last, span.end))
    return [(doc, _word_start(dataset.docs[doc].text, lo, first), _word_end(dataset.docs[doc].text, hi, last))
            for doc, (lo, hi, first, last) in bounds.items()]


def _word_start(text: str, i: int, limit: int, reach: int = WORD_REACH) -> int:
    """`i` moved back to the start of its word (at most `reach` characters), else forward past it,
    then past any blank (never beyond `limit`, where the evidence starts): a window cut mid-word
    reads as a typo."""
    if 0 < i < len(text) and not text[i - 1].isspace() and not text[i].isspace():
        back = next((j for j in range(i - 1, max(0, i - reach) - 1, -1) if j == 0 or text[j - 1].isspace()), None)
        i = back if back is not None else next((j for j in range(i + 1, limit + 1) if text[j - 1].isspace()), i)
    while i < limit and text[i].isspace():
        i += 1
    return i


def _word_end(text: str, i: int, limit: int, reach: int = WORD_REACH) -> int:
    """`i` moved forward to the end of its word (at most `reach` characters), else back before it,
    then back before any blank (never below `limit`, where the evidence ends)."""
    if 0 < i < len(text) and not text[i - 1].isspace() and not text[i].isspace():
        ahead = next((j for j in range(i + 1, min(len(text), i + reach) + 1) if j == len(text) or text[j].isspace()),
                     None)
        i = ahead if ahead is not None else next((j for j in range(i - 1, limit - 1, -1) if text[j].isspace()), i)
    while i > limit and text[i - 1].isspace():
        i -= 1
    return i


def _overlap(a: Span, b: Span) -> bool:
    return a.doc_id == b.doc_id and a.start < b.end and b.start < a.end


def _retrieved(dataset: Dataset, label: str, spans: Sequence[Span], question: Question) -> str:
    """What one variant retrieved for a question: its top spans listed with where each is (`where`), and
    drawn over the evidence's passages (only retrieved chunks are coloured, so uncoloured evidence is what
    it missed)."""
    k = len(spans)
    chunks = span_chunks(dataset, spans)
    ranks = "; ".join(f"{i}. {where(dataset.docs[c.doc_id], c)} [{c.start}, {c.end})"
                      + (" (evidence)" if any(_overlap(c.span, e) for e in question.answers) else "")
                      for i, c in enumerate(chunks, 1))
    drawn = "".join(chunk_html(dataset, chunks, doc, lo, hi, question.answers, ellipsis=True)
                    for doc, lo, hi in _passages(dataset, question.answers))
    return f"<h4>{html.escape(label)}</h4>\n<p class=\"note\">top {k}: {html.escape(ranks)}</p>\n{drawn}\n"
