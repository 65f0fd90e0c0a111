"""Watch semantic cuts move: one document, its distance curve, its cuts and its chunks.

For teaching. The curve is the cosine distance between adjacent sentence groups; the dashed line
is the breakpoint percentile's threshold; every gap above it becomes a cut. Moving a slider
re-cuts from the memoised group vectors (`ExplorerState`; only a new buffer size or sentence
splitter embeds anything, once), then redraws the figure and the text. Drawing only: what to
recompute lives in the state.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any, Protocol

import ipywidgets as w
import numpy as np
from matplotlib.figure import Figure

from workbench.chunkers import get_strategy
from workbench.chunkers.sentence import SENTENCE_SPLITTERS
from workbench.core.io import CACHE_DIR
from workbench.dataset import Dataset, Span
from workbench.figures.viewer import chunk_html
from workbench.models.embed import Embedder
from workbench.report import summary_table
from workbench.retrieval.index import IndexStore
from workbench.run.session import Session
from workbench.variant import Variant
from workbench.widgets.base import PanelBase, row, whole_label
from workbench.widgets.explorer_state import ExplorerCut, ExplorerState
from workbench.widgets.render import Picture

PASSAGE_CHARS = 6000  # characters of the document shown at once in the text view
CONTEXT_CHARS = 600  # shown before a chosen question's evidence
MEASURED = [("recall", "@5"), ("mrr", "@10"), ("context_tokens", "@5")]  # the numbers "measure" reports
SIZE_HI = 1024  # slider end for min and max size, in tokens


class Measurer(Protocol):
    """What the measure button needs of a sweeper panel (workbench/widgets/sweeper.py's Sweeper)."""

    def measure(self, variants: list[Variant]) -> Any: ...


def cut_figure(cut: ExplorerCut) -> Figure:
    """Left: distances between adjacent sentence groups (x = the gap after sentence i), the
    threshold and the cuts; right: the histogram of chunk sizes, with the chunk count."""
    fig = Figure(figsize=(11, 3.4))
    curve, hist = fig.subplots(1, 2, width_ratios=[3, 1])
    # fixed margins: a layout engine would cost as much as the redraw itself
    fig.subplots_adjust(left=0.06, right=0.99, bottom=0.15, top=0.9, wspace=0.12)
    s, params = cut.semantic, cut.variant.kwargs
    if s.threshold is None:
        curve.text(0.5, 0.5, "fewer than two sentences: nothing to cut", ha="center", transform=curve.transAxes)
    else:
        d = np.asarray(s.distances)
        curve.plot(np.arange(len(d)), d, color="#4b5563", lw=0.8)
        curve.axhline(s.threshold, color="#dc2626", ls="--", lw=1.2, zorder=3, gid="threshold",
                      label=f"{params['breakpoint_percentile']:g}th percentile = {s.threshold:.3f}")
        curve.vlines(s.breakpoints, 0, 1, transform=curve.get_xaxis_transform(), colors="#2563eb", lw=0.6,
                     alpha=0.3, gid="cuts", label=f"{len(s.breakpoints)} cut{'s' * (len(s.breakpoints) != 1)}")
        curve.plot(s.breakpoints, d[s.breakpoints], "o", color="#2563eb", ms=3)
        # Where chunks really start once min and max size have merged and split them.
        starts = np.searchsorted([a for a, _ in cut.sentences], [c.start for c in cut.chunks[1:]], "right") - 2
        curve.plot(starts, np.zeros(len(starts)), "^", color="#16a34a", ms=5, transform=curve.get_xaxis_transform(),
                   clip_on=False, label="chunk starts (after min/max size)")
        curve.set_xlim(-0.5, max(len(d) - 0.5, 0.5))
        curve.legend(loc="upper right", fontsize=8)
    curve.set_xlabel("gap after sentence i")
    curve.set_ylabel("cosine distance")
    curve.set_title(f"{len(cut.sentences)} sentences, buffer {params['buffer_size']}", fontsize=10)
    hist.hist(cut.sizes, bins=min(20, max(cut.count, 1)), color="#93c5fd", edgecolor="#1e3a8a")
    for limit, name in ((params["min_size"], "min"), (params["max_size"], "max")):
        if limit:
            hist.axvline(limit, color="#dc2626", ls=":", lw=1, label=f"{name} size")
    hist.set_xlabel(f"chunk size ({params['tokenizer']} tokens)")
    hist.set_title(f"{cut.count} chunks", fontsize=10)
    return fig


def picture(cut: ExplorerCut, dpi: int = 90) -> bytes:
    """The cut's figure as PNG, drawn once and encoded fast (every slider move redraws)."""
    return Picture(cut_figure(cut), dpi).png()


def _slider(description: str, value: int, hi: int, tip: str) -> w.IntSlider:
    return w.IntSlider(value=value, min=0, max=hi, description=description, tooltip=tip, continuous_update=False,
                       style={"description_width": "initial"})


class Explorer(PanelBase):
    """Document, question and parameter controls, the figure, the text view and a message line.

    `state` holds the document's sentences, vectors and last cut; `draws` counts redraws; the
    figure is `plot.value` (PNG bytes) and the text view `text.value` (HTML).
    """

    def __init__(
        self,
        source: Session | Dataset,
        embedder: Embedder | None = None,
        store: IndexStore | str | Path = CACHE_DIR,
        doc_id: str | None = None,
        sweeper: Measurer | None = None,
    ):
        super().__init__(source, embedder, store)
        self.sweeper = sweeper
        self.state = ExplorerState(self.dataset, self.embedder, doc_id)
        self.draws = 0
        params = get_strategy("semantic").params  # the strategy's schema: defaults and help texts
        self.doc = w.Dropdown(options=[(f"{d.title or d.doc_id} ({len(d.text):,} chars)", d.doc_id)
                                       for d in self.dataset.documents], value=self.state.doc_id,
                              description="document",
                              layout=whole_label())
        self.question = w.Dropdown(description="question", layout=whole_label())
        self.percentile = _slider("breakpoint percentile", int(params["breakpoint_percentile"].default), 100,
                                  params["breakpoint_percentile"].help)
        self.buffer = _slider("buffer size", params["buffer_size"].default, 5, params["buffer_size"].help)
        self.min_size = _slider("min size", 0, SIZE_HI, params["min_size"].help)
        self.max_size = _slider("max size", 0, SIZE_HI, params["max_size"].help)
        self.sentences = w.Dropdown(options=list(SENTENCE_SPLITTERS), value=params["sentences"].default,
                                    description="sentences", tooltip=params["sentences"].help)
        self.position = _slider("from character", 0, 0, "first character of the passage shown below")
        self.measure = w.Button(description="measure this setting", icon="flask", layout=w.Layout(width="auto"),
                                tooltip="sweep this variant on the whole dataset")
        self.scores = w.HTML()
        self.plot = w.Image(format="png", layout=w.Layout(width="100%"))
        self.text = w.HTML()
        self.doc.observe(self.guarded(self._on_doc), names="value")
        for control in (self.percentile, self.buffer, self.min_size, self.max_size, self.sentences):
            control.observe(self.guarded(self._recut), names="value")
        self.question.observe(self.guarded(self._on_question), names="value")
        self.position.observe(self.guarded(self._show_text), names="value")
        self.measure.on_click(self.guarded(self._measure))
        self.children = [
            row(self.doc, self.sentences),
            row(self.percentile, self.buffer, self.min_size, self.max_size),
            row(self.measure, self.scores),
            self.message, self.plot,
            row(self.question, self.position),
            w.Box([self.text], layout=w.Layout(max_height="420px", overflow="auto", border="1px solid #ddd")),
        ]
        self.guarded(self._on_doc)()

    def _on_doc(self) -> None:
        self.state.select(self.doc.value)
        text = self.state.doc.text
        asked = [q for q in self.dataset.questions if any(a.doc_id == self.state.doc_id for a in q.answers)]
        # The text is drawn once, by the re-cut: the state has no cut of this document before it.
        self.question.options = [("(none)", "")] + [(q.question, q.qid) for q in asked]
        self.question.value = ""
        self.position.value = 0
        self.position.max = max(len(text) - PASSAGE_CHARS, 0)
        self._recut()

    def _recut(self) -> None:
        if not self.state.has_vectors(self.buffer.value, self.sentences.value):
            self.message.value = "embedding this document's sentence groups (once per buffer size)…"
        cut = self.state.cut(self.percentile.value, self.buffer.value, self.min_size.value, self.max_size.value,
                             self.sentences.value)
        self.plot.value = picture(cut)
        self._show_text()
        self.draws += 1
        self.message.value = f"<b>{html.escape(cut.variant.label)}</b>: {cut.count} chunks"

    def _on_question(self) -> None:
        """Move the passage to the chosen question's evidence in this document."""
        spans = self._evidence()
        start = min(max(0, spans[0].start - CONTEXT_CHARS), self.position.max) if spans else self.position.value
        if start != self.position.value:
            self.position.value = start  # which redraws the text
        else:
            self._show_text()

    def _evidence(self) -> list[Span]:
        if not self.question.value:
            return []
        q = next(q for q in self.dataset.questions if q.qid == self.question.value)
        return sorted((a for a in q.answers if a.doc_id == self.state.doc_id), key=lambda a: a.start)

    def _show_text(self) -> None:
        cut = self.state.last
        if cut is None:
            return
        start = self.position.value
        self.text.value = chunk_html(self.dataset, cut.chunks, self.state.doc_id, start, start + PASSAGE_CHARS,
                                     self._evidence())

    def _measure(self) -> None:
        """Sweep the current setting: through the sweeper panel if there is one (its plots then
        show it), else here, reporting the headline numbers."""
        v = self.state.variant()
        if self.sweeper is not None:
            self.sweeper.measure([v])
            self.scores.value = f"sent <b>{html.escape(v.label)}</b> to the sweeper"
            return
        self.scores.value = f"measuring <b>{html.escape(v.label)}</b>…"
        result = self.session.sweep([v], ks=(5, 10))
        self.scores.value = summary_table(result)[MEASURED].to_html()


def explorer(
    source: Session | Dataset,
    embedder: Embedder | None = None,
    store: IndexStore | str | Path = CACHE_DIR,
    doc_id: str | None = None,
    sweeper: Measurer | None = None,
) -> Explorer:
    """The semantic breakpoint explorer on one document of the session's dataset (default: the
    first); a Dataset with a session's arguments will do. With `sweeper` (a Sweeper panel),
    "measure this setting" adds the variant to its plots."""
    return Explorer(source, embedder, store, doc_id, sweeper)
