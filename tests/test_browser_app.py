"""`make app`: notebooks/app.ipynb served by Voilà, opened in Chromium as a student would: the
widgets render, no code and no error is shown, and nothing is fetched from off the machine."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook
from playwright.sync_api import Locator
from test_notebook import write_dataset

from workbench.dataset import Dataset

if TYPE_CHECKING:  # imported by pytest_plugins, after the assertion rewriter is in place
    from browserkit import Server, Tab

pytest_plugins = ["browserkit"]

RENDER_S = 180  # kernel start, model load and the first variant of the tiny corpus


@pytest.fixture
def app(tab: Tab, voila_app: Server, workspace: Path, tiny: Dataset) -> Tab:
    """The app page on the tiny corpus, once the explorer's figure is drawn (each load runs the notebook)."""
    from browserkit import set_parameters

    data = workspace / "tiny-app"
    if not data.exists():
        write_dataset(tiny, data)
    set_parameters(workspace / "notebooks" / "app.ipynb", f"DATA = {str(data)!r}\nCACHE = '../results/cache'")
    tab.page.goto(voila_app.url, timeout=RENDER_S * 1000)
    explorer = tab.page.locator(".jp-OutputArea-output").filter(has_text="breakpoint percentile")
    explorer.locator("img.widget-image[src]").wait_for(timeout=RENDER_S * 1000)  # the explorer's figure, drawn last
    return tab


def explorer_of(app: Tab) -> Locator:
    """The semantic explorer's cell output: the one holding the breakpoint percentile slider."""
    page = app.page
    label = page.locator(".widget-label", has_text="breakpoint percentile")
    percentile = page.locator(".widget-hslider").filter(has=label)
    return page.locator(".jp-OutputArea-output").filter(has=percentile)


def test_app_page_renders_the_sweeper_and_the_explorer_without_errors(app: Tab) -> None:
    page = app.page
    app.screenshot("app-voila")
    text = page.inner_text("body")
    for error in ("Error displaying widget", "Traceback", "Error"):
        assert error not in text
    assert "import workbench" not in text and "wb.widgets" not in text, "code cells are shown"
    strategies = page.locator(".widget-select-multiple", has_text="strategies")
    sweeper = page.locator(".jp-OutputArea-output").filter(has=strategies)
    assert sweeper.count() == 1, "no sweeper"
    assert sweeper.locator("button", has_text="Run").count() == 1
    assert sweeper.locator(".widget-text").filter(has_text="size").locator("input").input_value() != ""
    explorer = explorer_of(app)
    assert explorer.count() == 1, "no semantic explorer"
    assert explorer.locator("img.widget-image").evaluate("img => img.decode().then(() => img.naturalWidth)") > 0
    assert not app.errors


def test_app_page_fetches_nothing_off_the_machine(app: Tab, voila_app: Server) -> None:
    local = ("data:", "blob:", voila_app.url, voila_app.url.replace("http", "ws", 1))
    assert not [u for u in app.requests if not u.startswith(local)], "requests off the local server"
    assert not [c for c in app.console if c.startswith("error")]


def test_explorer_recuts_when_the_percentile_moves_from_the_keyboard(app: Tab) -> None:
    page = app.page
    explorer = explorer_of(app)
    explorer.scroll_into_view_if_needed()
    figure = explorer.locator("img.widget-image")
    label = page.locator(".widget-label", has_text="breakpoint percentile")
    percentile = explorer.locator(".widget-hslider").filter(has=label)
    before, value = figure.get_attribute("src"), int(percentile.locator(".widget-readout").inner_text())
    percentile.locator(".noUi-handle").focus()
    page.keyboard.press("ArrowLeft")
    page.wait_for_function("([img, before]) => img.src && img.src !== before", arg=[figure.element_handle(), before],
                           timeout=30_000)
    assert int(percentile.locator(".widget-readout").inner_text()) == value - 1
    assert figure.evaluate("img => img.decode().then(() => img.naturalWidth)") > 0
    app.screenshot("explorer-voila", explorer)
    label = re.compile(rf"breakpoint_percentile={value - 1}(\.0)?\b.*: \d+ chunks")  # the message names the new cut
    assert explorer.locator(".widget-html").filter(has_text=label).count() == 1, explorer.inner_text()[:2000]
    assert not explorer.locator('span[style*="#b00020"]').all_inner_texts(), "the explorer shows an error"
    assert not app.errors


def test_panel_leaves_no_progress_bar_once_it_measured(tab: Tab, workspace: Path, tiny: Dataset,
                                                       tmp_path: Path) -> None:
    """The one-variant panel measures its first variant as it is made: tqdm's bars drawn in its
    progress area meanwhile are gone once the figure is there."""
    from browserkit import free_port, serve, voila_command

    data = workspace / "tiny-app"
    if not data.exists():
        write_dataset(tiny, data)
    notebook = workspace / "notebooks" / "panel.ipynb"
    nbformat.write(new_notebook(cells=[new_code_cell(
        f"import workbench as wb\nwb.widgets.panel(wb.load_dataset({str(data)!r}), store='../results/cache')")]),
        notebook)
    port = free_port()
    with serve(voila_command(notebook, port), port, notebook.parent, tmp_path / "voila.log") as server:
        tab.page.goto(server.url, timeout=RENDER_S * 1000)
        tab.page.locator("img.widget-image[src]").wait_for(timeout=RENDER_S * 1000)
        output = tab.page.locator(".widget-output")  # the panel's progress area
        tab.page.wait_for_function("el => !el.querySelector('.widget-hprogress')", arg=output.element_handle(),
                                   timeout=10_000)
        assert not output.inner_text().strip(), output.inner_text()
        assert not tab.errors
