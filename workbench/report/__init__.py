"""A sweep as one self-contained HTML file: figures, score tables, index cost and provenance.

The file must open offline, years later, on any machine: figures are embedded PNGs (never widget
JavaScript, never a CDN), styles are inline, and every piece of text is escaped, since variant
labels and dataset names come from users. The file is streamed into a temporary file and renamed
over the target, so a failure half-way (a figure that cannot render, a full disk) leaves the
previous report untouched.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import math
import sys
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import matplotlib
import pandas as pd
from matplotlib.colors import to_hex
from matplotlib.figure import Figure

from workbench import plots
from workbench.chunkers import Chunk
from workbench.dataset import MIXED, Dataset, Hit, Question, Span
from workbench.evaluation import metrics, stats
from workbench.io import atomic_write, source_fingerprint
from workbench.models.base import model_fingerprint
from workbench.models.embed import Embedder, default_model_path
from workbench.retrieval.index import IndexStore
from workbench.sweep import rankings
from workbench.variant import short_value
from workbench.verdict import Verdict, verdict
from workbench.viewer import around, chunk_html

if TYPE_CHECKING:
    from workbench.sweep import SweepResult

METRIC_ORDER = (*metrics.METRICS, metrics.OMEGA)
EXTRA_FIGURES = ("hit", "ndcg", "iou", "precision_omega")  # drawn by default next to the overview
COMPACT = ("recall", "hit", "mrr", "ndcg", metrics.OMEGA, "context_tokens")  # the scores table, at the verdict's k
FIGURE_WIDTH = 12.0  # inches: every default figure has this width, so all show at one size
CUT_QUESTIONS = 3  # questions drawn in "Where the cuts fall"
DASH = "\u2014"  # a parameter the variant's strategy does not have

_CSS = """
body { font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 1200px; padding: 0 1em; color: #222;
       line-height: 1.4; }
h1 { font-size: 1.5em; } h2 { font-size: 1.25em; margin-top: 2em; border-bottom: 1px solid #ccc; }
p.preview { background: #fff4e0; border-left: 4px solid #e08a00; padding: .5em .8em; }
h3 { font-size: 1.05em; margin: 1.2em 0 0.3em; }
figure { margin: 1em 0 2em; } figure img { width: 100%; height: auto; display: block; }
figcaption { color: #444; margin-top: 0.3em; }
.scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0; }
th, td { border: 1px solid #ddd; padding: 0.25em 0.5em; text-align: right; white-space: nowrap; vertical-align: top; }
th { background: #f4f4f4; } .variants td:nth-child(-n+3) { text-align: left; } tbody th, td:first-child, td.text { text-align: left; }
td.text { white-space: normal; min-width: 12em; }
.swatch { display: inline-block; width: 0.9em; height: 0.9em; margin-right: 0.4em; vertical-align: -0.1em; }
.provenance th { text-align: left; } .provenance td { text-align: left; white-space: normal; overflow-wrap: anywhere; }
.cut { border-left: 3px solid #ccc; padding-left: 0.8em; margin: 1em 0; overflow-wrap: anywhere; }
.note { color: #555; }
pre { background: #f8f8f8; padding: 0.5em; white-space: pre-wrap; overflow-wrap: anywhere; }
details { margin: 0.5em 0; } summary { cursor: pointer; color: #1d4ed8; }
@media print {
  body { max-width: none; margin: 0; }
  section + section { break-before: page; }
  figure, .cut, tr { break-inside: avoid; }
  th, td { white-space: normal; }
}
"""


def _ordered_metrics(present: set[str]) -> list[str]:
    return [m for m in METRIC_ORDER if m in present] + sorted(present - set(METRIC_ORDER))


def _cell(mean: float, lo: float, hi: float, digits: int) -> str:
    """'0.62 [0.57, 0.67]'; the mean alone when there is no interval (e.g. a single question)."""
    if pd.isna(lo) or pd.isna(hi):
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def summary_table(result: SweepResult) -> pd.DataFrame:
    """One row per variant (sweep order); columns (metric, @k) holding 'mean [ci_low, ci_high]'."""
    s = result.summary
    return _by_metric_and_k(result, s, [_cell(m, lo, hi, 0 if met.startswith("context_tokens") else 2)
                                        for m, lo, hi, met in zip(s["mean"], s["ci_low"], s["ci_high"], s["metric"],
                                                                  strict=True)])


def p_best_table(result: SweepResult, ranked: pd.DataFrame | None = None) -> pd.DataFrame:
    """summary_table's layout holding P(best) (stats.with_prob_best; fewer context tokens is better).
    `ranked`: that summary with its p_best column, when already computed."""
    s = stats.with_prob_best(result.summary, result.per_question) if ranked is None else ranked
    return _by_metric_and_k(result, s, [f"{p:.2f}" for p in s["p_best"]])


def _by_metric_and_k(result: SweepResult, s: pd.DataFrame, cell: list[str]) -> pd.DataFrame:
    """One cell per summary row of `s`, pivoted to one row per variant, columns (metric, @k)."""
    budget = s["budget"] if "budget" in s.columns else pd.Series(0, index=s.index)
    cells = s.assign(cell=cell, at=[f"@{k}" if k > 0 else f"{b} tokens" if b > 0 else "any k"
                                    for k, b in zip(s["k"], budget, strict=True)])
    table = cells.pivot(index="variant", columns=["metric", "at"], values="cell")
    columns = [(m, at) for m in _ordered_metrics(set(s["metric"]))
               for at in sorted({a for mm, a in table.columns if mm == m}, key=_k_order)]
    order = [v for v in result.labels if v in table.index]
    return table.loc[order, columns].rename_axis(index=None, columns=["metric", "k"])


def _k_order(at: str) -> tuple[int, int]:
    """'any k' first, then '@k' by k, then 'B tokens' by budget."""
    if at.startswith("@"):
        return 1, int(at[1:])
    return (2, int(at.split()[0])) if at.endswith(" tokens") else (0, 0)


# --- figures ----------------------------------------------------------------------------------------

_CURVES = {  # metric -> (title, what to look for)
    "hit": ("Share of questions with some evidence in the top k",
            "Curves that reach the top at small k answer more questions with fewer chunks."),
    "ndcg": ("How high the evidence ranks (nDCG@k)",
             "A curve above another at small k puts the evidence nearer the top of the list."),
    "iou": ("How much of what is retrieved is evidence (IoU@k)",
            "It falls as k grows, since more text comes back; higher means less noise sent to the LLM."),
    metrics.OMEGA: ("Precision if exactly the evidence's chunks were retrieved (precision-\u03a9)",
                    "Low bars mean the chunks holding the answer carry much other text: smaller chunks score higher."),
}


def describe_figure(result: SweepResult, name: str) -> tuple[str, str]:
    """The title and the one-line caption (what to look for) of a figure of `default_figures`;
    a figure of another name is titled by its name."""
    k = metrics.default_k(result.ks)
    if name == "overview":
        return ("Recall, ranking and cost at a glance",
                f"Left: recall@k, higher is better. Middle: MRR@{k}, best on top. Right: context tokens against "
                f"recall@{k}, up and to the left is better; circled: the Pareto front. "
                "Numbers: the variant table above.")
    if name in _CURVES:
        return _CURVES[name]
    if name.startswith("by_"):
        param = name[3:]
        return (f"Recall, MRR and context cost against {param}",
                f"Look for the {param} where recall levels off while context tokens keep rising; the band is the "
                "confidence interval, one line per combination of what else varies.")
    if name.startswith("heatmap_"):
        return (f"recall@{k} over two parameters",
                "Brighter cells score higher; \u00b1 is half the interval, so cells closer than that are not told apart.")
    return name, ""


def _fit(fig: Figure) -> Figure:
    """The report's figure width, keeping the height the plot chose for its content."""
    fig.set_size_inches(FIGURE_WIDTH, fig.get_size_inches()[1])
    return fig


def _figure(result: SweepResult, name: str, fig: Figure | bytes, dpi: int) -> str:
    png = fig if isinstance(fig, bytes) else plots.figure_to_png_bytes(fig, dpi)
    data = base64.b64encode(png).decode("ascii")
    title, caption = (html.escape(t) for t in describe_figure(result, name))
    return (f'<figure id="figure-{html.escape(name)}"><h3>{title}</h3><img src="data:image/png;base64,{data}" '
            f'alt="{title}"><figcaption>{caption}</figcaption></figure>\n')


def _legend_table(result: SweepResult) -> str:
    """The figures' legend: each variant's number and colour next to its full label."""
    colors = plots.variant_colors(result.keys)
    rows = "".join(f'<tr><td>{n}</td><td class="text"><span class="swatch" style="background:{to_hex(colors[key])}">'
                   f"</span>{html.escape(result.label_of(key))}</td></tr>\n" for n, key in enumerate(result.keys, 1))
    return f'<div class="scroll"><table>\n<tr><th>#</th><th>variant</th></tr>\n{rows}</table></div>\n'


# --- tables -----------------------------------------------------------------------------------------


def compact_table(result: SweepResult, k: int, metric: str = "recall",
                  ranked: pd.DataFrame | None = None) -> pd.DataFrame:
    """The metrics a reader compares first (COMPACT, those the result holds), at one k, one row
    per variant in sweep order, 'mean [ci_low, ci_high]' cells, and after `metric`@k the
    bootstrap probability that each variant has the best `metric`@k (stats.prob_best; taken
    from `ranked`, the summary with its p_best column, when already computed)."""
    s = result.summary
    names = [m for m in COMPACT if m in set(s["metric"])]
    rows = s[s["metric"].isin(names) & s["k"].isin([k, metrics.OMEGA_K]) & (s.get("budget", 0) == 0)]
    cells = rows.assign(
        cell=[_cell(m, lo, hi, 0 if met.startswith("context_tokens") else 2)
              for m, lo, hi, met in zip(rows["mean"], rows["ci_low"], rows["ci_high"], rows["metric"], strict=True)],
        column=[f"{m}@{kk}" if kk else m for m, kk in zip(rows["metric"], rows["k"], strict=True)],
    )
    table = cells.pivot(index="variant", columns="column", values="cell")
    columns = [c for m in names for c in (f"{m}@{k}", m) if c in table.columns]
    table = table.loc[[v for v in result.labels if v in table.index], columns].rename_axis(index=None, columns=None)
    if f"{metric}@{k}" in table.columns:
        if ranked is None:
            p = stats.prob_best(result.per_question, metric, k).rename(index=result.label_of)
        else:
            at = ranked[(ranked["metric"] == metric) & (ranked["k"] == k) & (ranked.get("budget", 0) == 0)]
            p = at.set_index("variant")["p_best"]
        table.insert(table.columns.get_loc(f"{metric}@{k}") + 1, "P(best)", [f"{p[v]:.2f}" for v in table.index])
    return table


def _param_text(value: Any) -> str:
    """A parameter as the user wrote it: 128 not 128.0, separators as their JSON strings, a dash
    where the strategy has no such parameter."""
    if isinstance(value, (list, tuple)):
        return json.dumps(list(value), ensure_ascii=False) if value else "none"
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return DASH
    if isinstance(value, bool):
        return "yes" if value else "no"
    return short_value(value)


def _cost_text(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return _param_text(value)
    if isinstance(value, float) and math.isnan(value):
        return DASH
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.1f}"


def variants_table(result: SweepResult) -> pd.DataFrame:
    """The variants table with its columns grouped: identity, parameters (from the grid), index
    cost, and the cache key last."""
    v = result.variants
    identity = [c for c in ("variant", "strategy", "contextual_header", "late", "retriever") if c in v]
    params = [p for p in result.grid_params if p not in identity]  # retriever is a grid parameter too
    rest = [c for c in v if c not in {*identity, *params, "key"}]
    return v[identity + params + rest + (["key"] if "key" in v else [])]


def _variants_html(result: SweepResult) -> str:
    """variants_table as text the way the user wrote it (see _param_text), numbered like the figures."""
    table = variants_table(result)
    params = set(result.grid_params) | {"strategy", "retriever", "contextual_header", "late", "variant", "key"}
    shown = pd.DataFrame({c: [(_param_text if c in params else _cost_text)(x) for x in table[c]] for c in table})
    shown.insert(0, "#", [str(i) for i in range(1, len(shown) + 1)])
    return '<div class="scroll">' + shown.to_html(index=False, escape=True, classes="variants") + "</div>\n"


def _table(frame: pd.DataFrame, index: bool = True) -> str:
    return '<div class="scroll">' + frame.to_html(index=index, escape=True) + "</div>\n"


# --- sections ---------------------------------------------------------------------------------------


def _value(v: Any) -> str:
    text = v if isinstance(v, str) else json.dumps(v, default=str)
    return html.escape(text)


def reproduce_code(config: Mapping[str, Any]) -> str:
    """Python that sweeps the same grid again (for a run that did not come from the CLI)."""
    lines = ["import workbench as wb", "", f"dataset = wb.load_dataset({str(config.get('dataset', '?'))!r})"
             "  # the folder this dataset was loaded from", "variants = ["]
    for g in config.get("grid", []):
        args = [repr(g["strategy"]), *(f"{p}={v!r}" for p, v in g.get("params", {}).items()),
                *(f"{m}=True" for m in ("contextual_header", "late") if g.get(m))]
        lines.append(f"    wb.Variant.make({', '.join(args)}),")
    backend = config.get("backend", "torch")
    model = str(config.get("model_fingerprint", "")).removesuffix(f"-{backend}")
    custom = model not in ("", model_fingerprint(default_model_path()))
    args = [repr(str(config.get("model")))] * custom + [f"backend={backend!r}"] * (backend != "torch")
    embedder = f", embedder=wb.Embedder({', '.join(args)})" if args else ""
    lines += ["]", f"result = wb.sweep(dataset, variants, ks={list(config.get('ks', metrics.DEFAULT_KS))}, "
              f"mode={config.get('mode', 'corpus')!r}{embedder})" + ("  # the model's folder" if custom else ""),
              'wb.report.export(result, "results/mine")']
    return "\n".join(lines)


def _provenance(config: Mapping[str, Any]) -> str:
    """How it was made, collapsed: every config field, versions as one line, and how to run it again."""
    rows = "".join(f"<tr><th>{html.escape(str(k))}</th><td>{_value(v)}</td></tr>\n"
                   for k, v in config.items() if k not in ("grid", "versions", "command"))
    versions = ", ".join(f"{name} {version}" for name, version in config.get("versions", {}).items())
    rows += f"<tr><th>versions</th><td>{html.escape(versions)}</td></tr>\n"
    if config.get("command"):
        again = f"<p>The command that made it:</p>\n<pre>{html.escape(str(config['command']))}</pre>\n"
    else:
        again = f"<p>Code that makes it again:</p>\n<pre>{html.escape(reproduce_code(config))}</pre>\n"
    return ('<section id="provenance"><h2>How it was made</h2>\n<details><summary>Dataset, model, fingerprints, '
            f'versions, date and how to run it again</summary>\n<table class="provenance">\n{rows}</table>\n{again}'
            "</details></section>\n")


def _verdict(v: Verdict) -> str:
    """The computed verdict first: its sentences, each linked to the section that backs it, and
    a small table of the best, the tied and the Pareto variants."""
    links = ("#scores", "#against-best", "#variants")
    text = " ".join(f'{html.escape(s)} <a href="{link}">evidence</a>' for s, link in zip(v.sentences(), links))
    shown = v.table[(v.table["key"] == v.best) | v.table["tied"] | v.table["pareto"]]
    rows = "".join(
        f"<tr><td>{html.escape(str(r.variant))}</td><td>{_cell(r.mean, r.ci_low, r.ci_high, 3)}</td><td>{r.p_best:.2f}</td>"
        f"<td>{'best' if r.key == v.best else 'tied' if r.tied else 'worse'}</td>"
        f"<td>{r.context_tokens:,.0f}</td><td>{r.chunks:,.0f}</td><td>{'yes' if r.pareto else ''}</td></tr>\n"
        for r in shown.itertuples(index=False))
    at = f"{v.metric}@{v.k}"
    return (f'<section id="verdict"><h2>Verdict</h2>\n<p>{text}</p>\n<div class="scroll"><table>\n<tr><th>variant</th>'
            f"<th>{at}</th><th>P(best)</th><th>against the best</th><th>context tokens@{v.k}</th><th>chunks</th>"
            f"<th>Pareto (cost vs {at})</th></tr>\n{rows}</table></div></section>\n")


def _against_best(v: Verdict) -> str:
    """Every variant paired against the best on the verdict's metric and k."""
    if v.runner_up is None:
        return ""
    at = f"{v.metric}@{v.k}"
    columns = ["variant", "mean", "diff", "diff_low", "diff_high", "p_value", "p_holm", "questions_needed"]
    shown = v.table[v.table["key"] != v.best][columns].rename(
        columns={"mean": at, "diff": "difference", "diff_low": "low", "diff_high": "high", "p_value": "p",
                 "p_holm": "p (Holm)", "questions_needed": "questions needed"})
    shown["questions needed"] = [DASH if math.isinf(n) else f"{n:,.0f}" for n in shown["questions needed"]]
    return (f'<section id="against-best"><h2>Against the best variant</h2>\n<p>Each variant minus '
            f"<b>{html.escape(str(v.row(v.best)['variant']))}</b> on {at}, paired over the same questions: BCa "
            "bootstrap interval of the difference and the p-value of a sign-flip permutation test. p (Holm) applies "
            f"Holm's correction for the {len(shown)} comparisons with the best: a difference is significant at 0.05 "
            "counting every comparison when it is at most 0.05. Questions needed: about how many questions would make "
            f"the difference significant at 0.05 with 80% power, from the spread of its per-question differences "
            f"({DASH}: equal means).</p>\n"
            '<div class="scroll">' + shown.to_html(index=False, float_format=lambda x: f"{x:.3f}", escape=True)
            + "</div></section>\n")


def _scores(result: SweepResult, k: int) -> str:
    confidence = result.config.get("confidence", 0.95)
    ranked = stats.with_prob_best(result.summary, result.per_question)  # once, for both tables
    return (f'<section id="scores"><h2>Scores</h2>\n<p>Mean [{confidence:.0%} confidence interval] over questions at '
            f"k = {k}; context tokens are cl100k tokens handed to the LLM. P(best): the share of bootstrap resamples "
            "of the questions (the same questions for every variant) in which the variant has the best mean."
            f"</p>\n{_table(compact_table(result, k, ranked=ranked))}"
            f"<details><summary>Every metric at every k</summary>\n{_table(summary_table(result))}</details>"
            "<details><summary>P(best) of every metric at every k (fewer context tokens is better)</summary>\n"
            f"{_table(p_best_table(result, ranked))}</details></section>\n")


MAX_GROUPS = 12  # "By corpus" draws at most this many groups (a dataset split by prefix may have one per document)


def _by_corpus(result: SweepResult, dataset: Dataset | None, k: int, dpi: int, metric: str = "recall") -> str:
    """Each group's best variant on `metric`@k with its interval, and the per-group figure, when
    the dataset has 2 to MAX_GROUPS groups of questions (Dataset.groups_of_questions); "" else."""
    if dataset is None or metric not in set(result.summary["metric"]):
        return ""
    if dataset.fingerprint != result.config.get("dataset_fingerprint", dataset.fingerprint):
        return (f'<section id="by-corpus"><h2>By corpus</h2>\n<p>Left out: the dataset given ({html.escape(dataset.name)}) '
                "is not the one this result was measured on.</p></section>\n")
    groups = dataset.groups_of_questions()
    if not 2 <= len(set(groups.values())) <= MAX_GROUPS:
        return ""
    table = result.by_group(groups)
    table = table[(table["metric"] == metric) & (table["k"] == k) & (table.get("budget", 0) == 0)]
    best = plots.best_by_group(table, metric)
    rows = "".join(f"<tr><td>{html.escape(r.group)}</td><td>{r.n}</td><td>{html.escape(str(r.variant))}</td>"
                   f"<td>{_cell(r.mean, r.ci_low, r.ci_high, 3)}</td></tr>\n" for r in best.itertuples(index=False))
    fig = _fit(plots.by_group(result, groups, metric, k, table=table))
    png = base64.b64encode(plots.figure_to_png_bytes(fig, dpi)).decode("ascii")
    return (f'<section id="by-corpus"><h2>By corpus</h2>\n<p>The questions split by the group of their evidence '
            'documents (their <code>group</code> field, else the doc id up to its first "/"; evidence in two '
            f"groups: {MIXED}), each group summarised on its own questions: the best chunking can differ by kind of text, and a "
            f"group's interval is wider than the whole's.</p>\n<div class=\"scroll\"><table>\n<tr><th>group</th>"
            f"<th>questions</th><th>best variant</th><th>{metric}@{k}</th></tr>\n{rows}</table></div>\n"
            f'<figure id="figure-by-group"><img src="data:image/png;base64,{png}" alt="{metric}@{k} by group">'
            f"<figcaption>One panel per group, best on top and outlined; numbers: the variant table above."
            f"</figcaption></figure></section>\n")


Wanted = tuple[Dataset, IndexStore | str | Path, Embedder | None]


def _passages(dataset: Dataset, evidence: Sequence[Span], chars: int = 300) -> list[tuple[str, int, int]]:
    """One passage per document holding evidence: the evidence with `chars` around it."""
    bounds: dict[str, tuple[int, int]] = {}
    for span in evidence:
        doc, start, end = around(span, chars)
        lo, hi = bounds.get(doc, (start, end))
        bounds[doc] = (min(lo, start), min(max(hi, end), len(dataset.docs[doc].text)))
    return [(doc, lo, hi) for doc, (lo, hi) in bounds.items()]


def _overlap(a: Span, b: Span) -> bool:
    return a.doc_id == b.doc_id and a.start < b.end and b.start < a.end


def _retrieved(dataset: Dataset, label: str, hits: Sequence[Hit], question: Question, k: int) -> str:
    """What one variant retrieved for a question: its top k listed, and drawn over the evidence's
    passages (only retrieved chunks are coloured, so uncoloured evidence is what it missed)."""
    chunks = [Chunk(h.span.doc_id, h.span.start, h.span.end, dataset.docs[h.span.doc_id].text[h.span.start:h.span.end])
              for h in hits[:k]]
    ranks = "; ".join(f"{i}. {h.span.doc_id} [{h.span.start}, {h.span.end})"
                      + (" (evidence)" if any(_overlap(h.span, e) for e in question.answers) else "")
                      for i, h in enumerate(hits[:k], 1))
    drawn = "".join(chunk_html(dataset, chunks, doc, lo, hi, question.answers) for doc, lo, hi in _passages(dataset, question.answers))
    return f"<h4>{html.escape(label)}</h4>\n<p class=\"note\">top {k}: {html.escape(ranks)}</p>\n{drawn}\n"


def _cuts(result: SweepResult, v: Verdict | None, wanted: Wanted | None) -> str:
    """Where the best and the runner-up differ: a few questions drawn, and the lists."""
    head = '<section id="cuts"><h2>Where the cuts fall</h2>\n'
    why = _cuts_missing(result, v, wanted)
    if why:
        return f'{head}<p class="note">Left out: {html.escape(why)}</p></section>\n'
    assert v is not None and v.runner_up is not None and wanted is not None
    dataset, store, embedder = wanted
    pq = result.per_question
    at = pq[(pq["metric"] == v.metric) & (pq["k"] == v.k)].pivot(index="qid", columns="key", values="value")
    diff = (at[v.best] - at[v.runner_up]).sort_values(kind="stable")
    wins, losses = diff[diff > 0].index[::-1], diff[diff < 0].index
    picked = [*wins[: CUT_QUESTIONS - min(1, len(losses))], *losses[: CUT_QUESTIONS - min(len(wins), CUT_QUESTIONS - 1)]]
    names = {key: result.label_of(key) for key in (v.best, v.runner_up)}
    hits = {key: rankings(dataset, result.variant(key), v.k, embedder, store, result.config.get("mode", "corpus"))
            for key in names}
    order = {q.qid: i for i, q in enumerate(dataset.questions)}
    out = [head, f"<p>The best, <b>{html.escape(names[v.best])}</b>, and the runner-up, <b>{html.escape(names[v.runner_up])}"
           f"</b>, on questions where their {v.metric}@{v.k} differs. Each variant's top {v.k} chunks are coloured over "
           "the passage around the evidence (underlined in red): evidence left uncoloured is evidence it did not "
           "retrieve.</p>\n"]
    for qid in picked:
        q = dataset.questions[order[qid]]
        scores = ", ".join(f"{html.escape(names[key])}: {at.at[qid, key]:.2f}" for key in names)
        out.append(f'<div class="cut"><h3>{html.escape(q.question)}</h3>\n<p class="note">{html.escape(qid)}, '
                   f"{v.metric}@{v.k}: {scores}</p>\n"
                   + "".join(_retrieved(dataset, names[key], hits[key][order[qid]], q, v.k) for key in names) + "</div>\n")
    for key, ids in ((v.best, wins), (v.runner_up, losses)):
        other = names[v.runner_up if key == v.best else v.best]
        rows = "".join(f'<tr><td>{html.escape(i)}</td><td class="text">{html.escape(dataset.questions[order[i]].question)}'
                       f"</td><td>{at.at[i, key]:.2f}</td><td>{at.at[i, v.runner_up if key == v.best else v.best]:.2f}"
                       "</td></tr>\n" for i in ids)
        out.append(f"<details><summary>{len(ids)} questions where {html.escape(names[key])} retrieves more evidence than "
                   f"{html.escape(other)}</summary>\n<div class=\"scroll\"><table>\n<tr><th>question id</th><th>question"
                   f"</th><th>{html.escape(names[key])}</th><th>{html.escape(other)}</th></tr>\n{rows}</table></div>"
                   "</details>\n")
    return "".join(out) + "</section>\n"


def _cuts_missing(result: SweepResult, v: Verdict | None, wanted: Wanted | None) -> str:
    """Why the cuts cannot be drawn, or "" when they can."""
    if v is None or v.runner_up is None:
        return "it needs two variants scored on recall."
    if result.config.get("preview"):
        return "this is a preview: its chunks were never embedded for real; a real sweep of the best shows their cuts."
    if wanted is None:
        return ("the report was written without the dataset and the index store (pass dataset= and store= to "
                "report.export or write_report; the CLI does).")
    dataset = wanted[0]
    if dataset.fingerprint != result.config.get("dataset_fingerprint"):
        return f"the dataset given ({dataset.name}) is not the one this result was measured on."
    embedder = wanted[2]
    if embedder is not None and embedder.fingerprint != result.config.get("model_fingerprint"):
        return f"the embedder given ({embedder.name}) is not the model this result was measured with."
    return ""


def _write(out: IO[str], result: SweepResult, figures: Mapping[str, Figure | bytes], title: str, dpi: int,
           wanted: Wanted | None, dataset: Dataset | None = None) -> None:
    c = result.config
    head = (f"dataset <b>{_value(c.get('dataset', '?'))}</b> ({_value(c.get('questions', '?'))} questions), "
            f"model <b>{_value(c.get('model', '?'))}</b>, mode {_value(c.get('mode', '?'))}, "
            f"{_value(c.get('date', ''))}")
    out.write(f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
              '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
              f"<title>{html.escape(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
              f"<h1>{html.escape(title)}</h1>\n<p>{head}</p>\n")
    if c.get("preview"):
        out.write('<p class="preview"><b>Preview.</b> Every chunk vector here was pooled from one model pass over '
                  "the corpus (workbench.retrieval.preview), not embedded: the ranking is an estimate. Confirm the best "
                  "variants with a real sweep before choosing.</p>\n")
    v = verdict(result) if "recall" in set(result.summary["metric"]) else None
    if v is not None:
        out.write(_verdict(v))
    if figures:
        out.write(f'<section id="figures"><h2>Figures</h2>\n<p>Variants are numbered in the figures:</p>\n'
                  f"{_legend_table(result)}")
        for name, fig in figures.items():
            out.write(_figure(result, name, fig, dpi))
        out.write("</section>\n")
    out.write(_scores(result, v.k if v is not None else metrics.default_k(result.ks)))
    if v is not None:
        out.write(_against_best(v))
    out.write(_by_corpus(result, dataset, v.k if v is not None else metrics.default_k(result.ks), dpi))
    out.write(_cuts(result, v, wanted))
    out.write(f'<section id="variants"><h2>Variants and index cost</h2>\n<p>Parameters as given ({DASH}: the '
              f"strategy has no such parameter), then what the index cost.</p>\n{_variants_html(result)}</section>\n")
    out.write(f"{_provenance(c)}</body>\n</html>\n")


def _figure_makers(result: SweepResult) -> dict[str, Callable[[], Figure | None]]:
    """The default figures, by name, each as the call that draws it."""
    present = set(result.summary["metric"])
    makers = {"overview": partial(plots.overview, result, short_ids=True)} | {
        m: partial(plots.metric_curves, result, m, short_ids=True) for m in EXTRA_FIGURES if m in present
    }
    swept = plots.swept_parameters(result)
    makers |= {f"by_{p}": partial(plots.by_parameter, result, p) for p in swept}
    if len(swept) == 2:
        makers[f"heatmap_{swept[0]}_{swept[1]}"] = partial(_heatmap, result, swept[0], swept[1])
    return makers


def _heatmap(result: SweepResult, a: str, b: str) -> Figure | None:
    try:
        return plots.heatmap(result, a, b)
    except ValueError:  # no variant has both parameters: nothing to draw
        return None


def _draw(make: Callable[[], Figure | None]) -> Figure | None:
    """A default figure at the report's width, or None when it has nothing to draw."""
    fig = make()
    return None if fig is None else _fit(fig)


def default_figures(result: SweepResult) -> dict[str, Figure]:
    """The overview, the curves of a few other metrics that the result holds, the metrics against
    each swept parameter and, when two are swept, their heatmap; variants by number, one width."""
    drawn = {name: _draw(make) for name, make in _figure_makers(result).items()}
    return {name: fig for name, fig in drawn.items() if fig is not None}


def _content_key(result: SweepResult) -> str:
    """What the default figures are drawn from: the per-question scores, the variants, the config
    (its date and cache counts aside) and the drawing code (plots.py, report.py, matplotlib)."""
    h = hashlib.sha256()
    h.update(pd.util.hash_pandas_object(result.per_question, index=False).to_numpy().tobytes())
    h.update(result.variants.to_csv(index=False).encode())
    volatile = ("date", "texts_embedded", "texts_cached")
    h.update(json.dumps({k: v for k, v in result.config.items() if k not in volatile}, sort_keys=True,
                        default=str).encode())
    h.update(source_fingerprint(plots, sys.modules[__name__]).encode())
    h.update(matplotlib.__version__.encode())
    return h.hexdigest()


def default_pngs(result: SweepResult, dpi: int = 120, cache: str | Path | None = None) -> dict[str, bytes]:
    """The default figures as PNG bytes. With a cache folder, a figure drawn before from the same
    content (`_content_key`) is read back instead of drawn: a re-run renders only what changed."""
    key = _content_key(result) if cache is not None else ""
    out = {}
    for name, make in _figure_makers(result).items():
        path = Path(cache) / f"{hashlib.sha256(f'{key}{name}{dpi}'.encode()).hexdigest()[:32]}.png" if cache else None
        if path is not None and path.exists():
            out[name] = path.read_bytes()
            continue
        fig = _draw(make)
        if fig is None:
            continue
        out[name] = plots.figure_to_png_bytes(fig, dpi=dpi)
        if path is not None:
            atomic_write(path, lambda p, png=out[name]: Path(p).write_bytes(png))
    return out


def write_report(
    result: SweepResult,
    path: str | Path,
    figures: Mapping[str, Figure | bytes] | None = None,
    title: str = "Chunking workbench report",
    dpi: int = 100,
    dataset: Dataset | None = None,
    store: IndexStore | str | Path | None = None,
    embedder: Embedder | None = None,
) -> Path:
    """Write the report to `path` (atomically) and return it. Figures are matplotlib figures or
    PNG bytes already rendered; they default to `default_figures`. With the dataset and the index
    store (and the embedder, else the store's default), "Where the cuts fall" draws the retrieved
    chunks of the best and the runner-up; without them that section says why it is left out."""
    figures = default_figures(result) if figures is None else figures
    wanted = (dataset, store, embedder) if dataset is not None and store is not None else None

    def write(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8") as out:
            _write(out, result, figures, title, dpi, wanted, dataset)

    return atomic_write(path, write)


def export(
    result: SweepResult,
    folder: str | Path,
    figures: Mapping[str, Figure] | None = None,
    dataset: Dataset | None = None,
    store: IndexStore | str | Path | None = None,
    embedder: Embedder | None = None,
) -> dict[str, Path]:
    """Everything a run produced, in one folder: the tidy tables (SweepResult.save), each figure
    as a PNG, and report.html (see write_report for dataset, store and embedder; the store also
    keeps the default figures drawn, see `default_pngs`). Returns the
    paths by name."""
    folder = Path(folder)
    paths = result.save(folder)
    if figures is not None:
        images = {name: plots.figure_to_png_bytes(fig, dpi=120) for name, fig in figures.items()}  # rendered once
    else:  # drawn, or read back from the store's figure cache when drawn before from the same content
        root = None if store is None else (store if isinstance(store, IndexStore) else IndexStore(store)).root
        images = default_pngs(result, 120, None if root is None else root / "figures")
    for name, png in images.items():
        paths[f"{name}.png"] = atomic_write(folder / f"{name}.png", lambda p, png=png: Path(p).write_bytes(png))
    paths["report"] = write_report(result, folder / "report.html", images, dataset=dataset, store=store,
                                   embedder=embedder)
    return paths
