"""The quickstart notebook in a real JupyterLab in Chromium, as a new user runs it: every cell runs
clean, every widget renders, and the panel's slider redraws the figure from the keyboard; and the
model-stack notebook runs clean there too."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from conftest import REPO, model_stack_parameters, write_dataset
from playwright.sync_api import Locator

from workbench.dataset import Dataset

if TYPE_CHECKING:  # imported by pytest_plugins, after the assertion rewriter is in place
    from browserkit import Server, Tab

pytest_plugins = ["browserkit"]
pytestmark = pytest.mark.browser  # besides its fixtures: every test here drives Chromium

NOTEBOOK = "01_quickstart.ipynb"
RUN_S = 240  # kernel start, model load and the notebook's sweep on the tiny corpus


@pytest.fixture
def quickstart(tab: Tab, lab: Server, workspace: Path, tiny: Dataset, tmp_path: Path) -> Tab:
    """The quickstart on the tiny corpus (the bundled one takes minutes to embed), run to the end, with
    a cache of its own (the sweeper brings back the grid a test before swept in the same cache)."""
    from browserkit import run_all, set_parameters

    data = workspace / "tiny"
    if not data.exists():  # the workspace lives for the session; each test reruns the notebook
        write_dataset(tiny, data)
    set_parameters(workspace / "notebooks" / NOTEBOOK, f"DATA = {str(data)!r}\nCACHE = {str(tmp_path / 'cache')!r}\n"
                   "OUT = '../results/quickstart'\nMAX_QUESTIONS = None\nKS = (1, 3, 5)")
    run_all(tab.page, f"{lab.url}lab/tree/{NOTEBOOK}", RUN_S)
    tab.screenshot("lab-quickstart-ran", full_page=False)
    return tab


def test_quickstart_runs_clean_and_the_slider_redraws_the_panel(quickstart: Tab, lab: Server) -> None:
    page = quickstart.page
    stderr = page.locator('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]').all_inner_texts()
    assert not [t for t in stderr if "Traceback" in t or "Error" in t], f"error output: {stderr}"
    texts = page.locator(".jp-OutputArea-output .jp-RenderedText").all_inner_texts()
    assert not [t for t in texts if "Traceback" in t or "Error" in t], f"error output: {texts}"

    assert "Error displaying widget" not in page.locator(".jp-Notebook").inner_text()
    widget_cells = page.locator(".jp-CodeCell").filter(has_text="wb.widgets.")
    assert widget_cells.count() >= 1, "no cell calls wb.widgets"
    for i in range(widget_cells.count()):
        cell = widget_cells.nth(i)
        assert cell.locator(".jp-OutputArea-output .jupyter-widgets").count() > 0, \
            f"no widget rendered under: {cell.locator('.jp-InputArea-editor').inner_text()}"

    # the cell's own output, not the output areas nested in the panel (its progress area)
    panel = widget_cells.filter(has_text="wb.widgets.panel(").locator(
        ".jp-Cell-outputArea > .jp-OutputArea-child > .jp-OutputArea-output")
    panel.scroll_into_view_if_needed()
    figure = panel.locator("img.widget-image")
    slider = panel.locator(".widget-hslider").filter(has=page.locator(".widget-label", has_text=re.compile(r"^size\b")))
    before, size = figure.get_attribute("src"), int(slider.locator(".widget-readout").inner_text())
    quickstart.screenshot("lab-panel-before", panel)
    slider.locator(".noUi-handle").focus()
    page.keyboard.press("ArrowRight")
    page.wait_for_function("([img, before]) => img.src && img.src !== before", arg=[figure.element_handle(), before],
                           timeout=RUN_S * 1000)
    quickstart.screenshot("lab-panel-after", panel)
    assert int(slider.locator(".widget-readout").inner_text()) == size + 1
    bars = panel.locator(".widget-output .widget-hprogress")  # tqdm's, drawn while the new variant was measured
    assert bars.count() == 0, f"progress bars left on screen: {bars.all_inner_texts()}"
    assert figure.evaluate("img => img.decode().then(() => img.naturalWidth)") > 0

    local = ("data:", "blob:", lab.url, lab.url.replace("http", "ws", 1))
    assert not [u for u in quickstart.requests if not u.startswith(local)], "requests off the local server"
    assert not quickstart.errors


def labels(options: Locator) -> list[str]:
    """The texts of <option>s as typed: the dropdown shows spaces as no-break spaces."""
    return [o.replace("\xa0", " ") for o in options.all_inner_texts()]


# The progress line once a sweep is over: all of its variants done ("2/2 variants · ...").
SWEEP_DONE = "el => /^(\\d+)\\/\\1 variants/.test(el.textContent.trim())"


def test_sweeper_sweeps_a_typed_range_and_scrubs_from_the_keyboard(quickstart: Tab, lab: Server) -> None:
    page = quickstart.page
    sweeper = page.locator(".jp-CodeCell").filter(has_text="wb.widgets.sweeper(").locator(
        ".jp-Cell-outputArea > .jp-OutputArea-child > .jp-OutputArea-output")
    sweeper.scroll_into_view_if_needed()
    overview = sweeper.locator("img.widget-image").first  # the first tab's figure
    scrub = sweeper.locator(".widget-hbox").filter(has=page.locator(".widget-hslider"))  # the slider and its dropdown
    choices = scrub.locator("select")
    before_src, before_options = overview.get_attribute("src"), labels(choices.locator("option"))
    assert before_src and before_options, "the sweeper shows no variant of the notebook's sweep"

    size = sweeper.locator(".widget-text").filter(has=page.locator(".widget-label", has_text=re.compile(r"^size$")))
    size.locator("input").fill("16, 24")
    size.locator("input").press("Enter")
    run = sweeper.locator("button", has_text=re.compile(r"^\s*Run\s*$"))
    run.click()
    progress = sweeper.locator(".widget-html").filter(has_text=re.compile(r"variants ·"))
    page.wait_for_function(SWEEP_DONE, arg=progress.element_handle(timeout=RUN_S * 1000), timeout=RUN_S * 1000)
    page.wait_for_function("b => !b.disabled", arg=run.element_handle(), timeout=RUN_S * 1000)
    page.wait_for_function("([img, before]) => img.src && img.src !== before",
                           arg=[overview.element_handle(), before_src], timeout=RUN_S * 1000)
    quickstart.screenshot("sweeper-lab", sweeper)

    options = labels(choices.locator("option"))
    new = [o for o in options if o not in before_options]
    assert sorted(new) == ["fixed(size=16, overlap=0)", "fixed(size=24, overlap=0)"], options
    handle = scrub.locator(".noUi-handle")
    assert int(float(handle.get_attribute("aria-valuemax"))) == len(options) - 1, "the scrub slider misses variants"
    assert choices.input_value() == choices.locator("option").last.get_attribute("value"), "the newest is not selected"

    after_run = overview.get_attribute("src")
    handle.focus()
    page.keyboard.press("ArrowLeft")
    # the selection first (a redraw of the run still on its way may change the figure before the key is read)
    page.wait_for_function("([s, want]) => s.selectedOptions.length && "
                           "s.selectedOptions[0].textContent.replace(/\\u00a0/g, ' ') === want",
                           arg=[choices.element_handle(), options[-2]], timeout=30_000)
    page.wait_for_function("([img, before]) => img.src && img.src !== before",
                           arg=[overview.element_handle(), after_run], timeout=30_000)
    assert labels(choices.locator("option:checked")) == [options[-2]], "the slider did not select the variant before"
    assert overview.evaluate("img => img.decode().then(() => img.naturalWidth)") > 0

    assert "Error displaying widget" not in page.locator(".jp-Notebook").inner_text()
    shown = sweeper.locator('span[style*="#b00020"]').all_inner_texts()  # the message area's errors
    assert not shown, f"the sweeper shows an error: {shown}"
    local = ("data:", "blob:", lab.url, lab.url.replace("http", "ws", 1))
    assert not [u for u in quickstart.requests if not u.startswith(local)], "requests off the local server"
    assert not quickstart.errors


def test_model_stack_notebook_runs_clean_in_lab(tab: Tab, lab: Server, workspace: Path,
                                                model_stack_files: tuple[Path, Path]) -> None:
    """The model-stack notebook as a user runs it: every cell clean, the answer table rendered
    (its cache shared with the headless run, so whichever runs second generates nothing)."""
    from browserkit import run_all, set_parameters

    name = "03_model_stack.ipynb"
    set_parameters(workspace / "notebooks" / name, model_stack_parameters(model_stack_files, workspace / "results"
                                                                           / "model_stack"))
    run_all(tab.page, f"{lab.url}lab/tree/{name}", 1800)  # cold: the LLM writes, judges and answers on two cores
    page = tab.page
    texts = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output").all_inner_texts()
    assert not [t for t in texts if "Traceback" in t], f"error output: {texts}"
    answers = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-RenderedHTMLCommon table").filter(
        has_text="(evidence as context)")
    answers.scroll_into_view_if_needed()
    tab.screenshot("lab-model-stack-answers", answers)
    assert "(no context)" in answers.inner_text()


def test_your_documents_notebook_runs_through_a_folder_as_it_is(tab: Tab, lab: Server, workspace: Path,
                                                                 tmp_path: Path) -> None:
    """Notebook 03 pointed at a project's reStructuredText and Python with questions as people write
    them (no ids, flat quotes, quotes as the pages render, alternatives, one quote matching nothing):
    every cell clean, the unlocated label named, the sweeper drawn, the report written."""
    from browserkit import ACTIVE, run_all, set_parameters

    data = shutil.copytree(REPO / "tests/data/itsdangerous", workspace / "itsdangerous")
    shutil.copy(REPO / "tests/data/itsdangerous_as_written.jsonl", data / "questions.jsonl")
    name, out = "03_your_documents.ipynb", tmp_path / "out"
    grid = ["fixed:size=119,tokenizer=model", "recursive:size=238,tokenizer=model+bm25"]
    set_parameters(workspace / "notebooks" / name, f"DATA = {str(data)!r}\nCACHE = {str(tmp_path / 'cache')!r}\n"
                   f"GRID = {grid!r}\nK = 3\nKS = (1, 3)\nOUT = {str(out)!r}")
    run_all(tab.page, f"{lab.url}lab/tree/{name}", RUN_S * 2)
    page = tab.page
    texts = page.locator(f"{ACTIVE} .jp-OutputArea-output").all_inner_texts()
    assert not [t for t in texts if "Traceback" in t or "Error" in t], f"error output: {texts}"
    assert any("left out 1 label(s) whose evidence is not located" in t and "line-9" in t for t in texts), texts
    assert any("has the highest recall@3" in t for t in texts), texts
    sweeper = page.locator(f"{ACTIVE} .jp-CodeCell").filter(has_text="wb.widgets.sweeper(").locator(
        ".jp-Cell-outputArea > .jp-OutputArea-child > .jp-OutputArea-output")
    sweeper.scroll_into_view_if_needed()
    assert sweeper.locator("img.widget-image").first.evaluate("img => img.decode().then(() => img.naturalWidth)") > 0
    tab.screenshot("lab-your-documents-sweeper", full_page=False)
    assert "line-9" in (out / "report.html").read_text(encoding="utf-8")
    assert not tab.errors
