"""`make app`: notebooks/app.ipynb served by Voilà, opened in Chromium as a student would: the
widgets render, no code and no error is shown, and nothing is fetched from off the machine."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import nbformat
import pytest
from conftest import write_dataset
from nbformat.v4 import new_code_cell, new_notebook
from playwright.sync_api import Locator, Page

from workbench.dataset import Dataset

if TYPE_CHECKING:  # imported by pytest_plugins, after the assertion rewriter is in place
    from browserkit import Server, Tab

pytest_plugins = ["browserkit"]
pytestmark = pytest.mark.browser  # besides its fixtures: every test here drives Chromium

RENDER_S = 180  # kernel start, model load and the first variant of the tiny corpus


@pytest.fixture
def app(tab: Tab, voila_app: Server, workspace: Path, tiny: Dataset, tmp_path: Path) -> Tab:
    """The app page on the tiny corpus, once the explorer's figure is drawn (each load runs the notebook).
    A cache of its own: the sweeper brings back the grid a test before swept in the same cache."""
    from browserkit import set_parameters

    data = workspace / "tiny-app"
    if not data.exists():
        write_dataset(tiny, data)
    set_parameters(workspace / "notebooks" / "app.ipynb", f"DATA = {str(data)!r}\nCACHE = {str(tmp_path / 'cache')!r}")
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


# Visible controls and HTML views, each as [what, left, right] in CSS pixels; a hidden tab's are 0 wide and skipped.
CONTROLS = """() => [...document.querySelectorAll(['.jupyter-widgets input', '.jupyter-widgets select',
    '.jupyter-widgets button', '.widget-slider', '.widget-dropdown', '.widget-text', '.widget-toggle-buttons',
    '.lm-TabBar', '.widget-html-content'].join(', '))]
  .map(e => [e.tagName.toLowerCase() + ' ' + (e.closest('.widget-inline-hbox, .widget-toggle-buttons')?.innerText
             || e.innerText || e.value || '').trim().slice(0, 40), e.getBoundingClientRect()])
  .filter(([, r]) => r.width > 0).map(([what, r]) => [what, Math.round(r.left), Math.round(r.right)])"""
# Visible single selects whose chosen label is wider than the box shows: [label, text px, room px].
CUT_LABELS = """() => [...document.querySelectorAll('.jupyter-widgets select:not([multiple])')]
  .filter(s => s.clientWidth > 0 && s.selectedIndex >= 0).map(s => {
    const style = getComputedStyle(s), ctx = document.createElement('canvas').getContext('2d');
    ctx.font = style.font;
    const text = s.options[s.selectedIndex].text;
    const room = s.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    return [text, Math.ceil(ctx.measureText(text).width), Math.floor(room)]; })
  .filter(([, width, room]) => width > room)"""


def overflowing(page: Page, width: int) -> list:
    """The controls that reach past a `width`-pixel window, on either side."""
    return [c for c in page.evaluate(CONTROLS) if c[1] < 0 or c[2] > width]


def test_a_sweep_shows_whole_labels_and_every_control_fits_a_400_px_window(app: Tab) -> None:
    """At 1280 px the dropdowns show a long variant label whole; at 400 px (a phone, a projector
    window) no control runs off the page or is cut off, before or after the sweep."""
    page = app.page
    strategies = page.locator(".widget-select-multiple", has_text="strategies")
    sweeper = page.locator(".jp-OutputArea-output").filter(has=strategies)
    sweeper.locator("select[multiple]").select_option(["fixed", "semantic"])
    box = sweeper.locator(".widget-text").filter(has=page.locator(".widget-label", has_text=re.compile(r"^max_size$")))
    box.locator("input").fill("256")
    box.locator("input").press("Enter")
    sweeper.locator(".widget-checkbox", has_text="hybrid").locator("input").check()
    run = sweeper.locator("button", has_text=re.compile(r"^\s*Run\s*$"))
    run.click()
    progress = sweeper.locator(".widget-html").filter(has_text=re.compile(r"variants ·"))
    page.wait_for_function("el => /^(\\d+)\\/\\1 variants/.test(el.textContent.trim())",
                           arg=progress.element_handle(timeout=RENDER_S * 1000), timeout=RENDER_S * 1000)
    page.wait_for_function("b => !b.disabled", arg=run.element_handle(), timeout=RENDER_S * 1000)
    long = "semantic(breakpoint_percentile=95, buffer_size=1, max_size=256)+hybrid"
    choice = sweeper.locator(".widget-hbox").filter(has=page.locator(".widget-hslider")).locator("select")
    choice.select_option(index=[o.replace("\xa0", " ") for o in choice.locator("option").all_inner_texts()].index(long))
    sweeper.locator(".lm-TabBar-tab", has_text="compare").click()
    sweeper.locator(".widget-html", has_text="B − A").wait_for(timeout=30_000)
    app.screenshot("app-voila-swept-1280", sweeper)
    assert not page.evaluate(CUT_LABELS), "dropdowns cut their label"
    assert long in labels_shown(page), "the long label is not chosen anywhere"

    page.set_viewport_size({"width": 400, "height": 3000})  # tall: the screenshot shows the whole sweeper
    page.wait_for_timeout(500)  # the reflow
    app.screenshot("app-voila-400", full_page=False)
    assert not overflowing(page, 400), overflowing(page, 400)
    assert page.evaluate("document.documentElement.scrollWidth") <= 400
    sweeper.locator(".lm-TabBar-tab", has_text="overview").click()
    assert not overflowing(page, 400), overflowing(page, 400)
    assert not sweeper.locator('span[style*="#b00020"]').all_inner_texts(), "the sweeper shows an error"
    assert not app.errors


def labels_shown(page: Page) -> list[str]:
    """The chosen label of every visible single select."""
    return page.evaluate("""() => [...document.querySelectorAll('.jupyter-widgets select:not([multiple])')]
      .filter(s => s.clientWidth > 0 && s.selectedIndex >= 0)
      .map(s => s.options[s.selectedIndex].text.replaceAll("\\u00a0", " "))""")
