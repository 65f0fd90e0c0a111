"""The sweeper's decisions without any widget: grid text, runs that stop and resume, what is
redrawn, and the question-by-question comparison."""

from __future__ import annotations

from pathlib import Path

import fakemodel
import pandas as pd
import pytest

from workbench.chunkers import STRATEGIES, register_function
from workbench.dataset import Dataset
from workbench.evaluation import stats
from workbench.evaluation.score_cache import ScoreCache
from workbench.evaluation.settings import Settings
from workbench.models.embed import Embedder
from workbench.results.provenance import Provenance
from workbench.results.result import SweepResult
from workbench.run.grid import MAX_VALUES, GridSpec, hint, parameters, parse_values
from workbench.run.session import Session, sweep
from workbench.variant import Variant
from workbench.widgets.state import Comparison, DrawBudget, Redraw, Restored, ScrubState, SweeperMemory, SweepRun

KS = (1, 3)
SIZE = STRATEGIES["fixed"].params["size"]
PERCENTILE = STRATEGIES["semantic"].params["breakpoint_percentile"]


def quiet(dataset: Dataset, store: Path, embedder: Embedder, settings: Settings | None = None) -> Session:
    """A session as a panel makes one: no progress bars; scored at KS unless `settings` say otherwise."""
    return Session(dataset, settings or Settings(ks=KS), cache=store, embedder=embedder, progress=False)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("state")


def test_values_are_parsed_from_lists_and_inclusive_ranges() -> None:
    assert parse_values("size", "128, 256,512", SIZE) == [128, 256, 512]
    assert parse_values("size", "64:512:64", SIZE) == [64, 128, 192, 256, 320, 384, 448, 512]
    assert parse_values("size", "64:200:64, 512, 64", SIZE) == [64, 128, 192, 512]  # mixed, deduplicated
    assert parse_values("breakpoint_percentile", "80:95:2.5", PERCENTILE) == [80, 82.5, 85, 87.5, 90, 92.5, 95]
    assert parse_values("breakpoint_percentile", "0.1:0.3:0.1", PERCENTILE) == [0.1, 0.2, 0.3]  # stop kept
    assert parse_values("size", " ", SIZE) == []
    assert parse_values("unit", "tokens, chars", STRATEGIES["fixed"].params["unit"]) == ["tokens", "chars"]


@pytest.mark.parametrize("text, message", [
    ("128, abc", r"parameter 'size': 'abc' is not an integer"),
    ("128.5", r"parameter 'size': '128.5' is not an integer"),
    ("64:512", r"parameter 'size': '64:512' is not start:stop:step"),
    ("512:64:64", r"parameter 'size': '512:64:64' needs step > 0 and start <= stop"),
    ("64:512:0", r"needs step > 0"),
    (f"1:{MAX_VALUES + 1}:1", rf"gives {MAX_VALUES + 1} values"),
])
def test_bad_text_names_the_parameter(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_values("size", text, SIZE)


def test_hints_and_parameters_follow_the_schemas() -> None:
    both = parameters(["fixed", "semantic"])
    assert list(both) == [*STRATEGIES["fixed"].params, "breakpoint_percentile", "buffer_size", "min_size",
                          "max_size", "sentences"]
    assert "custom_separators" not in parameters(["recursive"])  # JSON-typed: not swept
    assert hint(SIZE) == "default 256 in [1, inf]; e.g. 128, 256 or 64:512:64"
    assert hint(STRATEGIES["fixed"].params["unit"]) == "default tokens; any of tokens, chars"


def test_a_grid_expands_per_strategy_and_reports_the_skipped_combinations() -> None:
    spec = GridSpec(["fixed", "semantic"], {"size": "16, 32", "overlap": "0:32:16", "breakpoint_percentile": "90, 95"})
    grid = spec.variants()
    fixed = [(16, 0), (32, 0), (32, 16)]  # overlap must stay below size
    assert grid.variants == [*(Variant.make("fixed", size=s, overlap=o) for s, o in fixed),
                             *(Variant.make("semantic", breakpoint_percentile=p) for p in (90, 95))]
    assert len(grid.skipped) == 3 and all("overlap" in reason for reason in grid.skipped)
    assert grid.summary().startswith("5 variants; 3 invalid combination(s) skipped, e.g. fixed: parameter 'overlap'")
    # The default spelled out is the same variant: one key, measured once.
    assert len(GridSpec(["fixed"], {"size": "256, 128, 256"}).variants().variants) == 2
    assert GridSpec(["fixed"], {"size": [256], "overlap": ""}).variants().variants == [Variant.make("fixed")]


def test_retrievers_and_modifiers_are_grid_dimensions_and_header_with_late_is_skipped() -> None:
    sizes = {"size": "16, 32"}
    dense = GridSpec(["fixed"], sizes).variants().variants
    both = GridSpec(["fixed"], sizes, retrievers=("dense", "bm25")).variants()
    assert len(both.variants) == 2 * len(dense) and not both.skipped
    assert both.variants == [Variant.make("fixed", size=s, retriever=r) for s in (16, 32) for r in ("dense", "bm25")]
    assert {v.chunking_key for v in both.variants} == {v.key for v in dense}  # the same chunks and index entries
    assert [v.label for v in both.variants[1::2]] == [v.label + "+bm25" for v in dense]

    mods = GridSpec(["fixed", "semantic"], sizes, contextual_header=(False, True), late=(False, True)).variants()
    per_size = [(h, lt) for h in (False, True) for lt in (False, True) if not (h and lt)]
    assert mods.variants == [*(Variant.make("fixed", size=s, contextual_header=h, late=lt) for s in (16, 32)
                               for h, lt in per_size),
                             *(Variant.make("semantic", contextual_header=h, late=lt) for h, lt in per_size)]
    assert len(mods.skipped) == 3  # one per fixed size, one for semantic
    assert all("contextual_header and late cannot be combined" in reason for reason in mods.skipped)
    assert mods.skipped[0].startswith("fixed: ") and mods.skipped[-1].startswith("semantic: ")
    assert "3 invalid combination(s) skipped, e.g. fixed: contextual_header and late" in mods.summary()


@pytest.mark.parametrize("spec, message", [
    (GridSpec([], {}), "strategies: choose at least one"),
    (GridSpec(["nope"], {}), r"strategies: unknown \['nope'\]"),
    (GridSpec(["fixed"], {"breakpoint_percentile": "90"}), "parameter 'breakpoint_percentile' belongs to none of"),
    (GridSpec(["fixed"], {"size": "0, 128"}), r"fixed: parameter 'size' must be in \[1, inf\], got 0"),
    (GridSpec(["semantic"], {"breakpoint_percentile": "90:110:10"}), "parameter 'breakpoint_percentile' must be in"),
    (GridSpec(["fixed"], {"size": "16", "overlap": "16, 32"}), "no valid variant: all 2 combinations clash"),
    (GridSpec(["fixed"], contextual_header=(True,), late=(True,)), "no valid variant: all 1 combinations clash"),
    (GridSpec(["fixed"], retrievers=()), "retrievers: choose at least one"),
    (GridSpec(["fixed"], retrievers=("dense", "sparse")), r"retrievers: unknown \['sparse'\]"),
    (GridSpec(["fixed"], late=()), "late: give False, True or both"),
    (GridSpec(["fixed"], contextual_header=("yes",)), "contextual_header: give False, True or both"),
])
def test_invalid_grids_say_which_field(spec: GridSpec, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        spec.variants()


def test_a_run_stops_between_variants_and_resumes_without_rerunning(tiny: Dataset, tmp_path: Path) -> None:
    # an empty cache of its own: what the session's other tests embedded must not count here
    embedder, store = fakemodel.embedder(tmp_path), tmp_path
    variants = [Variant.make("fixed", size=s) for s in (12, 24, 40)]
    seen: list[tuple[int, float | None, list[float]]] = []

    def stop_after_first(run: SweepRun) -> None:
        seen.append((run.done, run.seconds_left, list(run.step_seconds)))
        run.stop()

    before = (embedder.stats.embedded, embedder.stats.cached)
    first = SweepRun(quiet(tiny, store, embedder), variants, on_step=stop_after_first)
    assert (first.done, first.total, first.seconds_left) == (0, 3, None)
    result = first.run()
    assert first.done == 1 and first.error is None
    assert result is not None and result.keys == [fakemodel.key(variants[0])]
    assert seen[0][0] == 1 and seen[0][1] == pytest.approx(seen[0][2][0] * 2)  # mean per variant x 2 left
    assert (first.embedded, first.reused) == (embedder.stats.embedded - before[0], embedder.stats.cached - before[1])
    assert first.embedded > 0 and "1/3 variants" in first.progress_text() and "stopped" in first.progress_text()

    resumed = SweepRun(quiet(tiny, store, embedder), variants, result=result)
    assert [v.key for _, todo in resumed.todo for v in todo] == [v.key for v in variants[1:]] and resumed.total == 2
    full = resumed.run()
    assert full is not None and full.keys == [fakemodel.key(v) for v in variants] and resumed.done == 2
    assert resumed.seconds_left == 0 and resumed.error is None
    assert full.summary.equals(sweep(tiny, variants, ks=KS, embedder=embedder, store=store, progress=False).summary)

    again = SweepRun(quiet(tiny, store, embedder), variants, result=full)
    assert again.total == 0 and again.run() is full and again.embedded == 0  # nothing re-run


def test_bm25_variants_reuse_the_dense_index_and_embed_nothing(tiny: Dataset, tmp_path: Path) -> None:
    embedder = fakemodel.embedder(tmp_path)  # an empty cache: every count is this test's
    variants = GridSpec(["fixed"], {"size": "12, 24"}, retrievers=("dense", "bm25")).variants().variants
    embedded: list[tuple[str, int]] = []  # (retriever, texts embedded by that variant's step)

    def count(run: SweepRun) -> None:
        if run.done > len(embedded):
            embedded.append((run.todo[0][1][run.done - 1].retriever, run.embedded - sum(n for _, n in embedded)))

    run = SweepRun(quiet(tiny, tmp_path, embedder), variants, on_step=count)
    result = run.run()
    assert run.error is None and result is not None and result.keys == [fakemodel.key(v) for v in variants]
    assert [r for r, _ in embedded] == ["dense", "bm25", "dense", "bm25"]
    assert all(n > 0 for r, n in embedded if r == "dense") and all(n == 0 for r, n in embedded if r == "bm25")


def test_an_error_is_kept_with_its_type_and_what_finished_stays(tiny: Dataset, fake_embedder: Embedder,
                                                                 store: Path) -> None:
    def boom(text: str) -> list[str]:
        raise RuntimeError("the chunker broke")

    register_function("boom", boom)
    calls: list[str | None] = []
    run = SweepRun(quiet(tiny, store, fake_embedder), [Variant.make("fixed", size=20), Variant.make("boom")],
                   on_step=lambda r: calls.append(r.error))
    result = run.run()
    assert run.error is not None and run.error.startswith("RuntimeError: the chunker broke")
    assert "while sweeping variant boom()" in run.error and "failed" in run.progress_text()
    assert result is not None and result.keys == [fakemodel.key(Variant.make("fixed", size=20))] and run.done == 1
    assert calls == [None, run.error] and not run.running


def test_drawing_during_a_sweep_stays_within_its_share_of_the_time() -> None:
    budget = DrawBudget(share=0.05)
    assert budget.due(elapsed=0.5, finished=False)  # nothing drawn yet: the first variant shows at once
    budget.spent = 1.0
    assert not budget.due(elapsed=19.0, finished=False) and budget.due(elapsed=20.0, finished=False)
    assert budget.due(elapsed=1.0, finished=True)  # the end is always drawn


def test_selection_only_rehighlights_and_new_bases_rebuild() -> None:
    s = ScrubState()
    assert s.update(keys=["a", "b"], k=3, axes=("size",)) is Redraw.REBUILD and s.selected == "b"
    assert s.update(keys=["a", "b"], k=3) is Redraw.NONE
    assert s.select("a") is Redraw.HIGHLIGHT_ONLY and s.selected == "a"
    assert s.select("a") is Redraw.NONE
    assert s.update(k=1) is Redraw.REBUILD and s.selected == "a"
    assert s.update(keys=["a", "b", "c"]) is Redraw.REBUILD and s.selected == "a"  # the result grew
    assert s.update(axes=("overlap",)) is Redraw.REBUILD
    assert s.update(keys=["c"]) is Redraw.REBUILD and s.selected == "c"  # the selection left
    with pytest.raises(ValueError, match="variant 'zz' is not measured"):
        s.select("zz")


def test_compare_lists_the_questions_one_retrieves_and_the_other_misses(
    tiny: Dataset, embedder: Embedder, store: Path
) -> None:
    a, b = Variant.make("fixed", size=20, unit="chars"), Variant.make("fixed", size=80, unit="chars")
    result: SweepResult = sweep(tiny, [a, b], ks=KS, embedder=embedder, store=store, progress=False)
    c = Comparison(a.key, b.key, k=1, metric="hit")
    # by hand, from per_question:
    pq = result.per_question
    value = {(row.key, row.qid): row.value for row in pq[(pq.metric == "hit") & (pq.k == 1)].itertuples()}
    only_b = {q.qid for q in tiny.questions if value[b.key, q.qid] == 1 and value[a.key, q.qid] == 0}
    only_a = {q.qid for q in tiny.questions if value[a.key, q.qid] == 1 and value[b.key, q.qid] == 0}
    assert only_a | only_b, "the two variants must disagree somewhere for this test to mean anything"
    for x, y, table in ((a, b, c.table(result, tiny)), (b, a, Comparison(b.key, a.key, 1).table(result))):
        assert set(table[table.retrieved_by == y.key].qid) == (only_b if y == b else only_a)
        assert set(table[table.retrieved_by == x.key].qid) == (only_a if x == a else only_b)
        assert len(table) == len(only_a | only_b) and set(table.missed_by) <= {x.key, y.key}
    table = c.table(result, tiny)
    questions = {q.qid: q.question for q in tiny.questions}
    assert all(questions[q] == text for q, text in zip(table.qid, table.question, strict=True))
    assert list(table.value_a) == [value[a.key, q] for q in table.qid]

    paired = c.paired(result, n_resamples=999)
    recall = {(r.key, r.qid): r.value for r in pq[(pq.metric == "recall") & (pq.k == 1)].itertuples()}
    assert paired["diff"] == pytest.approx(sum(recall[b.key, q.qid] - recall[a.key, q.qid] for q in tiny.questions) / 4)
    assert paired["ci_low"] <= paired["diff"] <= paired["ci_high"]
    by_label = stats.paired_compare(pq, a.label, b.label, "recall", 1, n_resamples=999)
    assert by_label["diff"] == paired["diff"]
    with pytest.raises(ValueError, match="two different variants"):
        Comparison(a.key, a.key, 1).table(result)


def test_a_run_scores_new_variants_at_the_results_budgets(tiny: Dataset, fake_embedder: Embedder, store: Path) -> None:
    """A result swept at other budgets than the default: the panel's new variants use them, so
    the two combine (combine refuses different budgets)."""
    first = sweep(tiny, [Variant.make("fixed", size=20)], ks=KS, embedder=fake_embedder, store=store, progress=False,
                  budgets=(64, 128))
    run = SweepRun(quiet(tiny, store, fake_embedder, first.provenance.settings),
                   [Variant.make("fixed", size=28)], result=first)
    both = run.run()
    assert run.error is None and both is not None and both.budgets == [64, 128]
    assert set(both.summary.loc[both.summary["budget"] > 0, "budget"]) == {64, 128}


def test_the_memory_leaves_out_what_can_no_longer_be_made(tiny: Dataset, embedder: Embedder, tmp_path: Path) -> None:
    """A strategy registered in an earlier kernel and gone now leaves the grid and the variants, with its reason."""
    memory = SweeperMemory(tmp_path / "sweeper.json", (embedder,),
                           (ScoreCache(tmp_path, tiny, embedder.fingerprint, Settings(ks=KS)),))
    assert memory.load() == Restored(None, {}, [])
    fixed = Variant.make("fixed", size=16)
    rows = pd.DataFrame({"key": [fixed.key], "variant": [fixed.label]})  # measured, its scores since deleted
    grid = ({"strategy": "gone", "params": {}}, fixed.spec())
    gone = SweepResult(pd.DataFrame(), rows, rows, Provenance.from_config({"grid": grid}))
    memory.save(GridSpec(["gone", "fixed"], {"size": "16"}, ("dense", "bm25"), (False, True)), gone)
    restored = memory.load()
    assert restored.grid == GridSpec(("fixed",), {"size": "16"}, ("dense", "bm25"), (False, True), (False,))
    assert restored.variants == {}
    assert restored.left_out[0].startswith("gone: unknown strategy 'gone'")
    assert restored.left_out[1] == "fixed(size=16, overlap=0): its scores are no longer cached"


def test_the_sweeper_builds_a_route_from_members_typed_as_labels() -> None:
    """A member's label holds commas: it stays one value, so a route is typed as the CLI writes it."""
    spec = GridSpec(("route",), {"code": "code(size=128, header=False), code(size=238, tokenizer=model)",
                                 "text": "markdown(size=238)"})
    routes = spec.variants().variants
    assert [v.kwargs["code"] for v in routes] == ["code(size=128, header=False)", "code(size=238, tokenizer=model)"]
    assert {v.kwargs["text"] for v in routes} == {"markdown(size=238, overlap=0)"}
