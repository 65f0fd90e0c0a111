"""A sweep as one self-contained HTML file: figures, score tables, index cost and provenance.

The file must open offline, years later, on any machine: figures are embedded PNGs (never widget
JavaScript, never a CDN), styles are inline, and every piece of text is escaped, since variant
labels and dataset names come from users. The file is streamed into a temporary file and renamed
over the target, so a failure half-way (a figure that cannot render, a full disk) leaves the
previous report untouched.
"""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import pandas as pd
from matplotlib.figure import Figure

from workbench import metrics, plots
from workbench.io import atomic_write
from workbench.verdict import Verdict, verdict

if TYPE_CHECKING:
    from workbench.sweep import SweepResult

METRIC_ORDER = (*metrics.METRICS, metrics.OMEGA)
EXTRA_FIGURES = ("hit", "ndcg", "iou", "precision_omega")  # drawn by default next to the overview

_CSS = """
body { font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 1800px; padding: 0 1em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ccc; }
figure { margin: 1em 0; } figure img { max-width: 100%; height: auto; } figcaption { color: #555; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; font-size: 0.85em; }
th, td { border: 1px solid #ddd; padding: 0.25em 0.5em; text-align: right; white-space: nowrap; }
th { background: #f4f4f4; } tbody th, td:first-child { text-align: left; }
pre { background: #f8f8f8; padding: 0.5em; white-space: pre-wrap; }
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
    cells = s.assign(
        cell=[_cell(m, lo, hi, 0 if met.startswith("context_tokens") else 2)
              for m, lo, hi, met in zip(s["mean"], s["ci_low"], s["ci_high"], s["metric"], strict=True)],
        at=[f"@{k}" if k > 0 else "any k" for k in s["k"]],
    )
    table = cells.pivot(index="variant", columns=["metric", "at"], values="cell")
    columns = [(m, at) for m in _ordered_metrics(set(s["metric"]))
               for at in sorted({a for mm, a in table.columns if mm == m}, key=_k_order)]
    order = [v for v in result.labels if v in table.index]
    return table.loc[order, columns].rename_axis(index=None, columns=["metric", "k"])


def variants_table(result: SweepResult) -> pd.DataFrame:
    """The variants table with its columns grouped: identity, parameters (from the grid), index
    cost, and the cache key last."""
    v = result.variants
    identity = [c for c in ("variant", "strategy", "contextual_header", "late") if c in v]
    params = list(dict.fromkeys(p for g in result.config.get("grid", []) for p in g.get("params", {}) if p in v))
    rest = [c for c in v if c not in {*identity, *params, "key"}]
    return v[identity + params + rest + (["key"] if "key" in v else [])]


def _k_order(at: str) -> int:
    return int(at[1:]) if at.startswith("@") else 0


def _figure(name: str, fig: Figure | bytes, dpi: int) -> str:
    png = fig if isinstance(fig, bytes) else plots.figure_to_png_bytes(fig, dpi)
    data = base64.b64encode(png).decode("ascii")
    alt = html.escape(name)
    return f'<figure><img src="data:image/png;base64,{data}" alt="{alt}"><figcaption>{alt}</figcaption></figure>\n'


def _value(v: Any) -> str:
    text = v if isinstance(v, str) else json.dumps(v, default=str)
    return html.escape(text)


def _config(config: Mapping[str, Any]) -> str:
    """Key/value table of the provenance; the grid gets a table of its own."""
    rows = "".join(
        f"<tr><th>{html.escape(str(k))}</th><td>{_value(v)}</td></tr>\n" for k, v in config.items() if k != "grid"
    )
    out = f"<table>\n{rows}</table>\n"
    if config.get("grid"):
        grid = pd.json_normalize(list(config["grid"]))
        out += "<h3>grid</h3>\n<div class=\"scroll\">" + grid.to_html(index=False, na_rep="") + "</div>\n"
    return out


def _verdict(v: Verdict) -> str:
    """The computed verdict first: its sentences, each linked to the section that backs it, and
    a small table of the best, the tied and the Pareto variants."""
    links = ("#scores", "#against-best", "#variants")
    text = " ".join(f'{html.escape(s)} <a href="{link}">evidence</a>' for s, link in zip(v.sentences(), links))
    shown = v.table[(v.table["key"] == v.best) | v.table["tied"] | v.table["pareto"]]
    rows = "".join(
        f"<tr><td>{html.escape(str(r.variant))}</td><td>{_cell(r.mean, r.ci_low, r.ci_high, 3)}</td>"
        f"<td>{'best' if r.key == v.best else 'tied' if r.tied else 'worse'}</td>"
        f"<td>{r.context_tokens:,.0f}</td><td>{r.chunks:,.0f}</td><td>{'yes' if r.pareto else ''}</td></tr>\n"
        for r in shown.itertuples(index=False))
    at = f"{v.metric}@{v.k}"
    return (f'<h2 id="verdict">Verdict</h2>\n<p>{text}</p>\n<div class="scroll"><table>\n<tr><th>variant</th>'
            f"<th>{at}</th><th>against the best</th><th>context tokens@{v.k}</th><th>chunks</th>"
            f"<th>Pareto (cost vs {at})</th></tr>\n{rows}</table></div>\n")


def _against_best(v: Verdict) -> str:
    """Every variant paired against the best on the verdict's metric and k."""
    if v.runner_up is None:
        return ""
    at = f"{v.metric}@{v.k}"
    shown = v.table[v.table["key"] != v.best][["variant", "mean", "diff", "diff_low", "diff_high", "p_value"]].rename(
        columns={"mean": at, "diff": "difference", "diff_low": "low", "diff_high": "high", "p_value": "p"})
    return (f'<h2 id="against-best">Against the best variant</h2>\n<p>Each variant minus '
            f"<b>{html.escape(str(v.row(v.best)['variant']))}</b> on {at}, paired over the same questions: BCa "
            "bootstrap interval of the difference and the p-value of a sign-flip permutation test (uncorrected "
            "for the number of comparisons).</p>\n"
            '<div class="scroll">' + shown.to_html(index=False, float_format=lambda x: f"{x:.3f}", escape=True)
            + "</div>\n")


def _write(out: IO[str], result: SweepResult, figures: Mapping[str, Figure | bytes], title: str, dpi: int) -> None:
    c = result.config
    head = (f"dataset <b>{_value(c.get('dataset', '?'))}</b> ({_value(c.get('questions', '?'))} questions), "
            f"model <b>{_value(c.get('model', '?'))}</b>, mode {_value(c.get('mode', '?'))}, "
            f"{_value(c.get('date', ''))}")
    out.write(f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
              f"<title>{html.escape(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
              f"<h1>{html.escape(title)}</h1>\n<p>{head}</p>\n")
    v = verdict(result) if "recall" in set(result.summary["metric"]) else None
    if v is not None:
        out.write(_verdict(v))
    if figures:
        out.write("<h2>Figures</h2>\n")
        for name, fig in figures.items():
            out.write(_figure(name, fig, dpi))
    confidence = c.get("confidence", 0.95)
    out.write(f"<h2 id=\"scores\">Scores</h2>\n<p>mean [{confidence:.0%} confidence interval] over questions.</p>\n"
              f'<div class="scroll">{summary_table(result).to_html(escape=True)}</div>\n')
    if v is not None:
        out.write(_against_best(v))
    out.write("<h2 id=\"variants\">Variants and index cost</h2>\n<div class=\"scroll\">"
              + variants_table(result).to_html(index=False, na_rep="", float_format=lambda x: f"{x:g}", escape=True)
              + "</div>\n")
    out.write(f"<h2>Configuration</h2>\n{_config(c)}</body>\n</html>\n")


def default_figures(result: SweepResult) -> dict[str, Figure]:
    """The overview, plus the curves of a few other metrics that the result holds."""
    present = set(result.summary["metric"])
    return {"overview": plots.overview(result)} | {
        m: plots.metric_curves(result, m) for m in EXTRA_FIGURES if m in present
    }


def write_report(
    result: SweepResult,
    path: str | Path,
    figures: Mapping[str, Figure | bytes] | None = None,
    title: str = "Chunking workbench report",
    dpi: int = 100,
) -> Path:
    """Write the report to `path` (atomically) and return it. Figures are matplotlib figures or
    PNG bytes already rendered; they default to `default_figures`."""
    figures = default_figures(result) if figures is None else figures

    def write(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8") as out:
            _write(out, result, figures, title, dpi)

    return atomic_write(path, write)


def export(result: SweepResult, folder: str | Path, figures: Mapping[str, Figure] | None = None) -> dict[str, Path]:
    """Everything a run produced, in one folder: the tidy tables (SweepResult.save), each figure
    as a PNG, and report.html. Returns the paths by name."""
    folder = Path(folder)
    figures = dict(figures) if figures is not None else default_figures(result)
    paths = result.save(folder)
    images = {name: plots.figure_to_png_bytes(fig, dpi=120) for name, fig in figures.items()}  # rendered once
    for name, png in images.items():
        paths[f"{name}.png"] = atomic_write(folder / f"{name}.png", lambda p, png=png: Path(p).write_bytes(png))
    paths["report"] = write_report(result, folder / "report.html", images)
    return paths
