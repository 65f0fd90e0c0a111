"""The labeller's state without a front end: evidence checked against the text, labels added, edited,
deleted and undone, questions.jsonl written whole and read back by the workbench's own loader."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from workbench.chunkers import ChunkEnv
from workbench.dataset import Dataset, DatasetError
from workbench.ingest import load_dataset
from workbench.variant import Variant
from workbench.widgets.labeler import Labeler
from workbench.widgets.labeler_state import LabelerState

NOTES = "# Notes 😀 on `code`\n\nThe **refund** takes 五 days 😀😀.\nAsk [support](https://x.y) for 中文 help.\n"
OTHER = "Plain text about refunds and shipping. Shipping is free."


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    docs = [{"doc_id": "notes.md", "title": "Notes", "text": NOTES}, {"doc_id": "other.txt", "text": OTHER}]
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs),
                                           encoding="utf-8")
    return tmp_path


def evidence(state: LabelerState, quote: str, doc_id: str = "notes.md"):
    text = state.docs[doc_id].text
    start = text.index(quote)
    return state.evidence_from(start, start + len(quote), quote, doc_id)


def test_a_label_with_spans_in_two_documents_is_saved_and_loads_with_workbench(folder: Path) -> None:
    state = LabelerState.open(folder)
    assert not (folder / "questions.jsonl").exists()  # a corpus with no questions yet
    state.add_evidence(evidence(state, "五 days 😀😀"))
    state.add_evidence(evidence(state, "Shipping is free.", "other.txt"))
    state.type_question("How long does a refund take?")
    label = state.commit()
    assert label.qid == "q1" and state.draft.evidence == ()
    ds = load_dataset(folder)  # the workbench's own loader reads what was written
    (q,) = ds.questions
    assert q.question == "How long does a refund take?"
    assert [ds.docs[a.doc_id].text[a.start:a.end] for a in q.answers] == ["五 days 😀😀", "Shipping is free."]
    line = json.loads((folder / "questions.jsonl").read_text(encoding="utf-8"))
    assert [a["quote"] for a in line["answers"]] == ["五 days 😀😀", "Shipping is free."]
    assert all(NOTES[a["start"]:a["end"]] == a["quote"] for a in line["answers"] if a["doc_id"] == "notes.md")


def test_a_selection_whose_text_differs_from_the_document_is_refused(folder: Path) -> None:
    state = LabelerState.open(folder)
    start = NOTES.index("中文")
    # the page's text with UTF-16 offsets: two emoji before it would shift it by 3 code units
    with pytest.raises(ValueError, match="do not match the text"):
        state.evidence_from(start + 3, start + 5, "中文")
    with pytest.raises(ValueError, match="only whitespace"):
        state.evidence_from(NOTES.index("\n\n"), NOTES.index("\n\n") + 2, "\n\n")
    e = state.evidence_from(start - 1, start + 3, " 中文 ")  # edge whitespace trimmed
    assert (e.start, e.end, e.quote) == (start, start + 2, "中文")
    state.add_evidence(e)
    with pytest.raises(ValueError, match="overlaps evidence 1"):
        state.add_evidence(state.evidence_from(start + 1, start + 4, NOTES[start + 1:start + 4]))


def test_edit_delete_and_undo_each_step_back_and_the_file_follows(folder: Path) -> None:
    state = LabelerState.open(folder)
    path = folder / "questions.jsonl"

    def saved() -> list[str]:
        return [json.loads(line)["question"] for line in path.read_text(encoding="utf-8").splitlines()]

    state.add_evidence(evidence(state, "The **refund**"))
    state.commit("Refund?")
    state.add_evidence(evidence(state, "Shipping is free.", "other.txt"))
    state.commit("Shipping?")
    assert saved() == ["Refund?", "Shipping?"]
    state.edit("q1")
    state.remove_evidence(0)
    state.add_evidence(evidence(state, "[support](https://x.y)"))
    state.commit("Who helps?")
    assert saved() == ["Who helps?", "Shipping?"]
    assert state.label("q1").answers[0].quote == "[support](https://x.y)"
    state.delete("q2")
    assert saved() == ["Who helps?"]
    assert state.undo() == "delete q2"
    assert saved() == ["Who helps?", "Shipping?"]
    assert state.undo() == "update q1"
    assert saved() == ["Refund?", "Shipping?"]
    assert [e.quote for e in state.draft.evidence] == ["[support](https://x.y)"]  # the draft before the update
    for _ in range(3):  # add, remove, edit: the draft's own steps
        state.undo()
    assert state.draft.qid is None and saved() == ["Refund?", "Shipping?"]
    while state.can_undo:
        state.undo()
    assert path.read_text(encoding="utf-8") == "" and state.labels == ()
    with pytest.raises(ValueError, match="nothing to undo"):
        state.undo()


def test_undo_reaches_back_undo_depth_actions_only(folder: Path) -> None:
    state = LabelerState.open(folder, undo_depth=3)
    for quote in ("Notes", "refund", "days", "support"):
        state.add_evidence(evidence(state, quote))
    undone = [state.undo() for _ in range(3)]
    assert len(undone) == 3 and not state.can_undo
    assert [e.quote for e in state.draft.evidence] == ["Notes"]


def test_existing_questions_are_loaded_and_written_back_with_their_own_fields(folder: Path) -> None:
    path = folder / "questions.jsonl"
    start = OTHER.index("free")
    kept = {"qid": "g1", "question": "Is shipping free?", "generated": {"model": "m"},
            "answers": [{"doc_id": "other.txt", "start": start, "end": start + 4, "text": "free"},
                        {"quote": "refunds and shipping"}]}
    path.write_text(json.dumps(kept) + "\n", encoding="utf-8")
    state = LabelerState.open(folder)
    (label,) = state.labels
    assert label.answers[0].quote == "free" and label.kept == ({"quote": "refunds and shipping"},)
    state.add_evidence(evidence(state, "Notes"))
    state.commit("Notes?")
    lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
    assert lines[0] == kept and lines[1]["qid"] == "q2"
    state.edit("g1")
    state.commit("Is shipping really free?")
    edited = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    assert edited["generated"] == {"model": "m"} and edited["answers"][1] == {"quote": "refunds and shipping"}
    assert edited["answers"][0] == {"doc_id": "other.txt", "start": start, "end": start + 4, "quote": "free"}


def test_a_label_whose_quote_does_not_match_is_refused_naming_line_and_field(folder: Path) -> None:
    path = folder / "questions.jsonl"
    good = {"qid": "a", "question": "?", "answers": [{"doc_id": "other.txt", "start": 0, "end": 5, "quote": "Plain"}]}
    bad = {"qid": "b", "question": "?", "answers": [{"doc_id": "other.txt", "start": 0, "end": 5, "quote": "Plan!"}]}
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"line 2: field 'answers\[0\]\.quote' does not match"):
        LabelerState.open(folder)


def test_a_failed_write_leaves_the_old_file_and_the_labels_as_they_were(folder: Path, monkeypatch) -> None:
    state = LabelerState.open(folder)
    state.add_evidence(evidence(state, "Notes"))
    state.commit("Notes?")
    before = (folder / "questions.jsonl").read_bytes()

    def crash(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", crash)
    state.add_evidence(evidence(state, "refund"))
    with pytest.raises(OSError, match="No space"):
        state.commit("Refund?")
    assert (folder / "questions.jsonl").read_bytes() == before
    assert [lab.qid for lab in state.labels] == ["q1"] and state.draft.evidence  # nothing lost, nothing half done
    assert [p.name for p in folder.iterdir() if p.name.endswith(".tmp")] == []


def test_search_jumps_across_documents_and_cycles(folder: Path) -> None:
    state = LabelerState.open(folder)
    found = state.search("REFUND")
    assert [(m.doc_id, m.quote) for m in found] == [("notes.md", "refund"), ("other.txt", "refund")]
    assert state.next_match().doc_id == "notes.md"
    assert state.next_match().doc_id == "other.txt" and state.doc_id == "other.txt"
    assert state.next_match().doc_id == "notes.md"
    assert [d.doc_id for d in state.documents("NOT")] == ["notes.md"]
    assert [d.doc_id for d in state.documents("plain")] == [] and len(state.documents("")) == 2


def test_pieces_cut_at_every_chunk_and_evidence_and_cover_the_text(folder: Path) -> None:
    state = LabelerState.open(folder)
    variant = Variant.make("fixed", size=6, overlap=2)
    chunks = state.chunks(variant)
    assert chunks == variant.chunk(Dataset("d", (state.doc,), ()), ChunkEnv())
    state.add_evidence(evidence(state, "五 days"))
    pieces = state.pieces(chunks)
    assert "".join(NOTES[p.start:p.end] for p in pieces) == NOTES
    assert {p.start for p in pieces} >= {c.start for c in chunks} | {NOTES.index("五")}
    assert "".join(NOTES[p.start:p.end] for p in pieces if p.draft) == "五 days"
    assert any(len(p.chunks) == 2 for p in pieces)  # the overlap


def test_the_widget_shows_an_error_instead_of_raising(folder: Path) -> None:
    labeler = Labeler(folder, variant="fixed:size=8")
    start = NOTES.index("中文")
    labeler.view.selection = {"start": start, "end": start + 2, "text": "中文"}
    labeler.add_selection()
    assert [e.quote for e in labeler.state.draft.evidence] == ["中文"]
    labeler.variant.value = "fixed:size=-3"
    assert "size" in labeler.message.value and "#b00020" in labeler.message.value
    labeler.guarded(labeler._save)()  # no question typed yet
    assert "type the question" in labeler.message.value


def test_an_alternative_is_added_saved_as_alternatives_and_loads_as_any_one_of_them(folder: Path) -> None:
    """The refund is in the notes and in the other file: "Add alternative" between them makes either count;
    editing brings the last alternative back into the draft and saves the same line."""
    state = LabelerState.open(folder)
    with pytest.raises(ValueError, match="add the evidence of this alternative first"):
        state.add_alternative()
    state.add_evidence(evidence(state, "五 days 😀😀"))
    state.add_alternative()
    assert state.draft.evidence == () and len(state.draft.alternatives) == 1
    state.add_evidence(evidence(state, "refunds and shipping", "other.txt"))
    assert [p.draft for p in state.pieces() if NOTES[p.start:p.end] == "五 days 😀😀"] == [True]  # both marked
    label = state.commit("How long does a refund take?")
    assert [e.quote for e in label.evidence] == ["五 days 😀😀", "refunds and shipping"]
    line = json.loads((folder / "questions.jsonl").read_text(encoding="utf-8"))
    assert "answers" not in line and [[a["quote"] for a in alt] for alt in line["alternatives"]] == [
        ["五 days 😀😀"], ["refunds and shipping"]]
    (q,) = load_dataset(folder).questions
    assert [[OTHER[a.start:a.end] if a.doc_id == "other.txt" else NOTES[a.start:a.end] for a in alt]
            for alt in q.any_of] == [["五 days 😀😀"], ["refunds and shipping"]]
    draft = state.edit(label.qid)
    assert [e.quote for e in draft.evidence] == ["refunds and shipping"] and len(draft.alternatives) == 1
    state.remove_alternative(0)
    state.commit()
    assert "answers" in json.loads((folder / "questions.jsonl").read_text(encoding="utf-8"))
    state.undo()
    state.undo()  # the alternative is back in the draft, and the file as it was
    assert len(state.draft.alternatives) == 1 and "alternatives" in json.loads(
        (folder / "questions.jsonl").read_text(encoding="utf-8"))
    reopened = LabelerState.open(folder)
    assert reopened.labels[0].json() == line and len(reopened.labels[0].any_of) == 2


def test_a_file_of_the_flat_shape_opens_in_the_labeller_its_quotes_kept(folder: Path) -> None:
    (folder / "questions.jsonl").write_text(json.dumps({"qid": "q1", "question": "Refund?", "source": "other.txt",
                                                        "evidence": "Shipping is free."}) + "\n", encoding="utf-8")
    state = LabelerState.open(folder)
    (label,) = state.labels
    assert label.answers == () and label.kept == ({"quote": "Shipping is free.", "doc_id": "other.txt"},)
    state.edit("q1")
    state.add_evidence(evidence(state, "The **refund**"))
    state.commit()
    line = json.loads((folder / "questions.jsonl").read_text(encoding="utf-8"))
    assert line == {"qid": "q1", "question": "Refund?", "answers": [
        {"doc_id": "notes.md", "start": NOTES.index("The **refund**"),
         "end": NOTES.index("The **refund**") + len("The **refund**"), "quote": "The **refund**"},
        {"quote": "Shipping is free.", "doc_id": "other.txt"}]}
