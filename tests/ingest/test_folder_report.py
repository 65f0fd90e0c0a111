"""A folder of mixed files: what was read, by kind, and every file left out, by extension and reason,
in one warning (strict: one error); hostile files are each named while the rest of the corpus loads."""

from __future__ import annotations

import json
import os
import shutil
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from conftest import REPO
from PIL import Image
from pypdf import PdfReader, PdfWriter

from workbench.dataset import DatasetError, DatasetWarning
from workbench.ingest import READERS, load_dataset

FORMATS = REPO / "tests" / "data" / "formats"


def question(folder: Path, doc_id: str, quote: str, start: int = 0) -> None:
    answer = {"doc_id": doc_id, "start": start, "end": start + len(quote), "quote": quote}
    (folder / "questions.jsonl").write_text(json.dumps({"qid": "q", "question": "?", "answers": [answer]}) + "\n",
                                            encoding="utf-8")


def mixed(tmp_path: Path) -> Path:
    """tests/data/formats plus a picture, binary bytes in a .txt and an empty .md, with one question."""
    folder = tmp_path / "mixed"
    shutil.copytree(FORMATS, folder)
    Image.new("RGB", (4, 4)).save(folder / "logo.png")
    Image.new("RGB", (4, 4)).save(folder / "photo.png")
    (folder / "dump.txt").write_bytes(b"header\0\x01\x02binary")
    (folder / "blank.md").write_text("\n \n", encoding="utf-8")
    question(folder, "handbook.pdf", "Refunds are paid back")
    return folder


def test_one_warning_counts_what_was_read_and_names_what_was_skipped(tmp_path: Path) -> None:
    folder = mixed(tmp_path)
    with pytest.warns(DatasetWarning) as caught:
        ds = load_dataset(folder)
    assert len(caught) == 1
    message = str(caught[0].message)
    assert "read 9 file(s) (4 code (2 python, 1 bash, 1 go), 1 docx, 1 html, 1 markdown, 1 pdf, 1 rst)" in message
    assert "skipped 4:" in message and "questions.jsonl" not in message
    assert "  .md: 1 empty ('blank.md')" in message
    assert "  .png: 2 unknown type ('logo.png'; 'photo.png')" in message
    assert "  .txt: 1 binary ('dump.txt')" in message and "strict=True" in message
    assert {d.doc_id for d in ds.documents} >= {"handbook.pdf", "page.html", "tools/deploy", "docs_src/server.go"}
    with pytest.raises(DatasetError, match=r"(?s)files were skipped \(strict\): read 9 file.*\.png: 2 unknown type"):
        load_dataset(folder, strict=True)
    assert ds.notes == (message,) and ds.select(max_questions=1).notes == (message,)  # kept for the report


def test_what_loading_said_reaches_the_result_and_its_report(tmp_path: Path) -> None:
    """Every warning the CLI prints about the data is in the result's provenance, its config.json and
    its report (issue 44: the report left out that labels matched only fuzzily and a file was skipped)."""
    from workbench.evaluation.settings import Settings
    from workbench.report import write_report
    from workbench.results.provenance import DatasetIdentity, Provenance
    from workbench.results.result import SweepResult

    folder = mixed(tmp_path)
    with pytest.warns(DatasetWarning):
        ds = load_dataset(folder)
    identity = DatasetIdentity.of(ds)
    assert identity.notes == ds.notes and len(ds.notes) == 1
    provenance = Provenance(identity, ())
    assert Provenance.from_config(provenance.config()).dataset.notes == ds.notes  # saved and read back
    from workbench.evaluation.stats import summarize

    pq = pd.DataFrame([("k", "fixed(size=8)", q, 5, 0, m, v) for q, v in (("q1", 1.0), ("q2", 0.0))
                       for m in ("recall", "context_tokens")], columns=["key", "variant", "qid", "k", "budget",
                                                                        "metric", "value"])
    result = SweepResult(pq, summarize(pq), pd.DataFrame({"key": ["k"], "variant": ["fixed(size=8)"]}),
                         provenance.with_(settings=Settings(ks=(5,), budgets=())))
    page = write_report(result, tmp_path / "r.html", figures={}).read_text(encoding="utf-8")
    assert "The data, as loaded:" in page and "skipped 4:" in page and "blank.md" in page


def test_a_question_into_a_skipped_file_says_why_and_a_near_miss_id_gets_did_you_mean(tmp_path: Path) -> None:
    folder = mixed(tmp_path)
    cases = [("dump.txt", "was skipped (binary): no answer can point into it"),
             ("docs_src/cors_tutorial001", "unknown document 'docs_src/cors_tutorial001' (did you mean "
                                           "'docs_src/cors_tutorial001.py'?)"),
             ("Page.HTML", "unknown document 'Page.HTML' (did you mean 'page.html'?)"),
             ("dump", "(did you mean 'dump.txt', skipped (binary)?)"),
             ("nowhere.md", "unknown document 'nowhere.md'")]
    for doc_id, problem in cases:
        question(folder, doc_id, "x")
        with pytest.warns(DatasetWarning), pytest.raises(DatasetError) as err:
            load_dataset(folder)
        assert problem in str(err.value) and err.value.field == "answers[0].doc_id"
        assert doc_id != "nowhere.md" or "did you mean" not in str(err.value)


def test_spans_address_the_loaded_text_of_every_kind(tmp_path: Path) -> None:
    """A quote checked by load_dataset itself: the text a span addresses is the text loaded."""
    folder = mixed(tmp_path)
    for doc_id, quote in [("handbook.pdf", "the billing configuration of the account"), ("page.html", "## Options"),
                          ("report.docx", "| Email | 3.5 |"), ("install.rst", "## From source")]:
        text = READERS[Path(doc_id).suffix.lower()](folder / doc_id, doc_id).text
        question(folder, doc_id, quote, text.index(quote))
        with pytest.warns(DatasetWarning):
            assert load_dataset(folder).docs[doc_id].text == text


def pdf_bytes() -> bytes:
    return (FORMATS / "handbook.pdf").read_bytes()


def encrypted(file: Path) -> None:
    writer = PdfWriter(clone_from=PdfReader(FORMATS / "handbook.pdf"))
    writer.encrypt("secret", algorithm="RC4-128")
    writer.write(file)


def zip_of(file: Path, members: dict[str, bytes]) -> None:
    with zipfile.ZipFile(file, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)


def non_utf8_name(folder: Path) -> None:
    with open(os.path.join(os.fsencode(folder), b"bad\xff name.txt"), "wb") as f:
        f.write(b"text")


HOSTILE: dict[str, tuple[Callable[[Path], None], str]] = {  # case -> (writes its file in the folder, reported)
    "malformed pdf": (lambda d: (d / "cut.pdf").write_bytes(pdf_bytes()[:400]), "'cut.pdf': not a readable PDF"),
    "not a pdf": (lambda d: (d / "fake.pdf").write_text("hello"), "'fake.pdf': not a readable PDF"),
    "encrypted pdf": (lambda d: encrypted(d / "locked.pdf"), "'locked.pdf': encrypted PDF (password-protected)"),
    "image-only pdf": (lambda d: Image.new("RGB", (60, 80), "white").save(d / "scan.pdf"),
                       "'scan.pdf': no text layer in 1 page(s) (a scan? OCR it first)"),
    "docx not a zip": (lambda d: (d / "memo.docx").write_text("just text"),
                       "'memo.docx': not a Word document (not a zip package)"),
    "docx another zip": (lambda d: zip_of(d / "memo.docx", {"a.txt": b"x"}),
                         "'memo.docx': not a Word document (no word/document.xml in the package)"),
    "docx zip bomb": (lambda d: zip_of(d / "bomb.docx", {"word/document.xml": bytes(30_000_000)}),
                      "'bomb.docx': refused as a zip bomb: 30,000,000 bytes would unpack from"),
    "binary txt": (lambda d: (d / "data.txt").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"),
                   ".txt: 1 binary ('data.txt')"),
    "invalid utf-8": (lambda d: (d / "latin.txt").write_bytes("café au lait".encode("latin-1")),
                      "'latin.txt': not UTF-8 text (invalid continuation byte at byte 3)"),
    "deep html": (lambda d: (d / "deep.html").write_text("<div>" * 10_000 + "x" + "</div>" * 10_000),
                  "'deep.html': HTML nested 10,00"),
    "minified script": (lambda d: (d / "app.min.js").write_text("var a=1;" * 650_000),
                        "'app.min.js': minified or generated code (a line of 5,200,000 characters"),
    "symlink loop": (lambda d: (d / "sub").mkdir() or (d / "sub" / "loop").symlink_to(d, target_is_directory=True),
                     "'sub/loop/': symbolic link loop"),
    "self link": (lambda d: (d / "self.md").symlink_to(d / "self.md"), "'self.md': broken link"),
    "non-utf-8 name": (non_utf8_name, "\"'bad\\\\udcff name.txt'\": file name is not UTF-8"),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_hostile_file_is_named_once_and_the_rest_loads(case: str, tmp_path: Path) -> None:
    folder = tmp_path / "ds"
    folder.mkdir()
    (folder / "good.md").write_text("# Good\n\nRefunds take five days.\n", encoding="utf-8")
    question(folder, "good.md", "Refunds take five days.", 8)
    make, reported = HOSTILE[case]
    make(folder)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ds = load_dataset(folder)
    ours = [str(w.message) for w in caught if issubclass(w.category, DatasetWarning)]
    assert len(ours) == 1 and reported in ours[0], ours
    assert "read 1 file(s) (1 markdown); skipped 1:" in ours[0]
    assert [d.doc_id for d in ds.documents] == ["good.md"]


def test_names_with_spaces_quotes_and_non_ascii_characters_load_as_their_ids(tmp_path: Path) -> None:
    folder = tmp_path / "names"
    folder.mkdir()
    names = ["my notes.txt", "it's \"quoted\".md", "café 中文/résumé.txt"]
    for name in names:
        (folder / name).parent.mkdir(exist_ok=True)
        (folder / name).write_text(f"About {name}.", encoding="utf-8")
    question(folder, names[2], "About café 中文/résumé.txt.")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing skipped, nothing to warn about
        ds = load_dataset(folder)
    assert sorted(d.doc_id for d in ds.documents) == sorted(names)


def test_sweep_strict_stops_on_a_skipped_file_before_any_work(tmp_path: Path) -> None:
    from workbench.cli import main

    folder = mixed(tmp_path)
    with pytest.raises(SystemExit, match=r"(?s)^error: .*files were skipped \(strict\).*\.txt: 1 binary"):
        main(["sweep", "--data", str(folder), "--strict", "--out", str(tmp_path / "out")])
    assert not (tmp_path / "out").exists()
