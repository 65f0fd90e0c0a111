"""The search (workbench.run.search): its space read and refused, its calibration, refining and budget as
pure functions, and a real search (the bundled model, FAISS) against the exhaustive sweep of its space."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import workbench as wb
from workbench.cli import main
from workbench.dataset import Dataset, Document, Question, Span
from workbench.evaluation import stats
from workbench.run import search as searching
from workbench.run.search import Space, sample_of
from workbench.variant import Variant

REPO = Path(__file__).resolve().parents[1]
SPACE = {"strategies": {"fixed": {"size": "128:384:128", "overlap": [0, 32]}, "recursive": {"size": [128, 384]}},
         "retrievers": ["dense", "bm25"]}


def test_a_space_crosses_each_strategys_own_values_with_the_retrievers_and_modifiers(tmp_path):
    space = Space.of(SPACE)
    labels = [v.label for v in space.variants().variants]
    assert len(labels) == (3 * 2 + 2) * 2
    assert "recursive(size=384, overlap=0)+bm25" in labels
    assert not any(v.strategy == "recursive" and v.kwargs["overlap"] for v in space.variants().variants)
    (tmp_path / "s.yaml").write_text("strategies:\n  sentence: {size: 128}\ncontextual_header: [false, true]\n"
                                     "models: [wordllama]\n")
    from_yaml = Space.of(tmp_path / "s.yaml")
    assert [(v.kwargs["size"], v.contextual_header) for v in from_yaml.variants().variants] == [(128, False),
                                                                                                (128, True)]
    assert from_yaml.models == ("wordllama",)
    assert [v.strategy for v in Space.of({"strategies": ["fixed", "sentence"]}).variants().variants] == [
        "fixed", "sentence"]


@pytest.mark.parametrize(("spec", "message"), [
    ({}, "the space is empty"),
    ({"strategies": {}}, "the space is empty"),
    ({"strategies": {"fixd": {}}}, "unknown 'fixd'"),
    ({"strategies": {"fixed": {"size": "64:32:8"}}}, "parameter 'size'"),
    ({"strategies": {"fixed": {"colour": [1]}}}, "parameter 'colour'"),
    ({"strategies": {"fixed": {"size": [64], "overlap": [64]}}}, "no valid variant"),
    ({"strategies": ["fixed"], "retrievers": []}, "'retrievers' is empty"),
    ({"strategies": ["fixed"], "retriever": ["dense"]}, "unknown key(s) ['retriever']"),
])
def test_a_bad_space_is_refused_naming_what_is_wrong(spec, message):
    with pytest.raises(ValueError, match="^space: .*" + message.replace("(", r"\(").replace(")", r"\)")
                       .replace("[", r"\[").replace("]", r"\]")):
        Space.of(spec)


def test_a_bad_space_file_is_named(tmp_path):
    bad = tmp_path / "space.json"
    bad.write_text('{"strategies": {"fixed": {"size": [64]},}')
    with pytest.raises(ValueError, match=f"^{bad}: not valid JSON"):
        Space.of(bad)
    (tmp_path / "space.yaml").write_text("strategies: [fixed\n")
    with pytest.raises(ValueError, match="space.yaml: not valid YAML"):
        Space.of(tmp_path / "space.yaml")
    with pytest.raises(ValueError, match="no such space file"):
        Space.of(tmp_path / "absent.json")


def test_the_calibration_fits_the_previews_error_as_a_line_in_log_size():
    sizes = pd.Series({"a": 32.0, "b": 64.0, "c": 128.0, "d": 256.0})
    preview = pd.Series({"a": 0.50, "b": 0.60, "c": 0.70, "d": 0.72})
    real = preview + pd.Series({"a": 0.12, "b": 0.08, "c": 0.04, "d": 0.0})  # small chunks undervalued
    shift = searching._calibration(preview, real, sizes, ["a", "b", "c", "d"])
    assert [round(shift(s), 6) for s in sizes] == [0.12, 0.08, 0.04, 0.0]
    assert math.isclose(shift(16.0), 0.16)
    assert searching._residual(preview, real, sizes, ["a", "b", "c", "d"], shift) < 1e-9
    two = searching._calibration(preview, real, sizes, ["a", "d"])  # two sizes: a constant shift
    assert two(32.0) == two(256.0) == pytest.approx(0.06)
    assert searching._calibration(preview, real, sizes, [])(64.0) == 0.0


def test_the_leaders_numbers_are_refined_halfway_to_their_neighbours_in_the_space():
    variants = Space.of({"strategies": {"fixed": {"size": [64, 128, 256], "overlap": [0, 32]}}}).variants().variants
    leader = Variant.make("fixed", size=128, overlap=32)
    got = sorted((v.kwargs["size"], v.kwargs["overlap"]) for v, _ in searching._refined(variants, leader, None))
    assert got == [(96, 32), (128, 16), (192, 32)]
    edge = Variant.make("fixed", size=64, overlap=32)  # halfway to 0 is 16; 64 has no smaller neighbour
    assert sorted((v.kwargs["size"], v.kwargs["overlap"]) for v, _ in searching._refined(variants, edge, None)) == [
        (64, 16), (96, 32)]


class _Model:
    fingerprint = "m"


def test_survivors_are_bought_best_upper_bound_first_and_shared_chunkings_are_free():
    a, b, c = (Variant.make("fixed", size=s) for s in (64, 128, 256))
    a_bm25 = Variant.make("fixed", size=64, retriever="bm25")
    pairs = {"a": (a, _Model), "b": (b, _Model), "c": (c, _Model), "a_bm25": (a_bm25, _Model),
             "a_hybrid": (Variant.make("fixed", size=64, retriever="hybrid"), _Model)}
    upper = pd.Series({"a": 0.05, "b": 0.01, "c": 0.03, "a_bm25": -0.01, "a_hybrid": 0.04})
    chosen, left = searching._within_budget(list(upper.index), upper, pairs, {}, units=1.0, share=0.5)
    assert chosen == ["a", "a_hybrid", "c", "a_bm25"] and left == {"b"}
    measured = {("chunks", b.chunking_key, "m"): 10}  # measured already: free
    chosen, left = searching._within_budget(["b"], upper, pairs, measured, units=0.0, share=0.5)
    assert chosen == ["b"] and not left


def test_semantics_sentence_groups_are_paid_once_at_their_weight_and_counted_in_the_budget():
    cuts = [Variant.make("semantic", breakpoint_percentile=p, contextual_header=h) for p in (80, 90) for h in (0, 1)]
    wide = Variant.make("semantic", breakpoint_percentile=80, buffer_size=2)
    passes = searching._passes([(v, _Model) for v in [*cuts, wide]])
    groups = {p: w for p, w in passes.items() if p[0] == "groups"}
    assert len(passes) == 5 + 2 and sorted(groups.values()) == [3.0, 5.0]  # each sentence in 2b+1 groups
    pairs = {"a": (cuts[0], _Model), "b": (cuts[1], _Model), "f": (Variant.make("fixed", size=64), _Model)}
    upper = pd.Series({"a": 0.05, "b": 0.04, "f": 0.01})
    chosen, left = searching._within_budget(list(upper.index), upper, pairs, {}, units=2.5, share=0.5)
    assert chosen == ["a", "b"] and left == {"f"}  # a: its chunks and groups (4 x 0.5); b only its chunks then


def test_the_sample_holds_every_document_with_evidence_and_as_many_others(chroma_small):
    assert sample_of(chroma_small) is chroma_small  # every document holds evidence
    docs = tuple(Document(f"d{i}", "", f"document {i} says {i * 7} things.") for i in range(30))
    questions = tuple(Question(f"q{i}", "how many?", (Span(f"d{i}", 0, 10),)) for i in range(8))
    data = Dataset("many", docs, questions)
    sample = sample_of(data, seed=1)
    assert {f"d{i}" for i in range(8)} <= set(sample.docs) and len(sample.documents) == 16
    assert sample_of(data, seed=2).docs.keys() != sample.docs.keys()
    few = Dataset("few", docs[:10], questions)  # 2 others: fewer than a sample would hold, so all of it
    assert sample_of(few) is few


@pytest.fixture(scope="module")
def searched(tmp_path_factory):
    """A real search of SPACE on 60 of chroma_small's questions, and the exhaustive sweep of SPACE, one cache."""
    data = wb.load_dataset(REPO / "data" / "chroma_small").select(max_questions=60)
    cache = tmp_path_factory.mktemp("search-cache")
    with wb.Session(data, cache=cache, ks=(5,), budgets=(), progress=False) as session:
        found = session.search(SPACE, k=5, budget=0.6)
        before = session.embedder.stats.embedded
        again = session.sweep([found.variant(found.keys[0])])
        re_embedded = session.embedder.stats.embedded - before
        full = session.sweep(Space.of(SPACE).variants().variants)
    return found, full, again, re_embedded, cache


@pytest.mark.model
def test_the_search_returns_a_result_with_its_race_and_finds_what_the_full_sweep_ties_with_its_top(searched):
    found, full, *_ = searched
    race = found.race
    first = race[race["round"] == 1]
    assert len(first) == len(Space.of(SPACE).variants().variants) and first["stage"].eq("preview").all()
    dropped = race[race["status"] == "dropped"]
    assert dropped["reason"].str.len().gt(0).all()  # every exit says why
    assert set(found.keys) == set(race.loc[race["round"] == race["round"].max(), "key"])
    assert race["texts"].sum() > 0
    best = found.ranking("recall", 5)["key"].iloc[0]
    rows = full.per_question  # a refined variant is not in the full sweep: judged against it with its own rows
    if best not in set(full.keys):
        rows = pd.concat([rows, found.per_question[found.per_question["key"] == best]])
    ties = stats.ranking_ties(rows, "recall", 5)
    assert bool(ties.loc[ties["key"] == best, "tied_with_top"].iloc[0])
    assert found.verdict("recall", 5).best == best


@pytest.mark.model
def test_what_the_search_measured_is_cached_for_a_later_sweep(searched, tmp_path):
    found, _, again, re_embedded, _ = searched
    assert re_embedded == 0
    assert again.summary.merge(found.summary, on=["key", "metric", "k", "budget"])[["mean_x", "mean_y"]].pipe(
        lambda t: np.allclose(t["mean_x"], t["mean_y"]))
    paths = found.save(tmp_path / "out")
    assert paths["race"].name == "race.csv"
    pd.testing.assert_frame_equal(wb.SweepResult.load(tmp_path / "out").race, found.race, check_dtype=False)


@pytest.mark.model
def test_a_search_over_two_models_races_each_candidate_with_its_own_model(searched):
    *_, cache = searched  # MiniLM's measurements are cached there: WordLlama's are the new ones
    data = wb.load_dataset(REPO / "data" / "chroma_small").select(max_questions=60)
    with wb.Session(data, cache=cache, models=[None, "wordllama"], ks=(5,), budgets=(), progress=False) as session:
        found = session.search(SPACE, k=5, budget=0.6)
        full = session.sweep(Space.of(SPACE).variants().variants)
    race = found.race
    first = race[race["round"] == 1]
    assert len(first) == 2 * len(Space.of(SPACE).variants().variants) and first["model"].nunique() == 2
    model_of = first.set_index("key")["model"]
    later = race[race["round"] > 1]
    refined = ~later["key"].isin(model_of.index)  # a refined variant enters in round 2, with its leader's model
    assert later.loc[~refined, "model"].eq(later.loc[~refined, "key"].map(model_of)).all()
    assert later["model"].nunique() == 2  # both models' candidates were measured for real
    rows = full.variants.set_index("key")
    for key, model in found.variants.set_index("key")["model"].items():  # each measured with its own model
        assert key not in rows.index or rows.loc[key, "model"] == model
    best = found.ranking("recall", 5)["key"].iloc[0]
    pq = full.per_question
    if best not in set(full.keys):
        pq = pd.concat([pq, found.per_question[found.per_question["key"] == best]])
    ties = stats.ranking_ties(pq, "recall", 5)
    assert bool(ties.loc[ties["key"] == best, "tied_with_top"].iloc[0])


def test_a_budget_below_one_round_is_refused_before_anything_is_measured(tmp_path):
    data = wb.load_dataset(REPO / "data" / "chroma_small").select(max_questions=20)
    with wb.Session(data, cache=tmp_path, progress=False) as session:
        with pytest.raises(ValueError, match=r"budget 0.1 buys 0.8 of the 8 whole-corpus passes the exhaustive sweep "
                                             r"embeds, below one round \(3.0"):
            session.search(SPACE, budget=0.1)
        assert session.embedder.stats.embedded == 0
        with pytest.raises(ValueError, match="k=7: the session scores at ks"):
            session.search(SPACE, k=7)


@pytest.mark.parametrize(("extra", "message"), [
    (["--space", "absent.json"], "absent.json: no such space file"),
    (["--space", "space.json", "--variant", "fixed"], "--variant and --grid name a sweep's variants"),
    (["--space", "space.json", "--metric", "recall@budget=512"], "a search races on a metric at k"),
])
def test_the_cli_refuses_bad_input_in_one_line(tmp_path, monkeypatch, capsys, extra, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "space.json").write_text(json.dumps(SPACE))
    with pytest.raises(SystemExit) as exit_:
        main(["search", "--data", str(REPO / "data" / "chroma_small"), "--out", str(tmp_path / "out"),
              "--cache", str(tmp_path / "c"), "--quiet", *extra])
    said = str(exit_.value.code) if exit_.value.code != 2 else capsys.readouterr().err.strip().splitlines()[-1]
    assert message in said and "Traceback" not in said


@pytest.mark.model
def test_the_cli_searches_a_space_file_and_writes_the_race_and_the_report(searched, tmp_path, capsys):
    cache = searched[-1]  # the fixture's vectors: only the scoring at the CLI's cut-offs is new
    (tmp_path / "space.yaml").write_text("strategies:\n  fixed: {size: '128:384:128', overlap: [0, 32]}\n"
                                         "  recursive: {size: [128, 384]}\nretrievers: [dense, bm25]\n")
    main(["search", "--space", str(tmp_path / "space.yaml"), "--data", str(REPO / "data" / "chroma_small"),
          "--max-questions", "60", "--ks", "5", "--budgets", "--spend", "0.6", "--cache", str(cache),
          "--out", str(tmp_path / "out")])
    said = capsys.readouterr().out
    assert "searching: a preview of all 16 candidates, then at most 60%" in said
    assert "The race:" in said and "round 1 (preview, 3 documents): 16 scored" in said
    race = pd.read_csv(tmp_path / "out" / "race.csv")
    assert set(race["round"]) >= {1, 2} and (race["status"] == "final").sum() == len(
        wb.SweepResult.load(tmp_path / "out").keys)
    html = (tmp_path / "out" / "report.html").read_text()
    assert '<section id="search"><h2>Search</h2>' in html and 'id="figure-race"' in html
