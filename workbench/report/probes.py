"""The report's "Probe questions against yours": when the dataset holds questions written to probe the
cuts (`labels generate --probe-cuts`, marked `probe`) beside others, each variant's recall@k on each
set and its rank there, and how alike the two rankings are (Spearman's rho).

Why: probes ask about evidence that straddles some variants' boundaries, so they separate chunkings
where the other questions may not; a variant that leads on both is a safer pick than one that leads on
one. Nothing is computed but the two groups' summaries of the scores the sweep kept.
"""

from __future__ import annotations

import html

import pandas as pd

from workbench.dataset import Dataset
from workbench.report.html import STAR, _headline, _label, _marked, _rows
from workbench.results.result import SweepResult

PROBES, OWN = "probe questions", "your questions"


def section(result: SweepResult, dataset: Dataset | None, k: int, best: str | None) -> str:
    """The section, or "" when the dataset is not given or its questions are not of both kinds."""
    if dataset is None or "recall" not in set(result.summary["metric"]):
        return ""
    kinds = {q.qid: PROBES if q.probe else OWN for q in dataset.questions}
    asked = set(result.per_question["qid"].unique())  # unique() first: the scores have a row per metric and k
    kinds = {qid: kind for qid, kind in kinds.items() if qid in asked}
    if len(set(kinds.values())) < 2:
        return ""
    by = result.by_group(kinds, "recall", k)
    wide = {kind: by[by["group"] == kind].set_index("key") for kind in (OWN, PROBES)}
    keys = list(wide[OWN].sort_values("mean", ascending=False, kind="stable").index)
    ranks = {kind: frame["mean"].rank(ascending=False, method="min") for kind, frame in wide.items()}
    from scipy.stats import spearmanr  # a second's import, paid only by a report with probes

    own, probed = wide[OWN].loc[keys, "mean"], wide[PROBES].loc[keys, "mean"]
    rho = spearmanr(own, probed).statistic if own.nunique() > 1 and probed.nunique() > 1 else float("nan")
    n = {kind: sum(v == kind for v in kinds.values()) for kind in (OWN, PROBES)}
    rows = "".join(
        f'<tr{_marked(0, key == best)}><td class="label">{STAR * (key == best)}'
        f"{_label(str(wide[OWN].loc[key, 'variant']))}</td>"
        + "".join(f"<td>{_cell(wide[kind].loc[key])}</td><td>{ranks[kind][key]:.0f}</td>" for kind in (OWN, PROBES))
        + "</tr>\n" for key in keys)
    agree = "NaN (a ranking is constant)" if pd.isna(rho) else f"{rho:+.2f}"
    return (f'<section id="probes"><h2>Probe questions against yours</h2>\n<p>{n[PROBES]} of the questions were '
            "written to probe the cuts (<code>labels generate --probe-cuts</code>): their evidence straddles some "
            f"variants' chunk boundaries. Recall@{k} [interval] and rank on each set; Spearman's rho of the two "
            f"rankings: {html.escape(agree)}. A variant that leads on both holds its evidence whole where the "
            f"cuts differ as well as where they do not.</p>\n"
            f"{_rows(f'Every variant ({len(keys)}), by recall@{k} on your {n[OWN]} questions{_headline(best)}.')}"
            f'<div class="scroll"><table>\n<thead><tr><th>variant</th><th>{OWN}</th><th>rank</th><th>{PROBES}</th>'
            f"<th>rank</th></tr></thead>\n<tbody>\n{rows}</tbody></table></div></section>\n")


def _cell(row: pd.Series) -> str:
    return f"{row['mean']:.3f} [{row['ci_low']:.3f}, {row['ci_high']:.3f}]"
