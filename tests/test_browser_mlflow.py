"""The runs `wb.track` logs, in MLflow's own UI opened in Chromium as a person would: the sweep's run in
the experiment's list, and, expanded, every variant under it by its label, with its recall_at_3 and where
the verdict puts it (docs/mlflow.png is this view of a sweep of the bundled corpus). The sweep embeds with the
fake model (tests/fakemodel.py): what is tested is what MLflow shows."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from workbench.dataset import Dataset
from workbench.models.embed import Embedder
from workbench.report import export
from workbench.results.track import standing, track
from workbench.run.session import sweep
from workbench.variant import parse_variant

if TYPE_CHECKING:  # imported by pytest_plugins, after the assertion rewriter is in place
    from browserkit import Tab

pytest_plugins = ["browserkit"]


def test_every_variant_appears_under_the_sweep_in_mlflows_ui(tab: Tab, mlflow_server: str, tiny: Dataset,
                                                            fake_embedder: Embedder,
                                                            tmp_path_factory: pytest.TempPathFactory) -> None:
    store, out = tmp_path_factory.mktemp("ui-cache"), tmp_path_factory.mktemp("ui-out")
    result = sweep(tiny, [parse_variant(v) for v in ("fixed:size=8", "fixed:size=16+bm25")], ks=(1, 3), budgets=(),
                   embedder=fake_embedder, progress=False, store=store)
    export(result, out, dataset=tiny, store=store)
    done = track(result, mlflow_server, "in the browser", folder=out)
    verdict = result.verdict()
    page = tab.page
    page.set_viewport_size({"width": 1600, "height": 900})
    page.goto(done.url(mlflow_server).rpartition("/runs/")[0] + "/runs")
    page.get_by_text("Model training", exact=True).click()  # the runs table of an experiment of models, not traces
    sweep_row = page.get_by_text(f"sweep {result.provenance.date}", exact=True)
    sweep_row.wait_for()
    page.get_by_role("button", name="Columns").click()
    columns = page.get_by_test_id("column-selector-tree")
    for column in ("Dataset", "Source", "Models"):  # room for ours: the grid draws only the columns in view
        columns.get_by_text(column, exact=True).click()
    for column in ("recall_at_3", "workbench.verdict"):
        page.get_by_placeholder("Search columns").fill(column)
        columns.get_by_text(column, exact=True).first.click()  # the first: the search bolds it in longer names
    page.keyboard.press("Escape")
    if page.get_by_label("Close").count():  # MLflow's assistant panel, which takes a third of the width
        page.get_by_label("Close").first.click()
    page.locator("button[data-component-id*='runnamecellrenderer']").first.click()  # expand the sweep's run
    for key, label in zip(result.keys, result.labels, strict=True):
        named = page.locator(".ag-row", has=page.get_by_text(label, exact=True))
        named.wait_for()
        # the grid draws a row in pieces (the pinned name, the scrolling metrics) that share its row-index
        row = page.locator(f".ag-row[row-index='{named.get_attribute('row-index')}']")
        mean = result.summary.query("key == @key and metric == 'recall' and k == 3")["mean"].iloc[0]
        shown = row.locator("[col-id='metrics.`recall_at_3`']").inner_text()
        assert float(shown) == pytest.approx(mean, abs=1e-6)
        assert row.locator("[col-id='tags.`workbench.verdict`']").inner_text() == standing(verdict, key)
    tab.screenshot("mlflow-runs", full_page=False)
