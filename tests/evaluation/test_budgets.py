"""Equal context budgets: hand-computed packing cases, then a real tiny sweep and its figures."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import fakemodel
import numpy as np
import pandas as pd
import pytest

from workbench.core.tokens import TiktokenTokenizer
from workbench.dataset import Dataset, Hit, Question, Span
from workbench.evaluation.metrics import pack, score_budgets
from workbench.figures import plots
from workbench.models.embed import Embedder
from workbench.results.combine import combine
from workbench.results.result import SweepResult
from workbench.retrieval.index import IndexStore
from workbench.retrieval.search import search
from workbench.run.session import sweep
from workbench.variant import Variant

# evidence [10, 20) of doc d; A covers half of it, B the other half, C none
QUESTION = Question("q", "?", (Span("d", 10, 20),))
A = Hit(Span("d", 0, 15), 0.9, 0, {"cl100k_base": 100, "o200k_base": 90})
B = Hit(Span("d", 15, 40), 0.8, 1, {"cl100k_base": 300, "o200k_base": 280})
C = Hit(Span("d", 40, 50), 0.7, 2, {"cl100k_base": 10, "o200k_base": 9})


def scores(budgets: list[int], ranked: list[Hit], encoding: str = "cl100k_base") -> pd.DataFrame:
    rows = score_budgets([QUESTION], [ranked], budgets, encoding)
    assert (rows["k"] == 0).all()
    return rows.pivot(index="budget", columns="metric", values="value")


def test_exact_fit_and_the_unit_that_does_not_fit_is_dropped_and_stops_packing() -> None:
    s = scores([100, 399, 400], [A, B, C])
    # 100: A fits exactly: 5 of 10 evidence chars, 5 of 15 retrieved, IoU 5 / (15 + 10 - 5)
    assert s.loc[100].to_dict() == {"context_tokens": 100, "hit": 1, "iou": 0.25, "precision": 5 / 15, "recall": 0.5}
    # 399: B (300) would exceed it: dropped, not cut; C (10) would fit but packing has stopped
    assert s.loc[399].to_dict() == s.loc[100].to_dict()
    assert pack([A, B, C], 399) == [A]
    # 400: A and B exactly: all the evidence, 10 of 40 characters
    assert s.loc[400, "recall"] == 1 and s.loc[400, "context_tokens"] == 400 and s.loc[400, "precision"] == 10 / 40


def test_a_budget_smaller_than_every_unit_sends_nothing() -> None:
    s = scores([9, 50], [A, B, C])
    assert (s[["recall", "hit", "precision", "iou", "context_tokens"]] == 0).all().all()
    assert pack([C], 9) == [] and pack([C], 10) == [C]


def test_o200k_budgets_count_o200k_tokens() -> None:
    s = scores([90, 370, 378], [A, B, C], "o200k_base")
    assert "context_tokens" not in s.columns
    assert s["context_tokens_o200k"].to_dict() == {90: 90, 370: 90 + 280, 378: 90 + 280}  # C (9) misses 378 by 1
    with pytest.raises(ValueError, match="budget encoding"):
        score_budgets([QUESTION], [[A]], [100], "p50k_base")
    with pytest.raises(ValueError, match="budgets must be"):
        score_budgets([QUESTION], [[A]], [0])


BUDGETS = (16, 32, 64, 128)
VARIANTS = [Variant.make("fixed", size=24),
            Variant.make("parent_child", child="fixed", child_size=8, parent="fixed", parent_size=48)]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("budgets")


@pytest.fixture(scope="module")
def result(tiny: Dataset, fake_embedder: Embedder, store: Path) -> SweepResult:
    return sweep(tiny, VARIANTS, ks=(1, 3), embedder=fake_embedder, store=IndexStore(store), progress=False,
                 budgets=BUDGETS)


def test_budget_rows_for_every_variant_and_budget_and_recall_grows_with_the_budget(
    result: SweepResult, tiny: Dataset
) -> None:
    pq = result.per_question
    rows = pq[pq["budget"] > 0]
    assert (rows["k"] == 0).all() and (pq.loc[pq["k"] > 0, "budget"] == 0).all()
    counts = rows.groupby(["key", "budget", "metric"]).size()
    assert set(counts) == {len(tiny.questions)}
    assert set(counts.index) == {(fakemodel.key(v), b, m) for v in VARIANTS for b in BUDGETS
                                 for m in ("recall", "recall_tokens", "hit", "precision", "iou", "context_tokens")}
    recall = rows[rows["metric"] == "recall"].pivot(index=["key", "qid"], columns="budget", values="value")
    assert (recall.diff(axis=1).iloc[:, 1:] >= 0).all().all()
    assert recall[BUDGETS[0]].mean() < recall[BUDGETS[-1]].mean()  # the budgets do bind on this corpus
    sent = rows[rows["metric"] == "context_tokens"]
    assert (sent["value"] <= sent["budget"]).all()
    s = result.summary
    assert len(s[s["budget"] > 0]) == len(counts) and result.budgets == list(BUDGETS)


def test_parents_are_counted_once(result: SweepResult, tiny: Dataset, fake_embedder: Embedder, store: Path) -> None:
    """The tokens sent at each budget are those of distinct parents, packed in rank order,
    recounted here from the text."""
    v = VARIANTS[1]
    index = IndexStore(store).get(v, tiny, fake_embedder)
    qvecs = fake_embedder.encode([q.question for q in tiny.questions])
    enc = TiktokenTokenizer("cl100k_base")
    pq = result.per_question
    sent = pq[(pq["key"] == fakemodel.key(v)) & (pq["metric"] == "context_tokens") & (pq["budget"] > 0)]
    sent = sent.set_index(["qid", "budget"])["value"]
    for q, hits in zip(tiny.questions, search(index, tiny.questions, qvecs, len(index.chunks)), strict=True):
        sizes = [enc.count(tiny.docs[h.span.doc_id].text[h.span.start:h.span.end]) for h in hits]
        assert len({h.span for h in hits}) == len(hits)
        for b in BUDGETS:
            total = np.cumsum(sizes)
            assert sent[(q.qid, b)] == (total[total <= b][-1] if total[0] <= b else 0)


def test_per_k_numbers_do_not_change_with_budgets(result: SweepResult, tiny: Dataset, fake_embedder: Embedder,
                                                  store: Path) -> None:
    plain = sweep(tiny, VARIANTS, ks=(1, 3), embedder=fake_embedder, store=IndexStore(store), progress=False,
                  budgets=())
    assert (plain.per_question["budget"] == 0).all() and plain.budgets == []
    with_budgets = result.per_question[result.per_question["budget"] == 0].reset_index(drop=True)
    pd.testing.assert_frame_equal(with_budgets, plain.per_question)
    pd.testing.assert_frame_equal(result.summary[result.summary["budget"] == 0].reset_index(drop=True),
                                  plain.summary)
    with pytest.raises(ValueError, match="budgets"):
        combine([result, plain])
    assert not plots.has_budgets(plain) and len(plots.overview(plain).axes) == 3
    with pytest.raises(ValueError, match="no budget rows"):
        plots.budget_curves(plain)


def test_overview_fourth_panel_and_budget_curves(result: SweepResult) -> None:
    recall = result.summary[(result.summary["metric"] == "recall") & (result.summary["budget"] > 0)]
    for fig in (plots.overview(result), plots.budget_curves(result)):
        ax = fig.axes[-1]
        assert ax.get_xscale() == "log" and len(ax.collections) == len(VARIANTS)  # one CI band each
        for line, v in zip(ax.get_lines(), VARIANTS, strict=True):
            mine = recall[recall["key"] == fakemodel.key(v)].sort_values("budget")
            np.testing.assert_allclose(line.get_xdata(), BUDGETS)
            np.testing.assert_allclose(line.get_ydata(), mine["mean"])
        (ring,) = [a for a in plots.mark(fig, fakemodel.key(VARIANTS[1])) if a.axes is ax]
        mine = recall[recall["key"] == fakemodel.key(VARIANTS[1])].sort_values("budget")
        np.testing.assert_allclose(ring.get_ydata(), mine["mean"])
    iou = plots.budget_curves(result, "iou").axes[0]
    assert iou.get_title() == "iou at equal budgets"
