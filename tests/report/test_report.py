"""The HTML report of a real tiny sweep: offline, escaped, complete, and written atomically."""

from __future__ import annotations

import base64
import html
import html.parser
import io
import json
import os
import pickle
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import crowd
import matplotlib
import matplotlib.image

matplotlib.use("Agg")

import fakemodel
import numpy as np
import pytest
from matplotlib.figure import Figure

from workbench import report
from workbench.dataset import Dataset, Document, Question, Span
from workbench.evaluation import stats
from workbench.figures import plotdata, plots
from workbench.models.embed import Embedder
from workbench.report import compact_table, p_best_table, summary_table, variants_table, write_report
from workbench.report.tables import cell
from workbench.results.provenance import ModelInfo
from workbench.results.result import SweepResult
from workbench.results.verdict import verdict
from workbench.run.session import sweep
from workbench.variant import Variant

EVIL = "<script>alert(1)</script>"
STAR = "\u2605\xa0"  # the headline's mark, before its label
VARIANTS = [Variant.make("fixed", size=16), Variant.make("fixed", size=32, overlap=8)]


@pytest.fixture(scope="module")
def result(tiny: Dataset, fake_embedder: Embedder, tmp_path_factory: pytest.TempPathFactory) -> SweepResult:
    r = sweep(tiny, VARIANTS, ks=(1, 3), embedder=fake_embedder, store=tmp_path_factory.mktemp("report"),
              progress=False)
    # a user-chosen label that tries to inject markup, in every table that carries labels
    rename = {VARIANTS[1].label: EVIL}
    return SweepResult(*(t.replace({"variant": rename}) for t in (r.per_question, r.summary, r.variants)), r.provenance)


class Tags(html.parser.HTMLParser):
    """Every start tag with its attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def parse(text: str) -> list[tuple[str, dict[str, str | None]]]:
    p = Tags()
    p.feed(text)
    return p.tags


def test_report_is_self_contained_and_complete(result: SweepResult, tmp_path: Path) -> None:
    figures = {"overview": plots.overview(result), "ndcg": plots.metric_curves(result, "ndcg")}
    path = write_report(result, tmp_path / "sub" / "report.html", figures=figures, title="Tiny <run>")
    assert path == tmp_path / "sub" / "report.html"
    text = path.read_text(encoding="utf-8")
    for forbidden in ("http://", "https://", "<script src", "<script"):
        assert forbidden not in text
    tags = parse(text)
    assert not [t for t, a in tags if t in ("script", "link", "iframe")]
    images = [a["src"] for t, a in tags if t == "img"]
    assert len(images) == 2 and text.count('<img src="data:image/png;base64,') == 2
    for src in images:
        assert base64.b64decode(src.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
    p = result.provenance
    for value in (p.dataset.fingerprint, p.models[0].fingerprint, p.dataset.corpus_fingerprint, p.models[0].name,
                  p.date, p.versions["torch"]):
        assert value in text
    assert "Tiny &lt;run&gt;" in text
    # the malicious label is shown, escaped, in the score and variant tables
    assert text.replace("<wbr>", "").count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 2
    # index cost and grid are there
    for column in ("chunks", "tokens_embedded", "overlap_chars", "seconds"):
        assert f"<th>{column}</th>" in text


def test_default_figures_have_a_title_and_a_caption_and_one_width(result: SweepResult, tmp_path: Path) -> None:
    figures = report.default_figures(result)
    # size and overlap differ together (16 with 0, 32 with 8): no figure against either, no heatmap
    assert list(figures) == ["overview", "hit", "ndcg", "iou", "precision_omega"]
    assert {tuple(f.get_size_inches())[0] for f in figures.values()} == {report.FIGURE_WIDTH}
    text = write_report(result, tmp_path / "r.html", figures=figures).read_text(encoding="utf-8")
    assert text.count('<img src="data:image/png;base64,') == len(figures)
    titles = re.findall(r"<figure[^>]*><h3>([^<]+)</h3>", text)
    captions = re.findall(r"<figcaption>([^<]*)</figcaption>", text)
    assert len(titles) == len(captions) == len(figures) and len(set(titles)) == len(titles)
    for caption in captions:  # a sentence that says what to look for, not the figure's name
        assert len(caption.split()) >= 8 and caption not in figures
    # the legend table: every variant's number next to its full label (the plots show numbers only),
    # the headline's starred
    best = verdict(result).best
    for n, (key, label) in enumerate(zip(result.keys, result.labels, strict=True), 1):
        row, star = ('<tr class="headline">', STAR) if key == best else ("<tr>", "")
        assert re.search(rf"{row}<td>{n}</td><td class=\"text\">{star}<span class=\"swatch\"[^>]*></span>"
                         rf"{re.escape(html.escape(label))}</td></tr>", text)


def test_cells_read_mean_and_interval() -> None:
    assert cell(0.6234, 0.5712, 0.6681, 2) == "0.62 [0.57, 0.67]"
    assert cell(1234.4, 1000.0, 1500.6, 0) == "1234 [1000, 1501]"
    assert cell(0.5, float("nan"), float("nan"), 2) == "0.50"  # no interval from a single question


def test_summary_table_has_one_row_per_variant_and_a_column_per_metric_and_k(result: SweepResult) -> None:
    table = summary_table(result)
    assert list(table.index) == [VARIANTS[0].label, EVIL]
    per_k = set(result.summary.query("k > 0").metric)
    at_budget = result.summary.query("budget > 0")[["metric", "budget"]].drop_duplicates()
    assert len(table.columns) == 2 * len(per_k) + 1 + len(at_budget)  # two ks each, precision_omega once, budgets
    budget = int(at_budget["budget"].min())
    row = result.summary.set_index(["variant", "metric", "budget"]).loc[(EVIL, "recall", budget)]
    assert table.loc[EVIL, ("recall", f"{budget} tokens")] == f"{row['mean']:.2f} [{row.ci_low:.2f}, {row.ci_high:.2f}]"
    assert list(table["recall"].columns)[:3] == ["@1", "@3", f"{budget} tokens"]
    assert table.columns[0] == ("recall", "@1") and ("precision_omega", "any k") in table.columns
    row = result.summary.set_index(["variant", "metric", "k"]).loc[(EVIL, "recall", 3)]
    assert table.loc[EVIL, ("recall", "@3")] == f"{row['mean']:.2f} [{row.ci_low:.2f}, {row.ci_high:.2f}]"


def test_a_failed_write_leaves_the_previous_report_intact(result: SweepResult, tmp_path: Path) -> None:
    path = write_report(result, tmp_path / "report.html", figures={})
    before = path.read_bytes()
    broken = Figure()
    broken.subplots().set_title(r"$\frac{$")  # invalid mathtext: fails only when drawn
    good = plots.metric_curves(result, "hit")
    with pytest.raises(ValueError):
        write_report(result, path, figures={"good": good, "broken": broken})
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]  # no temporary file left


def test_variant_table_shows_parameters_as_written_and_a_dash_where_none_applies(result: SweepResult,
                                                                                 tmp_path: Path) -> None:
    extra = result.variants.assign(breakpoint_percentile=[95.0, float("nan")])
    r = SweepResult(result.per_question, result.summary, extra, result.provenance)
    text = write_report(r, tmp_path / "r.html", figures={}).read_text(encoding="utf-8")
    variants = text[text.index('id="variants"'):text.index('id="provenance"')]
    assert "<td>95</td>" in variants and "<td>\u2014</td>" in variants and "nan" not in variants.lower()
    assert "<td>16</td>" in variants and "<td>32</td>" in variants and "16.0" not in variants


def test_variants_table_groups_identity_parameters_cost_then_key(result: SweepResult) -> None:
    columns = list(variants_table(result).columns)
    assert columns[:8] == ["variant", "chunks", "truncated_chunks", "seconds", "strategy", "contextual_header", "late",
                           "retriever"]  # what a reader looks for first, then what the variant is
    assert set(columns[8:12]) == {"size", "overlap", "unit", "tokenizer"}  # the grid's parameters
    assert columns[-1] == "key" and "chars" in columns[12:] and sorted(columns) == sorted(result.variants.columns)


def test_variants_table_lists_a_retriever_once(tiny: Dataset, fake_embedder: Embedder, tmp_path: Path) -> None:
    """retriever is identity and, for bm25/hybrid variants, a grid parameter: one column, and the
    report renders (the demo's export failed on the duplicate)."""
    r = sweep(tiny, [Variant.make("fixed", size=16), Variant.make("fixed", size=16, retriever="bm25")], ks=(1, 3),
              embedder=fake_embedder, store=tmp_path, progress=False)
    columns = list(variants_table(r).columns)
    assert columns.count("retriever") == 1
    text = write_report(r, tmp_path / "r.html", figures={}).read_text(encoding="utf-8")
    assert "+bm25" in text


def test_report_pairs_every_variant_against_the_best(result: SweepResult, tmp_path: Path) -> None:
    text = write_report(result, tmp_path / "r.html", figures={}).read_text(encoding="utf-8")
    table = stats.against_best(result.per_question, "recall", 3)
    assert "Against the best variant" in text and "recall@3" in text
    assert html.escape(table["best"].iloc[0]) in text
    assert len(table) == result.per_question["variant"].nunique() - 1
    pq = result.per_question
    means = pq[(pq.metric == "recall") & (pq.k == 3)].groupby("variant")["value"].mean()
    assert table["best"].iloc[0] == means.idxmax()  # the best, found independently
    np.testing.assert_allclose(table["diff"], means[table["variant"]].to_numpy() - means.max())
    for d in table["diff"]:
        assert f"{d:.3f}" in text
    section = text[text.index('id="against-best"'):text.index('id="cuts"')]
    assert "Holm's correction" in section and "<th>p (Holm)</th>" in section and "<th>questions needed</th>" in section
    needed = table["questions_needed"].iloc[0]
    assert needed >= 2 and (f"<td>{needed:,.0f}</td>" in section) != np.isinf(needed)
    np.testing.assert_allclose(table["p_holm"], stats.holm(table["p_value"]), rtol=1e-12)


def test_scores_show_how_often_each_variant_is_best(result: SweepResult, tmp_path: Path) -> None:
    compact = compact_table(result, 3)
    assert list(compact.columns[:2]) == ["recall@3", "P(best)"]
    p = stats.prob_best(result.per_question, "recall", 3)
    assert compact["P(best)"].tolist() == [f"{p[result.key_of(v)]:.2f}" for v in compact.index]
    full = stats.with_prob_best(result.summary, result.per_question)
    np.testing.assert_allclose(full.groupby(["metric", "k", "budget"])["p_best"].sum(), 1.0, rtol=1e-12)
    table = p_best_table(result)
    assert table.shape == summary_table(result).shape
    row = full.set_index(["variant", "metric", "k"]).loc[(EVIL, "context_tokens", 1)]
    assert table.loc[EVIL, ("context_tokens", "@1")] == f"{row['p_best']:.2f}"
    text = write_report(result, tmp_path / "r.html", figures={}).read_text(encoding="utf-8")
    scores = text[text.index('id="scores"'):text.index('id="against-best"')]
    assert "<th>P(best)</th>" in scores and "P(best) of every metric at every k" in scores


PAYLOAD = '<img src=x onerror="alert(1)">'
SEPARATOR = "<b>.</b>"  # a custom separator with markup


@pytest.fixture(scope="module")
def evil(tiny: Dataset) -> Dataset:
    """`tiny` with a payload in every string a report may show: name, document ids, titles, text
    (appended, so the spans hold) and questions."""
    docs = {d.doc_id: Document(f"{PAYLOAD}{d.doc_id}", f"{PAYLOAD} {d.title}", f"{d.text}\n{PAYLOAD} {EVIL}\n")
            for d in tiny.documents}
    questions = tuple(Question(q.qid, f"{q.question} {PAYLOAD}",
                               tuple(type(s)(docs[s.doc_id].doc_id, s.start, s.end) for s in q.answers))
                      for q in tiny.questions)
    return Dataset(f"tiny {EVIL}", tuple(docs.values()), questions)


def test_cuts_draw_the_chunks_the_best_and_the_runner_up_retrieve(evil: Dataset, fake_embedder: Embedder,
                                                                   tmp_path: Path) -> None:
    variants = [Variant.make("fixed", size=12), Variant.make("recursive", size=40, custom_separators=[SEPARATOR, "\n"])]
    store = tmp_path / "cache"
    r = sweep(evil, variants, ks=(1, 2), embedder=fake_embedder, store=store, progress=False)
    r.provenance = r.provenance.with_(models=(replace(r.provenance.models[0], name=PAYLOAD),))  # a folder so named
    shutil.move(store / "index", tmp_path / "moved")  # the report draws the hits the sweep kept: no index needed
    text = report.export(r, tmp_path / "out", dataset=evil, store=store)["report"].read_text("utf-8")
    assert not (store / "index").exists()  # nothing was built to write it
    shutil.move(tmp_path / "moved", store / "index")
    # nothing a user wrote is markup: no payload survives unescaped, anywhere
    assert "<script" not in text and "<img src=x" not in text and SEPARATOR not in text
    assert html.escape(f"tiny {EVIL}") in text and html.escape(PAYLOAD) in text
    assert html.escape(json.dumps([SEPARATOR, "\n"]), quote=False) in text  # the separators as the user wrote them
    v = verdict(r)
    cuts = text[text.index('id="cuts"'):text.index('id="variants"')]
    pq = r.per_question.query(f"metric == 'recall' and k == {v.k}").pivot(index="qid", columns="key", values="value")
    differ = pq.index[pq[v.best] != pq[v.runner_up]]
    assert len(differ) > 0, "the two variants should differ on some question of this corpus"
    shown = re.findall(r'<div class="cut"><h3>([^<]*)</h3>', cuts)
    questions = {q.qid: q for q in evil.questions}
    assert shown == [html.escape(questions[q].question) for q in shown_ids(cuts)]
    assert set(shown_ids(cuts)) <= set(differ) and len(shown) == min(report.CUT_QUESTIONS, len(differ))
    # every drawn chunk is a real retrieved chunk of one of the two variants: its offsets are a chunk's
    from workbench.retrieval.index import IndexStore
    spans = {(c.doc_id, c.start, c.end) for key in (v.best, v.runner_up)
             for c in IndexStore(store).get(next(x for x in variants if fakemodel.key(x) == key), evil,
                                            fake_embedder).chunks}
    lists = re.findall(r'<p class="note">top \d+: (.*?)</p>', cuts)
    drawn = {(html.unescape(d), int(s), int(e)) for line in lists
             for d, s, e in re.findall(r"(?:^|; )\d+\. (.*?) \[(\d+), (\d+)\)", line)}
    assert drawn and drawn <= spans
    assert cuts.count("border-bottom: 3px solid") >= len(shown)  # the evidence, underlined
    wins = (pq[v.best] > pq[v.runner_up]).sum()
    assert f"{wins} questions where {html.escape(r.label_of(v.best))} retrieves more evidence" in cuts
    without = write_report(r, tmp_path / "bare.html", figures={}).read_text("utf-8")
    assert "Left out: the report was written without the dataset" in without


def shown_ids(cuts: str) -> list[str]:
    return re.findall(r'<p class="note">([^,<]*), recall@', cuts)


def test_how_it_was_made_gives_code_that_makes_the_same_variants_or_the_cli_command(tiny: Dataset, embedder: Embedder,
                                                                                    tmp_path: Path) -> None:
    """On the bundled model, whose result keys are the variant keys and whose code needs no embedder=."""
    import workbench as wb

    result = sweep(tiny, VARIANTS, ks=(1, 3), embedder=embedder, store=tmp_path / "cache", progress=False)
    text = write_report(result, tmp_path / "r.html", figures={}).read_text(encoding="utf-8")
    made = text[text.index('id="provenance"'):]
    assert "<details>" in made and "Code that makes it again" in made
    code = html.unescape(re.search(r"<pre>(.*?)</pre>", made, re.S).group(1))
    compile(code, "report snippet", "exec")
    rebuilt = [eval(line.strip().rstrip(","), {"wb": wb}) for line in code.splitlines()
               if line.strip().startswith("wb.Variant.make(")]
    assert [v.key for v in rebuilt] == result.keys
    assert "embedder=" not in code  # the default model and backend need no argument
    other = ModelInfo("my-model", "0123456789abcdef-onnx-int8", "onnx-int8")
    code = report.reproduce_code(result.provenance.with_(models=(other,)))
    compile(code, "report snippet", "exec")
    assert "embedder=wb.Embedder('my-model', backend='onnx-int8'))  # the model's folder" in code
    model = result.provenance.models[0]
    onnx = result.provenance.with_(models=(replace(model, fingerprint=f"{model.fingerprint}-onnx", backend="onnx"),))
    assert "embedder=wb.Embedder(backend='onnx'))\n" in report.reproduce_code(onnx)
    command = "python -m workbench sweep --data 'my <data>' -v fixed:size=16"
    r = SweepResult(result.per_question, result.summary, result.variants, result.provenance.with_(command=command))
    made = write_report(r, tmp_path / "c.html", figures={}).read_text(encoding="utf-8")
    assert f"<pre>{html.escape(command)}</pre>" in made and "Code that makes it again" not in made


def test_a_re_export_reads_its_figures_back_and_redraws_what_changed(result: SweepResult, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    store = tmp_path / "store"
    first = report.export(result, tmp_path / "a", store=store)
    drawn: list[str] = []
    real = plots.figure_to_png_bytes
    monkeypatch.setattr(plots, "figure_to_png_bytes", lambda fig, dpi=100: drawn.append(fig) or real(fig, dpi))
    second = report.export(result, tmp_path / "b", store=store)
    assert drawn == []  # the same content: every figure read from the store
    ran = result.variants.assign(seconds=result.variants["seconds"] + 1.5, built=False, texts_embedded=0)
    report.export(SweepResult(result.per_question, result.summary, ran, result.provenance), tmp_path / "r", store=store)
    assert drawn == []  # a re-run from the caches: only this run's seconds and counts differ
    assert [second[f"{n}.png"].read_bytes() for n in ("overview", "hit")] == \
           [first[f"{n}.png"].read_bytes() for n in ("overview", "hit")]
    keep = result.per_question["key"] == result.keys[0]  # one variant fewer: every figure shows something else
    fewer = SweepResult(result.per_question[keep], result.summary[result.summary["key"] == result.keys[0]],
                        result.variants[result.variants["key"] == result.keys[0]], result.provenance)
    pngs = {n for n in report.export(fewer, tmp_path / "c", store=store) if n.endswith(".png")}
    assert len(drawn) == 2 * len(pngs) > 0  # each at the report's width and at a phone's


def test_a_re_export_from_the_figure_cache_never_imports_matplotlib(result: SweepResult, tiny: Dataset,
                                                                   tmp_path: Path) -> None:
    """Every figure read back from the store: the report is written without importing matplotlib
    (in a fresh interpreter, so this process's import does not count), the same figures."""
    store = tmp_path / "store"
    first = report.export(result, tmp_path / "a", dataset=tiny, store=store)
    given = tmp_path / "given.pickle"
    given.write_bytes(pickle.dumps((result, tiny)))
    code = ("import pickle, sys\nfrom pathlib import Path\nfrom workbench import report\n"
            "result, dataset = pickle.loads(Path(sys.argv[1]).read_bytes())\n"
            "report.export(result, sys.argv[2], dataset=dataset, store=sys.argv[3])\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'matplotlib'))")
    root = str(Path(report.__file__).parents[2])
    env = os.environ | {"PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run([sys.executable, "-c", code, str(given), str(tmp_path / "b"), str(store)],
                         capture_output=True, text=True, env=env, check=True)
    assert run.stdout.strip() == "[]"
    pngs = sorted(n for n in first if n.endswith(".png"))
    assert pngs and [(tmp_path / "b" / n).read_bytes() for n in pngs] == [first[n].read_bytes() for n in pngs]
    shown = re.compile(r'src="data:image/png;base64,[^"]+"')
    assert shown.findall((tmp_path / "b" / "report.html").read_text()) == shown.findall(first["report"].read_text())


def test_the_figure_cache_reads_back_nothing_drawn_by_code_since_edited(result: SweepResult,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The cache key hashes every module that draws the figures: draw.py and params.py draw too."""
    from workbench.report import figures

    hashed: list[Path] = []
    real = figures.source_fingerprint
    monkeypatch.setattr(figures, "source_fingerprint", lambda *modules: hashed.extend(modules) or real(*modules))
    figures._content_key(result)
    names = {m.name if isinstance(m, Path) else Path(m.__file__).name for m in hashed}
    assert {"plots.py", "draw.py", "params.py", "plotdata.py", "figures.py"} <= names


def test_an_export_hashes_the_result_for_the_figure_cache_once(result: SweepResult, tiny: Dataset, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Four reads of the figure cache (the default and by-group figures, each at two widths) share one
    hash of the scores; outside an export each call hashes again (a result may change between calls)."""
    from workbench.report import figures

    hashed: list[SweepResult] = []
    real = figures._hash_content
    monkeypatch.setattr(figures, "_hash_content", lambda r: hashed.append(r) or real(r))
    report.export(result, tmp_path / "a", dataset=tiny, store=tmp_path / "store")
    assert hashed == [result]
    figures._content_key(result)
    figures._content_key(result)
    assert len(hashed) == 3


@pytest.mark.parametrize("crowded", [False, True])
def test_every_default_figure_is_saved_whole_at_both_widths(result: SweepResult, crowded: bool) -> None:
    """Nothing cut at the edge of a PNG: its outermost rows and columns of pixels are the white of
    the figure (a legend, a title or a tick label running off it would colour them), at 40 variants
    too (their titles: "one bar per chunking", "context_tokens@5 vs breakpoint_percentile")."""
    result = crowd.forty() if crowded else result
    swept = plotdata.swept_parameters(result)
    for width in (report.FIGURE_WIDTH, report.NARROW_WIDTH):
        for name, png in report.default_pngs(result, 120, width=width, swept=swept).items():
            pixels = matplotlib.image.imread(io.BytesIO(png))[..., :3]
            edges = np.concatenate([pixels[:2].reshape(-1, 3), pixels[-2:].reshape(-1, 3),
                                    pixels[:, :2].reshape(-1, 3), pixels[:, -2:].reshape(-1, 3)])
            assert (edges == 1.0).all(), (name, width)
            assert (pixels < 1.0).any(), (name, width)  # and something is drawn


def test_the_overview_caption_describes_every_panel_drawn(result: SweepResult) -> None:
    """Four panels with budget rows: each one's title leads a sentence of the caption, in order."""
    _, caption = report.describe_figure(result, "overview")
    titles = [ax.get_title() for ax in plots.overview(result, short_ids=True).axes]
    assert len(titles) == 4
    assert [caption.index(f"{t}: ") for t in titles] == sorted(caption.index(f"{t}: ") for t in titles)


def mid_word(text: str, i: int) -> bool:
    return 0 < i < len(text) and not text[i - 1].isspace() and not text[i].isspace()


def test_cut_windows_begin_and_end_at_word_boundaries_and_say_where_they_are_cut() -> None:
    """Passages around evidence at every word of a text: no end falls inside a word or on a blank,
    the evidence stays whole, and a URL longer than the reach of a boundary is stepped over, not cut."""
    from workbench.figures.viewer import chunk_html
    from workbench.report import cuts

    words = [("x" * (1 + i % 9)) for i in range(400)]
    words[150] = "https://example.org/" + "a" * 120  # no boundary within reach
    text = "".join(w + ("\n\n" if i % 7 == 6 else " ") for i, w in enumerate(words)).rstrip()
    doc = Document("d", "T", text)
    ds = Dataset("words", (doc,), ())
    starts = [i + 1 for i, ch in enumerate(text) if ch.isspace() and not text[i + 1].isspace()]
    cut = 0
    for a, b in zip(starts, starts[3:], strict=False):
        span = Span("d", a, len(text[:b].rstrip()))
        ((_, lo, hi),) = cuts._passages(ds, [span], chars=100)
        assert lo <= span.start and span.end <= hi
        assert not mid_word(text, lo) and not mid_word(text, hi), (span, lo, hi)
        assert not text[lo].isspace() and not text[hi - 1].isspace(), (span, lo, hi)
        cut += mid_word(text, max(0, a - 100))
    assert cut > 100  # most raw windows would have begun mid-word
    middle = chunk_html(ds, [], "d", 200, 400, ellipsis=True)
    body = html.unescape(re.sub(r"<[^>]+>", "", middle.split('line-height:1.6">', 1)[1]))
    assert body == f"\u2026{text[200:400]}\u2026"
    assert "\u2026" not in chunk_html(ds, [], "d", ellipsis=True)  # the whole text: nothing cut


def test_truncated_chunks_sit_beside_chunks_and_a_truncating_variant_is_warned_of_and_marked(
        result: SweepResult, tmp_path: Path) -> None:
    """The headline variant as if half its chunks exceeded the model's window: the verdict's warning
    stands in a box of its own, and its rows are marked in the verdict and variants tables."""
    chunks = result.variants["chunks"]
    cut = result.variants.assign(truncated_chunks=[int(chunks.iloc[0]) // 2, 0])
    window = result.provenance.with_(models=(replace(result.provenance.models[0], window=256),))
    r = SweepResult(result.per_question, result.summary, cut, window)
    text = write_report(r, tmp_path / "r.html", figures={}).read_text(encoding="utf-8")
    warning = verdict(r).sentences()[-1]
    assert warning.startswith("Warning: 1 of 2 variants embed chunks longer than")
    box = re.search(r'<p class="warning" role="alert">(.*?)</p>', text, re.S)
    assert box and html.escape(warning.split(": ", 1)[1]) in box.group(1)
    assert text.count(html.escape(warning.split(": ", 1)[1])) == 1  # in the box, not again in the paragraph
    for section in ("verdict", "variants"):
        part = text[text.index(f'id="{section}"'):text.index("</section>", text.index(f'id="{section}"'))]
        assert "<th>chunks</th><th>truncated_chunks</th>" in part
        marked = re.findall(r'<tr class="truncated"><td class="label">(.*?)</td>', part)
        label = VARIANTS[0].label
        assert [html.unescape(m.replace("<wbr>", "")) for m in marked] in ([label], [f"1.\xa0{label}"])
        assert f"{int(chunks.iloc[0]) // 2} (50%) \u26a0" in part
    plain = write_report(result, tmp_path / "p.html", figures={}).read_text(encoding="utf-8")
    assert 'class="warning"' not in plain and 'class="truncated"' not in plain


def test_cuts_name_where_each_retrieved_chunk_is() -> None:
    from conftest import REPO, span_of

    from workbench.ingest import READERS
    from workbench.report import cuts

    folder = REPO / "tests" / "data" / "formats"
    pdf, code, rst = (READERS[Path(n).suffix](folder / n, n) for n in ("handbook.pdf", "docs_src/cors_tutorial001.py",
                                                                        "install.rst"))
    ds = Dataset("formats", (pdf, code, rst), ())
    q = Question("q", "How do I install it?", (span_of(rst, "pip install example-client"),))
    hits = [span_of(rst, "Run this command in a terminal"), span_of(code, "Hello World"), span_of(pdf, "VAT number")]
    drawn = html.unescape(cuts._retrieved(ds, "best", hits, q))
    ranks = re.search(r"top 3: (.*)</p>", drawn).group(1)
    assert ranks.split("; ") == [
        f"1. install.rst · Installing the client > From the package index [{hits[0].start}, {hits[0].end})",
        f"2. docs_src/cors_tutorial001.py · async def main() [{hits[1].start}, {hits[1].end})",
        f"3. handbook.pdf · page 3 [{hits[2].start}, {hits[2].end})"]
    assert "): install.rst · Installing the client > From the package index" in drawn  # the drawn chunk's tooltip


def test_captions_say_what_a_crowded_figure_colours_and_what_a_panel_of_categories_shows() -> None:
    """40 variants: each caption says which are in colour; against the retriever (categories, not a
    scale) the caption says what its lines mean; by_model keeps its own."""
    forty = crowd.forty()
    title, caption = report.describe_figure(forty, "by_retriever")
    assert title == "Recall, MRR and context cost for each retriever"
    assert "Each retriever is a category, not a point on a scale" in caption and "levels off" not in caption
    assert caption.endswith("In colour: the 7 lines that hold the 8 best variants by recall@5; grey: the other 7.")
    assert "levels off" in report.describe_figure(forty, "by_size")[1]  # a scale: where it levels off
    assert "In colour: the 8 best variants by recall@5; grey: the other 32." in report.describe_figure(forty,
                                                                                                    "overview")[1]
    omega = report.describe_figure(forty, "precision_omega")[1]
    assert "One bar per chunking" in omega and "the 7 bars that hold the 8 best" in omega
    assert report.describe_figure(forty, "by_model")[0] == "Which chunking for which model"


def test_a_forty_variant_report_says_which_rows_each_table_shows_and_stars_the_headline_in_each(
        tmp_path: Path) -> None:
    """The trial's report listed 7 of 11 variants in a table without saying which, and marked the
    recommended row in the verdict alone: now every table says above it which rows it shows (a line
    of its own, or its details' summary), the scores table a 40-variant result's 10 best by recall@5,
    and the headline (the verdict's best) is starred and bold in every table that lists it."""
    forty = crowd.forty()
    best = verdict(forty).best
    label = html.escape(forty.label_of(best))
    text = write_report(forty, tmp_path / "r.html", figures={"overview": b"\x89PNG"},
                        answers=crowd.answers(forty)).read_text(encoding="utf-8")
    before = text.split('<div class="scroll">')
    for head, table in zip(before, before[1:], strict=False):
        said = re.search(r'(<p class="rows">((?!</p>).)*</p>|<summary>((?!</summary>).)*</summary>)\n$', head, re.S)
        assert said, f"a table without its rows said: {table[:200]}"
    assert len(before) - 1 == 9  # verdict, legend, scores (3), against the best, answers (2), variants
    assert ("The top 10 by recall@5 of 40, the highest first; every variant in \u201cEvery metric at every k\u201d "
            "below; \u2605 the headline, the verdict's best.") in text
    scores = text[text.index('id="scores"'):text.index("<details>", text.index('id="scores"'))]
    shown = [html.unescape(re.sub(r"<[^>]+>|\u2605\xa0", "", t)) for t in re.findall(r"<th>(.*?)</th>\s*<td>", scores)]
    assert shown == list(forty.ranking()["variant"][:10])
    assert "every variant (40), in sweep order; in colour in the figures, the 8 best by recall@5, the rest grey" in text
    assert "Every variant (40), numbered in sweep order" in text and "Every variant but the best (39)" in text
    tables = re.findall(r"<table.*?</table>", text, re.S)
    listing = [t for t in tables if label in t.replace("<wbr>", "")]
    assert len(listing) == 8  # verdict, legend, scores (3), answers (2), variants: all but against the best
    for t in listing:
        rows = re.findall(r"<tr[^>]*>.*?</tr>", t, re.S)
        starred = [r for r in rows if STAR in r]
        assert starred and all(r.startswith('<tr class="headline">') for r in starred), t[:300]
        assert all(label in r.replace("<wbr>", "") for r in starred)
        assert sum(r.startswith('<tr class="headline">') for r in rows) == len(starred)


def test_a_search_gets_a_search_section_with_its_race_and_a_sweep_none(tmp_path: Path) -> None:
    """A search's result (SweepResult.race, here tests/crowd.py's race of 300 candidates ending with four
    of forty's) gets "Search": the race figure at both widths, the exits of each round counted by why,
    the finalists (the headline starred) and every candidate's exit; the same result without a race
    has none of it."""
    forty = crowd.forty()
    searched = replace(forty, race=crowd.race(forty))
    paths = report.export(searched, tmp_path / "search", figures={}, store=tmp_path / "cache")
    text = paths["report"].read_text(encoding="utf-8")
    section = text[text.index('<section id="search">'):]
    section = section[:section.index("</section>")]
    assert '<figure id="figure-race"><picture><source media="(max-width: 700px)"' in section
    assert len(list((tmp_path / "cache" / "figures").glob("*.png"))) == 2  # the race, wide and narrow, cached
    rounds = re.findall(r"<tr>\s*<th>(\d\. [^<]+)</th>\s*<td>(.*?)</td>\s*<td>(.*?)</td>.*?<td>([^<]*)</td>\s*</tr>",
                        section, re.S)
    assert rounds == [("1. preview", "20", "300", "258: below the calibrated tied set; 12: past the budget after "
                       "the preview"),
                      ("2. real", "20", "30", "15: worse than the best on the same questions; 10: not among the 5 "
                       "best left for the whole corpus"),
                      ("3. whole corpus", "40", "5", "1: worse than the best on the same questions")]
    best = verdict(searched).best
    assert f"{STAR}{forty.label_of(best)}" in html.unescape(section.replace("<wbr>", ""))
    assert "Every candidate's exit (300)" in section
    plain = report.export(forty, tmp_path / "sweep", figures={}).get("report").read_text(encoding="utf-8")
    assert 'id="search"' not in plain and "figure-race" not in plain
