"""Each format's reader on a real file of its kind (tests/data/formats): the text is what spans
address, offsets exact, structure kept as Markdown-like text the structure-aware chunkers read."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import REPO

from workbench.chunkers.markdown import section_spans
from workbench.ingest import READERS

FORMATS = REPO / "tests" / "data" / "formats"


def read(name: str):
    file = FORMATS / name
    return READERS[file.suffix.lower()](file, name)


def test_pdf_keeps_the_page_map_drops_running_lines_and_rejoins_hyphenated_words() -> None:
    doc = read("handbook.pdf")
    assert (doc.kind, doc.title, doc.path) == ("pdf", "ACME Billing Handbook", "handbook.pdf")
    assert "ACME Billing Handbook" not in doc.text and "Page" not in doc.text  # header and "Page n of 3" footer
    assert "the billing configuration of the account" in doc.text and "configu-" not in doc.text
    pages = ["Refunds are paid back", "Invoices are sent on the first day", "Prices include VAT"]
    assert [doc.text.startswith(p, s) for p, s in zip(pages, doc.pages, strict=True)] == [True, True, True]
    vat = doc.text.index("Business customers can add a VAT number.")
    assert doc.page_of(vat) == 3 and doc.page_of(doc.text.index("Every invoice")) == 2 and doc.page_of(0) == 1
    assert doc.text.endswith("VAT number.")


def test_html_keeps_the_main_content_as_markdown_and_drops_the_boilerplate() -> None:
    doc = read("page.html")
    assert (doc.kind, doc.title) == ("html", "CORS - Example API docs")
    for gone in ("Sidebar", "Footer", "Blog", "analytics", "trackPageView", "float", "¶"):
        assert gone not in doc.text, gone
    for kept in ("# CORS (Cross-Origin Resource Sharing)\n", "## Steps\n", "1. Import `CORSMiddleware`.\n",
                 "2. Create a list of allowed origins.\n", "| Option | Default |\n| --- | --- |\n",
                 "| allow_credentials | False |\n", "app.add_middleware(CORSMiddleware, allow_origins=origins)\n"):
        assert kept in doc.text, kept
    paths = [p for _, _, p in section_spans(doc.text)]
    assert paths == ["CORS (Cross-Origin Resource Sharing)", "CORS (Cross-Origin Resource Sharing) > Steps",
                     "CORS (Cross-Origin Resource Sharing) > Options"]


def test_docx_keeps_heading_levels_lists_and_table_rows() -> None:
    doc = read("report.docx")
    assert (doc.kind, doc.title) == ("docx", "Support Report")
    assert doc.text.startswith("# Support Report\n\nTickets fell by a third")
    assert "\n\n# Response times\n\n" in doc.text and "\n\n## By channel\n\n" in doc.text
    assert "| Channel | Median hours |\n| --- | --- |\n| Email | 3.5 |\n| Chat | 0.2 |" in doc.text
    assert "- Phone support ends in March." in doc.text
    assert [p for _, _, p in section_spans(doc.text)][-1] == "Response times > By channel"


def test_rst_section_titles_become_headings_by_adornment_order() -> None:
    doc = read("install.rst")
    assert (doc.kind, doc.title) == ("rst", "Installing the client")
    assert [p for _, _, p in section_spans(doc.text)] == [
        "", "Installing the client", "Installing the client > From the package index",
        "Installing the client > From source", "Installing the client > From source > Checking the install"]
    assert "=====" not in doc.text and "    $ pip install example-client\n" in doc.text


@pytest.mark.parametrize(("name", "language"), [("docs_src/cors_tutorial001.py", "python"),
                                                ("docs_src/server.go", "go"), ("tools/deploy", "bash")])
def test_code_is_read_verbatim_with_its_language_from_extension_or_content(name: str, language: str) -> None:
    doc = read(name)
    assert (doc.kind, doc.language, doc.title) == ("code", language, Path(name).name)
    assert doc.text == (FORMATS / name).read_text(encoding="utf-8")


@pytest.mark.parametrize(("suffix", "body", "language"), [
    (".ts", "let x: number = ;\n", "typescript"), (".rs", "fn main( {\n", "rust"), (".java", "class {", "java"),
    (".cpp", "int main( {", "cpp"), (".cs", "class {", "csharp"), (".rb", "def f(\n", "ruby"),
    (".php", "<?php echo (;\n", "php"), (".h", "struct {", "c"), (".py", "def f(:\n", "python"),
    (".js", "function (", "javascript"),
])
def test_code_with_syntax_errors_loads_as_written(suffix: str, body: str, language: str, tmp_path: Path) -> None:
    (tmp_path / f"broken{suffix}").write_text(body, encoding="utf-8")
    doc = READERS[suffix](tmp_path / f"broken{suffix}", f"broken{suffix}")
    assert (doc.text, doc.language) == (body, language)


MKDOCS = """# Install { #install }

Pick your system.

## Linux {#linux .tab key=val}

Run the installer.

## Windows {: #windows }

Double-click it.

## Set {x} aside {-}

Nothing else.
"""


def test_heading_attributes_leave_titles_and_heading_paths_but_stay_in_the_text(tmp_path: Path) -> None:
    from workbench.chunkers import ChunkEnv
    from workbench.dataset import Dataset
    from workbench.variant import Variant

    (tmp_path / "install.md").write_text(MKDOCS, encoding="utf-8")
    doc = READERS[".md"](tmp_path / "install.md", "install.md")
    assert doc.title == "Install" and doc.text == MKDOCS  # the spans address the source as written
    paths = ["Install", "Install > Linux", "Install > Windows", "Install > Set {x} aside"]
    assert [p for _, _, p in section_spans(doc.text)] == paths
    ds = Dataset("mkdocs", (doc,), ())
    for strategy, kw in (("markdown", {"size": 16}), ("table", {"size": 16}), ("parent_child", {"parent": "section"})):
        chunks = Variant.make(strategy, **kw).chunk(ds, ChunkEnv())
        assert {c.heading for c in chunks} == set(paths), strategy
    linux = next(c for c in Variant.make("markdown", size=16).chunk(ds, ChunkEnv()) if "installer" in c.text)
    assert "{#linux .tab key=val}" in doc.text[linux.start - 40:linux.start] + linux.text
