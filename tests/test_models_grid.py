"""Embedding models as a grid dimension: all-MiniLM-L6-v2 and WordLlama (both real, offline) and a
plain encode function swept in one result, combined across runs, compared paired, drawn and run by the CLI."""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

import matplotlib.image
import numpy as np
import pandas as pd
import pytest
from conftest import write_dataset

from workbench.cli import main
from workbench.dataset import Dataset
from workbench.evaluation import stats
from workbench.figures import plots
from workbench.models.choose import embedder_of
from workbench.models.static import FunctionEmbedder, WordLlamaEmbedder
from workbench.report.figures import default_figures
from workbench.results.combine import combine
from workbench.results.result import SweepResult
from workbench.run.session import sweep
from workbench.variant import Variant, grid

GRID = grid("fixed", size=[16, 32, 64])
MODELS = [None, "wordllama"]


def trigram_vectors(texts: list[str]) -> np.ndarray:
    """A real, if crude, encode function: hashed character trigrams, 64 dimensions."""
    out = np.zeros((len(texts), 64), dtype=np.float32)
    for row, text in enumerate(texts):
        for i in range(max(len(text) - 2, 0)):
            out[row, hashlib.md5(text[i : i + 3].lower().encode()).digest()[0] % 64] += 1
    return out


@pytest.fixture(scope="module")
def both(tiny: Dataset, tmp_path_factory: pytest.TempPathFactory) -> tuple[SweepResult, Path]:
    cache = tmp_path_factory.mktemp("models-cache")
    return sweep(tiny, GRID, models=MODELS, store=cache, ks=(1, 3), budgets=(), progress=False), cache


@pytest.mark.model
def test_one_result_holds_every_model(both: tuple[SweepResult, Path]) -> None:
    result, _ = both
    v = result.variants
    assert list(v["model"]) == ["all-MiniLM-L6-v2"] * 3 + ["wordllama"] * 3
    assert len(set(result.keys)) == 6
    assert list(v["key"][:3]) == [g.key for g in GRID]  # the default model keeps the variant keys (torch or onnx)
    assert all(k.startswith(f"{g.key}@") for k, g in zip(v["key"][3:], GRID, strict=True))
    assert list(v["variant"]) == [f"{g.label} · {m}" for m in ("all-MiniLM-L6-v2", "wordllama") for g in GRID]
    for table in (result.per_question, result.summary, result.hits):
        assert set(table["model"]) == {"all-MiniLM-L6-v2", "wordllama"}
        assert dict(zip(table["key"], table["model"], strict=False)) == dict(zip(v["key"], v["model"], strict=True))
    assert [m.name for m in result.provenance.models] == ["all-MiniLM-L6-v2", "wordllama"]
    assert result.provenance.models[0].window > 0 and result.provenance.models[1].window is None
    assert result.provenance.model is None and "model_fingerprint" not in result.provenance.config()
    assert result.variant(v["key"].iloc[4]) == GRID[1]  # a (variant, model) key gives its variant back
    scores = result.hits.groupby("model")["score"].apply(list)
    assert scores["all-MiniLM-L6-v2"] != pytest.approx(scores["wordllama"])  # two models, two sets of vectors


@pytest.mark.model
def test_combine_of_single_model_runs_equals_the_two_model_run(tiny: Dataset, both: tuple[SweepResult, Path]) -> None:
    result, cache = both
    singles = [sweep(tiny, GRID, models=[m], store=cache, ks=(1, 3), budgets=(), progress=False) for m in MODELS]
    assert singles[1].provenance.model.name == "wordllama" and "model_fingerprint" in singles[1].provenance.config()
    joined = combine(singles)
    cols = ["key", "variant", "model", "qid", "k", "metric", "value"]
    pd.testing.assert_frame_equal(joined.per_question[cols], result.per_question[cols])
    assert joined.labels == result.labels and joined.provenance.models == result.provenance.models


@pytest.mark.model
def test_paired_comparison_across_models(both: tuple[SweepResult, Path], tiny: Dataset) -> None:
    result, _ = both
    a, b = result.keys[1], result.keys[4]  # fixed(size=32) with each model
    out = stats.paired_compare(result.per_question, a, b, "recall", 3, n_resamples=999)
    assert out["n"] == len(tiny.questions)
    means = result.summary.query("metric == 'recall' and k == 3").set_index("key")["mean"]
    assert out["diff"] == pytest.approx(means[b] - means[a])


@pytest.mark.model
def test_the_top_rows_say_their_model(both: tuple[SweepResult, Path]) -> None:
    """`ranking` has a row per (variant, model), best first, naming its model; `top` gives each variant
    once, at the rank of its best row, as the Variants a real sweep of the same models takes."""
    result, _ = both
    ranked = result.ranking("recall", k=3)
    recall = result.summary.query("metric == 'recall' and k == 3")
    assert len(ranked) == len(result.keys) == 6 and set(ranked["key"]) == set(result.keys)
    assert ranked["mean"].is_monotonic_decreasing and ranked["mean"].nunique() > 1
    assert dict(zip(ranked["key"], ranked["model"], strict=True)) == dict(zip(recall["key"], recall["model"],
                                                                             strict=True))
    top = result.top(6, "recall", k=3)
    assert sorted(v.key for v in top) == sorted(g.key for g in GRID)  # each variant once, whichever model
    first_rows = [next(key for key in ranked["key"] if key.startswith(v.key)) for v in top]
    assert first_rows == sorted(first_rows, key=list(ranked["key"]).index)  # in the order of their best rows
    assert result.top(1, "recall", k=3)[0].key == ranked["key"][0].partition("@")[0]
    cost = result.ranking("context_tokens", k=3)
    assert cost["mean"].is_monotonic_increasing and cost["mean"].iloc[0] < cost["mean"].iloc[-1]


@pytest.mark.model
def test_which_chunking_for_which_model_plot(both: tuple[SweepResult, Path]) -> None:
    result, _ = both
    fig = plots.by_model(result, k=3)
    assert [ax.get_title() for ax in fig.axes] == ["all-MiniLM-L6-v2", "wordllama"]
    assert all(len(ax.lines) == 2 for ax in fig.axes)  # fixed's line and the best's star
    png = plots.figure_to_png_bytes(fig, dpi=40)
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and matplotlib.image.imread(io.BytesIO(png)).shape[1] > 100
    assert "by_model" in default_figures(result)  # so the report shows it
    with pytest.raises(ValueError, match="two models or more"):
        plots.by_model(_one_model(result))


def _one_model(result: SweepResult) -> SweepResult:
    keep = result.keys[:3]
    pick = [t[t["key"].isin(keep)] for t in (result.per_question, result.summary, result.variants, result.hits)]
    return SweepResult(pick[0], pick[1], pick[2], result.provenance, pick[3])


@pytest.mark.model
def test_each_model_has_its_own_window_and_tokenizer(long_log: Dataset, tmp_path: Path) -> None:
    variants = [Variant.make("fixed", size=300), Variant.make("fixed", size=40, tokenizer="model")]
    r = sweep(long_log, variants, models=MODELS, store=tmp_path, ks=(1,), budgets=(), progress=False)
    v = r.variants.set_index(["size", "model"])
    assert v.loc[(300, "all-MiniLM-L6-v2"), "truncated_chunks"] > 0
    assert v.loc[(300, "wordllama"), "truncated_chunks"] == 0  # WordLlama truncates nothing
    assert v.loc[(40, "all-MiniLM-L6-v2"), "chunks"] != v.loc[(40, "wordllama"), "chunks"]  # word pieces vs its tokens


@pytest.mark.model
def test_a_function_is_a_model(tiny: Dataset, tmp_path: Path) -> None:
    r = sweep(tiny, GRID[:2], models=[trigram_vectors, "wordllama"], store=tmp_path, ks=(1, 3), budgets=(),
              progress=False)
    assert set(r.variants["model"]) == {"trigram_vectors", "wordllama"}
    assert sorted(v.key for v in r.top(2, k=3)) == sorted(g.key for g in GRID[:2])  # no row has a bare variant key
    fn = embedder_of(trigram_vectors, tmp_path)
    assert isinstance(fn, FunctionEmbedder) and fn.dim == 64 and fn.spec()["arguments"]["encode"].endswith(
        ":trigram_vectors")
    assert FunctionEmbedder(lambda texts: trigram_vectors(texts) + 1).fingerprint != fn.fingerprint
    with pytest.raises(ValueError, match="a plain encode function has none"):
        sweep(tiny, [Variant.make("fixed", size=16, tokenizer="model")], models=[trigram_vectors], store=tmp_path,
              progress=False)
    with pytest.raises(ValueError, match="sentence-transformers models only"):
        embedder_of("wordllama", tmp_path, backend="onnx")
    assert WordLlamaEmbedder(cache_dir=None).fingerprint == embedder_of("wordllama", None).fingerprint


def test_a_hub_name_is_still_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="nor a hub name in the Hugging Face cache; nothing is downloaded here"):
        embedder_of("sentence-transformers/all-mpnet-base-v2", tmp_path)


@pytest.mark.model
def test_cli_sweeps_two_models(tiny: Dataset, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = write_dataset(tiny, tmp_path / "data")
    main(["sweep", "--data", str(data), "--out", str(tmp_path / "out"), "--cache", str(tmp_path / "cache"),
          "-v", "fixed:size=16", "-v", "fixed:size=32", "--ks", "1", "3", "--model", "default", "--model", "wordllama"])
    assert "models all-MiniLM-L6-v2, wordllama" in capsys.readouterr().out
    saved = SweepResult.load(tmp_path / "out")
    assert list(saved.variants["model"]) == ["all-MiniLM-L6-v2"] * 2 + ["wordllama"] * 2
    assert (tmp_path / "out" / "by_model.png").exists()
