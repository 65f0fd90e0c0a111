"""`where`: the label naming where a chunk is, on real files of each kind (tests/data/formats)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import REPO

from workbench.chunkers import ChunkEnv, where
from workbench.core.chunk import make_chunk
from workbench.dataset import Dataset, Document
from workbench.ingest import READERS
from workbench.variant import Variant

FORMATS = REPO / "tests" / "data" / "formats"


def read(name: str, folder: Path = FORMATS) -> Document:
    return READERS[Path(name).suffix.lower()](folder / name, name)


def chunk_at(doc: Document, chunks: list, quote: str):
    at = doc.text.index(quote)
    return next(c for c in chunks if c.start <= at < c.end)


def test_a_pdf_chunk_names_its_pages() -> None:
    doc = read("handbook.pdf")
    ds = Dataset("pdf", (doc,), ())
    pairs = Variant.make("page", window=2).chunk(ds, ChunkEnv())
    assert [where(doc, c) for c in pairs] == ["handbook.pdf · pages 1-2", "handbook.pdf · page 3"]  # not twice
    vat = chunk_at(doc, Variant.make("fixed", size=20, unit="chars").chunk(ds, ChunkEnv()), "VAT number")
    assert where(doc, vat) == "handbook.pdf · page 3"
    across = make_chunk(doc, doc.pages[1] - 5, doc.pages[2] + 5)
    assert where(doc, across) == "handbook.pdf · pages 1-3"


def test_a_code_chunk_names_its_function_and_class(tmp_path: Path) -> None:
    doc = read("docs_src/cors_tutorial001.py")
    ds = Dataset("code", (doc,), ())
    coded = Variant.make("code", size=30).chunk(ds, ChunkEnv())
    assert where(doc, chunk_at(doc, coded, "Hello World")) == "docs_src/cors_tutorial001.py · async def main()"
    assert where(doc, chunk_at(doc, coded, "import FastAPI")) == "docs_src/cors_tutorial001.py"  # module level
    cut = chunk_at(doc, Variant.make("fixed", size=8).chunk(ds, ChunkEnv()), "Hello World")
    assert cut.heading == "" and where(doc, cut) == "docs_src/cors_tutorial001.py · async def main()"
    go = read("docs_src/server.go")
    assert where(go, make_chunk(go, go.text.index("func main"), len(go.text))) == "docs_src/server.go · func main()"
    (tmp_path / "cache.py").write_text("class Cache:\n    def get(self, key):\n        return self.data[key]\n")
    cache = read("cache.py", tmp_path)
    at = cache.text.index("return")
    assert where(cache, make_chunk(cache, at, at + 6)) == "cache.py · class Cache > def get(self, key)"


@pytest.mark.parametrize(("name", "quote", "path"), [
    ("install.rst", "pip install example-client", "Installing the client > From the package index"),
    ("install.rst", "no error means it works", "Installing the client > From source > Checking the install"),
    ("page.html", "allow_credentials", "CORS (Cross-Origin Resource Sharing) > Options"),
    ("report.docx", "| Chat | 0.2 |", "Response times > By channel"),
])
def test_a_structured_chunk_names_its_heading_path(name: str, quote: str, path: str) -> None:
    doc = read(name)
    ds = Dataset("md", (doc,), ())
    sectioned = chunk_at(doc, Variant.make("markdown", size=64).chunk(ds, ChunkEnv()), quote)
    assert sectioned.heading == path and where(doc, sectioned) == f"{name} · {path}"
    cut = chunk_at(doc, Variant.make("fixed", size=4).chunk(ds, ChunkEnv()), quote)  # no heading of its own
    assert where(doc, cut) == f"{name} · {path}"


def test_a_document_without_a_path_is_named_by_its_id_and_a_foreign_chunk_is_refused() -> None:
    doc = Document("notes", "Notes", "# Notes\n\nplain words\n")
    assert where(doc, make_chunk(doc, 9, 20)) == "notes"  # made in memory: no format, no derived heading
    other = Document("other", "Other", "x" * 40)
    with pytest.raises(ValueError, match="'other' \\[30, 40\\) is not a span of document 'notes'"):
        where(doc, make_chunk(other, 30, 40))
