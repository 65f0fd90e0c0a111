"""Label questions with the mouse: browse and search the documents, select evidence in the text, type
the question, and the labels are saved to questions.jsonl after every action (atomically).

Drawing and wiring only: what a label is, undo and saving live in `labeler_state`. The document view
is an anywidget (labeler.js) that draws the pieces sent from here, each carrying its start offset in
code points, and reports the selection with the text it covered; Python checks that text against the
document before it becomes evidence.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import anywidget
import ipywidgets as w
import traitlets

from workbench.core.chunk import Chunk
from workbench.dataset import Dataset
from workbench.figures.viewer import EVIDENCE, chunk_style
from workbench.models.embed import Embedder
from workbench.variant import Variant, parse_variant
from workbench.widgets.base import FULL_WIDTH, Guarded, row
from workbench.widgets.labeler_state import LabelerState, Piece

LABELLED = "border-bottom:2px dotted #15803d;"  # evidence of a saved question
MATCH = "background:#fde047;"  # the current search match
CUT = "box-shadow:inset 2px 0 #1d4ed8;"  # where a chunk starts
CSS = """
.wb-labeler-text { position: relative; white-space: pre-wrap; overflow-wrap: anywhere; font-size: 14px;
  font-family: var(--jp-content-font-family, sans-serif); line-height: 1.7; min-height: 120px; max-height: 380px;
  overflow: auto; padding: 8px 12px; border: 1px solid #d1d5db; border-radius: 4px; background: #fff; color: #111827; }
.wb-labeler-text:focus { outline: 2px solid #93c5fd; }
"""


class DocumentView(anywidget.AnyWidget):
    """One document as pieces [start, text, style, tooltip]; `selection` is {start, end, text} (code
    points) of the last selection made in it, {} once used."""

    _esm = Path(__file__).with_name("labeler.js")
    _css = CSS
    pieces = traitlets.List().tag(sync=True)
    length = traitlets.Int(0).tag(sync=True)
    scroll_to = traitlets.Int(-1).tag(sync=True)
    selection = traitlets.Dict().tag(sync=True)


def piece_row(p: Piece, text: str, chunks: list[Chunk], rank: dict[int, int], starts: set[int]) -> list[Any]:
    """What the view draws of one piece: its start, text, style and tooltip."""
    style = chunk_style(p.chunks, rank) + (CUT if p.start in starts else "")
    style += EVIDENCE if p.draft else LABELLED if p.labels else ""
    style += MATCH if p.match else ""
    tip = [f"chunk {i} [{chunks[i].start}, {chunks[i].end})" for i in p.chunks]
    tip += [f"evidence of {', '.join(p.labels)}"] if p.labels else []
    return [p.start, text[p.start:p.end], style, "; ".join(tip)]


def _button(description: str, tooltip: str, style: str = "") -> w.Button:
    return w.Button(description=description, tooltip=tooltip, button_style=style, layout=w.Layout(width="auto"))


class Labeler(Guarded):
    """Documents (filter by id or title, search their text), the shown document, the question being
    written and its evidence, the saved labels; `state` is the LabelerState behind it.

    Select text in the document and press "Add evidence" (as often as the question needs), type the
    question, "Save label". When the answer is written in two places too (the code that sets a default,
    the page that documents it), press "Add alternative" and add the evidence of the other: any one
    found counts. Pick a saved label to edit or delete it; "Undo" takes back the last actions.
    """

    def __init__(self, source: Dataset | str | Path, questions: str | Path | None = None,
                 variant: Variant | str | None = None, embedder: Embedder | None = None):
        super().__init__()
        self.state = LabelerState.open(source, questions, embedder=embedder)
        self.view = DocumentView()
        self._listing = False
        self._drawn = self.state.doc_id
        self.filter = w.Text(placeholder="filter by id or title", layout=w.Layout(width=FULL_WIDTH))
        self.docs = w.Select(rows=14, layout=w.Layout(width=FULL_WIDTH))
        self.search = w.Text(placeholder="search the text, Enter", continuous_update=False,
                             layout=w.Layout(width=FULL_WIDTH))
        self.found = w.HTML()
        prev, nxt = _button("◀", "previous match"), _button("▶", "next match")
        self.title = w.HTML()
        self.variant = w.Text(value="" if variant is None else getattr(variant, "text", variant),
                              placeholder="variant, e.g. fixed:size=256", continuous_update=False,
                              description="chunks of", style={"description_width": "initial"})
        self.selected = w.HTML("Select text in the document, then press <b>Add evidence</b>.")
        self.question = w.Textarea(placeholder="Type the question this evidence answers",
                                   layout=w.Layout(width=FULL_WIDTH, height="3.2em"))
        add = _button("Add evidence", "add the selected text to this question's evidence", "primary")
        remove = _button("Remove evidence", "remove the evidence chosen in the list below")
        save = _button("Save label", f"save the question to {self.state.path}", "success")
        new = _button("New", "start a new question (Undo brings this one back)")
        alternative = _button("Add alternative", "close this evidence: evidence added next is another place that "
                              "answers the question, any one found counts")
        self.evidence = w.Select(rows=4, layout=w.Layout(width=FULL_WIDTH))
        self.labels = w.Select(rows=7, layout=w.Layout(width=FULL_WIDTH))
        edit = _button("Edit", "load the chosen label into the editor")
        delete = _button("Delete", "delete the chosen label", "danger")
        self.undo_button = _button("Undo", "take back the last action")
        self.status = w.HTML()

        self.filter.observe(self.guarded(self._list_docs), "value")
        self.docs.observe(self.guarded(self._on_doc), "value")
        self.search.observe(self.guarded(self._on_search), "value")
        prev.on_click(self.guarded(lambda: self._go(-1)))
        nxt.on_click(self.guarded(lambda: self._go(1)))
        self.variant.observe(self.guarded(self._draw), "value")
        self.view.observe(self.guarded(self._on_selection), "selection")
        self.question.observe(self.guarded(lambda: self.state.type_question(self.question.value)), "value")
        add.on_click(self.guarded(self.add_selection))
        remove.on_click(self.guarded(self._remove))
        save.on_click(self.guarded(self._save))
        new.on_click(self.guarded(lambda: self._act(self.state.new, "new label")))
        alternative.on_click(self.guarded(lambda: self._act(self.state.add_alternative, "alternative closed: add the "
                                                            "evidence of another")))
        edit.on_click(self.guarded(self._edit))
        delete.on_click(self.guarded(self._delete))
        self.undo_button.on_click(self.guarded(self._undo))

        browse = w.VBox([w.HTML("<b>Documents</b>"), self.filter, self.docs, w.HTML("<b>Search</b>"), self.search,
                         row(prev, nxt, self.found)], layout=w.Layout(width="280px", margin="0 16px 0 0"))
        reading = w.VBox([row(self.title, self.variant), self.view, self.selected],
                         layout=w.Layout(flex="1 1 0", min_width="320px"))
        writing = w.VBox([w.HTML("<b>Question</b>"), self.question, row(add, remove, alternative, save, new),
                          w.HTML("Evidence of this question"), self.evidence],
                         layout=w.Layout(flex="1 1 0", min_width="320px", margin="0 16px 0 0"))
        listing = w.VBox([w.HTML("<b>Labels</b>"), self.labels, row(edit, delete, self.undo_button)],
                         layout=w.Layout(flex="1 1 0", min_width="320px"))
        self.children = [w.HTML(f"<b>Labeller</b> · {len(self.state.docs)} documents · saves to "
                                f"<code>{html.escape(str(self.state.path))}</code>"),
                         w.HBox([browse, reading], layout=w.Layout(flex_flow="row wrap")),
                         w.HBox([writing, listing], layout=w.Layout(flex_flow="row wrap", margin="12px 0 0 0")),
                         self.message, self.status]
        self.guarded(self._refresh)()

    # ---------------------------------------------------------------------------- actions

    def add_selection(self) -> None:
        """The document's current selection as evidence of the question being written."""
        sel = self.view.selection
        if not sel:
            raise ValueError("select some text in the document first")
        evidence = self.state.evidence_from(sel["start"], sel["end"], sel["text"])
        self._act(lambda: self.state.add_evidence(evidence), f"added [{evidence.start}, {evidence.end})")
        self.view.selection = {}
        self.selected.value = "Select more text to add, or type the question and press <b>Save label</b>."

    def _remove(self) -> None:
        if self.evidence.value is None:
            raise ValueError("choose the evidence to remove in the list first")
        self._act(lambda: self.state.remove_evidence(self.evidence.value), "evidence removed")

    def _save(self) -> None:
        label = self.state.commit()
        self._refresh(f"saved {label.qid} ({len(label.answers)} span{'s' * (len(label.answers) != 1)}) to "
                      f"{self.state.path.name}")

    def _edit(self) -> None:
        if self.labels.value is None:
            raise ValueError("choose a label to edit first")
        draft = self.state.edit(self.labels.value)
        if draft.evidence:
            self.state.select(draft.evidence[0].doc_id)
        self._refresh(f"editing {draft.qid}: change it and press Save label")

    def _delete(self) -> None:
        if self.labels.value is None:
            raise ValueError("choose a label to delete first")
        qid = self.labels.value
        self._act(lambda: self.state.delete(qid), f"deleted {qid}")

    def _undo(self) -> None:
        self._refresh(f"undid: {self.state.undo()}")

    def _act(self, fn: Any, done: str) -> None:
        fn()
        self._refresh(done)

    # ---------------------------------------------------------------------------- browsing

    def _on_doc(self) -> None:
        if not self._listing and self.docs.value is not None and self.docs.value != self.state.doc_id:
            self.state.select(self.docs.value)
            self.view.scroll_to = 0
            self._draw()

    def _on_search(self) -> None:
        if not self.search.value.strip():
            self.state.matches, self.state.match_at = [], -1
            self.found.value = ""
            self._draw()
            return
        found = self.state.search(self.search.value)
        if not found:
            self.found.value = "no match"
            self._draw()
            return
        self._go(1)

    def _go(self, step: int) -> None:
        match = self.state.next_match(step)
        self.found.value = f"{self.state.match_at + 1}/{len(self.state.matches)} in {html.escape(match.doc_id)}"
        self._list_docs()
        self._draw(scroll_to=match.start)

    def _on_selection(self) -> None:
        sel = self.view.selection
        if sel:
            text = sel.get("text", "")
            short = text if len(text) <= 80 else text[:60] + " … " + text[-15:]
            self.selected.value = (f"Selected [{sel['start']}, {sel['end']}): <i>{html.escape(short)}</i>"
                                   " · press <b>Add evidence</b>")

    # ---------------------------------------------------------------------------- drawing

    def _list_docs(self) -> None:
        counts: dict[str, int] = {}
        for lab in self.state.labels:
            for doc_id in dict.fromkeys(e.doc_id for e in lab.answers):
                counts[doc_id] = counts.get(doc_id, 0) + 1
        shown = self.state.documents(self.filter.value)
        options = [(d.doc_id + (f" · {d.title}" if d.title != d.doc_id else "")
                    + (f" ({counts[d.doc_id]})" if d.doc_id in counts else ""), d.doc_id) for d in shown]
        if self.state.doc_id not in {d.doc_id for d in shown}:
            options.insert(0, (f"{self.state.doc_id} (filtered out)", self.state.doc_id))
        self._listing = True  # a new list resets the choice: that is no choice of the user's
        try:
            if list(self.docs.options) != options:
                self.docs.options = options
            self.docs.value = self.state.doc_id
        finally:
            self._listing = False

    def _draw(self, scroll_to: int | None = None) -> None:
        doc = self.state.doc
        if self.view.selection and self._drawn != doc.doc_id:  # a selection made in the document shown before
            self.view.selection = {}
        self._drawn = doc.doc_id
        chunks = self._chunks()
        pieces = self.state.pieces(chunks)
        rank = {i: i for i in range(len(chunks))}  # one document's chunks, in order
        starts = {c.start for c in chunks if c.start > 0}
        with self.view.hold_sync():
            if scroll_to is not None:
                self.view.scroll_to = scroll_to
            self.view.length = len(doc.text)
            self.view.pieces = [piece_row(p, doc.text, chunks, rank, starts) for p in pieces]
        n = sum(1 for lab in self.state.labels for e in lab.answers if e.doc_id == doc.doc_id)
        cut = f" · {len(chunks)} chunks, each begins at a blue line" if chunks else ""
        self.title.value = (f"<b>{html.escape(doc.title)}</b> <span style='color:#555'>{html.escape(doc.doc_id)} · "
                            f"{len(doc.text):,} characters · {n} evidence spans{cut}</span>")

    def _chunks(self) -> list[Chunk]:
        text = self.variant.value.strip()
        return self.state.chunks(parse_variant(text)) if text else []

    def _refresh(self, done: str = "") -> None:
        """Redraw everything from the state; `done` is what the last action did."""
        s = self.state
        self._list_docs()
        self._draw()
        if self.question.value != s.draft.question:
            self.question.value = s.draft.question
        ev = s.draft.evidence
        self.evidence.options = [(f"{i + 1}. {e.doc_id} [{e.start}, {e.end}) {e.quote[:70]!r}", i)
                                 for i, e in enumerate(ev)]
        self.labels.options = [(f"{lab.qid} · {lab.question[:70]} · {len(lab.answers)} span"
                                f"{'s' * (len(lab.answers) != 1)}" + (f" + {len(lab.kept)} unplaced" if lab.kept
                                                                       else "")
                                + (f" · {len(lab.any_of)} alternatives" if lab.alternatives else ""), lab.qid)
                               for lab in s.labels]
        self.undo_button.disabled = not s.can_undo
        editing = f"editing {s.draft.qid}" if s.draft.qid else "new question"
        before = len(s.draft.alternatives)
        drawing = f"alternative {before + 1} · " if before else ""
        saved = f"{len(s.labels)} question{'s' * (len(s.labels) != 1)} saved in {html.escape(s.path.name)}"
        self.status.value = (f"<span style='color:#555'>{editing} · {drawing}{len(ev)} evidence span"
                             f"{'s' * (len(ev) != 1)} · {saved}</span>")
        self.message.value = html.escape(done)


def labeler(source: Dataset | str | Path, questions: str | Path | None = None,
            variant: Variant | str | None = None, embedder: Embedder | None = None) -> Labeler:
    """`Labeler(...)`: label `source` (a Dataset, or a folder of documents) into `questions`
    (default: the folder's questions.jsonl); `variant` shows its chunk cuts while labelling."""
    return Labeler(source, questions, variant, embedder)
