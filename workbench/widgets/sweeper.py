"""The sweeper: sweep a grid from widgets, watch the plots fill in, scrub, compare and export.

Drawing only. What to sweep (GridSpec), the run (SweepRun), what to redraw (ScrubState) and the
comparison (Comparison) are decided in `state.py`, tested without widgets. Figures are drawn
once per base (`render.Picture`); scrubbing only blits the highlight, so it never recomputes.
The Run button sweeps in a thread so the kernel stays free; the Search button searches the grid instead
(workbench.run.search, state.SearchRun: the same Stop, estimate and result, its race in a tab of its
own); every exception in a callback is shown in the message area with its type and text
(`PanelBase.guarded`).

Other panels measure through it: `Sweeper.measure(variants)` runs variants like the Run button
and adds them to the plots (the semantic explorer's "measure this setting" calls it).
"""

from __future__ import annotations

import html
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import ipywidgets as w
import pandas as pd
from matplotlib.figure import Figure

from workbench import report
from workbench.chunkers import STRATEGIES
from workbench.core.chunk import Chunk
from workbench.core.io import CACHE_DIR, project_dir
from workbench.core.stages import first_stages
from workbench.dataset import Dataset, Hit, Question
from workbench.evaluation import stats
from workbench.evaluation.metrics import default_k
from workbench.figures.plotdata import RECALL, has_budgets, swept_parameters
from workbench.figures.plots import budget_curves, by_model, by_parameter, heatmap, overview, race
from workbench.figures.viewer import around, chunk_html, span_chunks
from workbench.models.choose import ModelSpec, result_key, variant_key
from workbench.models.embed import Embedder
from workbench.results import audit as chunk_audit
from workbench.results.drilldown import drilldown
from workbench.results.result import SweepResult
from workbench.retrieval.index import IndexStore
from workbench.run.grid import GridSpec, hint, parameters
from workbench.run.search import BUDGET
from workbench.run.session import Session
from workbench.variant import Variant
from workbench.widgets.base import FULL_WIDTH, WARNING, PanelBase, row, whole_label
from workbench.widgets.render import Picture
from workbench.widgets.state import Comparison, DrawBudget, Redraw, ScrubState, SearchRun, SweeperMemory, SweepRun

FIGURES = ("overview", "parameter", "heatmap", "budgets", "by_model", "race")  # one tab each, then "compare"
SWITCH = [("off", (False,)), ("on", (True,)), ("both", (False, True))]  # a modifier's values in a grid
HEAT_METRICS = ("recall", "hit", "mrr", "ndcg", "precision_omega", "context_tokens")
TABLE_PX = 760  # the least width of a Compare table: its text column stays a few lines tall, and it fits a notebook
PICK_TWO = "<i>pick two different measured variants</i>"


def scrolling(table: pd.DataFrame) -> str:
    """A table as HTML that keeps a readable width and scrolls sideways in a narrow window (its
    text column would otherwise shrink to a word a line), while the text around it wraps:
    contain:inline-size keeps the table's width out of the width of the box around it."""
    return (f'<div style="overflow-x:auto;contain:inline-size"><div style="min-width:{TABLE_PX}px">'
            f"{table.to_html(index=False, escape=True)}</div></div>")


def _switch(description: str, tooltip: str) -> w.ToggleButtons:
    """A modifier's values in the grid: off, on or both (then each variant with and without it)."""
    return w.ToggleButtons(options=SWITCH, description=description, tooltip=tooltip,
                           style={"button_width": "50px", "description_width": "120px"})


class Sweeper(PanelBase):
    """Grid controls, Run/Stop with progress, the figures, a scrub over measured variants with a
    chunk viewer, a Compare tab and Export. `result` holds every measured variant; `run` the
    current or last SweepRun; `last_redraw` what the last change redrew (state.Redraw)."""

    def __init__(
        self,
        source: Session | Dataset,
        embedder: Embedder | None = None,
        store: IndexStore | str | Path = CACHE_DIR,
        ks: Sequence[int] | None = None,
        result: SweepResult | str | Path | None = None,
        background: bool = True,
        restore: bool = True,
        models: Sequence[ModelSpec] | None = None,
    ):
        result = self.opened(result)
        super().__init__(source, embedder, store, models, result, ks)
        self.result = result
        self.memory = SweeperMemory.of(self.store.root, self.dataset, self.models, self.settings)
        self.background = background  # False: Run sweeps in the caller's thread (tests)
        self.run: SweepRun | None = None
        self.thread: threading.Thread | None = None  # the last background sweep
        self.draw_share = 0.05  # of a sweep's time at most spent redrawing while it runs
        self.budget = DrawBudget(self.draw_share)  # the current sweep's
        self.scrub = ScrubState()
        self.last_redraw = Redraw.NONE
        self.pictures: dict[str, Picture] = {}
        self._ranked: dict[str, list[list[Hit]]] = {}
        self._chunks: dict[str, list[Chunk]] = {}
        self._lock = threading.RLock()  # the sweep thread and the user's clicks draw one at a time
        self._quiet = False  # set while options are replaced, so their observers stay still
        self._note = ""  # what the message line says of the current Run before its estimate

        questions = [(f"{q.qid}: {q.question[:70]}", q.qid) for q in self.dataset.questions]
        self.strategies = w.SelectMultiple(options=list(STRATEGIES), value=("fixed",), description="strategies",
                                           rows=min(8, len(STRATEGIES)))
        self.retrievers = {name: w.Checkbox(value=name == "dense", description=name, indent=False,
                                            layout=w.Layout(width="80px")) for name in first_stages()}
        self.contextual_header = _switch("contextual header", "embed 'title > heading path' above each chunk")
        self.late = _switch("late chunking", "pool token embeddings of the whole document window")
        self.model_boxes = {e.fingerprint: w.Checkbox(value=True, description=e.name, indent=False,
                                                      layout=w.Layout(width="max-content"))
                            for e in self.models}  # shown when the panel has several models
        self.ranges: dict[str, w.Text] = {}
        self.range_box = w.VBox(layout=w.Layout(flex="1 1 360px", max_width="560px"))  # beside the strategies or under
        self.k = w.Dropdown(options=list(self.ks), value=default_k(self.ks), description="k",
                            layout=w.Layout(width="130px"))
        self.run_button = w.Button(description="Run", icon="play", button_style="primary")
        self.search_button = w.Button(description="Search", icon="search",
                                      tooltip="race the grid's variants (workbench.run.search): the best for a "
                                              "share of sweeping them all")
        self.search_budget = w.BoundedFloatText(value=BUDGET, min=0.01, max=1.0, step=0.05, description="budget",
                                                tooltip="the share of sweeping the whole grid a Search may spend",
                                                layout=w.Layout(width="150px"))
        self.stop_button = w.Button(description="Stop", icon="stop", disabled=True)
        self.bar = w.IntProgress(value=0, min=0, max=1)
        self.progress = w.HTML()
        self.warning = w.HTML()  # about the measured variants (verdict.sweep_warnings)
        self.health = w.HTML()  # their chunk health (workbench.results.audit), the table folded
        self.audit: pd.DataFrame | None = None  # that audit, which Export puts in the report
        self.verdict = w.HTML()  # what the measured variants say, worded as the CLI and the report word it
        self.images = {name: w.Image(format="png", layout=w.Layout(width="100%", display="none")) for name in FIGURES}
        self.notes = {name: w.HTML() for name in FIGURES}
        self.param = w.Dropdown(description="parameter", layout=whole_label())
        self.heat_metric = w.Dropdown(options=HEAT_METRICS, value="recall", description="metric")
        self.slider = w.SelectionSlider(options=[("nothing measured", "")], description="variant", disabled=True,
                                        readout=False,  # the label is in the dropdown beside it
                                        layout=w.Layout(width="420px", max_width=FULL_WIDTH),
                                        style={"description_width": "initial"})
        self.choice = w.Dropdown(description="", layout=whole_label())
        self.question = w.Dropdown(options=questions, description="question", layout=whole_label())
        self.viewer = w.HTML()
        self.cmp_a = w.Dropdown(description="A", layout=whole_label())
        self.cmp_b = w.Dropdown(description="B", layout=whole_label())
        self.cmp_metric = w.Dropdown(options=[("hit (retrieved = any evidence hit)", "hit"),
                                              ("recall (retrieved = recall > 0)", "recall")],
                                     value="hit", description="retrieved by", layout=whole_label())
        self.cmp_summary = w.HTML()
        self.cmp_table = w.HTML()
        self.cmp_question = w.Dropdown(options=questions, description="question", layout=whole_label())
        self.cmp_chunks = w.HTML()
        self.folder = w.Text(value=str(project_dir() / "results" / "sweeper"), description="folder",
                             tooltip="where Export writes; a relative folder is taken under the project's folder",
                             layout=w.Layout(flex="1 1 300px", max_width="640px"))
        self.export_button = w.Button(description="Export", icon="download",
                                      tooltip="write report.html and the tables of the variants in the panel")

        self.strategies.observe(self.guarded(self._on_strategies), names="value")
        self.run_button.on_click(self.guarded(self._on_run))
        self.search_button.on_click(self.guarded(self._on_search))
        self.stop_button.on_click(self.guarded(self.stop))
        for control in (self.k, self.param, self.heat_metric):
            control.observe(self.guarded(self._refresh), names="value")
        for control in (self.slider, self.choice):
            control.observe(lambda change: self.guarded(lambda: self.select(change["new"]))(), names="value")
        self.question.observe(self.guarded(self._show_viewer), names="value")
        for control in (self.cmp_a, self.cmp_b, self.cmp_metric, self.k):
            control.observe(self.guarded(self._show_comparison), names="value")
        self.cmp_question.observe(self.guarded(self._show_compared_question), names="value")
        self.export_button.on_click(self.guarded(self.export))

        self.tabs = w.Tab([
            self.images["overview"],
            w.VBox([self.param, self.notes["parameter"], self.images["parameter"]]),
            w.VBox([self.heat_metric, self.notes["heatmap"], self.images["heatmap"]]),
            w.VBox([self.notes["budgets"], self.images["budgets"]]),
            w.VBox([self.notes["by_model"], self.images["by_model"]]),
            w.VBox([self.notes["race"], self.images["race"]]),
            w.VBox([row(self.cmp_a, self.cmp_b, self.cmp_metric), self.cmp_summary, self.cmp_table,
                    self.cmp_question, self.cmp_chunks]),
        ])
        titles = ("overview", "against a parameter", "heatmap", "at equal budgets", "by model", "race", "compare")
        for i, title in enumerate(titles):
            self.tabs.set_title(i, title)
        self.children = [
            row(w.VBox([self.strategies, row(w.Label("retrievers:"), *self.retrievers.values()),
                        *[row(w.Label("models:"), *self.model_boxes.values())] * (len(self.models) > 1),
                        self.contextual_header, self.late], layout=w.Layout(max_width="100%")),
                self.range_box),
            row(self.k, self.run_button, self.search_button, self.search_budget, self.stop_button, self.bar,
                self.progress),
            self.message, self.warning, self.health, self.verdict,
            row(self.slider, self.choice),
            self.tabs,
            self.question, self.viewer,
            row(self.folder, self.export_button),
        ]
        self._on_strategies()
        if restore:
            self.guarded(self._restore)()
        if self.result is not None:
            self._refresh()

    @contextmanager
    def _quietly(self) -> Iterator[None]:
        self._quiet, before = True, self._quiet
        try:
            yield
        finally:
            self._quiet = before

    # ---- the grid and the run -----------------------------------------------------------------

    def _on_strategies(self) -> None:
        """A range box per sweepable parameter of the chosen strategies; typed text is kept."""
        schema = parameters(self.strategies.value)
        for name, p in schema.items():
            if name not in self.ranges:
                self.ranges[name] = w.Text(description=name, placeholder=hint(p), tooltip=p.help,
                                           layout=w.Layout(width=FULL_WIDTH), style={"description_width": "150px"})
        self.range_box.children = [self.ranges[name] for name in schema]

    def _restore(self) -> None:
        """The grid and the variants measured before on this data, model and settings (the
        memory), their scores read from the score cache: a re-run cell loses nothing."""
        restored = self.memory.load()
        if restored.grid is None:
            return
        self.set_grid(restored.grid)
        for model in self.models:  # each model its own variants: a restore computes nothing
            run = SweepRun(self.session, restored.variants.get(model.fingerprint, []), [model], self.result)
            self.result = run.run()
            if run.error:
                self.show_error(run.error)
                return
        back = sum(map(len, restored.variants.values()))
        note = f"restored the last grid and {back} variant{'s' * (back != 1)} measured before, from the caches"
        if restored.left_out:
            note += f"; {len(restored.left_out)} left out (Run measures them again), e.g. {restored.left_out[0]}"
        self.message.value = html.escape(note)

    def set_grid(self, grid: GridSpec) -> None:
        """Show `grid` in the controls (its strategies and retrievers that exist, its ranges as text)."""
        if grid.strategies:
            self.strategies.value = tuple(grid.strategies)
        for name, values in grid.ranges.items():
            if name in self.ranges:
                self.ranges[name].value = values if isinstance(values, str) else ", ".join(map(str, values))
        if set(grid.retrievers) & set(self.retrievers):
            for name, box in self.retrievers.items():
                box.value = name in grid.retrievers
        self.contextual_header.value = tuple(sorted(set(grid.contextual_header)))
        self.late.value = tuple(sorted(set(grid.late)))

    def grid(self) -> GridSpec:
        """The grid the controls describe."""
        shown = parameters(self.strategies.value)
        return GridSpec(tuple(self.strategies.value),
                        {name: box.value for name, box in self.ranges.items() if name in shown and box.value.strip()},
                        retrievers=tuple(name for name, box in self.retrievers.items() if box.value),
                        contextual_header=self.contextual_header.value, late=self.late.value)

    def _on_run(self) -> None:
        expansion = self.grid().variants()
        self.measure(expansion.variants, expansion.summary())

    def _on_search(self) -> None:
        expansion = self.grid().variants()
        self.search(expansion.variants, f"searching {expansion.summary()}")

    def measure(self, variants: Sequence[Variant], note: str = "") -> None:
        """Sweep `variants` like the Run button: in a background thread (unless the panel was made
        with background=False), each added to the plots as it finishes and then selected; those
        already measured are not re-run. RuntimeError while another sweep runs."""
        run = SweepRun(self.session, variants, self._ticked(), self.result,
                       on_step=lambda r: self.guarded(lambda: self._on_step(r))())
        already = len(variants) - run.total
        self._start(run, note + (f"; {already} already measured" if already else ""))

    def search(self, variants: Sequence[Variant], note: str = "") -> None:
        """Search `variants` like the Search button (workbench.run.search at the panel's k and budget): run as
        `measure` runs a sweep, its finalists added to the plots and its race drawn in the race tab."""
        self._start(SearchRun(self.session, variants, self._ticked(), self.result,
                              on_step=lambda r: self.guarded(lambda: self._on_step(r))(), k=self.k.value,
                              budget=self.search_budget.value), note)

    def _ticked(self) -> list[Embedder]:
        """The models ticked (all of them when the panel has one), checked before a run starts."""
        if self.run is not None and self.run.running:
            raise RuntimeError("a sweep is running: wait for it or press Stop")
        models = [e for e in self.models if self.model_boxes[e.fingerprint].value]
        if not models:
            raise ValueError("models: choose at least one model")
        return models

    def _start(self, run: SweepRun, note: str) -> None:
        self.run, self.budget = run, DrawBudget(self.draw_share)
        self._note = note
        self.message.value = html.escape(self._note)
        self.bar.max, self.bar.value = max(run.total, 1), 0
        self.run_button.disabled = self.search_button.disabled = True
        self.stop_button.disabled = False
        if self.background:
            self.thread = threading.Thread(target=run.run, name="sweeper", daemon=True)
            self.thread.start()
        else:
            run.run()

    def stop(self) -> None:
        """Stop the sweep after the variant being measured, or after the LLM's current batch when it
        generates; what finished stays (the generations in their cache: the next Run resumes)."""
        if self.run is not None:
            self.run.stop()
            self.progress.value = html.escape(self.run.progress_text())

    def _on_step(self, run: SweepRun) -> None:
        """After each finished variant (in the sweep's thread): progress, then the plots when the
        drawing budget allows (always at the end)."""
        self.bar.value = run.done
        self.progress.value = html.escape(run.progress_text())
        if run.error:
            self.show_error(run.error)
        elif run.estimate_line or run.stopped_at:  # what will be generated, then where a Stop ended it
            stopped = f"stopped: {run.stopped_at}" if run.stopped_at else ""
            self.message.value = "<br>".join(html.escape(t) for t in (self._note, run.estimate_line, stopped) if t)
        if run.result is not None:
            self.memory.save(self.grid(), run.result)
        if run.result is not None and run.result is not self.result and self.budget.due(run.elapsed, not run.running):
            start = time.perf_counter()
            with self._lock:
                self.result = run.result
                self._refresh()
                self.select(self.result.keys[-1])  # the newest
            self.budget.spent += time.perf_counter() - start
        if not run.running:
            self.run_button.disabled = self.search_button.disabled = False
            self.stop_button.disabled = True

    # ---- figures and scrub --------------------------------------------------------------------

    @property
    def selected(self) -> str | None:
        return self.scrub.selected

    def _refresh(self) -> None:
        """New bases when the variants, k or axes changed; otherwise nothing is redrawn."""
        with self._lock:
            if self._quiet or self.result is None:
                return
            swept = swept_parameters(self.result)
            with self._quietly():
                self.param.options = swept
                if swept and self.param.value not in swept:
                    self.param.value = swept[0]
            redraw = self.scrub.update(keys=self.result.keys, k=self.k.value,
                                       axes=(self.param.value, self.heat_metric.value))
            if redraw is Redraw.REBUILD:
                self.warning.value = self.warnings_html(self.result)
                self.verdict.value = self.verdict_html(self.result, self.k.value)
                self.pictures = {name: Picture(fig) for name, fig in self._figures().items()}
                self._set_options()
                self._show()
                self.health.value = self._health()
            self.last_redraw = redraw

    def _health(self) -> str:
        """The chunk health of the measured variants: a summary line over the folded table, then each
        warning (workbench.results.audit; each variant chunked once, then read back from the cache)."""
        measured = [Variant.from_spec(spec) for spec in self.result.provenance.grid]
        self.audit = self.session.with_settings(progress=False).audit(measured)
        shown = self.audit.drop(columns=["key", "findings"]).rename(columns={"label": "variant"})
        for name in (n for n, check in chunk_audit.CHECKS.items() if check.share):
            shown[name] = shown[name].map("{:.1%}".format)
        said = chunk_audit.warnings(self.audit)
        summary = f"{len(said)} warning{'s' * (len(said) != 1)}" if said else "no check past its threshold"
        return (f"<details><summary>chunk health: {summary}</summary>{scrolling(shown)}</details>"
                + "<br>".join(WARNING.format(html.escape(s)) for s in said))

    def _figures(self) -> dict[str, Figure]:
        """The figures at the panel's k and axes, by tab; a figure that does not apply says why
        in its tab's note."""
        result, k = self.result, self.k.value
        figures = {"overview": overview(result, k=k)}
        swept = swept_parameters(result)
        self.notes["parameter"].value = self.notes["heatmap"].value = self.notes["budgets"].value = ""
        if self.param.value:
            figures["parameter"] = by_parameter(result, self.param.value, k=k)
        else:
            self.notes["parameter"].value = "<i>sweep a parameter over two or more values to see metrics against it</i>"
        if len(swept) >= 2:
            try:
                figures["heatmap"] = heatmap(result, swept[0], swept[1], self.heat_metric.value, k=k)
            except ValueError as e:  # e.g. the two parameters belong to different strategies
                self.notes["heatmap"].value = f"<i>{html.escape(str(e))}</i>"
        else:
            self.notes["heatmap"].value = "<i>sweep two parameters (e.g. size and overlap) to see a heatmap</i>"
        if has_budgets(result):
            figures["budgets"] = budget_curves(result, RECALL)
        else:
            self.notes["budgets"].value = ("<i>this result has no budget rows: sweep with budgets to compare on equal "
                                           "context tokens</i>")
        self.notes["by_model"].value = self.notes["race"].value = ""
        if result.race is not None:
            figures["race"] = race(result.race)
        else:
            self.notes["race"].value = "<i>press Search to race the grid's variants: the search's race shows here</i>"
        try:
            figures["by_model"] = by_model(result, k=k)
        except ValueError as e:  # one model, or no size swept
            self.notes["by_model"].value = (f"<i>{html.escape(str(e))}: which chunking suits which model shows when "
                                            "the panel sweeps sizes with two models or more (models=)</i>")
        return figures

    def _set_options(self) -> None:
        """The measured variants, in sweep order, in the scrub and compare controls."""
        options = [(self.result.label_of(key), key) for key in self.result.keys]
        with self._quietly():
            self.slider.options, self.slider.disabled = options, False
            self.choice.options = options
            for box, fallback in ((self.cmp_a, 0), (self.cmp_b, -1)):
                value = box.value
                box.options = options
                box.value = value if value in self.result.keys else options[fallback][1]
            if self.cmp_a.value == self.cmp_b.value:  # two variants as soon as there are two
                self.cmp_b.value = options[-1][1]
        self._show_comparison()  # its P(best) is among every variant measured, so it is redone with each

    def select(self, key: str | None) -> None:
        """Highlight a measured variant (by key) in every figure and show its cuts."""
        with self._lock:  # the quiet flag is read under the lock: set by the thread drawing now
            if self._quiet or not key:
                return
            redraw = self.scrub.select(key)
            if redraw is not Redraw.NONE:
                self._show()
            self.last_redraw = redraw

    def _show(self) -> None:
        key = self.scrub.selected
        for name, image in self.images.items():
            image.value = self.pictures[name].png(key) if name in self.pictures else b""
            image.layout.display = None if image.value else "none"  # no broken-image icon before a figure
        with self._quietly():
            self.slider.value = self.choice.value = key
        self._show_viewer()

    def _show_viewer(self) -> None:
        key = self.scrub.selected
        if key is None:
            return
        q = self._question(self.question.value)
        self.viewer.value = (f"<b>{html.escape(self.result.label_of(key))}</b>" + chunk_html(
            self.dataset, self._chunks_of(key), *around(q.answers[0]), evidence=q.answers))

    def _question(self, qid: str) -> Question:
        return next(q for q in self.dataset.questions if q.qid == qid)

    def _chunks_of(self, key: str) -> list[Chunk]:
        if key not in self._chunks:
            self._chunks[key] = self.session.chunks(self.result.variant(key), self.model_of(key))
        return self._chunks[key]

    # ---- compare ------------------------------------------------------------------------------

    def comparison(self) -> Comparison:
        return Comparison(self.cmp_a.value, self.cmp_b.value, self.k.value, self.cmp_metric.value)

    def _show_comparison(self) -> None:
        if self._quiet or self.result is None:
            return
        c, label = self.comparison(), self.result.label_of
        if not c.a or not c.b or c.a == c.b:
            self.cmp_summary.value, self.cmp_table.value, self.cmp_chunks.value = PICK_TWO, "", ""
            return
        table = c.table(self.result, self.dataset)
        p = c.paired(self.result)
        best = stats.prob_best(self.result.per_question, "recall", c.k)  # like the paired line: recall
        self.cmp_summary.value = (
            f"recall@{c.k}, B − A over {p['n']} questions: <b>{p['diff']:+.3f}</b> "
            f"[{p['ci_low']:+.3f}, {p['ci_high']:+.3f}] ({self.settings.confidence:.0%} BCa), p = {p['p_value']:.3g}. "
            f"{(table.retrieved_by == c.b).sum()} question(s) only B retrieves, "
            f"{(table.retrieved_by == c.a).sum()} only A. P(best recall@{c.k}) among the {len(best)} measured "
            f"variants: A {best[c.a]:.2f}, B {best[c.b]:.2f} (bootstrap over questions).")
        shown = table.assign(retrieved_by=table.retrieved_by.map(label), missed_by=table.missed_by.map(label))
        self.cmp_table.value = scrolling(shown.drop(columns=["metric", "k"]))
        if len(table):
            with self._quietly():
                self.cmp_question.value = table.qid.iloc[0]
        self._show_compared_question()

    def _show_compared_question(self) -> None:
        """Both variants' top-k on the chosen question: the drill-down table and the evidence."""
        c = self.comparison()
        if self._quiet or self.result is None or not c.a or not c.b or c.a == c.b:
            return
        i = [q.qid for q in self.dataset.questions].index(self.cmp_question.value)
        q = self.dataset.questions[i]
        parts = []
        for side, key in (("A", c.a), ("B", c.b)):
            hits = self._rankings(key)[i][: c.k]
            parts.append(f"<h4>{side}: {html.escape(self.result.label_of(key))}</h4>"
                         + scrolling(drilldown(self.dataset, q, hits, c.k))
                         + chunk_html(self.dataset, span_chunks(self.dataset, [h.span for h in hits]),
                                      *around(q.answers[0]), evidence=q.answers))
        self.cmp_chunks.value = "".join(parts)

    def _rankings(self, key: str) -> list[list[Hit]]:
        if key not in self._ranked:
            self._ranked[key] = self.session.rankings(self.result.variant(key), max(self.ks), self.model_of(key))
        return self._ranked[key]

    def model_of(self, key: str) -> Embedder:
        """The panel's model that measured the result row `key` (a variant key, `@<hex>` for a model
        other than the bundled one)."""
        found = [e for e in self.models if result_key(variant_key(key), e) == key]
        if not found:
            raise ValueError(f"{self.result.label_of(key)} was measured with a model this panel does not have "
                             f"(its models: {[e.name for e in self.models]})")
        return found[0]

    # ---- export -------------------------------------------------------------------------------

    def export(self) -> dict[str, Path]:
        """report.html, the tables and the figures of the variants in the panel into `folder` (a
        relative one under the project's folder, base.project_dir, not the kernel's notebooks/): the
        report's default figures, with those on screen (at the panel's k, axes and metric) in
        place of theirs."""
        if self.result is None:
            raise ValueError("nothing to export: run a sweep first")
        if not self.folder.value.strip():
            raise ValueError("folder: name the folder to export to, e.g. results/sweeper")
        swept = swept_parameters(self.result)
        names = {"overview": "overview", "parameter": f"by_{self.param.value}",
                 "heatmap": "heatmap_" + "_".join(swept[:2]), "budgets": f"budgets_{RECALL}", "by_model": "by_model"}
        shown = {names[n]: fig for n, fig in self._figures().items() if n in names}  # the report draws the race
        folder = (project_dir() / Path(self.folder.value.strip()).expanduser()).resolve()  # an absolute one stays
        paths = report.export(self.result, folder, report.default_figures(self.result) | shown,
                              dataset=self.dataset, store=self.store, audit=self.audit)
        self.message.value = (f"wrote <b>{html.escape(str(paths['report'].resolve()))}</b> and "
                              f"{len(paths) - 1} tables and figures to {html.escape(str(folder))}")
        return paths


def sweeper(
    source: Session | Dataset,
    embedder: Embedder | None = None,
    store: IndexStore | str | Path = CACHE_DIR,
    ks: Sequence[int] | None = None,
    result: SweepResult | str | Path | None = None,
    restore: bool = True,
    models: Sequence[ModelSpec] | None = None,
) -> Sweeper:
    """The sweeper panel of a Session (or of a Dataset, with a session's arguments: `embedder`,
    `store` as its cache, `models`); with `result` (a SweepResult, or the folder of a saved run: what
    `python -m workbench sweep --out` wrote), its variants are shown from the start and its settings
    are used for new ones. It brings back the grid and the variants it last measured on
    this data, models and settings (from the caches); restore=False starts with none of them. With
    several models (e.g. wb.Session(ds, models=[None, "wordllama"])) every variant is measured with
    each model ticked, and the "by model" tab shows which chunking suits which.

    >>> wb.widgets.sweeper(wb.Session(ds, models=[None, "wordllama"]))  # doctest: +SKIP
    """
    return Sweeper(source, embedder, store, ks, result, restore=restore, models=models)
