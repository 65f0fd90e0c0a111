"""What every panel starts with: the session it measures with (its dataset, cache, models and
settings), and a message line on which every exception of a widget callback lands as "Type: text"
(never only in a log the user does not see)."""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import ipywidgets as w

from workbench.core.errors import describe
from workbench.core.io import CACHE_DIR
from workbench.dataset import Dataset
from workbench.evaluation.settings import Settings
from workbench.models.choose import ModelSpec
from workbench.models.embed import Embedder
from workbench.results.result import SweepResult
from workbench.results.verdict import sweep_warnings
from workbench.retrieval.index import IndexStore
from workbench.run.session import Session
from workbench.widgets.state import sweep_settings

ERROR = '<span style="color:#b00020">{}</span>'  # an error on the message line (browser tests look for the colour)
WARNING = '<span style="color:#8a4b00">{}</span>'  # a caveat on what is shown, e.g. truncated chunks


FULL_WIDTH = "calc(100% - 4px)"  # a control's share of its box: 100% less the 2 px margin each side


def row(*children: w.Widget) -> w.HBox:
    """Widgets side by side that wrap onto the next line when the page is narrow (a phone, a
    class's projector at 400 px) instead of running off its edge."""
    return w.HBox(list(children), layout=w.Layout(flex_flow="row wrap"))


def whole_label(**layout: str) -> w.Layout:
    """A dropdown's layout that shows its longest label whole (a variant's label such as
    "semantic(breakpoint_percentile=95, buffer_size=1, max_size=256)+hybrid"), capped at the width
    of the page."""
    return w.Layout(width="max-content", max_width=FULL_WIDTH, **layout)


class Guarded(w.VBox):
    """A box with a `message` line on which every exception of its callbacks lands (the Labeler's base,
    and through PanelBase the panels'). It lays out its widgets by setting `children`."""

    def __init__(self) -> None:
        super().__init__()
        self.message = w.HTML()

    def show_error(self, error: BaseException | str) -> None:
        """An exception (as "Type: text", see errors.describe) or a described one, in red."""
        text = describe(error) if isinstance(error, BaseException) else error
        self.message.value = ERROR.format(html.escape(text))

    def guarded(self, fn: Callable[[], Any]) -> Callable[..., None]:
        """`fn` as a widget callback (the change or button it is called with is dropped) whose
        exception is shown on the message line; the view drawn last stays."""
        def call(*_: Any) -> None:
            try:
                fn()
            except Exception as e:  # noqa: BLE001  (every error reaches the panel, never only a log)
                self.show_error(e)
        return call


class PanelBase(Guarded):
    """The base of the panels (Panel, Sweeper, Explorer): the `session` they measure with, quiet (a
    panel draws its own progress), and the `message` line. Made from a Session, or from a Dataset
    with the session's arguments (`embedder`, `store` as its cache, `models`), as a notebook of one
    cell would. With a `result`, the session scores with its settings, so what the panel measures
    combines with it (widgets.state.sweep_settings); `ks`, else."""

    def __init__(self, source: Session | Dataset, embedder: Embedder | None = None,
                 store: IndexStore | str | Path = CACHE_DIR, models: Sequence[ModelSpec] | None = None,
                 result: SweepResult | None = None, ks: Sequence[int] | None = None) -> None:
        super().__init__()
        session = source if isinstance(source, Session) else Session(source, cache=store, embedder=embedder,
                                                                     models=models)
        self.session = session.with_settings(sweep_settings(result, session, ks), progress=False)

    @staticmethod
    def opened(result: SweepResult | str | Path | None) -> SweepResult | None:
        """A panel's `result`: a SweepResult, or the folder of a saved run (`sweep --out`: SweepResult.load)."""
        return result if result is None or isinstance(result, SweepResult) else SweepResult.load(result)

    @property
    def dataset(self) -> Dataset:
        return self.session.dataset

    @property
    def store(self) -> IndexStore:
        return self.session.store

    @property
    def models(self) -> list[Embedder]:
        return self.session.models

    @property
    def embedder(self) -> Embedder:
        return self.session.embedder

    @property
    def settings(self) -> Settings:
        return self.session.settings

    @property
    def ks(self) -> tuple[int, ...]:
        return self.session.settings.ks

    @staticmethod
    def verdict_html(result: SweepResult | None, k: int) -> str:
        """The verdict on recall@k over every variant of `result`, as the CLI and the report word it (its
        warnings apart: `warnings_html`); "" before two variants are measured or without recall."""
        if (result is None or len(result.keys) < 2 or "recall" not in set(result.summary["metric"])
                or result.per_question["qid"].nunique() < 2):  # nothing to pair
            return ""
        v = result.verdict("recall", k)
        told = v.sentences()[: -len(v.warnings) or None]
        return f"<b>Verdict</b> on {html.escape(v.at.label)}: " + " ".join(html.escape(s) for s in told)

    @staticmethod
    def warnings_html(result: SweepResult | None, keys: list[str] | None = None) -> str:
        """verdict.sweep_warnings over the variants `keys` of `result` (default: all), as HTML, one
        per line; "" when there is nothing to warn about."""
        if result is None:
            return ""
        table = result.variants if keys is None else result.variants[result.variants["key"].isin(keys)]
        return "<br>".join(WARNING.format(html.escape(w)) for w in sweep_warnings(table, result.provenance))
