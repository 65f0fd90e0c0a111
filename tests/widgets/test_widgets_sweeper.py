"""The sweeper panel driven programmatically (no browser) on the tiny corpus, with the fake model of
tests/fakemodel.py where what is checked is the panel, the real one where it is the model's."""

from __future__ import annotations

import html
import re
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import fakemodel
import pandas as pd
import pytest

from workbench.chunkers import ChunkEnv, register_function
from workbench.core.io import project_dir
from workbench.dataset import Dataset
from workbench.figures.viewer import EVIDENCE
from workbench.models.embed import Embedder
from workbench.results.provenance import ModelInfo
from workbench.results.result import SweepResult
from workbench.retrieval.index import IndexStore
from workbench.run.grid import GridSpec
from workbench.run.search import BUDGET
from workbench.run.session import sweep
from workbench.variant import Variant
from workbench.widgets import Sweeper, sweeper
from workbench.widgets.state import Redraw, SearchRun

KS = (1, 3)
PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("sweeper")


@pytest.fixture(scope="module")
def swept(tiny: Dataset, fake_embedder: Embedder, store: Path) -> tuple[Sweeper, list[int]]:
    """A 2 x 2 grid (size x overlap) run from the Run button, synchronously; the sizes of the
    result each time the overview picture changed. Shared by the module: a test that scrubs or
    exports does it on a Sweeper of its own (`panel_of`), so that what the run left stays as it left it."""
    sw = Sweeper(tiny, fake_embedder, store, ks=KS, background=False, restore=False)
    sw.draw_share = 1.0  # draw after every variant, however fast (see the budget test below)
    sw.ranges["size"].value = "16, 32"
    sw.ranges["overlap"].value = "0:8:8"
    filled: list[int] = []
    sw.images["overview"].observe(lambda _: filled.append(len(sw.result.keys)), names="value")
    sw.run_button.click()
    return sw, filled


def test_run_sweeps_the_grid_and_the_plots_fill_in_as_variants_finish(swept: tuple[Sweeper, list[int]]) -> None:
    sw, filled = swept
    grid = GridSpec(["fixed"], {"size": [16, 32], "overlap": [0, 8]}).variants().variants
    assert sw.result is not None and sw.result.keys == [fakemodel.key(v) for v in grid]
    assert sw.run is not None and (sw.run.done, sw.run.total, sw.run.error) == (4, 4, None)
    assert sw.bar.value == 4 and sw.progress.value.startswith("4/4 variants") and "embedded" in sw.progress.value
    assert "4 variants" in sw.message.value
    assert sorted(set(filled)) == [1, 2, 3, 4]  # redrawn after each variant, not only at the end
    assert all(bytes(sw.images[name].value).startswith(PNG) for name in ("overview", "parameter", "heatmap", "budgets"))
    assert sw.notes["parameter"].value == sw.notes["heatmap"].value == sw.notes["budgets"].value == ""
    assert sw.tabs.get_title(3) == "at equal budgets" and sw.tabs.children[3].children[1] is sw.images["budgets"]
    assert sw.images["by_model"].value == b"" and "two models or more" in sw.notes["by_model"].value  # one model
    assert list(sw.param.options) == ["size", "overlap"] and sw.param.value == "size"
    assert [key for _, key in sw.slider.options] == sw.result.keys == [key for _, key in sw.choice.options]
    assert sw.selected == sw.result.keys[-1] and not sw.run_button.disabled and sw.stop_button.disabled


def test_a_fast_sweep_skips_drawings_within_its_budget_but_draws_the_end(
    tiny: Dataset, fake_embedder: Embedder, store: Path, swept: tuple[Sweeper, list[int]]
) -> None:
    sw = Sweeper(tiny, fake_embedder, store, ks=KS, background=False, restore=False)
    sw.draw_share = 0.0  # nothing but the first and the last
    filled: list[int] = []
    sw.images["overview"].observe(lambda _: filled.append(len(sw.result.keys)), names="value")
    sw.measure(GridSpec(["fixed"], {"size": [16, 32], "overlap": [0, 8]}).variants().variants)  # all cached
    assert sorted(set(filled)) == [1, 4] and sw.result.keys == swept[0].result.keys
    assert sw.budget.spent > 0 and sw.selected == sw.result.keys[-1]


def panel_of(swept: tuple[Sweeper, list[int]]) -> Sweeper:
    """A new Sweeper showing the shared run's result (measured before: nothing is measured again)."""
    run = swept[0]
    return Sweeper(run.dataset, run.models[0], run.store, result=run.result, background=False, restore=False)


def test_scrub_only_rehighlights_and_moves_the_chunk_viewer(swept: tuple[Sweeper, list[int]],
                                                            fake_embedder: Embedder) -> None:
    sw = panel_of(swept)
    pictures, images, viewer = dict(sw.pictures), {n: i.value for n, i in sw.images.items()}, sw.viewer.value
    embedded = fake_embedder.stats.embedded
    first = sw.result.keys[0]
    sw.slider.value = first
    assert sw.selected == first and sw.choice.value == first and sw.last_redraw is Redraw.HIGHLIGHT_ONLY
    assert sw.pictures == pictures  # the same bases: nothing was rebuilt
    # every default budget (256+ tokens) holds the whole tiny corpus: the budget curves coincide, so
    # there the ring moves onto the same points; it is drawn all the same
    # (one model: no by-model figure; a sweep, not a search: no race)
    assert all(sw.images[n].value != images[n] for n in images if n not in ("budgets", "by_model", "race"))
    assert sw.viewer.value != viewer
    assert sw.pictures["budgets"].png(first) == sw.images["budgets"].value != sw.pictures["budgets"].png(None)
    assert sw.result.label_of(first) in sw.viewer.value and EVIDENCE in sw.viewer.value
    sw.question.value = sw.dataset.questions[2].qid  # another question: another passage
    assert sw.viewer.value != viewer and fake_embedder.stats.embedded == embedded

    sw.choice.value = sw.result.keys[1]
    assert sw.slider.value == sw.result.keys[1] and sw.last_redraw is Redraw.HIGHLIGHT_ONLY
    sw.k.value = 1  # a new base
    assert sw.last_redraw is Redraw.REBUILD and all(sw.pictures[n] is not pictures[n] for n in pictures)
    sw.param.value = "overlap"
    assert sw.last_redraw is Redraw.REBUILD and sw.selected == sw.result.keys[1]
    assert fake_embedder.stats.embedded == embedded  # scrubbing never recomputes


def test_export_writes_the_report_with_the_parameter_figure(swept: tuple[Sweeper, list[int]], tmp_path: Path) -> None:
    sw = panel_of(swept)
    sw.folder.value = str(tmp_path / "mine")
    sw.export_button.click()
    report = tmp_path / "mine" / "report.html"
    assert str(report) in sw.message.value
    page = report.read_text(encoding="utf-8")
    for name in ("overview", f"by_{sw.param.value}", "heatmap_size_overlap", "budgets_recall"):
        assert f'id="figure-{name}"' in page and (tmp_path / "mine" / f"{name}.png").read_bytes().startswith(PNG)
    assert all(label in page for label in sw.result.labels)


def test_the_chunk_health_of_the_measured_variants_is_shown_and_exported(swept: tuple[Sweeper, list[int]],
                                                                          tmp_path: Path) -> None:
    sw = panel_of(swept)  # its own: Export changes the message the shared one's run test reads
    assert sw.health.value.startswith("<details><summary>chunk health: ")
    assert sw.audit is not None and list(sw.audit["key"]) == sw.result.keys
    assert all(html.escape(label) in sw.health.value for label in sw.result.labels)
    sw.folder.value = str(tmp_path / "health")
    sw.export_button.click()
    page = (tmp_path / "health" / "report.html").read_text(encoding="utf-8")
    assert '<section id="chunk-health">' in page and "Left out: no chunk audit" not in page


def test_retrievers_and_modifiers_from_the_controls_share_the_dense_index(
    tiny: Dataset, fake_embedder: Embedder, store: Path, swept: tuple[Sweeper, list[int]]
) -> None:
    sw = Sweeper(tiny, fake_embedder, store, ks=KS, background=False, restore=False)
    sw.ranges["size"].value = "16, 32"
    sw.retrievers["bm25"].value = True
    sw.contextual_header.value = sw.late.value = (False, True)  # "both" for each
    grid = sw.grid().variants()
    assert len(grid.skipped) == 2 * 2 and "contextual_header and late cannot be combined" in grid.skipped[0]
    assert len(grid.variants) == 2 * 2 * 3  # sizes x retrievers x (plain, header, late)

    sw.contextual_header.value = sw.late.value = (False,)  # "off": the swept fixture's sizes, dense and bm25
    sw.run_button.click()
    assert sw.run is not None and sw.run.error is None and "4 variants" in sw.message.value
    assert sw.run.embedded == 0 and sw.run.reused > 0  # the dense chunks are cached; bm25 embeds nothing
    assert f"0 texts embedded, {sw.run.reused} reused" in sw.progress.value
    bm25 = [key for key in sw.result.keys if sw.result.label_of(key).endswith("+bm25")]
    assert len(bm25) == 2 and set(sw.result.keys) - set(bm25) <= set(swept[0].result.keys)
    assert bytes(sw.images["budgets"].value).startswith(PNG)


def test_errors_show_their_type_and_text(tiny: Dataset, fake_embedder: Embedder, store: Path) -> None:
    def boom(text: str) -> list[str]:
        raise RuntimeError("the chunker broke")

    register_function("boom", boom)
    sw = sweeper(tiny, fake_embedder, store, ks=KS, restore=False)
    sw.background = False
    sw.ranges["size"].value = "16, abc"
    sw.run_button.click()
    assert "ValueError: parameter &#x27;size&#x27;: &#x27;abc&#x27; is not an integer" in sw.message.value
    assert sw.run is None

    sw.strategies.value = ("fixed", "boom")
    sw.ranges["size"].value = "16"
    sw.run_button.click()
    assert "RuntimeError: the chunker broke" in sw.message.value and "#b00020" in sw.message.value
    finished = fakemodel.key(Variant.make("fixed", size=16))
    assert sw.result is not None and sw.result.keys == [finished]  # what finished stays
    assert "failed" in sw.progress.value and not sw.run_button.disabled


def test_compare_two_variants_question_by_question(tiny: Dataset, embedder: Embedder, store: Path) -> None:
    a, b = Variant.make("fixed", size=20, unit="chars"), Variant.make("fixed", size=80, unit="chars")
    result: SweepResult = sweep(tiny, [a, b], ks=KS, embedder=embedder, store=store, progress=False)
    sw = sweeper(tiny, embedder, store, result=result, restore=False)
    assert sw.ks == KS and sw.result is result and (sw.cmp_a.value, sw.cmp_b.value) == (a.key, b.key)
    sw.k.value = 1
    table = sw.comparison().table(result, tiny)
    assert len(table) and set(table.retrieved_by) == {b.key}  # size 80 finds what size 20 misses
    assert "B − A" in sw.cmp_summary.value and f"{len(table)} question(s) only B retrieves" in sw.cmp_summary.value
    for question in table.question:
        assert question.replace("?", "") in sw.cmp_table.value
    assert sw.cmp_question.value == table.qid.iloc[0]
    assert sw.cmp_chunks.value.count(EVIDENCE) >= 2
    assert a.label in sw.cmp_chunks.value and b.label in sw.cmp_chunks.value
    sw.cmp_b.value = a.key  # the same variant twice: said, not raised
    assert "pick two different" in sw.cmp_summary.value and "#b00020" not in sw.message.value

    other = SweepResult(result.per_question, result.summary, result.variants,
                        result.provenance.with_(models=(ModelInfo("other", "x"),)))
    with pytest.raises(ValueError, match=r"result has model_fingerprint of \['other \(torch\)'\], none of the panel's"):
        sweeper(tiny, embedder, store, result=other)


def test_measure_adds_variants_from_another_panel_in_the_background(
    tiny: Dataset, fake_embedder: Embedder, store: Path
) -> None:
    release = threading.Event()

    def slow(text: str) -> list[str]:
        assert release.wait(60), "never released"
        return [text]

    register_function("slow", slow)
    sw = sweeper(tiny, fake_embedder, store, ks=KS, restore=False)
    v = Variant.make("slow")
    sw.measure([v])  # in a thread: returns while the chunker waits
    assert sw.run is not None and sw.run.running and sw.run_button.disabled
    with pytest.raises(RuntimeError, match="a sweep is running"):
        sw.measure([v])
    release.set()
    sw.thread.join(timeout=120)
    assert sw.run.error is None and sw.result is not None and sw.result.keys == [fakemodel.key(v)] == [sw.selected]
    assert bytes(sw.images["overview"].value).startswith(PNG) and not sw.run_button.disabled
    sw.background = False
    sw.measure([v])
    assert sw.run.total == 0 and "1 already measured" in sw.message.value  # nothing re-run


def test_compare_is_redone_after_every_sweep(tiny: Dataset, fake_embedder: Embedder, store: Path) -> None:
    """Its choices and its P(best) "among the n measured variants" count what was swept since."""
    a, b = Variant.make("fixed", size=20, unit="chars"), Variant.make("fixed", size=80, unit="chars")
    result = sweep(tiny, [a, b], ks=KS, embedder=fake_embedder, store=store, progress=False)
    sw = Sweeper(tiny, fake_embedder, store, result=result, background=False, restore=False)
    assert "among the 2 measured variants" in sw.cmp_summary.value
    c = Variant.make("fixed", size=40, unit="chars")
    sw.measure([c])
    assert "among the 3 measured variants" in sw.cmp_summary.value
    keys = [fakemodel.key(x) for x in (a, b, c)]
    assert [key for _, key in sw.cmp_a.options] == keys == [key for _, key in sw.cmp_b.options]
    assert (sw.cmp_a.value, sw.cmp_b.value) == (fakemodel.key(a), fakemodel.key(b))  # the pair chosen stays


def test_the_sweeper_warns_of_truncated_chunks_and_what_to_do(
    long_log: Dataset, embedder: Embedder, tmp_path: Path, swept: tuple[Sweeper, list[int]]
) -> None:
    assert swept[0].warning.value == ""  # chunks of 16 and 32 tokens fit the window
    sw = Sweeper(long_log, embedder, tmp_path, ks=(1,), background=False)
    sw.ranges["size"].value = "64, 300"
    sw.run_button.click()
    truncated = sw.result.variants.set_index("variant").loc["fixed(size=300, overlap=0)", "truncated_chunks"]
    assert truncated > 1 and "#8a4b00" in sw.warning.value
    assert ("Warning: 1 of 2 variants embed chunks longer than the 254 word pieces the model reads "
            "(fixed(size=300, overlap=0)") in sw.warning.value
    assert "size &lt;= 254" in sw.warning.value and "tokenizer=model" in sw.warning.value


def test_export_writes_under_the_projects_results_not_the_kernels_folder(
    tiny: Dataset, fake_embedder: Embedder, store: Path, swept: tuple[Sweeper, list[int]], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A notebook's kernel runs in notebooks/: the export goes to <project>/results/sweeper."""
    project = tmp_path / "project"
    (project / "notebooks").mkdir(parents=True)
    (project / "pyproject.toml").write_text("[project]\nname = 'mine'\n")
    monkeypatch.chdir(project / "notebooks")
    sw = Sweeper(tiny, fake_embedder, store, result=swept[0].result, background=False, restore=False)
    assert sw.folder.value == str(project / "results" / "sweeper")
    sw.export_button.click()
    report = project / "results" / "sweeper" / "report.html"
    assert report.exists() and not (project / "notebooks" / "results").exists()
    assert f"wrote <b>{report}</b>" in sw.message.value
    sw.folder.value = "results/other"  # relative: under the project too
    sw.export_button.click()
    assert (project / "results" / "other" / "report.html").exists()
    sw.folder.value = " "
    sw.export_button.click()
    assert "ValueError: folder: name the folder" in sw.message.value


def test_the_project_is_found_by_its_pyproject_else_its_results_else_the_working_folder(tmp_path: Path) -> None:
    (tmp_path / "lone").mkdir()
    assert project_dir(tmp_path / "lone") == tmp_path / "lone"  # neither above: where it started
    (tmp_path / "a" / "results").mkdir(parents=True)
    (tmp_path / "a" / "b" / "results").mkdir(parents=True)  # a stray results/ of a notebook folder
    (tmp_path / "a" / "b" / "c").mkdir()
    assert project_dir(tmp_path / "a" / "b" / "c") == tmp_path / "a" / "b"
    (tmp_path / "a" / "pyproject.toml").write_text("")
    assert project_dir(tmp_path / "a" / "b" / "c") == tmp_path / "a"  # a pyproject.toml first


def test_a_new_sweeper_brings_back_the_last_grid_and_its_variants_from_the_caches(
    tiny: Dataset, fake_embedder: Embedder, tmp_path: Path
) -> None:
    """Running the sweeper's cell again (a new Sweeper on the same data, model and settings)
    shows the grid typed last and every variant measured, scores read from the score cache."""
    first = Sweeper(tiny, fake_embedder, tmp_path, ks=KS, background=False)
    assert first.result is None and first.message.value == ""  # nothing remembered yet
    first.ranges["size"].value = "16, 48"
    first.retrievers["bm25"].value = True
    first.contextual_header.value = (True,)
    first.run_button.click()
    assert first.run is not None and first.run.error is None and len(first.result.keys) == 4
    embedded = fake_embedder.stats.embedded

    again = Sweeper(tiny, fake_embedder, tmp_path, ks=KS, background=False)
    assert again.grid() == first.grid() and again.ranges["size"].value == "16, 48"
    assert again.result.keys == first.result.keys
    pd.testing.assert_frame_equal(again.result.per_question, first.result.per_question)
    assert fake_embedder.stats.embedded == embedded and not again.result.variants["built"].any()  # from the score cache
    assert "restored the last grid and 4 variants measured before, from the caches" in again.message.value
    assert [key for _, key in again.slider.options] == first.result.keys and again.selected == first.result.keys[-1]
    assert bytes(again.images["overview"].value).startswith(PNG)

    assert Sweeper(tiny, fake_embedder, tmp_path, ks=KS, restore=False).result is None  # asked to start afresh
    assert Sweeper(tiny, fake_embedder, tmp_path, ks=(1,)).result is None  # other settings: another memory
    gone = first.result.variant(first.result.keys[0])
    shutil.rmtree(again.memory.scores[0].path(gone))  # e.g. a code change made its scores stale
    third = Sweeper(tiny, fake_embedder, tmp_path, ks=KS, background=False)
    assert third.result.keys == first.result.keys[1:]
    assert f"1 left out (Run measures them again), e.g. {html.escape(gone.label)}: its scores" in third.message.value


@pytest.mark.model
def test_two_models_are_a_dimension_of_the_grid_restored_without_measuring(tiny: Dataset, tmp_path: Path) -> None:
    """models=[None, "wordllama"]: each variant measured with each ticked model, the by-model tab
    drawn, the chunks and rankings of a row read with the model that measured it, and a new panel
    on the same store brings every (variant, model) back from the caches."""
    sw = Sweeper(tiny, store=tmp_path, ks=KS, background=False, restore=False, models=[None, "wordllama"])
    assert [box.description for box in sw.model_boxes.values()] == ["all-MiniLM-L6-v2", "wordllama"]
    sw.ranges["size"].value = "16, 32"
    sw.run_button.click()
    assert sw.run.error is None and sw.run.total == 4
    assert list(sw.result.variants["model"]) == ["all-MiniLM-L6-v2"] * 2 + ["wordllama"] * 2
    assert bytes(sw.images["by_model"].value).startswith(PNG) and sw.notes["by_model"].value == ""
    minilm, static = sw.result.keys[0], sw.result.keys[2]
    assert static.startswith(minilm + "@") and sw.model_of(static).name == "wordllama"
    sw.cmp_a.value, sw.cmp_b.value = minilm, static  # paired across models on the same questions
    assert "B − A over 4 questions" in sw.cmp_summary.value
    wordllama = sw._rankings(static)
    assert len(wordllama) == len(tiny.questions) and wordllama != sw._rankings(minilm)

    for box in sw.model_boxes.values():
        box.value = False
    sw.run_button.click()
    assert "models: choose at least one model" in sw.message.value

    again = Sweeper(tiny, store=tmp_path, ks=KS, background=False, models=[None, "wordllama"])
    assert again.result.keys == sw.result.keys and "restored the last grid and 4 variants" in again.message.value
    assert sum(e.stats.embedded for e in again.models) == 0  # from the score cache: nothing embedded
    with pytest.raises(ValueError, match="none of the panel's models"):
        Sweeper(tiny, store=tmp_path, ks=KS, background=False, result=sw.result)  # the default model only


def test_stop_ends_a_generating_run_between_generations_and_the_next_run_resumes(
        tiny: Dataset, embedder: Embedder, llm_cache: Callable[[str], Path]) -> None:
    """A Run that generates nothing estimates nothing; one whose +context variant generates shows the
    estimate on the message line first, and Stop from another thread ends it between generations as
    a stop, not a failure, what was measured before kept; the next Run generates only what is left."""
    store = IndexStore(llm_cache("sweeper-stop"))
    plain, ctx = Variant.make("fixed", size=48), Variant.make("fixed", size=48, contextual={"max_tokens": 2})
    llm = store.llm(ctx)
    chunks = len(plain.chunk(tiny, ChunkEnv()))
    sw = Sweeper(tiny, embedder, store, ks=KS, background=False, restore=False)
    sw.measure([plain])
    assert sw.run.estimate_line is None and "estimate" not in sw.message.value and "_local" not in vars(llm)

    sw.background = True
    sw.measure([ctx])
    deadline = time.monotonic() + 600
    while "estimate" not in sw.message.value and sw.run.running and time.monotonic() < deadline:
        time.sleep(0.01)
    assert "estimate (chunk-context v1)" in sw.message.value and f"of {chunks} generations to make" in sw.message.value
    sampled = llm.stats.generated  # the estimate's sample, made before the build generates
    sw.stop_button.click()  # while the build chunks or generates its first batch
    sw.thread.join(timeout=600)
    run = sw.run
    assert run.error is None and re.search(r"stopped after \d+ of \d+ generations \(those are cached\)",
                                           run.stopped_at or "")
    assert "stopped: " in sw.message.value and "#b00020" not in sw.message.value and "stopped" in sw.progress.value
    assert sw.result.keys == [plain.key] and not sw.run_button.disabled  # what was measured stays
    first = llm.stats.generated
    assert 0 < sampled <= first < chunks

    sw.background = False
    sw.measure([plain, ctx])
    assert "1 already measured" in sw.message.value and "estimate (chunk-context v1)" in sw.message.value
    assert llm.stats.generated == chunks and sw.run.stopped_at is None  # each context generated once in all
    assert sw.result.keys == [plain.key, ctx.key]


def test_a_saved_cli_run_opens_in_the_sweeper_by_its_folder(tiny: Dataset, embedder: Embedder, tmp_path: Path) -> None:
    """The trial's finding: the CLI had measured the grid, the sweeper started empty. Its folder opens the
    run, whose settings the sweeper then measures with, so what it adds combines; ks the run holds are
    accepted, others named."""
    from test_notebook import write_dataset

    from workbench.cli import main
    from workbench.run.session import Session

    data = write_dataset(tiny, tmp_path / "data")
    main(["sweep", "--data", str(data), "--out", str(tmp_path / "run"), "--cache", str(tmp_path / "cache"),
          "--quiet", "--no-report", "--backend", "torch", "--ks", "1", "3", "5", "-v", "fixed:size=16", "-v",
          "fixed:size=32"])
    session = Session(tiny, cache=tmp_path / "cache", embedder=embedder)
    sw = sweeper(session, result=tmp_path / "run", ks=(1, 3), restore=False)
    assert sw.result is not None and sw.result.labels == ["fixed(size=16, overlap=0)", "fixed(size=32, overlap=0)"]
    assert sw.settings.ks == (1, 3, 5) and list(sw.k.options) == [1, 3, 5]
    with pytest.raises(ValueError, match=r"swept at ks \[1, 3, 5\], without \[10\] of the ks asked for"):
        sweeper(session, result=tmp_path / "run", ks=(1, 10))


def test_a_search_its_budget_cannot_buy_says_why_on_the_message_line(tiny: Dataset, fake_embedder: Embedder,
                                                                      store: Path) -> None:
    sw = Sweeper(tiny, fake_embedder, store, ks=KS, background=False, restore=False)
    sw.ranges["size"].value = "16, 32"
    sw.search_button.click()
    assert isinstance(sw.run, SearchRun) and sw.run.error
    assert sw.run.error.startswith(f"ValueError: budget {BUDGET:g} buys")
    assert 'color:#b00020' in sw.message.value and "raise it to at least" in sw.message.value
    assert sw.result is None and not sw.search_button.disabled and not sw.run_button.disabled
    assert sw.stop_button.disabled and sw.progress.value.startswith("0/1 searches") and "failed" in sw.progress.value


@pytest.fixture(scope="module")
def searched(tiny: Dataset, embedder: Embedder, tmp_path_factory: pytest.TempPathFactory) -> Sweeper:
    """Eight sizes searched from the Search button with the real model (the preview's token pass needs it)."""
    sw = Sweeper(tiny, embedder, tmp_path_factory.mktemp("search"), ks=KS, background=False, restore=False)
    sw.ranges["size"].value = "16:128:16"
    sw.search_budget.value = 1.0
    sw.search_button.click()
    return sw


def test_search_races_the_grid_shows_its_finalists_and_draws_its_race(searched: Sweeper, tmp_path: Path) -> None:
    sw = searched
    assert sw.run is not None and sw.run.error is None and sw.run.stopped_at is None
    race = sw.result.race
    assert race is not None and set(race["key"]) >= set(sw.result.keys)
    assert set(race.loc[race["status"] == "final", "key"]) <= set(sw.result.keys) and (race["k"] == sw.k.value).all()
    assert "searching 8 variants" in sw.message.value
    assert "estimate: the search embeds at most 100% of what sweeping the 8 variants would: all-MiniLM" \
        in html.unescape(sw.message.value)
    assert sw.progress.value.startswith("1/1 searches")
    assert sw.tabs.get_title(5) == "race" and bytes(sw.images["race"].value).startswith(PNG)
    assert sw.notes["race"].value == "" and bytes(sw.images["overview"].value).startswith(PNG)
    sw.folder.value = str(tmp_path / "out")
    text = sw.export()["report"].read_text(encoding="utf-8")
    assert 'id="search"' in text and text.count('id="figure-race"') == 1


def test_stop_ends_a_search_between_its_rounds(tiny: Dataset, embedder: Embedder, searched: Sweeper) -> None:
    sw = Sweeper(tiny, embedder, searched.store, ks=KS, background=False, restore=False)
    sw.ranges["size"].value = "16:128:16"
    sw.search_budget.value = 1.0
    real = sw._on_step
    sw._on_step = lambda run: (run.stop(), real(run))  # Stop pressed as soon as the estimate is said
    sw.search_button.click()
    assert sw.run.stopped_at and "the search was stopped after the preview" in sw.run.stopped_at
    assert "stopped: " in sw.message.value and sw.run.error is None and sw.result is None
