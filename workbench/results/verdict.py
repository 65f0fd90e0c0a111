"""What a sweep says, in two to four sentences a team lead can act on, computed, never written.

The verdict names a variant on a primary metric (recall@k by default; for a cost the lowest mean
is best, see stats.lower_is_better): the highest mean, or, when the questions cannot tell it from
others (a paired bootstrap interval of the difference that holds 0 means "tied"), the cheapest in
context tokens of the tied that nothing dominates. It says how it compares with the runner-up,
how many questions would separate a tie, what it saves, the Pareto set of quality against context
cost, and the warnings to read before trusting any number (`sweep_warnings`: chunks embedded truncated,
evidence much shorter than every chunk, most questions on one document). It reads only the tidy
tables and the provenance of a SweepResult, like plots and the report.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from workbench.evaluation import stats

if TYPE_CHECKING:
    from workbench.results.provenance import DatasetIdentity, Provenance
    from workbench.results.result import SweepResult

COST = "context_tokens"
SAME_COST = 0.95  # a tied variant within 5% of the top's context tokens is no cheaper headline
TRUNCATED_SHARE = 0.10  # a dense variant with more of its chunks cut by the model's window gets a warning
EVIDENCE_RATIO = 4  # a variant whose smallest chunk is this many times the median evidence span gets a warning
MAIN_DOCUMENT_SHARE = 0.5  # a document holding the evidence of more of the questions gets a warning


@dataclass(frozen=True)
class Verdict:
    """The computed verdict. Variants are keys; `table` has one row per variant, highest mean
    first: [key, variant, mean, ci_low, ci_high, p_best, diff, diff_low, diff_high, p_value, p_holm,
    questions_needed, tied, context_tokens, chunks, truncated_chunks, tokens_embedded, pareto];
    diff* compare each variant with `top` (paired, see stats.against_best), p_best is stats.prob_best.

    `top` has the highest mean (lowest, for a cost). `best`, the headline, is `top` unless the
    questions cannot tell `top` from others: then it is the cheapest in context tokens of those
    tied with it that no variant dominates (as good or better on the metric for as few tokens or
    fewer), so a dominated variant is never the headline.

    `tied` means the paired interval of the difference holds 0, one comparison on its own, like
    p_value. Holm's p_holm corrects for the m - 1 comparisons together and is never below
    p_value, so a variant "worse" by its interval may still have p_holm > 0.05: read "worse" as
    "worse on these questions", p_holm <= 0.05 as "worse even counting every comparison made"."""

    metric: str
    k: int
    best: str  # the headline
    top: str  # the highest mean (lowest for a cost): what the paired differences compare with
    runner_up: str | None  # `top` when the headline is a cheaper tied variant, else the second mean
    tied: tuple[str, ...]  # variants whose paired difference to `top` holds 0 (`top` and `best` excluded)
    pareto: tuple[str, ...]  # undominated on (context tokens, metric), cheapest first
    questions: int  # how many questions each variant was scored on
    window: int | None  # the model's input window in word pieces (None: not recorded)
    table: pd.DataFrame
    warnings: tuple[str, ...]  # what to read before trusting a number (see `sweep_warnings`): the last sentences

    def row(self, key: str) -> pd.Series:
        return self.table.set_index("key").loc[key]

    def sentences(self) -> list[str]:
        """Two to four sentences, plain text (the report adds links and markup): the headline, how
        it compares, what it saves, then the warnings (`sweep_warnings`)."""
        at = f"{self.metric}@{self.k}"
        b = self.row(self.best)
        score = f"{b['mean']:.3f} [{b['ci_low']:.3f}, {b['ci_high']:.3f}]"
        if self.best == self.top:
            most = "lowest" if stats.lower_is_better(self.metric) else "highest"
            out = [f"{b['variant']} has the {most} {at}: {score}, "
                   f"best in {b['p_best']:.0%} of bootstrap resamples of the questions."]
        else:
            t = self.row(self.top)
            same = "the same" if b["mean"] == t["mean"] else "a tied"
            out = [f"{b['variant']} reaches {at} {score} with {b[COST]:,.0f} context tokens@{self.k}: tied with "
                   f"{t['variant']} ({t['mean']:.3f} with {t[COST]:,.0f}), this one reaches {same} {self.metric} "
                   f"with {1 - b[COST] / t[COST]:.0%} fewer tokens."]
        if self.runner_up is None:
            return [*out, "It is the only variant measured, so nothing is compared.", *self.warnings]
        r = self.row(self.runner_up)
        o = r if self.best == self.top else b  # the variant `top` is compared with
        lead, low, high = (0.0 - o[c] for c in ("diff", "diff_high", "diff_low"))  # 0.0 -: no "-0.000"
        over = f"over the runner-up {r['variant']}" if self.best == self.top else f"for {r['variant']} over it"
        if self.best == self.top and self.runner_up in self.tied:  # named as the first it ties with
            over = "over it"
        gap = f"{lead:+.3f} {over} (paired interval [{low:+.3f}, {high:+.3f}], p = {o['p_value']:.3g})"
        if not (self.tied or self.best != self.top):
            return [*out, f"It beats every other variant: {gap}.", *self.warnings]
        tied_with = [self.top] * (self.best != self.top) + sorted(self.tied, key=lambda k: k != self.runner_up)
        n = len(tied_with)
        others = f" and {n - 1} other variant{'s' if n > 2 else ''}" if n > 1 else ""
        first = self.row(tied_with[0])["variant"]
        out.append(f"It is tied with {first}{others}: {gap}, an interval that holds 0, so these {self.questions:,} "
                   f"questions cannot tell them apart. {self._separate(o['questions_needed'])}")
        return [*out, *self._cheaper(), *self.warnings]

    def _separate(self, n: float) -> str:
        """How many questions would tell the tied variants apart, in words."""
        if n == float("inf"):
            return "Their means are equal, so no number of questions would separate them."
        return f"About {n:,.0f} would separate them at this difference (paired test at 0.05, power 0.8)."

    def _cheaper(self) -> list[str]:
        """When the headline is `top` and ties: what it saves against the others tied, or why a
        cheaper tied variant is not named. (A cheaper headline says what it saves itself.)"""
        if self.best != self.top:
            return []
        b = self.row(self.best)
        others = self.table[self.table["key"].isin(self.tied)].sort_values(COST, kind="stable")
        c = others.iloc[0]
        if c[COST] < SAME_COST * b[COST]:  # dominated, or it would be the headline
            return [f"{c['variant']}, tied with it, sends fewer context tokens@{self.k} ({c[COST]:,.0f} against "
                    f"{b[COST]:,.0f}), but another variant does as well for as few, so it is not named."]
        if c[COST] * SAME_COST < b[COST]:
            return [f"The variants it ties with cost about the same: {c[COST]:,.0f} context tokens@{self.k} at the "
                    f"least against its {b[COST]:,.0f}."]
        return [f"Of the variants it ties with it sends the fewest context tokens@{self.k}: {b[COST]:,.0f}, "
                f"{1 - b[COST] / c[COST]:.0%} fewer than {c['variant']} ({c[COST]:,.0f})."]


def truncated_share(variants: pd.DataFrame) -> pd.Series:
    """Each variant's share of chunks longer than the model's window (0 for BM25 alone; NaN for a
    variant with no chunks, or for a table without chunk counts): over TRUNCATED_SHARE warns."""
    if not {"chunks", "truncated_chunks"} <= set(variants.columns):
        return pd.Series(float("nan"), index=variants.index)
    return variants["truncated_chunks"].fillna(0) / variants["chunks"].where(variants["chunks"] > 0)


def truncation_warning(variants: pd.DataFrame, window: int | None = None) -> str | None:
    """One sentence when more than TRUNCATED_SHARE of some dense variant's chunks are longer than
    the model's window (their tails are never embedded, so the variant is judged on chunk heads),
    naming them worst first and what to do; None when none is. `variants` is a result's variants
    table (or a verdict's), with chunks and truncated_chunks; BM25-only rows count 0."""
    share = truncated_share(variants)
    over = variants.assign(share=share)[share > TRUNCATED_SHARE].sort_values("share", ascending=False, kind="stable")
    if over.empty:
        return None
    named = ", ".join(f"{r.variant} {r.share:.0%}" for r in over.head(3).itertuples(index=False))
    more = f" and {len(over) - 3} more" if len(over) > 3 else ""
    reads = f"the {window} word pieces the model reads" if window else "the model's window"
    fits = f", size <= {window}" if window else ""
    return (f"Warning: {len(over)} of {len(variants)} variants embed chunks longer than {reads} ({named} of "
            f"their chunks{more}), so they are ranked by the head of each chunk only; size them in the model's "
            f"tokens (tokenizer=model{fits}), choose a smaller size, or use +late.")


def evidence_warning(variants: pd.DataFrame, evidence_chars: float | None) -> str | None:
    """One sentence when some variant's smallest chunk (min_chunk_chars) is over EVIDENCE_RATIO
    times the median evidence span (`evidence_chars`, the result's dataset): a returned chunk then
    holds mostly other text, so precision and IoU stay low whatever its boundaries. None when no
    variant is so, or when the result predates these counts."""
    if not evidence_chars or "min_chunk_chars" not in variants.columns:
        return None
    over = variants[variants["min_chunk_chars"] > EVIDENCE_RATIO * evidence_chars].sort_values(
        "min_chunk_chars", ascending=False, kind="stable")
    if over.empty:
        return None
    named = ", ".join(f"{r.variant} {r.min_chunk_chars:,.0f}" for r in over.head(3).itertuples(index=False))
    more = f" and {len(over) - 3} more" if len(over) > 3 else ""
    return (f"Warning: the median evidence span is {evidence_chars:,.0f} characters, and every chunk of {len(over)} "
            f"of {len(variants)} variants is over {EVIDENCE_RATIO} times as long (smallest chunk: {named} characters"
            f"{more}), so their precision and IoU stay low whatever the boundaries; compare them on recall, "
            "or label the whole passage that answers each question.")


def document_warning(dataset: DatasetIdentity) -> str | None:
    """One sentence when over MAIN_DOCUMENT_SHARE of the questions have evidence in one document
    (the result's dataset: main_document (doc_id, questions), questions, documents): the scores then
    say how chunking does on that document. None for a one-document corpus, or an older result."""
    main, n, docs = dataset.main_document, dataset.questions, dataset.documents
    if not main or not n or not docs or docs < 2 or main[1] <= MAIN_DOCUMENT_SHARE * n:
        return None
    return (f"Warning: {main[1]:,} of the {n:,} questions ({main[1] / n:.0%}) have their evidence in one document of "
            f"{docs:,}, {main[0]!r}, so these scores say mostly how each variant chunks that document; add "
            "questions on the others before choosing for the whole corpus.")


def sweep_warnings(variants: pd.DataFrame, provenance: Provenance) -> list[str]:
    """Every warning to read before trusting a number of these variants, each one sentence: chunks
    embedded truncated, evidence much shorter than every chunk, most questions on one document.
    The verdict ends with them; the CLI, report and widgets show them through here."""
    found = (truncation_warning(variants, provenance.window),
             evidence_warning(variants, provenance.dataset.evidence_chars), document_warning(provenance.dataset))
    return [w for w in found if w]


def verdict(result: SweepResult, metric: str = "recall", k: int | None = None, n_resamples: int = 2000,
            cache: str | Path | None = None) -> Verdict:
    """The verdict on `metric`@k (k defaults to the result's default_k), its ties judged at the result's
    confidence; `cache`: a cache folder, where the paired comparisons of the same scores are read back
    (stats.against_best). SweepResult.verdict is this with the sweep's cache."""
    pq = result.per_question
    if metric not in set(pq["metric"]):
        raise ValueError(f"metric {metric!r} not in the result; known: {sorted(set(pq['metric']))}")
    k = result.default_k if k is None else int(k)
    means = result.summary[(result.summary["metric"] == metric) & (result.summary["k"] == k)]
    if means.empty:
        raise ValueError(f"no {metric}@{k} in the result; swept ks: {sorted(set(pq['k']) - {0})}")
    lower = stats.lower_is_better(metric)
    table = means[["key", "variant", "mean", "ci_low", "ci_high"]].sort_values("mean", ascending=lower, kind="stable")
    p_best = stats.prob_best(pq, metric, k, n_resamples, higher_is_better=not lower)
    table = table.assign(p_best=table["key"].map(p_best))
    compared = ["key", "diff", "ci_low", "ci_high", "p_value", "p_holm", "questions_needed"]
    pairs = (stats.against_best(pq, metric, k, n_resamples, confidence=result.confidence, cache=cache)
             if len(table) > 1 else pd.DataFrame(columns=compared))
    pairs = pairs[compared].rename(columns={"ci_low": "diff_low", "ci_high": "diff_high"})
    cost = result.summary[(result.summary["metric"] == COST) & (result.summary["k"] == k)].set_index("key")["mean"]
    columns = [c for c in ("chunks", "truncated_chunks", "tokens_embedded", "min_chunk_chars")
               if c in result.variants.columns]
    index = result.variants.set_index("key")[columns]
    table = table.merge(pairs, on="key", how="left").assign(
        tied=lambda t: (t["diff_low"] <= 0) & (t["diff_high"] >= 0),
        context_tokens=lambda t: t["key"].map(cost),
    ).join(index, on="key")
    top = str(table["key"].iloc[0])
    table.loc[table["key"] == top, ["diff", "diff_low", "diff_high"]] = 0.0
    front = stats.pareto_front(list(table[COST]), list(table["mean"] * (-1 if lower else 1)))
    table["pareto"] = [i in front for i in range(len(table))]
    near = table[(table["key"] == top) | table["tied"]]
    # never empty: a variant dominating `top` ties with it; a saving under 5% does not move the headline
    undominated = near[near["pareto"]].sort_values([COST, "mean"], ascending=[True, lower], kind="stable")
    best = str(undominated["key"].iloc[0])
    top_cost = table.loc[table["key"] == top, COST].iloc[0]
    if top in set(undominated["key"]) and undominated[COST].iloc[0] >= SAME_COST * top_cost:
        best = top
    tied = tuple(k for k in table.loc[table["tied"], "key"] if k not in (top, best))
    runner_up = top if best != top else (str(table["key"].iloc[1]) if len(table) > 1 else None)
    window = result.provenance.window
    return Verdict(metric, k, best, top, runner_up, tied, tuple(table["key"].iloc[front]),
                   int(pq[(pq["metric"] == metric) & (pq["k"] == k)]["qid"].nunique()),
                   int(window) if window else None, table.reset_index(drop=True),
                   tuple(sweep_warnings(table, result.provenance)))
