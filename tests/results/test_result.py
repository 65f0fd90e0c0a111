"""A result answers its readers once: its confidence, default cut-off, ranking, ties and verdict, from
its typed provenance, which saves and loads as the config.json every earlier release wrote."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import REPO

from workbench.dataset import Dataset
from workbench.evaluation import stats
from workbench.evaluation.settings import Settings
from workbench.results.combine import combine
from workbench.results.gate import compare
from workbench.results.provenance import DatasetIdentity, ModelInfo, Provenance
from workbench.results.result import SweepResult
from workbench.results.verdict import sweep_warnings
from workbench.run.session import sweep
from workbench.variant import Variant

OLD = REPO / "tests" / "data" / "cache_eca49dc" / "result"  # saved by commit eca49dc, before `models` and counts


def scored(confidence: float, shift: int = 0, n: int = 60) -> SweepResult:
    """Two variants 0.2 apart in recall@5 on n questions, each finding what the other misses (too few to
    be sure at 95%: the paired interval is about +-0.25), summarised and judged at `confidence`, with the
    provenance a sweep writes; `shift` moves a's answers to other questions."""
    a = np.roll(np.r_[np.ones(36), np.zeros(n - 36)], shift)
    recall = {"a": a, "b": np.r_[np.zeros(36), np.ones(n - 36)]}
    rows = [(f"key-{v}", v, "m", f"q{i:03d}", 5, 0, metric, float(x) if metric == "recall" else 100.0)
            for v, xs in recall.items() for i, x in enumerate(xs) for metric in ("recall", "context_tokens")]
    pq = pd.DataFrame(rows, columns=["key", "variant", "model", "qid", "k", "budget", "metric", "value"])
    variants = pd.DataFrame({"key": ["key-a", "key-b"], "variant": ["a", "b"], "model": ["m", "m"]})
    provenance = Provenance(DatasetIdentity("d", "f" * 16, questions=n), (ModelInfo("m", "0" * 16, window=256),),
                            Settings(ks=(1, 5), budgets=(), confidence=confidence))
    return SweepResult(pq, stats.summarize(pq, confidence=confidence), variants, provenance)


def test_the_verdict_and_the_gate_judge_ties_at_the_confidence_the_result_was_swept_with() -> None:
    """The bug this pins: a sweep at confidence=0.5 printed 50% intervals while the verdict and the gate
    judged ties at 95%."""
    for confidence in (0.5, 0.95):
        result = scored(confidence)
        pair = stats.paired_compare(result.per_question, "key-a", "key-b", "recall", 5, confidence=confidence,
                                    n_resamples=2000)
        row = result.verdict().row("key-b")
        assert (row["diff_low"], row["diff_high"]) == pytest.approx((pair["ci_low"], pair["ci_high"]))
        later = scored(confidence, shift=5)  # the same variants measured again, a finding other answers
        gated = compare(result, later).set_index("key").loc["key-a"]
        rows = [r.per_question[r.per_question["key"] == "key-a"].assign(key=name)
                for r, name in ((result, "baseline"), (later, "current"))]
        same = stats.paired_compare(pd.concat(rows), "baseline", "current", "recall", 5, confidence=confidence)
        assert (gated["ci_low"], gated["ci_high"]) == pytest.approx((same["ci_low"], same["ci_high"]))
        assert same["ci_high"] - same["ci_low"] > 0
    wide, narrow = scored(0.95).verdict(), scored(0.5).verdict()
    assert wide.tied == ("key-b",) and narrow.tied == ()  # 60 questions cannot tell 0.2 apart at 95%; at 50% they can
    assert narrow.row("key-b")["diff_high"] - narrow.row("key-b")["diff_low"] < (
        wide.row("key-b")["diff_high"] - wide.row("key-b")["diff_low"])


def test_the_default_cut_off_and_ranking_come_from_the_swept_ks() -> None:
    result = scored(0.95)
    assert result.default_k == 5 and result.ks == [1, 5] and result.confidence == 0.95
    assert list(result.ranking()["key"]) == ["key-a", "key-b"] == list(result.ties()["key"])
    three = replace(result, provenance=result.provenance.with_(settings=Settings(ks=(1, 3), budgets=())))
    assert three.default_k == 3  # 5 was not swept: the largest k that was
    with pytest.raises(ValueError, match=r"no 'recall' at k=3 in the result"):
        three.ranking()


def test_a_saved_result_loads_with_the_same_provenance_and_config(tmp_path: Path) -> None:
    result = scored(0.8)
    result.provenance = result.provenance.with_(grid=({"strategy": "fixed", "params": {"size": 64}},),
                                                command="python -m workbench sweep")
    result.save(tmp_path / "r")
    loaded = SweepResult.load(tmp_path / "r")
    assert loaded.provenance == result.provenance
    assert json.loads((tmp_path / "r" / "config.json").read_text())["confidence"] == 0.8
    assert loaded.verdict().row("key-b")["diff_low"] == pytest.approx(result.verdict().row("key-b")["diff_low"])


def test_the_config_of_an_older_release_reads_and_writes_back_the_same_fields() -> None:
    """eca49dc's config.json has one model at the top level, no `models`, no evidence or document counts."""
    old = json.loads((OLD / "config.json").read_text())
    assert "models" not in old and "main_document" not in old
    p = Provenance.from_config(old)
    assert p.models == (ModelInfo("all-MiniLM-L6-v2", old["model_fingerprint"], "torch", None),)
    assert (p.settings.ks, p.settings.budgets, p.confidence, p.default_k) == ((1, 5), tuple(old["budgets"]), 0.95, 5)
    assert p.dataset.main_document is None and p.window is None
    again = p.config()
    assert {k: again[k] for k in old} == old  # every field it had, as it had it
    assert sweep_warnings(pd.DataFrame({"key": ["x"], "variant": ["x"]}), p) == []  # no count, so no warning on it


def test_combine_names_the_setting_that_differs() -> None:
    with pytest.raises(ValueError, match=r"cannot combine results with different confidence: 0.95 vs 0.5"):
        combine(scored(0.95), scored(0.5))
    other = scored(0.95)
    other.provenance = other.provenance.with_(dataset=replace(other.provenance.dataset, fingerprint="e" * 16))
    with pytest.raises(ValueError, match="different dataset_fingerprint"):
        combine(scored(0.95), other)


def test_a_variant_finds_its_row_whatever_model_measured_it(tiny: Dataset, tmp_path: Path) -> None:
    """Rows of any model but the bundled one carry its hash after the variant key: a Variant (or its key)
    still names its row, and names which keys to give when several models measured it."""
    import fakemodel

    def reversed_words(texts: list[str]) -> np.ndarray:  # a second model: the same vectors, columns reversed
        return fakemodel.hashed_words(texts)[:, ::-1].copy()

    a, b = Variant.make("fixed", size=20), Variant.make("fixed", size=40)
    one = sweep(tiny, [a, b], ks=(1,), models=[fakemodel.hashed_words], store=tmp_path, progress=False)
    assert one.key_of(b) == one.key_of(b.key) == fakemodel.key(b) != b.key
    two = sweep(tiny, [a], ks=(1,), models=[fakemodel.hashed_words, reversed_words], store=tmp_path, progress=False)
    with pytest.raises(ValueError, match=r"measured with 2 models: give one of the keys \['"):
        two.key_of(a)
    with pytest.raises(ValueError, match="is not in the result"):
        one.key_of(Variant.make("fixed", size=60))
