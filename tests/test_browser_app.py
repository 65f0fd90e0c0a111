"""`make app`: notebooks/app.ipynb served by Voilà, opened in Chromium as a student would: the
widgets render, no code and no error is shown, and nothing is fetched from off the machine."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from test_notebook import write_dataset

from workbench.dataset import Dataset

if TYPE_CHECKING:  # imported by pytest_plugins, after the assertion rewriter is in place
    from browserkit import Server, Tab

pytest_plugins = ["browserkit"]

RENDER_S = 180  # kernel start, model load and the first variant of the tiny corpus


@pytest.fixture
def app(tab: Tab, voila_app: Server, workspace: Path, tiny: Dataset) -> Tab:
    """The app page on the tiny corpus, once its figure is drawn (each load runs the notebook)."""
    from browserkit import set_parameters

    data = workspace / "tiny-app"
    if not data.exists():
        write_dataset(tiny, data)
    set_parameters(workspace / "notebooks" / "app.ipynb", f"DATA = {str(data)!r}\nCACHE = '../results/cache'")
    tab.page.goto(voila_app.url, timeout=RENDER_S * 1000)
    tab.page.locator(".jupyter-widgets img.widget-image[src]").first.wait_for(timeout=RENDER_S * 1000)
    return tab


def test_app_page_renders_its_widgets_without_errors(app: Tab) -> None:
    page = app.page
    app.screenshot("app")
    text = page.inner_text("body")
    for error in ("Error displaying widget", "Traceback", "Error"):
        assert error not in text
    assert "import workbench" not in text, "code cells are shown"
    assert page.locator(".jupyter-widgets .widget-hslider").count() > 0, "no slider rendered"
    assert page.locator("img.widget-image").first.evaluate("img => img.decode().then(() => img.naturalWidth)") > 0
    assert not app.errors


@pytest.mark.xfail(strict=True, reason="Voilà's lab template links Font Awesome from cdn.jsdelivr.net (the icons "
                   "are bundled locally too): two failed requests and console errors on a closed network")
def test_app_page_fetches_nothing_off_the_machine(app: Tab, voila_app: Server) -> None:
    local = ("data:", "blob:", voila_app.url, voila_app.url.replace("http", "ws", 1))
    assert not [u for u in app.requests if not u.startswith(local)], "requests off the local server"
    assert not [c for c in app.console if c.startswith("error")]
