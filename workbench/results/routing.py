"""When the folders of a corpus disagree on the best chunking, the route built from their winners.

Why: "By folder" often shows one chunking best on the documentation and another on the code, while
the verdict can name one variant for the whole corpus. `propose_route` builds the variant that gives
each folder its winner (chunkers/route.py: one rule per folder), for the caller to measure like any
other (the CLI does, then says so). Its members were chosen on the same questions it is then scored
on, so its score leans optimistic, and its note says so.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

from workbench.chunkers import get_strategy
from workbench.chunkers.route import label
from workbench.dataset import MIXED, Dataset
from workbench.evaluation import stats
from workbench.evaluation.metrics import MetricAt
from workbench.variant import Variant

if TYPE_CHECKING:
    from workbench.results.result import SweepResult

MIN_QUESTIONS = 5  # a folder with fewer questions names no winner of its own


@dataclass(frozen=True)
class Proposal:
    """A route of the per-folder winners: the variant, each folder's winner (label) and what to say of it."""

    variant: Variant
    winners: dict[str, str]  # folder -> the winning chunking's label
    note: str


def propose_route(result: SweepResult, dataset: Dataset, metric: MetricAt | str = "recall") -> Proposal | None:
    """The route giving each folder (of MIN_QUESTIONS questions or more) the chunking that scores best
    on its questions, when two folders' winners chunk differently; it retrieves as the overall best
    variant does. None when they agree, when the dataset has no folders (or groups by a `group` field),
    or when a winner is not a plain strategy (an LLM's, a route, or one with +header, +late, +context)."""
    at = (metric if isinstance(metric, MetricAt) else MetricAt.parse(metric)).at(result.default_k)
    if dataset.grouping != "prefix" or not result.provenance.about(dataset) or at.name not in set(
            result.summary["metric"]):
        return None
    groups = dataset.groups_of_questions()
    sizes = {g: n for g, n in Counter(groups.values()).items()
             if g != MIXED and n >= MIN_QUESTIONS and _is_folder(g, dataset)}
    if len(sizes) < 2:
        return None
    table = result.by_group(groups, at.name, at.k or 0)
    table = table[table["group"].isin(sizes) & ((table["budget"] == at.budget) if "budget" in table.columns else True)]
    sign = -1 if stats.lower_is_better(at.name) else 1
    best = table.loc[(table["mean"] * sign).groupby(table["group"], sort=False).idxmax()]
    winners = {str(r.group): result.variant(r.key) for r in best.itertuples(index=False)}
    if len({v.chunking_key for v in winners.values()}) < 2 or not all(map(_plain, winners.values())):
        return None
    ranked = at.rows(result.summary).sort_values("mean", ascending=sign < 0, kind="stable")
    overall = result.variant(ranked["key"].iloc[0])
    rules = [[f"folder:{g}", label(v.chunking.label)] for g, v in winners.items()]
    variant = Variant.make("route", rules=rules, retrieval=[(name, dict(params)) for name, params, _ in overall.stages])
    names = ", ".join(f"{g}: {v.chunking.label}" for g, v in winners.items())
    note = (f"{variant.label} gives each folder the chunking that scores best on its questions ({names}), retrieved "
            f"as {overall.label} is; it was measured on the same questions that chose its members, so its "
            f"{at.label} leans optimistic: confirm it on questions it was not chosen on.")
    return Proposal(variant, {g: v.chunking.label for g, v in winners.items()}, note)


def _is_folder(group: str, dataset: Dataset) -> bool:
    """Whether a prefix group is a folder (some doc id lies in it), not a document at the top."""
    return any(d.doc_id.startswith(f"{group}/") for d in dataset.documents)


def _plain(v: Variant) -> bool:
    """A winner a route can take as a member: a strategy and its parameters, nothing around them."""
    return (not v.contextual_header and not v.late and v.context is None and v.strategy != "route"
            and not get_strategy(v.strategy).models)
