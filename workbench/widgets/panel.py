"""An ipywidgets panel to try chunking parameters by hand and see where they land among others.

Every registered strategy is offered, with controls generated from its Param schema (so a
user-registered chunker needs no panel code). It is a thin shell over `sweep` and
`plots.overview`: picking a strategy, parameters and modifiers makes a Variant,
sweeps it once if it is new (the IndexStore and the vector cache make a revisit cheap), merges
it into the panel's result and redraws. Everything already measured is only filtered, never
recomputed. Figures are shown as PNG in an Image widget, which needs no matplotlib backend.
A variant whose chunker asks an LLM gets the estimate of its generations on the message line
before they start (workbench.run.estimate.generation_estimates). The panel measures in the kernel's
own thread, so a click could not reach a Stop button while it generates: the sweeper has one.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import ipywidgets as w

from workbench.chunkers import STRATEGIES
from workbench.core.io import CACHE_DIR
from workbench.core.params import Param
from workbench.dataset import Dataset
from workbench.evaluation.metrics import default_k
from workbench.figures.draw import figure_to_png_bytes
from workbench.figures.plots import overview
from workbench.models.choose import result_key
from workbench.models.embed import Embedder
from workbench.models.estimate import generation_line
from workbench.results.combine import combine
from workbench.results.result import SweepResult
from workbench.retrieval.index import IndexStore
from workbench.run.estimate import generates
from workbench.run.session import Session
from workbench.variant import Variant
from workbench.widgets.base import PanelBase, row


def typed_as_json(p: Param) -> bool:
    """Tuples (e.g. custom separators) and untyped parameters are typed as JSON, which keeps
    escapes such as "\\n\\n" exact; every other kind has a native widget."""
    return p.choices is None and not isinstance(p.default, bool | int | float | str)


def control(name: str, p: Param, defaults: dict[str, Any] | None = None) -> w.ValueWidget:
    """The widget for one parameter, chosen from its schema alone, so any registered strategy
    (built in or user-registered) gets its controls without the panel knowing it. Its
    description carries the unit ("overlap (sentences)"); `defaults`: the strategy's defaults."""
    common = {"description": p.title(name, defaults), "tooltip": p.help, "style": {"description_width": "initial"}}
    if typed_as_json(p):
        common["tooltip"] += " (as JSON)"
        return w.Text(value=json.dumps(p.default), continuous_update=False, **common)
    if p.choices is not None:
        return w.Dropdown(options=list(p.choices), value=p.default, **common)
    if isinstance(p.default, bool):
        return w.Checkbox(value=p.default, **common)
    if isinstance(p.default, str):
        return w.Text(value=p.default, continuous_update=False, **common)
    # An open upper bound gets the schema's slider end, or a roomy one for sizes; the readout
    # still accepts a typed value beyond it.
    lo = min(0, p.default) if p.lo is None else p.lo
    hi = p.hi if p.hi is not None else p.slider_hi if p.slider_hi is not None else max(4 * p.default, 1024)
    if isinstance(p.default, int):
        return w.IntSlider(value=p.default, min=lo, max=hi, continuous_update=False, **common)
    return w.FloatSlider(value=p.default, min=lo, max=hi, step=(hi - lo) / 200, continuous_update=False, **common)


def read(name: str, p: Param, widget: w.ValueWidget) -> Any:
    """The control's value for `Variant.make`; raises ValueError naming the parameter."""
    if not typed_as_json(p):
        return widget.value
    try:
        return json.loads(widget.value)
    except json.JSONDecodeError as e:
        raise ValueError(f"parameter '{name}' must be JSON, e.g. {json.dumps(p.default)}: {e}") from None


class Panel(PanelBase):
    """Strategy, parameter and modifier controls, a message line, a progress area and the figure.

    `result` holds every variant measured so far; `compared` the keys of those drawn next to the
    selected one; `params` the current strategy's controls by parameter name; the figure is
    `plot.value` (PNG bytes).
    """

    def __init__(
        self,
        source: Session | Dataset,
        embedder: Embedder | None = None,
        store: IndexStore | str | Path = CACHE_DIR,
        ks: Sequence[int] | None = None,
        result: SweepResult | str | Path | None = None,
    ):
        result = self.opened(result)
        super().__init__(source, embedder, store, result=result, ks=ks)
        self.result = result
        self.compared: list[str] = result.keys if result is not None else []
        self.selected: str | None = None

        self.strategy = w.Dropdown(options=list(STRATEGIES), description="strategy")
        self.about = w.HTML()
        self.params: dict[str, w.ValueWidget] = {}
        self.param_box = row()
        self.header = w.Checkbox(False, description="contextual header",
                                 tooltip="embed 'title > heading path' above each chunk's text")
        self.late = w.Checkbox(False, description="late chunking",
                               tooltip="pool token embeddings of the whole document window")
        self.k = w.SelectionSlider(options=list(self.ks), value=default_k(self.ks), description="k",
                                   continuous_update=False)  # the sweeper's and the report's k
        self.add = w.Button(description="add variant", icon="plus", tooltip="keep the selected variant in the plots")
        self.remove = w.Button(description="remove variant", icon="minus", tooltip="drop the selected variant")
        self.progress = w.Output()
        self.warning = w.HTML()  # about the selected variant and the questions (verdict.sweep_warnings)
        self.verdict = w.HTML()  # what every variant measured says, worded as the CLI and the report word it
        self.plot = w.Image(format="png", layout=w.Layout(width="100%"))
        self.strategy.observe(self.guarded(self._on_strategy), names="value")
        for modifier in (self.header, self.late):
            modifier.observe(self.guarded(self._on_variant), names="value")
        self.k.observe(self.guarded(self._draw), names="value")
        self.add.on_click(self.guarded(lambda: self._pin(True)))
        self.remove.on_click(self.guarded(lambda: self._pin(False)))
        self.children = [
            row(self.strategy, self.about),
            self.param_box,
            row(self.header, self.late, self.k, self.add, self.remove),
            self.message, self.warning, self.verdict, self.progress, self.plot,
        ]
        self._on_strategy()

    def variant(self) -> Variant:
        """The Variant the controls describe; raises ValueError for an invalid combination."""
        schema = STRATEGIES[self.strategy.value].params
        params = {name: read(name, schema[name], widget) for name, widget in self.params.items()}
        return Variant.make(self.strategy.value, contextual_header=self.header.value, late=self.late.value, **params)

    def _on_strategy(self) -> None:
        """New controls at the strategy's defaults, then select. The old ones are closed once
        no longer shown, so their kernel-side comms do not pile up."""
        spec, old = STRATEGIES[self.strategy.value], self.params.values()
        defaults = {name: p.default for name, p in spec.params.items()}
        self.params = {name: control(name, p, defaults) for name, p in spec.params.items()}
        for widget in self.params.values():
            widget.observe(self.guarded(self._on_variant), names="value")
        self.param_box.children = list(self.params.values())
        for widget in old:
            widget.close()
        self.about.value = f"<i>{html.escape(spec.help)}</i>" + ("" if spec.params else " (no parameters)")
        self._on_variant()

    def _on_variant(self) -> None:
        try:
            v = self.variant()
        except ValueError as e:  # shown here too when called from the constructor
            self.show_error(e)
            return
        schema = STRATEGIES[v.strategy].params
        for name, widget in self.params.items():  # sizes follow the `unit` control
            widget.description = schema[name].title(name, v.kwargs)
        key = result_key(v.key, self.session.embedder)  # the row of the variant with the panel's model
        if (self.result is None or key not in self.result.keys) and not self._measure(v):
            return
        self.selected = key
        row = self.result.variants.set_index("key").loc[key]
        self.message.value = (f"selected: <b>{html.escape(self.result.label_of(key))}</b>: {row['chunks']:,} chunks, "
                              f"{row['truncated_chunks']:,} longer than the model's window")
        self.warning.value = self.warnings_html(self.result, [key])
        self._draw()

    def _measure(self, v: Variant) -> bool:
        """Sweep `v` into `result`; False if it failed (the reason is then shown in the panel)."""
        self.message.value = f"indexing <b>{html.escape(v.label)}</b>…"
        new = None
        # In a kernel, tqdm.auto draws its bars here. The front end captures them; `outputs` learns
        # of them only after this callback, so emptying it changes nothing: a clear_output message does.
        with self.progress:
            try:
                if generates(v):  # what its LLM will write, said before it writes it
                    line = generation_line(*self.session.generation_estimates([v]))
                    if line:
                        self.message.value += "<br>" + html.escape(line)
                new = self.session.with_settings(progress=True).sweep([v])
            except Exception as e:  # noqa: BLE001  (caught inside: in a kernel the Output would swallow it)
                self.show_error(e)
        self.progress.clear_output()
        if new is None:
            return False
        self.result = new if self.result is None else combine([self.result, new])
        return True

    def _pin(self, keep: bool) -> None:
        """Add the selected variant to the comparison (keep) or drop it from it."""
        if self.selected is None or (self.selected in self.compared) == keep:
            return
        if keep:
            self.compared.append(self.selected)
        else:
            self.compared.remove(self.selected)
        self._draw()

    def _draw(self) -> None:
        if self.result is None or self.selected is None:
            return
        shown = list(dict.fromkeys([*self.compared, self.selected]))
        fig = overview(self.result, k=self.k.value, variants=shown, highlight=self.selected)
        self.plot.value = figure_to_png_bytes(fig)
        self.verdict.value = self.verdict_html(self.result, self.k.value)


def panel(
    source: Session | Dataset,
    embedder: Embedder | None = None,
    store: IndexStore | str | Path = CACHE_DIR,
    ks: Sequence[int] | None = None,
    result: SweepResult | str | Path | None = None,
) -> Panel:
    """The interactive panel of a Session (or of a Dataset, with a session's arguments); with
    `result`, its variants are compared from the start (and its settings are used for new variants)."""
    return Panel(source, embedder, store, ks, result)
