"""The report's page: its sections in order, the inline CSS, and the escaping of every piece of
text a user wrote (variant labels, dataset names, questions). It renders what it is given: the
tables (tables.py), the figures' PNGs (figures.py), the verdict and the cuts section (cuts.py).

Every table says above it which rows it shows (`_rows`, or the summary of its details), and the
headline (the verdict's best) is marked alike in each table that lists it: a star before its label
(the first column, held in view as the table scrolls, where the table is wider than a phone) and
its row shaded and bold."""

from __future__ import annotations

import base64
import html
import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any

import pandas as pd

from workbench.dataset import MIXED, Dataset
from workbench.evaluation import stats
from workbench.figures import plotdata
from workbench.models.base import model_fingerprint
from workbench.models.embed import default_model_path
from workbench.report.figures import NARROW_WIDTH, by_group_png, describe_figure, race_png
from workbench.report.tables import DASH, cell, compact_table, p_best_table, race_exits, summary_table, variants_text
from workbench.results.approximate import approximation
from workbench.results.verdict import TRUNCATED_SHARE, sweep_warnings, truncated_share, truncation_warning

if TYPE_CHECKING:
    from pathlib import Path

    from matplotlib.figure import Figure

    from workbench.results.answers import Answers
    from workbench.results.provenance import Provenance
    from workbench.results.result import SweepResult
    from workbench.results.verdict import Verdict

MAX_ANSWERS = 200  # "Answer quality" lists at most this many answers, the first questions' of every row
MAX_GROUPS = 12  # "By group" draws at most this many groups (a dataset split by prefix may have one per document)

NARROW_PX = 700  # below this window width the page shows each default figure's narrow rendition
TOP_ROWS = 10  # the scores table of a result of over plotdata.CROWDED variants lists this many, the best
STAR = "\u2605\u00a0"  # before the headline's label in every table that lists it, never wrapped apart from it

# Tables scroll sideways in their own box with the first column (the variant) held in place and
# wrapped, so every column is reachable and the label stays beside its numbers, at 1280 px and
# at a phone's 400 px alike; headers wrap too, so a long one never widens its column.
_CSS = f"""
body {{ font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 1200px; padding: 0 1em; color: #222;
       line-height: 1.4; }}
h1 {{ font-size: 1.5em; }} h2 {{ font-size: 1.25em; margin-top: 2em; border-bottom: 1px solid #ccc; }}
p.preview {{ background: #fff4e0; border-left: 4px solid #e08a00; padding: .5em .8em; }}
.warning {{ background: #fef3f2; border: 1px solid #f04438; border-left: 6px solid #d92d20; padding: .6em .9em;
            margin: 1em 0; overflow-wrap: anywhere; }}
.warning b {{ color: #b42318; }}
h3 {{ font-size: 1.05em; margin: 1.2em 0 0.3em; }}
figure {{ margin: 1em 0 2em; }} figure img {{ width: 100%; max-width: 100%; height: auto; display: block; }}
figcaption {{ color: #444; margin-top: 0.3em; }}
.scroll {{ overflow-x: auto; max-width: 100%; }}
table {{ border-collapse: separate; border-spacing: 0; font-size: 0.85em; margin: 0.5em 0; border: solid #ddd;
         border-width: 1px 0 0 1px; }}
th, td {{ border: solid #ddd; border-width: 0 1px 1px 0; padding: 0.25em 0.5em; text-align: right;
          white-space: nowrap; vertical-align: top; background: #fff; }}
th {{ background: #f4f4f4; white-space: normal; }}
.scroll tr > :first-child {{ position: sticky; left: 0; z-index: 1; box-shadow: 2px 0 0 #ccc; }}
.dataframe tbody th, td.label, td.text, td:first-child {{ text-align: left; }}
.dataframe tbody th, td.label {{ white-space: normal; min-width: 12em; max-width: 22em; }}
.dataframe tbody th {{ font-weight: normal; }}
th:first-child {{ text-align: left; }}
td.text {{ white-space: normal; min-width: 12em; }}
#search td {{ white-space: normal; }} #search .dataframe td:last-child {{ text-align: left; min-width: 14em; }}
tr.headline > td, tr.headline > th {{ font-weight: 600; background: #fff8e1; }}
tr.truncated > td {{ background: #fef3f2; }} td.flag {{ color: #b42318; font-weight: 600; }}
p.rows {{ color: #444; margin: 0.8em 0 0.2em; }}
.swatch {{ display: inline-block; width: 0.9em; height: 0.9em; margin-right: 0.4em; vertical-align: -0.1em; }}
.provenance th {{ text-align: left; }}
.provenance td {{ text-align: left; white-space: normal; overflow-wrap: anywhere; }}
.cut {{ border-left: 3px solid #ccc; padding-left: 0.8em; margin: 1em 0; overflow-wrap: anywhere; }}
.note {{ color: #555; }}
pre {{ background: #f8f8f8; padding: 0.5em; white-space: pre-wrap; overflow-wrap: anywhere; }}
details {{ margin: 0.5em 0; }} summary {{ cursor: pointer; color: #1d4ed8; }}
@media (max-width: {NARROW_PX}px) {{
  body {{ margin: 0.8em auto; padding: 0 0.6em; }}
  table {{ font-size: 0.8em; }}
  .dataframe tbody th, td.label {{ min-width: 8em; max-width: 10em; }}
  td.text {{ min-width: 9em; }}
}}
@media print {{
  body {{ max-width: none; margin: 0; }}
  section + section {{ break-before: page; }}
  figure, .cut, tr {{ break-inside: avoid; }}
  th, td {{ white-space: normal; }}
  .scroll tr > :first-child {{ position: static; }}
}}
"""


def write_page(out: IO[str], result: SweepResult, figures: Mapping[str, Figure | bytes],
               narrow: Mapping[str, Figure | bytes], title: str, dpi: int, v: Verdict | None, cuts: str,
               dataset: Dataset | None, answers: Answers | None = None, figure_cache: Path | None = None,
               health: str = "", probes: str = "") -> None:
    """The whole page into `out`: `narrow` the figures drawn again for a phone's width (by name,
    any of `figures`), `v` the verdict (None without recall), `cuts` the rendered "Where the cuts
    fall" section, `dataset` (optional) for "By group" (`_grouped_by`), `answers` (optional) for
    "Answer quality", `figure_cache` (optional) the folder the by-group figure is read back from
    when drawn before (figures.by_group_png), `health` the rendered "Chunk health" section, `probes` the
    rendered "Probe questions against yours" (empty without probes)."""
    p = result.provenance
    models = ", ".join(m.name for m in p.models) or "?"
    head = (f"dataset <b>{_value(p.dataset.name)}</b> ({_value(p.dataset.questions or '?')} questions), "
            f"model{'s' * (len(p.models) > 1)} <b>{_value(models)}</b>, mode {_value(p.settings.mode)}, "
            f"{_value(p.date)}")
    out.write(f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
              '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
              f"<title>{html.escape(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
              f"<h1>{html.escape(title)}</h1>\n<p>{head}</p>\n")
    if p.dataset.notes:  # what loading the data said, as the CLI printed it
        items = "".join(f"<li>{html.escape(n)}</li>" for n in p.dataset.notes)
        out.write(f'<div class="warning"><b>The data, as loaded:</b><ul>{items}</ul></div>\n')
    if result.preview:
        out.write('<p class="preview"><b>Preview.</b> Every chunk vector here was pooled from one model pass over '
                  "the corpus (workbench.retrieval.preview), not embedded: the ranking is an estimate. Confirm the "
                  "best variants with a real sweep before choosing.</p>\n")
    if v is not None:
        out.write(_verdict(v))
    else:
        truncation = truncation_warning(result.variants, p.window)
        out.write(_warnings(sweep_warnings(result.variants, p), truncation))
    best = v.best if v is not None else None
    if figures:
        out.write(f'<section id="figures"><h2>Figures</h2>\n{_legend_table(result, best)}')
        for name, fig in figures.items():
            out.write(_figure(result, name, fig, narrow.get(name), dpi))
        out.write("</section>\n")
    out.write(_search(result, dpi, figure_cache, best))
    k = v.k or result.default_k if v is not None else result.default_k
    out.write(_scores(result, k, best))
    out.write(_approximate(result, k, best))
    if v is not None:
        out.write(_against_best(v))
    if answers is not None:
        out.write(_answers(answers, best))
    out.write(_by_group(result, dataset, k, dpi, figure_cache, best))
    out.write(probes)
    out.write(cuts)
    out.write(health)
    out.write(_variants(result, k, best))
    out.write(f"{_provenance(p)}</body>\n</html>\n")


def _value(v: Any) -> str:
    text = v if isinstance(v, str) else json.dumps(v, default=str)
    return html.escape(text)


def _label(text: str) -> str:
    """A variant label, escaped, with line breaks allowed after "(" and "_" and before "+": a long
    label wraps between its parts in a narrow column, not mid-word."""
    return html.escape(text).replace("(", "(<wbr>").replace("_", "_<wbr>").replace("+", "<wbr>+")


def _rows(text: str) -> str:
    """What a table's rows are, said above it."""
    return f'<p class="rows">{text}</p>\n'


def _table(frame: pd.DataFrame, headline: str | None = None) -> str:
    """A table of text cells, one row per variant (its label the index, wrapped by `_label`),
    every piece escaped here (to_html then adds no escaping of its own, which would undo `_label`);
    the `headline` label's row marked (STAR, class "headline"), as in every table."""
    shown = frame.map(lambda x: html.escape(str(x), quote=False))
    shown.index = [STAR * (i == headline) + _label(str(i)) for i in frame.index]
    if isinstance(frame.columns, pd.MultiIndex):
        shown.columns = pd.MultiIndex.from_tuples([tuple(html.escape(str(p)) for p in c) for c in frame.columns],
                                                  names=[html.escape(str(n)) for n in frame.columns.names])
    else:
        shown.columns = [html.escape(str(c)) for c in frame.columns]
    text = shown.to_html(escape=False)
    if headline in frame.index:  # the row whose label cell is the starred one
        starred = re.escape(f"<th>{STAR}{_label(headline)}</th>")
        text = re.sub(rf"<tr>(\s*{starred})", r'<tr class="headline">\1', text, count=1)
    return '<div class="scroll">' + text + "</div>\n"


def _png(fig: Figure | bytes, dpi: int) -> str:
    if isinstance(fig, bytes):
        png = fig
    else:  # a Figure: matplotlib is imported already
        from workbench.figures import plots

        png = plots.figure_to_png_bytes(fig, dpi)
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _picture(wide: Figure | bytes, narrow: Figure | bytes | None, dpi: int, alt: str) -> str:
    """The figure as an image the width of the page; below NARROW_PX its narrow rendition (panels
    stacked, drawn for that width), since the wide one shrunk to a phone is unreadable."""
    img = f'<img src="{_png(wide, dpi)}" alt="{alt}">'
    if narrow is None:
        return img
    return f'<picture><source media="(max-width: {NARROW_PX}px)" srcset="{_png(narrow, dpi)}">{img}</picture>'


def _figure(result: SweepResult, name: str, fig: Figure | bytes, narrow: Figure | bytes | None, dpi: int) -> str:
    title, caption = (html.escape(t) for t in describe_figure(result, name))
    return (f'<figure id="figure-{html.escape(name)}"><h3>{title}</h3>{_picture(fig, narrow, dpi, title)}'
            f"<figcaption>{caption}</figcaption></figure>\n")


def _warnings(texts: Sequence[str], truncation: str | None) -> str:
    """Each warning (verdict.sweep_warnings) as a box; the `truncation` one links the rows it marks."""
    boxes = []
    for text in texts:
        head, body = (html.escape(part) for part in text.split(": ", 1))
        marked = ' <a href="#variants">the variants, marked</a>' if text == truncation else ""
        boxes.append(f'<p class="warning" role="alert"><b>{head}:</b> {body}{marked}</p>\n')
    return "".join(boxes)


def _truncated_cell(count: str, share: float) -> str:
    """truncated_chunks with its share of the chunks, flagged over TRUNCATED_SHARE."""
    if math.isnan(share) or share == 0:
        return f"<td>{html.escape(count)}</td>"
    if share <= TRUNCATED_SHARE:
        return f"<td>{html.escape(count)} ({share:.0%})</td>"
    return (f'<td class="flag" title="more than {TRUNCATED_SHARE:.0%} of its chunks exceed the model\'s window">'
            f"{html.escape(count)} ({share:.0%}) \u26a0</td>")


def _count(n: float) -> str:
    """A count of chunks; a dash for a result measured before it was counted."""
    return DASH if pd.isna(n) else f"{n:,.0f}"


def _marked(share: float, headline: bool = False) -> str:
    """A table row's classes: the headline's, and marked when its variant's chunks are too often truncated."""
    names = ["headline"] * bool(headline) + ["truncated"] * bool(share > TRUNCATED_SHARE)
    return f' class="{" ".join(names)}"' if names else ""


def _variants(result: SweepResult, k: int, best: str | None) -> str:
    """The variants table (tables.variants_text), numbered like the figures; a variant whose
    chunks are too often longer than the model's window is marked, and the headline (`best`)."""
    text = variants_text(result, k)
    share = truncated_share(result.variants).to_numpy()
    head = "".join(f"<th>{html.escape(c)}</th>" for c in text.columns)
    rows = []
    for n, (key, row, part) in enumerate(zip(result.keys, text.itertuples(index=False), share, strict=True), 1):
        cells = []
        for column, value in zip(text.columns, row, strict=True):
            if column == "variant":
                cells.append(f'<td class="label">{STAR * (key == best)}{n}.&nbsp;{_label(value)}</td>')
            elif column == "truncated_chunks":
                cells.append(_truncated_cell(value, part))
            else:
                cells.append(f"<td>{html.escape(value, quote=False)}</td>")
        rows.append(f"<tr{_marked(part, key == best)}>{''.join(cells)}</tr>\n")
    return (f'<section id="variants"><h2>Variants and index cost</h2>\n<p>Numbered as in the figures: first the '
            f"chunks (truncated_chunks: longer than the model's window, their tails never embedded; marked over "
            f"{TRUNCATED_SHARE:.0%}), the context tokens@{k} handed to the LLM, beside it what an LLM generated to "
            f"build the index (index_tokens_generated, index_llm_seconds: its chunks or +context's contexts, at what "
            f"they cost when made) when one did, and this run's seconds; then the "
            f"parameters as given ({DASH}: the strategy has no such parameter) and what the index cost. The table "
            f"scrolls sideways.</p>\n{_rows(f'Every variant ({len(rows)}), numbered in sweep order{_headline(best)}.')}"
            f'<div class="scroll"><table class="variants">\n<thead><tr>{head}</tr></thead>'
            f"\n<tbody>\n{''.join(rows)}</tbody></table></div></section>\n")


def _headline(best: str | None) -> str:
    """What the star marks, when a row is starred."""
    return "; \u2605 the headline, the verdict's best" if best is not None else ""


def _legend_table(result: SweepResult, best: str | None) -> str:
    """The figures' legend: each variant's number and colour (plotdata.figure_colors: over
    CROWDED, the best few in colour and the rest grey, as drawn) next to its full label."""
    keys = result.keys
    colors = plotdata.figure_colors(result, keys)
    rows = "".join(f'<tr{_marked(0, key == best)}><td>{n}</td><td class="text">{STAR * (key == best)}'
                   f'<span class="swatch" style="background:{colors[key]}"></span>{html.escape(result.label_of(key))}'
                   "</td></tr>\n" for n, key in enumerate(keys, 1))
    grey = (f"; in colour in the figures, the {plotdata.TOP} best by recall@{result.default_k}, the rest grey"
            if plotdata.GREY in colors.values() else "")
    return (_rows(f"The variants are numbered in the figures: every variant ({len(keys)}), in sweep order{grey}"
                  f"{_headline(best)}.")
            + f'<div class="scroll"><table>\n<tr><th>#</th><th>variant</th></tr>\n{rows}</table></div>\n')


def reproduce_code(provenance: Provenance) -> str:
    """Python that sweeps the same grid again (for a run that did not come from the CLI)."""
    p = provenance
    lines = ["import workbench as wb", "", f"dataset = wb.load_dataset({p.dataset.name or '?'!r})"
             "  # the folder this dataset was loaded from", "variants = ["]
    for g in p.grid:
        args = [repr(g["strategy"]), *(f"{p}={v!r}" for p, v in g.get("params", {}).items()),
                *(f"{m}=True" for m in ("contextual_header", "late") if g.get(m)),
                *([f"contextual={g['context']!r}"] if "context" in g else [])]
        lines.append(f"    wb.Variant.make({', '.join(args)}),")
    m = p.models[0] if p.models else None
    backend = m.backend if m else "torch"
    model = m.fingerprint.removesuffix(f"-{backend}") if m else ""
    custom = model not in ("", model_fingerprint(default_model_path()))
    args = [repr(m.name if m else "?")] * custom + [f"backend={backend!r}"] * (backend != "torch")
    embedder = f", embedder=wb.Embedder({', '.join(args)})" if args else ""
    lines += ["]", f"result = wb.sweep(dataset, variants, ks={list(p.settings.ks)}, "
              f"mode={p.settings.mode!r}{embedder})" + ("  # the model's folder" if custom else ""),
              'wb.report.export(result, "results/mine")']
    return "\n".join(lines)


def _provenance(provenance: Provenance) -> str:
    """How it was made, collapsed: every field of its config.json, versions as one line, and how to run it again."""
    config = provenance.config()
    rows = "".join(f"<tr><th>{html.escape(str(k))}</th><td>{_value(v)}</td></tr>\n"
                   for k, v in config.items() if k not in ("grid", "versions", "command"))
    versions = ", ".join(f"{name} {version}" for name, version in provenance.versions.items())
    rows += f"<tr><th>versions</th><td>{html.escape(versions)}</td></tr>\n"
    if provenance.command:
        again = f"<p>The command that made it:</p>\n<pre>{html.escape(provenance.command)}</pre>\n"
    else:
        again = f"<p>Code that makes it again:</p>\n<pre>{html.escape(reproduce_code(provenance))}</pre>\n"
    return ('<section id="provenance"><h2>How it was made</h2>\n<details><summary>Dataset, model, fingerprints, '
            f'versions, date and how to run it again</summary>\n<table class="provenance">\n{rows}</table>\n{again}'
            "</details></section>\n")


def _verdict(v: Verdict) -> str:
    """The computed verdict first: its sentences, each linked to the section that backs it, and
    a small table of the best, the tied and the Pareto variants (the headline's row marked at
    every width: a star before its label, as the CLI marks it, and the row in bold)."""
    told = v.sentences()[: -len(v.warnings) or None]  # each warning gets its box
    links = ("#scores", "#against-best", "#variants", "#variants", "#variants")
    text = " ".join(f'{html.escape(s)} <a href="{link}">evidence</a>' for s, link in zip(told, links, strict=False))
    shown = v.table[(v.table["key"] == v.best) | v.table["tied"] | v.table["pareto"]]
    shares = truncated_share(shown).to_numpy()
    seconds = bool(shown["query_seconds"].gt(0).any())  # a column only when some variant spends model time per question
    rows = "".join(
        f'<tr{_marked(share, r.key == v.best)}><td class="label">{STAR * (r.key == v.best)}'
        f"{_label(str(r.variant))}</td>"
        f"<td>{cell(r.mean, r.ci_low, r.ci_high, 3)}</td>"
        f"<td>{r.p_best:.2f}</td>"
        f"<td>{_standing(v, r)}</td>"
        f"<td>{r.context_tokens:,.0f}</td>" + (f"<td>{r.query_seconds:,.2f}</td>" if seconds else "")
        + f"<td>{_count(getattr(r, 'chunks', math.nan))}</td>"
        f"{_truncated_cell(_count(getattr(r, 'truncated_chunks', math.nan)), share)}"
        f"<td>{'yes' if r.pareto else ''}</td></tr>\n"
        for r, share in zip(shown.itertuples(index=False), shares, strict=True))
    at = v.at.label
    boxes = _warnings(v.warnings, truncation_warning(v.table, v.window))
    per_question = "<th>model seconds per question</th>" if seconds else ""
    return (f'<section id="verdict"><h2>Verdict</h2>\n<p>{text}</p>\n{boxes}'
            + _rows(f"The rows shown: the best (\u2605, the headline), those tied with it and those on the Pareto "
                    f"set ({len(shown)} of {len(v.table)}, the highest mean first; every variant is in "
                    '<a href="#against-best">Against the best</a>).')
            + '<div class="scroll"><table>\n<thead><tr><th>variant</th>'
            f"<th>{at}</th><th>P(best)</th><th>against the best</th><th>context tokens</th>{per_question}"
            f"<th>chunks</th><th>truncated_chunks</th><th>Pareto (every cost vs {at})</th></tr></thead>\n"
            f"<tbody>\n{rows}</tbody></table></div></section>\n")


def _standing(v: Verdict, row: Any) -> str:
    """best (the highest mean), trade-off, tied or worse: how a row stands against the headline."""
    if row.key == v.best:
        return "best (highest mean)"
    return "tied, a trade-off" if row.trade_off else "tied" if row.tied else "worse"


def _approximate(result: SweepResult, k: int, best: str | None) -> str:
    """Each variant searched by an approximate index (pgvector's, FAISS's) beside the same variant searched
    exactly (results.approximate); nothing when no variant was."""
    table = approximation(result, k=k)
    if table.empty:
        return ""
    deepest = max(result.ks)
    level = f"{result.confidence:.0%}"
    shown = pd.DataFrame({
        "index": table["index"],
        f"neighbours kept@{deepest}": [f"{x:.3f}" for x in table["ann_recall"]],
        f"recall@{k}": [f"{x:.3f}" for x in table["mean"]],
        "exact search": [DASH if pd.isna(x) else x for x in table["exact"]],
        f"exact recall@{k}": [DASH if pd.isna(x) else f"{x:.3f}" for x in table["exact_mean"]],
        f"difference [{level}]": [DASH if pd.isna(d) else cell(d, lo, hi, 3) for d, lo, hi in
                                  zip(table["diff"], table["ci_low"], table["ci_high"], strict=True)],
        "p": [DASH if pd.isna(p) else f"{p:.3f}" for p in table["p_value"]],
    }).set_axis(table["variant"].tolist())
    headline = result.label_of(best) if best is not None and best in set(table["key"]) else None
    return ('<section id="approximate"><h2>Approximate search against exact</h2>\n<p>Each variant searched by '
            "an approximate index (index: pgvector's HNSW or IVFFlat, or FAISS's) on the same vectors as exact "
            f"search. Neighbours kept: the share of exact search's top {deepest} chunks that its top {deepest} "
            f"holds, over the questions. Beside it, recall@{k} of the same variant searched exactly (FAISS flat) "
            f"when the sweep holds it, and the difference, approximate minus exact, paired over the same questions "
            f"(BCa bootstrap interval at {level}, sign-flip permutation p): what the approximation costs."
            f"</p>\n{_rows(f'Every variant searched approximately ({len(shown)}), in sweep order.')}"
            f"{_table(shown, headline)}</section>\n")


def _against_best(v: Verdict) -> str:
    """Every variant paired against the best on the verdict's metric and k."""
    if v.runner_up is None:
        return ""
    at = v.at.label
    columns = ["variant", "mean", "diff", "diff_low", "diff_high", "p_value", "p_holm", "questions_needed"]
    shown = v.table[v.table["key"] != v.best][columns].rename(
        columns={"mean": at, "diff": "difference", "diff_low": "low", "diff_high": "high", "p_value": "p",
                 "p_holm": "p (Holm)", "questions_needed": "questions needed"})
    shown["questions needed"] = [DASH if math.isinf(n) else f"{n:,.0f}" for n in shown["questions needed"]]
    return (f'<section id="against-best"><h2>Against the best variant</h2>\n<p>Each variant minus '
            f"<b>{html.escape(str(v.row(v.best)['variant']))}</b> (the best mean) on {at}, paired over the same "
            "questions: BCa bootstrap interval of the difference (at the result's confidence) and the p-value of a "
            "sign-flip permutation test. "
            "p (Holm) applies "
            f"Holm's correction for the {len(shown)} comparisons with the best: a difference is significant at 0.05 "
            "counting every comparison when it is at most 0.05. Questions needed: about how many questions would make "
            f"the difference significant at 0.05 with 80% power, from the spread of its per-question differences "
            f"({DASH}: equal means).</p>\n"
            + _rows(f"Every variant but the best ({len(shown)}), the highest mean first.")
            + _table(shown.set_index("variant").rename_axis(None).map(
                lambda x: x if isinstance(x, str) else f"{x:.3f}")) + "</section>\n")


def _scores(result: SweepResult, k: int, best: str | None) -> str:
    """The compact scores table at k (of a result of over plotdata.CROWDED variants, the TOP_ROWS
    best by recall@k), then every metric and every P(best) of every variant, collapsed."""
    confidence = result.confidence
    ranked = stats.with_prob_best(result.summary, result.per_question, cache=result.cache)  # once, for both tables
    compact = compact_table(result, k, ranked=ranked)
    n = len(compact)
    every = f"every variant ({n}), in sweep order"
    if n > plotdata.CROWDED and plotdata.RECALL in set(result.summary["metric"]):
        compact = compact.loc[result.ranking(plotdata.RECALL, k)["variant"].head(TOP_ROWS)]
        shown = (f"The top {TOP_ROWS} by {plotdata.RECALL}@{k} of {n}, the highest first; every variant in "
                 "\u201cEvery metric at every k\u201d below")
    else:
        shown = every.capitalize()
    headline = result.label_of(best) if best is not None else None
    return (f'<section id="scores"><h2>Scores</h2>\n<p>Mean [{confidence:.0%} confidence interval] over questions at '
            f"k = {k}; context tokens are cl100k tokens handed to the LLM. P(best): the share of bootstrap resamples "
            "of the questions (the same questions for every variant) in which the variant has the best mean."
            f"</p>\n{_rows(shown + _headline(best) + '.')}{_table(compact, headline)}"
            f"<details><summary>Every metric at every k: {every}</summary>\n"
            f"{_table(summary_table(result), headline)}</details>"
            f"<details><summary>P(best) of every metric at every k (fewer context tokens is better): {every}"
            f"</summary>\n{_table(p_best_table(result, ranked), headline)}</details></section>\n")


def _search(result: SweepResult, dpi: int, cache: Path | None, best: str | None) -> str:
    """How a search (workbench.run.search) came to this result's variants: its race drawn, the exits of
    each round counted by why, the finalists, and every candidate's exit, collapsed; "" for a sweep."""
    race = result.race
    if race is None or race.empty:
        return ""
    rows = plotdata.race_points(race)
    at = html.escape(f"{rows['metric'].iloc[0]}@{rows['k'].iloc[0]}")
    figure = _picture(race_png(result, dpi, cache=cache), race_png(result, dpi, NARROW_WIDTH, cache), dpi,
                      "the search's race")
    finalists = plotdata.race_finalists(race)
    final = "".join(f'<tr{_marked(0, r.key == best)}><td class="label">{STAR * (r.key == best)}{_label(str(r.variant))}'
                    f"</td><td>{cell(r.mean, r.ci_low, r.ci_high, 3)}</td></tr>\n"
                    for r in finalists.itertuples(index=False))
    exits = rows[rows["last"]].sort_values(["round", "score"], ascending=[True, False], kind="stable")
    every = pd.DataFrame({"left in round": [f"{r.round}. {r.stage}" for r in exits.itertuples(index=False)],
                          "status": exits["status"].tolist(),
                          f"{at} there": [f"{x:.3f}" for x in exits["score"]],
                          "why": [r or DASH for r in exits["reason"].fillna("")]}).set_axis(exits["variant"].tolist())
    return ('<section id="search"><h2>Search</h2>\n<p>This result is the last round of a search '
            "(workbench.run.search): every candidate scored first by a preview (its score corrected by anchors "
            "measured for real), then the survivors measured for real on a sample of the corpus, then, unless "
            "the sample was the whole corpus, the best few on all of it. A candidate left the race when the "
            "paired evidence put it behind the best, when its corrected preview could not reach the best, when "
            "it was not among the best few left for the whole corpus, or when the budget ran out.</p>\n"
            f'<figure id="figure-race">{figure}<figcaption>x: the rounds, with the documents scored and the '
            f"candidates that entered; y: mean {at} (the preview's corrected score). A faint line per candidate "
            "through the rounds it was scored in, a grey x where it left; the finalists in colour, the best "
            "numbered and named below, the star the best of the last round.</figcaption></figure>\n"
            + _rows(f"One row per round ({len(plotdata.race_rounds(race))}): who entered, who left and why "
                    "(counted by reason), who went on.")
            + _table(race_exits(race))
            + _rows(f"The finalists ({len(finalists)}), the best of the last round first{_headline(best)}.")
            + f'<div class="scroll"><table>\n<tr><th>variant</th><th>{at}, last round</th></tr>\n{final}'
            "</table></div>\n"
            f"<details><summary>Every candidate's exit ({len(exits)}): the round it left or finished in, its score "
            f"there and why</summary>\n{_table(every)}</details></section>\n")


def _grouped_by(dataset: Dataset) -> tuple[str, str]:
    """The section's heading and what its groups are, named after what Dataset.groups_of_questions
    splits this dataset by: the documents' group field, their folder, or (no folders) the documents."""
    if dataset.grouping == "group":
        return "By group", "the <code>group</code> field of their evidence documents"
    if any("/" in d.doc_id for d in dataset.documents):
        return "By folder", ('the folder of their evidence documents (the doc id up to its first "/"; a document '
                             "outside any folder is a group of its own)")
    return "By document", ("their evidence document (the documents sit in no folder and have no "
                           "<code>group</code> field, so each is a group)")


def _by_group(result: SweepResult, dataset: Dataset | None, k: int, dpi: int, cache: Path | None = None,
              headline: str | None = None, metric: str = "recall") -> str:
    """Each group's best variant on `metric`@k with its interval (the `headline` starred where it
    is a group's best), and the per-group figure, when the dataset has 2 to MAX_GROUPS groups of
    questions (Dataset.groups_of_questions); "" else."""
    if dataset is None or metric not in set(result.summary["metric"]):
        return ""
    heading, what = _grouped_by(dataset)
    if not result.provenance.about(dataset):
        return (f'<section id="by-group"><h2>{heading}</h2>\n<p>Left out: the dataset given '
                f"({html.escape(dataset.name)}) is not the one this result was measured on.</p></section>\n")
    groups = dataset.groups_of_questions()
    if not 2 <= len(set(groups.values())) <= MAX_GROUPS:
        return ""
    table = result.by_group(groups, metric, k)
    best = plotdata.best_by_group(table, metric)
    rows = "".join(f'<tr{_marked(0, r.key == headline)}><td>{html.escape(r.group)}</td><td>{r.n}</td>'
                   f'<td class="label">{STAR * (r.key == headline)}{_label(str(r.variant))}</td>'
                   f"<td>{cell(r.mean, r.ci_low, r.ci_high, 3)}</td></tr>\n" for r in best.itertuples(index=False))
    figure = _picture(by_group_png(result, groups, table, metric, k, dpi, cache=cache),
                      by_group_png(result, groups, table, metric, k, dpi, NARROW_WIDTH, cache), dpi,
                      f"{metric}@{k} by group")
    return (f'<section id="by-group"><h2>{heading}</h2>\n<p>The questions split by {what}; evidence in two '
            f"groups: {MIXED}. Each group is summarised on its own questions: the best chunking can differ by kind "
            f"of text, and a group's interval is wider than the whole's.</p>\n"
            + _rows(f"One row per group ({len(best)}): its best variant on {metric}@{k}{_headline(headline)}.")
            + f"<div class=\"scroll\"><table>\n"
            f"<tr><th>group</th><th>questions</th><th>best variant</th><th>{metric}@{k}</th></tr>\n{rows}"
            "</table></div>\n"
            f'<figure id="figure-by-group">{figure}'
            f"<figcaption>One panel per group, best on top and outlined; numbers: the variant table above."
            f"</figcaption></figure></section>\n")


def _answers(answers: Answers, best: str | None) -> str:
    """The answer-quality table (workbench.results.answers), floor first and ceiling last, and the answers
    themselves, collapsed (the first MAX_ANSWERS, every row's answers to the same questions); the
    headline's rows (`best`) marked."""
    t, c = answers.table, answers.config
    judge = "judge" in t.columns
    level = f"{c['confidence']:.0%}"

    def diff(r: Any, name: str) -> str:
        return DASH if pd.isna(getattr(r, name)) else cell(getattr(r, name), getattr(r, f"{name}_low"),
                                                            getattr(r, f"{name}_high"), 3)

    head = ["variant", f"F1 [{level} CI]", "exact match", *(["judged correct"] if judge else []), "F1 vs best",
            "F1 vs floor", "graded against", "context tokens (mean)", "tokens generated", "seconds"]
    rows = "".join(
        f'<tr{_marked(0, r.key == best)}><td class="label">{STAR * (r.key == best)}{_label(str(r.variant))}</td>'
        f"<td>{cell(r.f1, r.f1_low, r.f1_high, 3)}</td>"
        f"<td>{cell(r.exact_match, r.exact_match_low, r.exact_match_high, 3)}</td>"
        + (f"<td>{cell(r.judge, r.judge_low, r.judge_high, 3)}</td>" if judge else "")
        + f"<td>{diff(r, 'f1_vs_best')}</td><td>{diff(r, 'f1_vs_floor')}</td>"
        f"<td>{html.escape(str(r.graded_against))}</td><td>{r.context_tokens:,.0f}</td>"
        f"<td>{r.tokens_generated:,}</td><td>{r.seconds:,.1f}</td></tr>\n" for r in t.itertuples(index=False))
    pq = answers.per_question
    shown = pq[pq["qid"].isin(list(dict.fromkeys(pq["qid"]))[: max(1, MAX_ANSWERS // t["key"].nunique())])]
    questions = shown["qid"].nunique()
    listed = "".join(
        f'<tr{_marked(0, r.key == best)}><td class="label">{STAR * (r.key == best)}{_label(str(r.variant))}</td>'
        f'<td class="text">{html.escape(str(r.question))}</td>'
        f'<td class="text">{html.escape(str(r.answer))}</td><td>{r.f1:.2f}</td>'
        f'<td class="text">{html.escape(" | ".join(r.references)) if r.graded_against == "reference" else "evidence"}'
        f"</td></tr>\n" for r in shown.sort_values("qid", kind="stable").itertuples(index=False))
    judged = (" Judged correct: the share of answers the model itself calls correct under a fixed rubric "
              "(P(yes) &gt; 0.5 from its next-token logits)." if judge else "")
    return (f'<section id="answers"><h2>Answer quality</h2>\n<p>The model <b>{html.escape(str(c["llm"]))}</b> '
            f"answered every question (at most {c['max_tokens']} tokens) from the context each variant retrieved, "
            f"packed in rank order under <b>{c['context_tokens']:,} {html.escape(str(c['encoding']))} tokens</b>; "
            "the variants are the best by "
            f"{html.escape(str(c['ranked_by']))}. Two anchors frame them: no context (the floor) and the evidence "
            "itself as context (the ceiling). Graded against the reference answers where the dataset has them "
            "(SQuAD: normalised token F1 and exact match, the best over the references), else against the text "
            "of the evidence spans (F1 is then mostly how much of the evidence the answer repeats). Means with "
            f"{level} bootstrap intervals; F1 vs best and vs floor: the paired difference (this row minus that one) "
            f"over the same questions, with its BCa interval.{judged} Tokens and seconds: what the answers cost when "
            "they were generated (cached since).</p>\n"
            + _rows(f"Every row answered ({len(t)}): the floor, the variants (the best by "
                    f"{html.escape(str(c['ranked_by']))}), the ceiling{_headline(best)}.")
            + f'<div class="scroll"><table>\n<thead><tr>{"".join(f"<th>{h}</th>" for h in head)}</tr></thead>\n'
            f"<tbody>\n{rows}</tbody></table></div>\n"
            f"<details><summary>The answers ({len(shown)} of {len(pq)}: every row's to the first {questions} "
            "questions)</summary>\n"
            '<div class="scroll"><table>\n<thead><tr><th>variant</th><th>question</th><th>answer</th><th>F1</th>'
            f"<th>graded against</th></tr></thead>\n<tbody>\n{listed}</tbody></table></div></details></section>\n")
