"""Per-corpus breakdown: document groups, questions grouped by their evidence, the summary, the
figure and the report section split by group, on a real sweep of the chroma_general excerpt."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import pandas as pd
import pytest
from conftest import REPO

from workbench.dataset import MIXED, Dataset, DatasetError, Document, Question, Span, doc_group
from workbench.evaluation import stats
from workbench.figures import plots
from workbench.ingest import load_dataset
from workbench.models.embed import Embedder
from workbench.report import write_report
from workbench.results.result import SweepResult
from workbench.run.session import sweep
from workbench.variant import Variant

CHROMA = REPO / "tests" / "data" / "chroma_general"
VARIANTS = [Variant.make("fixed", size=64), Variant.make("fixed", size=400)]


@pytest.fixture(scope="module")
def chroma() -> Dataset:
    return load_dataset(CHROMA)


@pytest.fixture(scope="module")
def result(chroma: Dataset, fake_embedder: Embedder, tmp_path_factory: pytest.TempPathFactory) -> SweepResult:
    return sweep(chroma, VARIANTS, ks=(1, 3), embedder=fake_embedder, store=tmp_path_factory.mktemp("groups"),
                 progress=False, budgets=(256,))


def regrouped(dataset: Dataset, group_of: dict[str, str]) -> Dataset:
    docs = tuple(dataclasses.replace(d, group=group_of[d.doc_id]) for d in dataset.documents)
    return Dataset(dataset.name, docs, dataset.questions)


def write_corpus(folder: Path, rows: list[dict]) -> None:
    folder.mkdir()
    (folder / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    q = {"qid": "q1", "question": "Where?", "answers": [{"doc_id": "a", "start": 0, "end": 5}]}
    (folder / "questions.jsonl").write_text(json.dumps(q) + "\n", encoding="utf-8")


def test_group_field_loads_and_leaves_the_fingerprints_alone(tmp_path: Path) -> None:
    rows = [{"doc_id": "a", "text": "Alpha text."}, {"doc_id": "b", "text": "Beta text."}]
    write_corpus(tmp_path / "plain", rows)
    write_corpus(tmp_path / "grouped", [rows[0] | {"group": "law"}, rows[1] | {"group": "news"}])
    plain, grouped = load_dataset(tmp_path / "plain"), load_dataset(tmp_path / "grouped")
    assert [d.group for d in plain.documents] == [None, None]
    assert [d.group for d in grouped.documents] == ["law", "news"]
    assert grouped.groups_of_questions() == {"q1": "law"}
    assert plain.groups_of_questions() == {"q1": "a"}  # no group field: the prefix rule
    assert (grouped.corpus_fingerprint, grouped.fingerprint) == (plain.corpus_fingerprint, plain.fingerprint)
    with pytest.raises(ValueError, match="document 'a'.*no 'group' field"):
        plain.groups_of_questions(by="group")
    with pytest.raises(ValueError, match="parameter 'by'"):
        plain.groups_of_questions(by="folder")  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [3, None, " "])
def test_bad_group_names_file_line_and_field(tmp_path: Path, bad: object) -> None:
    write_corpus(tmp_path / "bad",
                 [{"doc_id": "a", "text": "Alpha text."}, {"doc_id": "b", "text": "B.", "group": bad}])
    with pytest.raises(DatasetError) as e:
        load_dataset(tmp_path / "bad")
    assert (e.value.path, e.value.line, e.value.field) == (str(tmp_path / "bad" / "corpus.jsonl"), 2, "group")


def test_prefix_rule_splits_the_chroma_corpora(chroma: Dataset) -> None:
    assert [d.doc_id for d in chroma.documents] == ["state_of_the_union", "wikitexts", "chatlogs"]
    groups = chroma.groups_of_questions()
    assert groups == {q.qid: q.answers[0].doc_id for q in chroma.questions}
    assert set(groups.values()) == {"state_of_the_union", "wikitexts", "chatlogs"}
    folder = Dataset("f", (Document("law/a.md", "a", "x"), Document("law/b.md", "b", "y"), Document("c.md", "c", "z")),
                     ())
    assert [doc_group(d, "prefix") for d in folder.documents] == ["law", "law", "c.md"]


def test_evidence_in_two_groups_is_mixed() -> None:
    docs = (Document("law/a", "a", "Alpha text."), Document("law/b", "b", "Beta text."),
            Document("news/c", "c", "Gamma."))
    qs = (Question("one", "?", (Span("law/a", 0, 5), Span("law/b", 0, 4))),
          Question("two", "?", (Span("law/a", 0, 5), Span("news/c", 0, 5))))
    assert Dataset("d", docs, qs).groups_of_questions() == {"one": "law", "two": MIXED}


def test_summarize_by_group_is_summarize_of_each_group(result: SweepResult, chroma: Dataset) -> None:
    groups = chroma.groups_of_questions()
    table = result.by_group(chroma)
    assert list(dict.fromkeys(table["group"])) == list(dict.fromkeys(groups.values()))
    pq = result.per_question
    for name, part in table.groupby("group", sort=False):
        alone = stats.summarize(pq[pq["qid"].map(groups) == name], confidence=result.confidence)
        pd.testing.assert_frame_equal(part.drop(columns="group").reset_index(drop=True), alone)
    recall = table[(table["metric"] == "recall") & (table["k"] == 3)]
    assert recall["mean"].nunique() > 1  # the groups do differ, so the split says something
    with pytest.raises(ValueError, match="have no group"):
        stats.summarize_by_group(pq, {q: g for q, g in groups.items() if g != "chatlogs"})


def test_plot_has_one_panel_per_group_with_its_means(result: SweepResult, chroma: Dataset) -> None:
    groups = chroma.groups_of_questions()
    fig = plots.by_group(result, chroma, metric="recall", k=3)
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title().split(" (")[0] for ax in panels] == list(dict.fromkeys(groups.values()))
    for ax in panels:  # the best of each panel is the outlined bar, and the widest
        outlined = [p.get_width() for p in ax.patches if tuple(p.get_edgecolor()) == (0, 0, 0, 1)]
        assert outlined == [max(p.get_width() for p in ax.patches)]
    pq = result.per_question
    rows = pq[(pq["metric"] == "recall") & (pq["k"] == 3)]
    for key in result.keys:  # mark finds each variant's bar in each panel
        drawn = {a.axes.get_title().split(" (")[0]: a.get_width() for a in plots.mark(fig, key)}
        means = rows[rows["key"] == key].groupby(rows["qid"].map(groups))["value"].mean()
        assert drawn == pytest.approx(means.to_dict())


def test_by_group_of_one_metric_alone_equals_the_whole_by_group_at_it(result: SweepResult, chroma: Dataset) -> None:
    """The report summarises only recall@k by group (the rest would be bootstrapped for nothing):
    its table equals result.by_group's rows at recall@k."""
    groups = chroma.groups_of_questions()
    whole = result.by_group(groups)
    pq = result.per_question
    for k in (1, 3):
        at = pq[(pq["metric"] == "recall") & (pq["k"] == k) & (pq["budget"] == 0)]
        expected = whole[(whole["metric"] == "recall") & (whole["k"] == k) & (whole["budget"] == 0)]
        alone = stats.summarize_by_group(at, groups, result.confidence)
        pd.testing.assert_frame_equal(alone, expected.reset_index(drop=True))


def test_a_re_export_reads_the_by_group_figure_back_and_writes_the_same_report(
        result: SweepResult, chroma: Dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from workbench import report

    first = report.export(result, tmp_path / "a", dataset=chroma, store=tmp_path / "store")["report"]
    drawn: list[object] = []
    real = plots.figure_to_png_bytes
    monkeypatch.setattr(plots, "figure_to_png_bytes", lambda fig, dpi=100: drawn.append(fig) or real(fig, dpi))
    again = report.export(result, tmp_path / "b", dataset=chroma, store=tmp_path / "store")["report"]
    assert drawn == []  # every figure, the by-group one at both widths too, read back from the store
    assert again.read_bytes() == first.read_bytes() and b'id="figure-by-group"' in first.read_bytes()
    regroup = regrouped(chroma, {d.doc_id: "speech" if d.doc_id == "state_of_the_union" else "other"
                                 for d in chroma.documents})
    report.export(result, tmp_path / "c", dataset=regroup, store=tmp_path / "store")
    assert len(drawn) == 2  # other groups: the by-group figure drawn again, at both widths


def test_report_has_by_group_only_with_groups_and_names_what_it_splits_by(
        result: SweepResult, chroma: Dataset, tmp_path: Path) -> None:
    """chroma_general's documents sit in no folder and have no group field: each document is a group,
    and the section says so ("By document", not "By corpus"); with group fields it is "By group"."""
    text = write_report(result, tmp_path / "g.html", figures={}, dataset=chroma).read_text(encoding="utf-8")
    section = text[text.index('id="by-group"'):text.index("</section>", text.index('id="by-group"'))]
    assert "<h2>By document</h2>" in section and "By corpus" not in text
    assert all(f"<td>{g}</td>" in section for g in ("state_of_the_union", "wikitexts", "chatlogs"))
    kinds = regrouped(chroma, {d.doc_id: "speech" if d.doc_id == "state_of_the_union" else "other"
                               for d in chroma.documents})
    text = write_report(result, tmp_path / "k.html", figures={}, dataset=kinds).read_text(encoding="utf-8")
    assert "<h2>By group</h2>" in text and "<td>speech</td>" in text and "<code>group</code> field" in text
    one = regrouped(chroma, {d.doc_id: "all" for d in chroma.documents})  # same fingerprint: groups are labels
    for dataset in (one, None):
        text = write_report(result, tmp_path / "n.html", figures={}, dataset=dataset).read_text(encoding="utf-8")
        assert 'id="by-group"' not in text


def test_documents_in_folders_are_grouped_by_folder(tiny: Dataset, fake_embedder: Embedder, tmp_path: Path) -> None:
    folders = Dataset(tiny.name, tuple(dataclasses.replace(d, doc_id=f"{d.doc_id.split('.')[0]}/{d.doc_id}")
                                       for d in tiny.documents),
                      tuple(dataclasses.replace(q, answers=tuple(dataclasses.replace(
                          a, doc_id=f"{a.doc_id.split('.')[0]}/{a.doc_id}") for a in q.answers))
                            for q in tiny.questions))
    r = sweep(folders, VARIANTS, ks=(1, 3), embedder=fake_embedder, store=tmp_path, progress=False, budgets=())
    text = write_report(r, tmp_path / "f.html", figures={}, dataset=folders).read_text(encoding="utf-8")
    assert "<h2>By folder</h2>" in text and "<td>billing</td>" in text and "<td>space</td>" in text
