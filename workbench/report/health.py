"""The report's "Chunk health": the chunk audit of its variants (workbench.results.audit), a row per
variant with each value past its check's threshold flagged, then every warning with its worst examples
quoted from the documents.

It only renders the audit table it is given (Session.audit's; the CLI's sweep makes one, a notebook
passes `audit=` to report.export), so writing a report never chunks; without one, the section says
how to get it.
"""

from __future__ import annotations

import html

import pandas as pd

from workbench.dataset import Dataset, Document, Span
from workbench.report.html import STAR, _headline, _marked, _rows
from workbench.results.audit import CHECKS, Finding, past, warning
from workbench.results.label_free import MEASURES, TRUST

QUOTED = 160  # characters of an example quoted, the rest elided
_HEAD = '<section id="chunk-health"><h2>Chunk health</h2>\n'


def section(audit: pd.DataFrame | None, dataset: Dataset | None, best: str | None = None) -> str:
    """The section for `audit` (one row per variant: workbench.results.audit.table); `dataset`, when
    given, quotes each example's text; `best`, the headline's result key, has its row starred as in
    every table."""
    if audit is None:
        return (f'{_HEAD}<p class="note">Left out: no chunk audit was given. The CLI\'s sweep audits its '
                "variants; in Python pass <code>audit=session.audit(variants)</code> to report.export, or run "
                "<code>python -m workbench audit DATA</code>.</p></section>\n")
    measures = [m for m in MEASURES if m in audit.columns]
    head = "".join(f"<th>{html.escape(c).replace('_', '_<wbr>')}</th>"
                   for c in ["variant", "chunks", *CHECKS, *measures])
    rows = "".join(f"<tr{_marked(0, r['key'] == best)}><td class=\"label\">{STAR * (r['key'] == best)}{n}.&nbsp;"
                   f"{html.escape(r['label'])}</td><td>{r['chunks']:,}</td>"
                   + "".join(_cell(name, f) for name, f in r["findings"].items())
                   + "".join(f"<td>{r[m]:+.3f}</td>" for m in measures) + "</tr>\n"
                   for n, r in enumerate(audit.to_dict("records"), 1))
    trust = (f"<p>The last columns need no questions (<code>--label-free</code>; docs/metrics.md): higher is "
             f"better. {html.escape(TRUST[0].upper() + TRUST[1:])}.</p>\n" if measures else "")
    starred = _headline(best) if best in set(audit["key"]) else ""
    docs = dataset.docs if dataset is not None else {}
    said = "".join(_warning(r.label, name, f, docs) for r in audit.itertuples(index=False)
                   for name, f in r.findings.items() if past(name, f))
    return (f"{_HEAD}<p>What each variant's chunks do to the text, found from the chunks alone before any "
            "question is asked (<code>python -m workbench audit</code>; every check is defined in docs/metrics.md): "
            "the share of the documents' non-space text in no chunk and in more than one, chunks longer than the "
            "model's window, fragments, chunk ends mid-sentence, functions and classes, table rows and code blocks "
            "torn apart, chunks holding only a heading, exact duplicates. A value past its check's threshold is "
            "flagged \u26a0 and warned below, with its worst examples by document and character offsets; how the "
            'best two variants cut the evidence of a few questions is drawn in <a href="#cuts">Where the cuts '
            f'fall</a>.</p>\n{_rows(f"Every variant audited ({len(audit)}), in sweep order{starred}.")}'
            f'<div class="scroll"><table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{rows}'
            f"</tbody></table></div>\n{trust}{said}</section>\n")


def _cell(name: str, finding: Finding) -> str:
    """A check's value (a share, or a count), flagged past its threshold with what that is."""
    check = CHECKS[name]
    value = f"{finding.share:.1%}" if check.share else f"{finding.n:,}"
    if not past(name, finding):
        return f"<td>{value}</td>"
    return f'<td class="flag" title="past its threshold, {check.limit:.0%}">{value} \u26a0</td>'


def _warning(label: str, name: str, finding: Finding, docs: dict[str, Document]) -> str:
    """One warning as a box, its worst examples listed under it, quoted from `docs` when they hold them."""
    head, body = (html.escape(part) for part in warning(label, name, finding).split(": ", 1))
    quoted = "".join(f"<li>{html.escape(s.doc_id)} [{s.start}, {s.end}){_quote(s, docs)}</li>"
                     for s in finding.examples)
    return (f'<div class="warning" role="alert"><b>{head}:</b> {body}\n<details style="overflow-wrap: anywhere">'
            f"<summary>the worst examples</summary><ul>{quoted}</ul></details></div>\n")


def _quote(span: Span, docs: dict[str, Document]) -> str:
    """': <q>its text</q>' (the first QUOTED characters), or "" when `docs` do not hold it."""
    doc = docs.get(span.doc_id)
    if doc is None or span.end > len(doc.text):
        return ""
    text = doc.text[span.start : span.end]
    shown = text if len(text) <= QUOTED else text[:QUOTED] + "\u2026"
    return f": <q>{html.escape(shown)}</q>"
