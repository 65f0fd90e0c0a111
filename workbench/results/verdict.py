"""What a sweep says, in a few sentences a team lead can act on, computed, never written.

The verdict is on one metric at one cut-off, the user's choice (recall@k by default; MRR, nDCG, or
recall at an equal context budget: metrics.MetricAt; for a cost the lowest mean is best, see
stats.lower_is_better). Its headline is always the variant of the highest mean. When the questions
cannot separate others from it (the paired bootstrap interval of a difference holds 0: "tied",
judged at the result's confidence), it says so and lists them: "cannot tell apart" is not "as good
as". A tied variant that costs materially less may then be offered as a trade-off, stated as one,
with how much it could lose. Costs are every cost the variants table records: context tokens sent
per question, model seconds per question (a reranker), and at index time the model seconds and
tokens (an LLM writing contexts or chunks, and the tokens embedded); the Pareto set weighs them all
(stats.pareto_set). The verdict ends with the warnings to read before trusting any number
(`sweep_warnings`). It reads only the tidy tables and the provenance of a SweepResult.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from workbench.evaluation import stats
from workbench.evaluation.metrics import MetricAt

if TYPE_CHECKING:
    from workbench.results.provenance import DatasetIdentity, Provenance
    from workbench.results.result import SweepResult

COST = "context_tokens"  # the verdict table's column of context tokens per question at its cut-off
# every cost the verdict weighs: its column in the verdict's table, the variants table's columns it sums
# (absent: 0), the least difference that counts, and how a sentence names it
COSTS = {
    COST: ((), 1.0, "context tokens per question"),
    "query_seconds": (("rerank_seconds_per_question",), 0.01, "model seconds per question"),
    "index_seconds": (("index_llm_seconds",), 0.01, "model seconds to build the index"),
    "index_tokens": (("tokens_embedded", "index_tokens_generated"), 1.0, "tokens embedded or generated to build "
                                                                         "the index"),
}
NAMED = 5  # variants a sentence lists by name before "and N more"
TRUNCATED_SHARE = 0.10  # a dense variant with more of its chunks cut by the model's window gets a warning
EVIDENCE_RATIO = 4  # a variant whose smallest chunk is this many times the median evidence span gets a warning
MAIN_DOCUMENT_SHARE = 0.5  # a document holding the evidence of more of the questions gets a warning


@dataclass(frozen=True)
class Verdict:
    """The computed verdict. Variants are keys; `table` has one row per variant, best mean first:
    [key, variant, mean, ci_low, ci_high, p_best, diff, diff_low, diff_high, p_value, p_holm,
    questions_needed, tied, every cost of COSTS, chunks, truncated_chunks, ..., pareto, trade_off];
    diff* compare each variant with `best` (paired, see stats.against_best), p_best is stats.prob_best.

    `best` has the highest mean (lowest, for a cost): the headline, always. `tied` are the variants
    whose paired difference with it holds 0 (one comparison on its own, like p_value; Holm's p_holm
    corrects for all of them together). `trade_off` is the tied variant, on the Pareto set, that costs
    materially less than `best` in some cost and no more in any (the least context tokens first), if
    any: offered as a trade-off, never as the best."""

    at: MetricAt  # the metric and cut-off judged
    best: str  # the headline: the highest mean
    runner_up: str | None  # the second mean
    tied: tuple[str, ...]  # paired difference with `best` holds 0, best mean first
    trade_off: str | None
    pareto: tuple[str, ...]  # undominated on the metric and every cost, least context tokens first
    questions: int  # how many questions each variant was scored on
    confidence: float  # of every interval, and of the ties
    window: int | None  # the model's input window in word pieces (None: not recorded)
    table: pd.DataFrame
    warnings: tuple[str, ...]  # what to read before trusting a number (see `sweep_warnings`): the last sentences
    notes: tuple[str, ...] = ()  # how some rows came to be (the result's provenance: a route proposed), said too

    @property
    def metric(self) -> str:
        return self.at.name

    @property
    def k(self) -> int:
        """The cut-off k (0 for a verdict at a context budget)."""
        return int(self.at.k or 0)

    def row(self, key: str) -> pd.Series:
        return self.table.set_index("key").loc[key]

    def headline(self) -> str:
        return self.sentences()[0]

    def sentences(self) -> list[str]:
        """The headline, how it compares, the trade-off, what the models cost, then the warnings,
        plain text (the report adds links and markup)."""
        at, b = self.at.label, self.row(self.best)
        most = "lowest" if stats.lower_is_better(self.metric) else "highest"
        out = [f"{b['variant']} has the {most} {at}: {_score(b)}, best in {b['p_best']:.0%} of bootstrap resamples "
               "of the questions."]
        if self.runner_up is None:
            return [*out, "It is the only variant measured, so nothing is compared.", *self.warnings]
        r = self.row(self.runner_up)
        lead, low, high = (0.0 - r[c] for c in ("diff", "diff_high", "diff_low"))  # 0.0 -: no "-0.000"
        gap = (f"{lead:+.3f} over the runner-up {r['variant']} (paired interval [{low:+.3f}, {high:+.3f}] at "
               f"{self.confidence:.0%}, p = {r['p_value']:.3g})")
        if not self.tied:
            out.append(f"It beats every other variant: {gap}.")
        else:
            out.append(f"These {self.questions:,} questions cannot separate {self._tied_set()}: the paired interval "
                       f"of each difference holds 0, so read them as tied, not as equal. The closest: {gap}. "
                       f"{self._separate(r['questions_needed'])}")
        return [*out, *self._trade_off(), *self._model_costs(), *self.notes, *self.warnings]

    def _tied_set(self) -> str:
        """'the top 3: A, B and C' when the tied set is the top of the ranking, else 'it from 2 other
        variants: B and C'."""
        contiguous = set(self.table["key"].iloc[: len(self.tied) + 1]) == {self.best, *self.tied}
        keys = [self.best, *self.tied] if contiguous else list(self.tied)
        names = [str(self.row(k)["variant"]) for k in keys]
        shown = names[:NAMED] + ([f"{len(names) - NAMED} more (the verdict's table)"] if len(names) > NAMED else [])
        listed = ", ".join(shown[:-1]) + f" and {shown[-1]}" if len(shown) > 1 else shown[0]
        if contiguous:
            return f"the top {len(names)}: {listed}"
        return f"it from {len(names)} other variant{'s' * (len(names) > 1)}: {listed}"

    def _separate(self, n: float) -> str:
        """How many questions would tell the best and the runner-up apart, in words."""
        if n == float("inf"):
            return "Their means are equal, so no number of questions would separate them."
        return f"About {n:,.0f} questions would separate those two at this difference (paired test at 0.05, power 0.8)."

    def _trade_off(self) -> list[str]:
        """The trade-off, stated as one: what it saves and how much it could lose."""
        if self.trade_off is None:
            return []
        b, c = self.row(self.best), self.row(self.trade_off)
        loss = abs(float(c["diff_low"] if not stats.lower_is_better(self.metric) else c["diff_high"]))
        saves = [_saving(name, float(c[name]), float(b[name])) for name in COSTS if _material(name, b[name], c[name])]
        return [f"A trade-off, not a better variant: {c['variant']}, tied with it, reaches {c['mean']:.3f} against "
                f"{b['mean']:.3f} with {' and '.join(saves)}; with these questions its loss could be as large as "
                f"{loss:.3f}."]

    def _model_costs(self) -> list[str]:
        """What the variants the verdict names spend in model time, when any does: never silent."""
        named = [k for k in dict.fromkeys([self.best, self.runner_up, self.trade_off, *self.tied]) if k]
        out = []
        for column, what in (("query_seconds", "s of model time per question"),
                             ("index_seconds", "s of model time to build its index")):
            spend = [(str(self.row(k)["variant"]), float(self.row(k)[column])) for k in named]
            if any(s > 0 for _, s in spend):
                parts = [f"{name} {s:,.2f}" if s else f"{name} none" for name, s in spend[:NAMED]]
                out.append(f"Model cost: {'; '.join(parts)} {what}.")
        return out


def _score(row: pd.Series) -> str:
    return f"{row['mean']:.3f} [{row['ci_low']:.3f}, {row['ci_high']:.3f}]"


def _material(name: str, a: float, b: float) -> bool:
    """Whether costs a and b differ materially (stats.pareto_set's rule)."""
    return abs(a - b) > max(COSTS[name][1], stats.MATERIAL * max(a, b))


def _saving(name: str, cheap: float, dear: float) -> str:
    """'50% fewer context tokens per question' / 'no model seconds per question instead of 22.70'."""
    what = COSTS[name][2]
    if cheap == 0:
        return f"no {what} instead of {dear:,.2f}"
    return f"{1 - cheap / dear:.0%} fewer {what} ({cheap:,.0f} against {dear:,.0f})"


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


def fallback_warning(variants: pd.DataFrame, documents: int | None) -> str | None:
    """One sentence naming the variants whose strategy chunks some documents other than it is meant to
    (markdown on source code, code on prose: the variants table's fallback_documents and examples), with
    what to do; None when none does, or for a result measured before they were counted."""
    if "fallback_documents" not in variants.columns:
        return None
    over = variants[variants["fallback_documents"].fillna(0) > 0]
    if over.empty:
        return None
    of = f" of {documents:,}" if documents else ""
    named = "; ".join(f"{r.variant}: {int(r.fallback_documents):,}{of}, e.g. {r.fallback_examples}"
                      for r in over.head(NAMED).itertuples(index=False))
    more = f" and {len(over) - NAMED} more variants" if len(over) > NAMED else ""
    return (f"Warning: {len(over)} of {len(variants)} variants chunk some documents other than their strategy is "
            f"meant to ({named}{more}); give each kind of document its own strategy with route "
            "(route:code=code(size=256),text=markdown(size=256)).")


def sweep_warnings(variants: pd.DataFrame, provenance: Provenance) -> list[str]:
    """Every warning to read before trusting a number of these variants, each one sentence: chunks
    embedded truncated, documents a strategy does not read as meant, evidence much shorter than every
    chunk, most questions on one document. The verdict ends with them; the CLI, report and widgets show
    them through here."""
    found = (truncation_warning(variants, provenance.window),
             fallback_warning(variants, provenance.dataset.documents),
             evidence_warning(variants, provenance.dataset.evidence_chars), document_warning(provenance.dataset))
    return [w for w in found if w]


def verdict(result: SweepResult, metric: str | MetricAt = "recall", k: int | None = None, budget: int = 0,
            n_resamples: int = 2000, cache: str | Path | None = None) -> Verdict:
    """The verdict on `metric` at k (default: the result's default_k) or at a context `budget`;
    `metric` may name its cut-off itself ("recall@budget=1024", a MetricAt). Its ties are judged at
    the result's confidence; `cache`: a cache folder, where the paired comparisons of the same
    scores are read back (stats.against_best). SweepResult.verdict is this with the sweep's cache."""
    at = metric if isinstance(metric, MetricAt) else MetricAt.parse(metric)
    at = MetricAt(at.name, k, budget) if k is not None or budget else at
    at = at.at(result.default_k)
    pq = result.per_question
    known = set(pq["metric"].unique())  # not set(pq["metric"]): a Python loop over every row of the scores
    if at.name not in known:
        raise ValueError(f"metric {at.name!r} not in the result; known: {sorted(known)}")
    means = at.rows(result.summary)
    if means.empty:
        raise ValueError(f"no {at.label} in the result; swept ks: {result.ks}, budgets: {result.budgets}")
    lower, kk = stats.lower_is_better(at.name), at.k or 0
    table = means[["key", "variant", "mean", "ci_low", "ci_high"]].sort_values("mean", ascending=lower, kind="stable")
    p_best = stats.prob_best(pq, at.name, kk, n_resamples, higher_is_better=not lower, budget=at.budget)
    table = table.assign(p_best=table["key"].map(p_best))
    compared = ["key", "diff", "ci_low", "ci_high", "p_value", "p_holm", "questions_needed"]
    pairs = (stats.against_best(pq, at.name, kk, n_resamples, confidence=result.confidence, cache=cache,
                                budget=at.budget) if len(table) > 1 else pd.DataFrame(columns=compared))
    pairs = pairs[compared].rename(columns={"ci_low": "diff_low", "ci_high": "diff_high"})
    table = table.merge(pairs, on="key", how="left").assign(tied=lambda t: (t["diff_low"] <= 0) & (t["diff_high"] >= 0))
    table = _with_costs(table, result, at)
    best = str(table["key"].iloc[0])
    table.loc[table["key"] == best, ["diff", "diff_low", "diff_high", "tied"]] = (0.0, 0.0, 0.0, False)
    table["tied"] = table["tied"].astype(bool)
    front = stats.pareto_set(list(table["mean"] * (-1 if lower else 1)), table[list(COSTS)].to_numpy(float),
                             [floor for _, floor, _ in COSTS.values()])
    table["pareto"] = [i in front for i in range(len(table))]
    table["trade_off"] = False
    trade_off = _trade_off(table, best)
    if trade_off is not None:
        table.loc[table["key"] == trade_off, "trade_off"] = True
    pareto = table[table["pareto"]].sort_values([COST, "mean"], ascending=[True, lower], kind="stable")["key"]
    window = result.provenance.window
    return Verdict(at, best, str(table["key"].iloc[1]) if len(table) > 1 else None,
                   tuple(table.loc[table["tied"], "key"]), trade_off, tuple(pareto),
                   int(at.rows(pq)["qid"].nunique()), result.confidence, int(window) if window else None,
                   table.reset_index(drop=True), tuple(sweep_warnings(table, result.provenance)),
                   result.provenance.notes)


def _with_costs(table: pd.DataFrame, result: SweepResult, at: MetricAt) -> pd.DataFrame:
    """`table` with every cost of COSTS (context tokens at the verdict's cut-off, from the summary; the
    others from the variants table, 0 where it has no such column) and the variants table's counts."""
    sent = "context_tokens" if result.provenance.settings.budget_encoding == "cl100k_base" or not at.budget else (
        "context_tokens_o200k")
    cost = MetricAt(sent, at.k, at.budget).rows(result.summary).set_index("key")["mean"]
    variants = result.variants.set_index("key")
    columns = {COST: table["key"].map(cost)}
    for name, (sources, _, _) in COSTS.items():
        if sources:
            present = [s for s in sources if s in variants.columns]
            summed = variants[present].fillna(0).sum(axis=1) if present else pd.Series(0.0, index=variants.index)
            columns[name] = table["key"].map(summed).fillna(0.0).astype(float)
    counts = [c for c in ("chunks", "truncated_chunks", "tokens_embedded", "min_chunk_chars", "retriever",
                          "fallback_documents", "fallback_examples") if c in variants.columns]
    return table.assign(**columns).join(variants[counts], on="key")


def _trade_off(table: pd.DataFrame, best: str) -> str | None:
    """The tied variant on the Pareto set that costs materially less than `best` in some cost and
    materially more in none, the least context tokens first (then the best mean); None if there is none."""
    b = table.set_index("key").loc[best]
    cheaper = [r.key for r in table[table["tied"] & table["pareto"]].itertuples(index=False)
               if any(_material(c, getattr(r, c), b[c]) and getattr(r, c) < b[c] for c in COSTS)
               and not any(_material(c, getattr(r, c), b[c]) and getattr(r, c) > b[c] for c in COSTS)]
    if not cheaper:
        return None
    ordered = table[table["key"].isin(cheaper)].sort_values(COST, kind="stable")
    return str(ordered["key"].iloc[0])
