"""The chunk audit (workbench.results.audit): a defect planted in a small corpus is flagged by its
check and by no other; the default grid on clean bundled data and on hostile text (CJK without
spaces, RTL, emoji, CRLF, a very long line) raises no false alarm; every registered strategy audits
with counts within what they count among; a second audit reads the first back."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from chunkcheck import GENERATES
from conftest import REPO
from hypothesis import HealthCheck, given, settings
from test_notebook import write_dataset
from textgen import documents

import workbench as wb
from workbench import report
from workbench.chunkers import STRATEGIES, ChunkEnv
from workbench.cli import main
from workbench.core.tokens import TiktokenTokenizer
from workbench.dataset import Dataset, Document, Span
from workbench.ingest.folder import load_documents
from workbench.models.embed import Embedder
from workbench.results.audit import CHECKS, EXAMPLES, FRAGMENT_TOKENS, audit_chunks, row, table, warnings
from workbench.retrieval.index import embed_texts
from workbench.run import session as session_module
from workbench.variant import Variant

FENCE = "```"
GUIDE = f"""# Uploads, storage limits and the command line

The service stores every upload for thirty days before it removes it. Old uploads are removed at night. Thanks!

Questions go to the team channel.

## Plans and their limits

| plan | uploads per day |
|------|-----------------|
| free | 10 |
| team | 1000 |

Start the server like this, with the port and the log level set:

{FENCE}
serve --port 8000
serve --log-level debug
serve --workers 4
{FENCE}

Questions go to the team channel.
"""
CODE = '''import math

LIMITS = {"free": 10, "team": 1000}
UNITS = ("B", "kB", "MB", "GB")


def add(a, b):
    return a + b


PLANS = sorted(LIMITS)
DEFAULT_PLAN = PLANS[0]
'''
SENTENCES = [f"Station {i} logged a reading of {i * 7} units at dusk." for i in range(80)]
LOG = " ".join(SENTENCES)
CORPUS = Dataset("planted", (Document("guide.md", "Guide", GUIDE), Document("sizes.py", "Sizes", CODE,
                                                                              language="python"),
                             Document("log.txt", "Log", LOG)), ())


def between(text: str, first: str, last: str) -> str:
    """text from the first occurrence of `first` to the end of the next `last` after it."""
    start = text.index(first)
    return text[start : text.index(last, start) + len(last)]


INTRO = between(GUIDE, "# Uploads", "Thanks!")
PLANS = between(GUIDE, "## Plans", "| team | 1000 |")
SERVE = between(GUIDE, "Start the server", f"{FENCE}\n\nQuestions go to the team channel.")
CLEAN = {
    GUIDE: [between(GUIDE, "# Uploads", "channel."), PLANS, SERVE],
    CODE: [between(CODE, "import", "\"GB\")"), between(CODE, "def add", "a + b"), between(CODE, "PLANS =", "[0]")],
    LOG: [" ".join(SENTENCES[i : i + 10]) for i in range(0, 80, 10)],
}
# each defect, as the pieces of the one document a planted chunking cuts otherwise than CLEAN
PLANTED = {
    "dropped_share": {GUIDE: [between(GUIDE, "# Uploads", "removes it."), between(GUIDE, "Thanks!", "channel."),
                              PLANS, SERVE]},
    "overlap_share": {LOG: [" ".join(SENTENCES[i : i + 10]) for i in range(0, 75, 5)]},
    "truncated": {LOG: [" ".join(SENTENCES[:40]), " ".join(SENTENCES[40:])]},
    "fragments": {GUIDE: [between(GUIDE, "# Uploads", "at night."), "Thanks!", "Questions go to the team channel.",
                          PLANS, SERVE]},
    "cut_sentences": {GUIDE: [between(GUIDE, "# Uploads", "Old uploads are"), between(GUIDE, "removed at", "channel."),
                              PLANS, SERVE]},
    "split_code_units": {CODE: [between(CODE, "import", "def add(a, b):"), between(CODE, "return a + b", "[0]")]},
    "split_table_rows": {GUIDE: [between(GUIDE, "# Uploads", "channel."), between(GUIDE, "## Plans", "| free | 10 |"),
                                 "| team | 1000 |", SERVE]},
    "split_code_blocks": {GUIDE: [between(GUIDE, "# Uploads", "channel."),
                                  between(GUIDE, "## Plans", "serve --log-level debug"),
                                  between(GUIDE, "serve --workers 4", "channel.")]},
    "heading_only": {GUIDE: ["# Uploads, storage limits and the command line",
                             between(GUIDE, "The service", "channel."), PLANS, SERVE]},
    "duplicates": {GUIDE: [INTRO, "Questions go to the team channel.", PLANS, between(GUIDE, "Start", f"4\n{FENCE}"),
                           "Questions go to the team channel."]},
}


def chunker(pieces: dict[str, list[str]]) -> Callable[[str], list[str]]:
    """A chunking function cutting each document of CORPUS as `pieces` says, else as CLEAN does."""
    return lambda text: (CLEAN | pieces)[text]


@pytest.fixture(scope="module")
def planted(embedder: Embedder, tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    """The audit of the clean chunking and of every planted one, by name ("clean" or the check planted)."""
    names = ["clean", *PLANTED]
    for name in names:
        wb.register_function(f"planted_{name}", chunker(PLANTED.get(name, {})))
    try:
        audited = wb.audit(CORPUS, [Variant.make(f"planted_{name}") for name in names], embedder=embedder,
                           store=tmp_path_factory.mktemp("audit-planted"), progress=False)
    finally:
        for name in names:
            wb.unregister(f"planted_{name}")
    return audited.set_index(pd.Index(names))


def test_the_clean_chunking_raises_nothing(planted: pd.DataFrame) -> None:
    assert all(f.n == 0 for f in planted.at["clean", "findings"].values())
    assert warnings(planted.loc[["clean"]]) == []


@pytest.mark.parametrize("check", list(PLANTED))
def test_a_planted_defect_is_flagged_by_its_check_and_no_other(planted: pd.DataFrame, check: str) -> None:
    findings = planted.at[check, "findings"]
    assert findings[check].n >= 1 and planted.at[check, check] > 0
    assert {name for name, f in findings.items() if f.n} == {check}
    said = warnings(planted.loc[[check]])
    if CHECKS[check].limit is None:  # shown in its column, never warned
        assert said == []
        return
    assert len(said) == 1 and f"({check})" in said[0] and planted.at[check, "label"] in said[0]
    where = findings[check].examples[0]
    assert f"{where.doc_id} [{where.start}, {where.end})" in said[0]


def test_the_worst_examples_are_the_defects(planted: pd.DataFrame) -> None:
    """Each example is a span of its document holding what was planted."""
    def text(check: str) -> str:
        span = planted.at[check, "findings"][check].examples[0]
        return CORPUS.docs[span.doc_id].text[span.start : span.end]

    assert text("dropped_share") == "Old uploads are removed at night."
    assert text("fragments") == "Thanks!"
    assert text("cut_sentences") == "Old uploads are removed at night."
    assert text("split_code_units") == "def add(a, b):\n    return a + b"
    assert text("split_table_rows") == "| team | 1000 |"
    assert text("split_code_blocks").startswith(FENCE) and text("split_code_blocks").endswith(FENCE)
    assert text("heading_only") == "# Uploads, storage limits and the command line"
    assert text("duplicates") == "Questions go to the team channel."
    assert text("truncated") in (" ".join(SENTENCES[:40]), " ".join(SENTENCES[40:]))


def test_truncation_counts_only_where_vectors_rank(embedder: Embedder, tmp_path: Path) -> None:
    """BM25 reads a whole chunk and +late pools windows of the document: neither is truncated."""
    wb.register_function("planted_truncated", chunker(PLANTED["truncated"]))
    variants = [Variant.make("planted_truncated"), Variant.make("planted_truncated", retriever="bm25"),
                Variant.make("planted_truncated", late=True)]
    audited = wb.audit(CORPUS, variants, embedder=embedder, store=tmp_path, progress=False)
    assert list(audited["truncated"]) == [2, 0, 0]
    assert list(audited["label"]) == [v.label for v in variants]


def test_a_second_audit_reads_the_first_back(embedder: Embedder, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    variants = [Variant.make("fixed", size=32), Variant.make("markdown", size=64)]
    first = wb.audit(CORPUS, variants, embedder=embedder, store=tmp_path, progress=False)
    assert len(list((tmp_path / "audit").iterdir())) == 2

    def no_chunking(*args: object) -> None:
        raise AssertionError("chunked again")

    monkeypatch.setattr(session_module, "written_chunks", no_chunking)
    again = wb.audit(CORPUS, variants, embedder=embedder, store=tmp_path, progress=False)
    pd.testing.assert_frame_equal(first.drop(columns="findings"), again.drop(columns="findings"))
    assert list(first["findings"]) == list(again["findings"])


def test_an_audit_after_a_sweep_reads_the_chunks_of_the_entries_it_built(tiny: Dataset, fake_embedder: Embedder,
                                                                        tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A cold sweep's report audits every variant the sweep just built: their chunks are read from the
    entries, equal to what chunking again makes (semantic's cuts too, placed by the cached vectors)."""
    variants = [Variant.make("fixed", size=24, overlap=4), Variant.make("semantic", breakpoint_percentile=80),
                Variant.make("markdown", size=64)]
    fresh = wb.audit(tiny, variants, embedder=fake_embedder, store=tmp_path / "fresh", progress=False)
    wb.sweep(tiny, variants, embedder=fake_embedder, store=tmp_path / "swept", progress=False)

    def no_chunking(*args: object) -> None:
        raise AssertionError("chunked again")

    monkeypatch.setattr(session_module, "written_chunks", no_chunking)
    after = wb.audit(tiny, variants, embedder=fake_embedder, store=tmp_path / "swept", progress=False)
    pd.testing.assert_frame_equal(fresh.drop(columns="findings"), after.drop(columns="findings"))
    assert list(fresh["findings"]) == list(after["findings"])


# ---- no false alarm -------------------------------------------------------------------------------------------


def holds(check: str, span: Span, dataset: Dataset) -> bool:
    """Whether an example a warning names on clean data is what its check says, read without the audit."""
    text = dataset.docs[span.doc_id].text[span.start : span.end]
    if check == "fragments":
        return TiktokenTokenizer("cl100k_base").count(text) < FRAGMENT_TOKENS
    if check == "heading_only":  # the readers write Markdown headings
        return all(line.startswith("#") for line in text.splitlines() if line.strip())
    if check == "duplicates":
        return sum(d.text.count(text) for d in dataset.documents) > 1
    return False  # any other check warning on clean data is a false alarm


@pytest.mark.parametrize("folder", ["data/chroma_small", "tests/data/itsdangerous"])
def test_the_default_grid_on_clean_data_raises_no_false_alarm(folder: str, embedder: Embedder,
                                                              tmp_path: Path) -> None:
    """Nothing lost, repeated past the overlap asked, truncated or torn from a table header; what warns is
    true of its examples (on itsdangerous, semantic at the 80th percentile cuts headings and a few words
    of code alone, and repeats the overloads' signatures)."""
    dataset = wb.load_dataset(REPO / folder)
    session = wb.Session(dataset, embedder=embedder, cache=tmp_path, progress=False)
    audited = session.audit(session.default_grid())
    for r in audited.itertuples():
        for check in ("dropped_share", "truncated", "split_table_rows"):
            assert r.findings[check].n == 0, (r.label, check, r.findings[check])
        assert r.overlap_share <= CHECKS["overlap_share"].limit
        for check, f in r.findings.items():
            limit = CHECKS[check].limit
            if limit is not None and f.share > limit:
                assert all(holds(check, span, dataset) for span in f.examples), (r.label, check, f.examples)
    if folder == "data/chroma_small":
        assert warnings(audited) == []


def hostile(long_line: int) -> Dataset:
    """Text that breaks naive splitting, none of it repeated: CJK without spaces (with and without full
    stops), Arabic and Hebrew, emoji sequences (ZWJ, flags, skin tones), Markdown with CRLF line ends, and
    one line of `long_line` characters."""
    rng = random.Random(0)
    hanzi = "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可里后小么心"
    arabic = "مرحبا المكتبة الكتب يمكنكم استعارة لمدة أسبوعين القراءة المدينة الطلاب الجامعة الصباح المساء".split()
    hebrew = "שלום הספרייה פתוחה מיום ראשון עד חמישי ספרים חדשים קוראים רבים בעיר הגדולה".split()
    english = "the team shipped a new build on time and every test passed while users waited for the notes".split()
    emoji = ["🚀", "🎉", "👩‍💻", "👨‍👩‍👧", "🇯🇵", "👍🏽", "😀", "❤️"]

    def words(vocab: list[str], n: int) -> str:
        return " ".join(rng.choice(vocab) for _ in range(n))

    cjk = "".join(rng.choice(hanzi) for _ in range(3000))
    cjk_stops = "".join(rng.choice(hanzi) + "。" * (rng.random() < 0.04) for _ in range(3000))
    rtl = " ".join(words(arabic if i % 2 else hebrew, rng.randint(6, 14)) + "." for i in range(120))
    emo = " ".join(words(english + emoji, rng.randint(6, 14)).capitalize() + rng.choice(".!?") for _ in range(120))
    crlf = "\r\n\r\n".join(f"## Part {i}" if i % 3 == 0 else
                           "\r\n".join(words(english, rng.randint(8, 14)).capitalize() + "." for _ in range(3))
                           for i in range(40))
    line = "".join(f"key{i}=value{i * 7919 % 100003}&" for i in range(long_line // 20))
    texts = {"cjk": cjk, "cjk_stops": cjk_stops, "rtl": rtl, "emoji": emo, "crlf.md": f"# Notes\r\n\r\n{crlf}\r\n",
             "line": line}
    return Dataset("hostile", tuple(Document(name, name, text) for name, text in texts.items()), ())


def test_the_default_grid_on_hostile_text_raises_no_false_alarm(embedder: Embedder, tmp_path: Path) -> None:
    dataset = hostile(200_000)
    session = wb.Session(dataset, embedder=embedder, cache=tmp_path, progress=False)
    audited = session.audit(session.default_grid())
    assert warnings(audited) == []
    assert (audited["dropped_share"] == 0).all()


# ---- every strategy --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(set(STRATEGIES) - GENERATES))
def test_every_strategy_audits_within_bounds(name: str, embedder: Embedder) -> None:
    variant = Variant.make(name)
    env = ChunkEnv(embed=embedder.encode, model_tokenizer=embedder.tokenizer)

    @settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(doc=documents)
    def audits(doc: Document) -> None:
        dataset = Dataset("random", (doc, Document("code.py", "code", CODE, language="python")), ())
        chunks = variant.chunk(dataset, env)
        audit = audit_chunks(dataset, chunks, embedder.truncated(embed_texts(chunks)), {})
        assert audit.chunks == len(chunks)
        for check, f in audit.findings.items():
            assert 0 <= f.n <= f.of and 0 <= f.share <= 1, (check, f)
            assert len(f.examples) == min(f.n, EXAMPLES) or check in ("dropped_share", "overlap_share"), (check, f)
            for span in f.examples:
                assert 0 <= span.start < span.end <= len(dataset.docs[span.doc_id].text), (check, span)
        values = table([row(variant, audit)]).iloc[0]
        assert all(0 <= values[c] <= 1 for c, check in CHECKS.items() if check.share)
        assert all(0 <= values[c] <= len(chunks) or c.startswith("split_") for c in CHECKS)

    audits()


# ---- the command ------------------------------------------------------------------------------------------------


def folder_of(dataset: Dataset, folder: Path) -> Path:
    """The dataset's documents as files named by their doc ids, without questions: a user's folder."""
    for doc in dataset.documents:
        (folder / doc.doc_id).parent.mkdir(parents=True, exist_ok=True)
        (folder / doc.doc_id).write_text(doc.text, encoding="utf-8")
    return folder


def test_audit_prints_the_chunk_health_table_then_the_warnings(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    data = folder_of(CORPUS, tmp_path / "data")
    wb.register_function("planted_heading_only", chunker(PLANTED["heading_only"]))
    main(["audit", str(data), "--cache", str(tmp_path / "cache"), "--quiet", "-v", "fixed:size=400,unit=chars",
          "-v", "planted_heading_only"])
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("chunk health of 2 variants on data (3 documents), model all-MiniLM-L6-v2")
    assert out[1].split() == ["#", "chunks", *CHECKS, "variant"]
    assert out[2].split()[0] == "1" and out[2].endswith("fixed(size=400, overlap=0, unit=chars)")
    assert out[3].split()[0] == "2" and out[3].endswith("planted_heading_only()")
    assert out[3].split()[2 + list(CHECKS).index("heading_only")] == "1!"  # past its threshold
    said = [line for line in out if line.startswith("Warning:")]
    assert len(said) == 2  # 400 characters cut the fenced block too
    assert said[0].startswith("Warning: fixed(size=400, overlap=0, unit=chars) (split_code_blocks): 1 of 1 code blocks")
    assert said[1] == ("Warning: planted_heading_only() (heading_only): 1 of its 15 chunks (6.7%) hold only a heading; "
                       "worst: guide.md [0, 46).")


@pytest.mark.model
def test_audit_without_variants_runs_the_default_grid(tiny: Dataset, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    data = folder_of(tiny, tmp_path / "data")
    main(["audit", str(data), "--cache", str(tmp_path / "cache"), "--quiet"])
    out = capsys.readouterr().out.splitlines()
    read = Dataset("data", tuple(load_documents(data, require_questions=False)[0]), ())  # billing.md is Markdown now
    grid = wb.Session(read, cache=tmp_path / "cache", progress=False).default_grid()
    rows = out[2 : 2 + len(grid)]
    assert [r.split("  ")[-1].strip() for r in rows] == [v.label for v in grid]
    assert out[2 + len(grid)] == "no check is past its threshold"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-v", "fixed:size=8,overlap=9"], "error: --variant: fixed: parameter 'overlap' must be in [0, size)"),
        (["-v", "fixed:size=8", "-v", "fixed:size=8,overlap=0"], "duplicate variants in the grid"),
        (["--grid", "missing.json"], "error: --grid missing.json:"),
        (["--model", "no/such/model"], "error: --model: "),
        (["-v", "nothing"], "error: ValueError: variant nothing() produced no chunks"),
    ],
)
def test_bad_input_is_one_line_naming_it(args: list[str], message: str, tiny: Dataset, tmp_path: Path) -> None:
    wb.register_function("nothing", lambda text: [])
    data = folder_of(tiny, tmp_path / "data")
    with pytest.raises(SystemExit) as err:
        main(["audit", str(data), "--cache", str(tmp_path / "cache"), "--quiet", *args])
    assert message in str(err.value) and "\n" not in str(err.value)
    assert err.value.code not in (0, None)


def test_audit_of_a_missing_folder_says_so(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as err:
        main(["audit", str(tmp_path / "nowhere")])
    assert str(err.value).startswith("error: ") and "is not a folder" in str(err.value)


# ---- the report -------------------------------------------------------------------------------------------------


def test_the_report_shows_chunk_health_flagged_with_its_worst_examples_quoted(tiny: Dataset, embedder: Embedder,
                                                                              tmp_path: Path) -> None:
    evil = Document("evil.md", "Evil", "# <script>alert(1)</script> and more words in this heading\n\nA body.\n")
    dataset = Dataset("tiny", (*tiny.documents, evil), tiny.questions)
    wb.register_function("heads_apart", lambda text: [p for p in text.split("\n\n") if p.strip()])
    variants = [Variant.make("heads_apart", retriever="bm25"), Variant.make("markdown", size=64, retriever="bm25")]
    result = wb.sweep(dataset, variants, ks=(1, 3), embedder=embedder, store=tmp_path / "cache", progress=False)
    audited = wb.audit(dataset, variants, embedder=embedder, store=tmp_path / "cache", progress=False)
    page = report.write_report(result, tmp_path / "report.html", figures={}, dataset=dataset,
                               audit=audited).read_text(encoding="utf-8")
    section = page[page.index('<section id="chunk-health">') : page.index('<section id="variants">')]
    assert page.index('<section id="cuts">') < page.index('<section id="chunk-health">')
    assert '<a href="#cuts">Where the cuts fall</a>' in section
    rows = section.split("<tbody>")[1].split("</tr>")
    assert "heads_<wbr>apart" not in rows[0] and "heads_apart()+bm25" in rows[0]
    assert "markdown(size=64, overlap=0)+bm25" in rows[1] and 'class="flag"' not in rows[1]
    assert '<td class="flag" title="past its threshold, 1%">4 \u26a0</td>' in rows[0]  # three in tiny, one in evil
    assert "heads_apart()+bm25 (heading_only): 4 of its" in section
    assert "<q># Billing</q>" in section or "<q>## Refunds</q>" in section
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in section and "<script>" not in page
    without = report.write_report(result, tmp_path / "bare.html", figures={}, dataset=dataset)
    assert "Left out: no chunk audit was given" in without.read_text(encoding="utf-8")


@pytest.mark.model
def test_a_cli_sweep_report_holds_the_chunk_health_of_its_variants(tiny: Dataset, tmp_path: Path) -> None:
    data = write_dataset(tiny, tmp_path / "data")
    main(["sweep", "--data", str(data), "--out", str(tmp_path / "out"), "--cache", str(tmp_path / "cache"), "--quiet",
          "--ks", "1", "3", "-v", "fixed:size=24+bm25", "-v", "markdown:size=64+bm25"])
    page = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    section = page[page.index('<section id="chunk-health">') : page.index('<section id="variants">')]
    assert "1.&nbsp;fixed(size=24, overlap=0)+bm25" in section
    assert "2.&nbsp;markdown(size=64, overlap=0)+bm25" in section
