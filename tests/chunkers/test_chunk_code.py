"""`code`: cuts on function and class boundaries (checked against Python's own `ast` and hand-placed
Go and JavaScript functions), broken code still chunks, headers name path, class and signature,
and the chunk contract on random sources."""

from __future__ import annotations

import ast

import pytest
from chunkcheck import ENV, PROPS, UNITS, assert_chunk_contract
from hypothesis import given
from hypothesis import strategies as st

from workbench.chunkers import run_strategy
from workbench.chunkers.recursive import Units
from workbench.chunkers.units import unit_boundaries
from workbench.core.chunk import Chunk
from workbench.core.tokens import TiktokenTokenizer
from workbench.dataset import Document

PY = '''"""A module."""

import os


class Store:
    """Keeps values."""

    def __init__(self, root):
        self.root = root
        self.items = {}

    def get(self, key):
        # look it up
        return self.items.get(key)

    @property
    def size(self):
        return len(self.items)


def load(path):
    """Read a file."""
    with open(path, encoding="utf-8") as f:
        return f.read()


def total(values):
    result = 0
    for v in values:
        if v > 0:
            result += v
        else:
            result -= v
    return result


def name():
    return "café 😀"
'''

GO = """package shapes

import "math"

// Norm is the length.
func Norm(x, y float64) float64 {
\treturn math.Sqrt(x*x + y*y)
}

func Add(a, b int) int {
\treturn a + b
}

func Scale(v []int, k int) []int {
\tout := make([]int, len(v))
\tfor i, x := range v {
\t\tout[i] = x * k
\t}
\treturn out
}
"""

JS = """class Counter {
  constructor() {
    this.n = 0;
  }

  increment(by) {
    this.n += by;
    return this.n;
  }
}

function twice(f, x) {
  return f(f(x));
}

function greet(name) {
  const text = `hello ${name}`;
  console.log(text);
  return text;
}
"""


def chunk(text: str, doc_language: str | None, **params: object) -> list[Chunk]:
    """The code strategy's chunks of `text`, without the embedded header unless asked for: the tests of
    where cuts fall are about the text (the header's share of `size` has tests of its own)."""
    return run_strategy("code", {"header": False} | params,
                        Document("src/m", "m", text, path="src/m.x", language=doc_language), ENV)


def units_of(text: str, start: int, end: int) -> int:
    return Units(unit_boundaries(text, "tokens", "cl100k_base", ENV)).count(start, end)


def python_definitions(text: str) -> list[tuple[int, int]]:
    """Char spans of every def and class (decorators included), from Python's own parser."""
    rows = text.splitlines(keepends=True)
    starts = [sum(len(r) for r in rows[:i]) for i in range(len(rows))]

    def offset(line: int, col: int) -> int:  # ast columns count UTF-8 bytes
        return starts[line - 1] + len(rows[line - 1].encode()[:col].decode())

    out = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            d = node.decorator_list
            start = offset(d[0].lineno, d[0].col_offset) - 1 if d else offset(node.lineno, node.col_offset)  # "@"
            out.append((start, offset(node.end_lineno or node.lineno, node.end_col_offset or 0)))
    return out


def assert_units_whole(text: str, chunks: list[Chunk], units: list[tuple[int, int]], size: int) -> int:
    """Every unit that fits in `size` lies inside one chunk, and no chunk starts or ends inside
    one; returns how many fitted (so a test can see it checked something)."""
    fitted = 0
    for s, e in units:
        if units_of(text, s, e) > size:
            continue
        fitted += 1
        assert any(c.start <= s and e <= c.end for c in chunks), f"unit {text[s:e]!r} cut"
        assert not any(s < c.start < e or s < c.end < e for c in chunks), f"a cut inside {text[s:e]!r}"
    return fitted


@pytest.mark.parametrize("size", [20, 40, 80])
def test_python_cuts_fall_on_definition_boundaries(size: int) -> None:
    chunks = chunk(PY, "python", size=size)
    definitions = python_definitions(PY)
    assert [PY[s:e].split("\n", 1)[0] for s, e in definitions][:3] == ["class Store:", "def load(path):",
                                                                      "def total(values):"]
    assert assert_units_whole(PY, chunks, definitions, size) >= 4
    assert len(chunks) > 1
    for c in chunks:
        assert units_of(PY, c.start, c.end) <= size


def test_small_siblings_merge_and_a_big_unit_splits_by_its_children() -> None:
    texts = [c.text for c in chunk(PY, "python", size=40)]
    # get (with its comment) and the property fit together in 40 tokens, and the class header joins __init__
    assert any(t.startswith("def get") and "# look it up" in t and "def size" in t for t in texts)
    assert any(t.startswith("class Store:") and t.endswith("self.items = {}") for t in texts)
    chunks = chunk(PY, "python", size=25)  # total() is 39 tokens: split by its statements
    inside = [c for c in chunks if PY.index("def total") <= c.start and c.end <= PY.index("def name")]
    assert len(inside) >= 2 and inside[0].text.startswith("def total(values):\n    result = 0")
    assert inside[-1].text.endswith("return result")
    assert all(units_of(PY, c.start, c.end) <= 25 for c in inside)


@pytest.mark.parametrize("blank", ["\n\n", "\n"])  # with and without blank lines between functions
def test_go_and_javascript_cuts_fall_on_function_boundaries(blank: str) -> None:
    for text, language, names in ((GO.replace("\n\n", blank), "go", ("// Norm", "func Add", "func Scale")),
                                  (JS.replace("\n\n", blank), "javascript", ("class Counter", "function twice",
                                                                               "function greet"))):
        starts = [text.index(n) for n in names]
        ends = [text.index("\n}\n", s) + 2 for s in starts]
        chunks = chunk(text, language, size=30)
        assert assert_units_whole(text, chunks, list(zip(starts, ends, strict=True)), 30) >= 2, language
        assert {c.start for c in chunks} >= {s for s, e in zip(starts, ends, strict=True)
                                             if units_of(text, s, e) <= 30}


def test_header_is_path_class_and_signature() -> None:
    chunks = chunk(PY, "python", size=56, header=True)
    size = next(c for c in chunks if "len(self.items)" in c.text)
    assert size.heading == "class Store > def size(self)"  # decorated: the signature of what is decorated
    assert size.embed_text == f"src/m.x > class Store > def size(self)\n\n{size.text}"
    get = next(c for c in chunk(PY, "python", size=40, header=True) if "return self.items.get(key)" in c.text)
    assert get.heading == "class Store > def get(self, key)"  # over a quarter of 40 tokens: named, no signature
    assert get.embed_text == f"src/m.x > class Store > def get\n\n{get.text}"
    assert all(c.embed_text is None for c in chunk(PY, "python", size=20))


@pytest.mark.parametrize("size", [24, 40, 80])
def test_the_embedded_header_counts_inside_the_size(size: int) -> None:
    """The model reads header and text together, so together they fit `size` (but for a line over it,
    cut by units as any leaf): following the truncation advice (size <= the model's window) removes the
    truncation. A header over a quarter of `size` names the definitions without their signatures."""
    long = "def f(alpha_argument, beta_argument, gamma_argument, delta_argument, epsilon_argument):\n    return 1\n"
    text = PY + "\n" + long
    chunks = chunk(text, "python", size=size, header=True)
    count = TiktokenTokenizer("cl100k_base").count
    for c in chunks:
        lines_fit = all(count(line) + count(c.embed_text.split("\n\n", 1)[0]) + 2 <= size
                        for line in c.text.splitlines())
        assert count(c.embed_text) <= size + 1 or not lines_fit, c.embed_text  # +1: the joint of the two
    assert " ".join(c.text for c in chunks).count("def get") == 1  # every text once, no chunk lost
    f, = chunk(long, "python", size=40, header=True)
    assert f.heading.startswith("def f(alpha_argument") and f.embed_text == f"src/m.x > def f\n\n{long.strip()}"


def test_code_with_syntax_errors_still_chunks() -> None:
    broken = "def ok():\n    return 1\n\ndef broken(x:\n    return x +\n\nclass C(\n    def m(self): pass\n" * 3
    chunks = chunk(broken, "python", size=16)
    assert_chunk_contract(Document("src/m", "m", broken), chunks, 16, 0, "tokens", "cl100k_base", ENV)
    assert sum(c.text.count("def ok():\n    return 1") for c in chunks) == 3  # whole, beside broken neighbours


def test_text_after_an_unclosed_block_comment_is_kept() -> None:
    """tree-sitter's Rust grammar ends an ERROR node's children at an unclosed "/*" while the node runs on to
    the end of the file: that tail is chunked too (found on a Markdown README chunked with language=rust)."""
    text = "# Notes\n\nSee `src/*.rs` and the rest.\nAnother line of prose.\n"
    chunks = chunk(text, "rust", size=8)
    assert_chunk_contract(Document("src/m", "m", text), chunks, 8, 0, "tokens", "cl100k_base", ENV)
    assert chunks[-1].text == "Another line of prose."


def test_language_from_the_document_or_lines() -> None:
    assert chunk(PY, "python", size=40) == chunk(PY, None, size=40, language="python")
    # a language with no grammar here (guessed for a file without extension) chunks as no language does
    assert chunk(PY, "cobol", size=40) == chunk(PY, None, size=40) != chunk(PY, "python", size=40)
    plain = chunk("line one\nline two\n\nnext paragraph here", None, size=20, unit="chars")  # no language: lines
    assert [c.text for c in plain] == ["line one\nline two", "next paragraph here"]


FRAGMENTS = st.sampled_from([
    "def f(x):\n    return x\n", "class K:\n    def m(self):\n        pass\n", "# note\n", "x = 'é😀中文'\n",
    "if x:\n    y = [1, 2,\n         3]\n", "def g(:\n", "\n", "    ", "'''doc\nstring'''\n", "@dec\ndef h(): ...\n",
    "for i in range(3):\n    print(i)\n", "))(", "long_name_" * 20 + "\n",
])


@PROPS
@given(parts=st.lists(FRAGMENTS, min_size=1, max_size=30), size=st.integers(1, 60), data=st.data())
def test_contract_on_random_python(parts: list[str], size: int, data: st.DataObject) -> None:
    text = "".join(parts)
    unit, tokenizer = data.draw(st.sampled_from(UNITS))
    doc = Document("d", "t", text, language="python")
    chunks = run_strategy("code", {"size": size, "unit": unit, "tokenizer": tokenizer}, doc, ENV)
    if text.strip():
        assert_chunk_contract(doc, chunks, size, 0, unit, tokenizer, ENV)
    else:
        assert chunks == []


# every language the loaders read as code (workbench.ingest.code): two definitions each, one line apart
OTHERS = {
    "csharp": ("class A {\n    int F(int x) { return x * 2 + 1; }\n}\n",
               "class B {\n    void G() { Run(1, 2, 3); }\n}\n"),
    "ruby": ("def first(x)\n  x * 2 + 1\nend\n", "def second(y)\n  puts(y, 2, 3)\nend\n"),
    "php": ("<?php\nfunction first($x) { return $x * 2 + 1; }\n", "function second($y) { echo($y + 3); }\n"),
    "bash": ("first() {\n  echo one two three\n}\n", "second() {\n  echo four five six\n}\n"),
    "jsx": ("function First() { return <a href='x'>one</a>; }\n", "function Second() { return <b>two</b>; }\n"),
}


@pytest.mark.parametrize("language", sorted(OTHERS))
def test_every_language_the_loaders_read_cuts_between_definitions(language: str) -> None:
    one, two = OTHERS[language]
    text = one + "\n" + two
    size = max(map(TiktokenTokenizer("cl100k_base").count, (one, two))) + 1  # each fits alone, not both together
    chunks = chunk(text, language, size=size)
    assert [c.text.strip() for c in chunks] == [one.strip(), two.strip()]
    assert all(c.heading for c in chunks)  # each named by its signature
