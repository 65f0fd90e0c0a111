"""Markdown chunking: sections from real headings only, heading paths, tables and code blocks
kept whole, the chunk contract on random text, and the fallback to recursive splitting."""

from __future__ import annotations

from itertools import pairwise

import pytest
from chunkcheck import ENV, MIXED, PROPS, UNITS, assert_chunk_contract, check_random_doc
from conftest import BILLING, SPACE
from hypothesis import given
from hypothesis import strategies as st
from textgen import documents

from workbench.chunkers import run_strategy
from workbench.chunkers.markdown import section_spans
from workbench.dataset import Document
from workbench.variant import Variant

GUIDE = """Preamble line.

# Setup
Install it.

```bash
# not a heading
pip install x
```

## Linux
Use apt.

Windows
-------
Use the installer.

#### Deep
Skipped levels still nest.

# Usage
Run it.
"""

TABLE = "| plan | price |\n|------|-------|\n| free | 0 |\n| pro | 10 |\n"
# the table interrupts the paragraph (no blank line), so only the parse, not "\n\n", sees it
PRICING = f"# Pricing\n\nOur plans are simple. Pick one.\n{TABLE}\nPrices are monthly. Taxes extra.\n"


def chunks(text: str, **params):
    return run_strategy("markdown", params, Document("d", "t", text), ENV)


def test_section_spans_hand_computed() -> None:
    spans = section_spans(GUIDE)
    assert [(GUIDE[s:e].split("\n")[0], path) for s, e, path in spans] == [
        ("Preamble line.", ""),
        ("# Setup", "Setup"),  # its fence holds "# not a heading", which is code
        ("## Linux", "Setup > Linux"),
        ("Windows", "Setup > Windows"),  # setext heading, level 2
        ("#### Deep", "Setup > Windows > Deep"),
        ("# Usage", "Usage"),
    ]
    assert spans[0][0] == 0 and spans[-1][1] == len(GUIDE)
    assert all(a[1] == b[0] for a, b in pairwise(spans))


def test_section_spans_edge_cases() -> None:
    assert section_spans("") == []
    assert section_spans("no headings\n\nat all") == [(0, 19, "")]
    # a blank preamble joins the first section; a bare heading joins its subsection
    assert section_spans("\n\n# A\n## B\ntext\n# C\n") == [(0, 16, "A > B"), (16, 20, "C")]
    # a bare heading followed by a sibling stays alone (the sibling's path would be wrong for it)
    assert section_spans("# A\n# B\nx") == [(0, 4, "A"), (4, 9, "B")]
    assert section_spans("> # quoted\n- # listed\n") == [(0, 22, "")]
    assert section_spans("# A\n## B\nx\n", max_level=1) == [(0, 11, "A")]


def test_chunks_carry_heading_paths_and_skip_fenced_hashes() -> None:
    got = [(c.heading, c.text.split("\n")[0]) for c in chunks(GUIDE, size=200, unit="chars")]
    assert got == [
        ("", "Preamble line."),
        ("Setup", "# Setup"),
        ("Setup > Linux", "## Linux"),
        ("Setup > Windows", "Windows"),
        ("Setup > Windows > Deep", "#### Deep"),
        ("Usage", "# Usage"),
    ]
    assert "# not a heading" in chunks(GUIDE, size=200, unit="chars")[1].text


def test_conftest_billing_paths() -> None:
    assert [c.heading for c in chunks(BILLING, size=256)] == ["Billing", "Billing > Refunds", "Billing > Taxes"]


def test_table_that_fits_stays_whole() -> None:
    start = PRICING.index(TABLE)
    table = (start, start + len(TABLE) - 1)  # without its final newline, which trimming drops
    for size, overlap in [(len(TABLE), 0), (len(TABLE) + 10, 5), (70, 30)]:
        got = chunks(PRICING, size=size, overlap=overlap, unit="chars")
        assert any(c.start <= table[0] and table[1] <= c.end for c in got), size
        assert not any(table[0] < edge < table[1] for c in got for edge in (c.start, c.end)), size


def test_big_table_and_fence_are_split_between_lines_only() -> None:
    rows = "".join(f"| row {i} | {i * i} |\n" for i in range(30))
    text = f"# T\n\n| k | v |\n|---|---|\n{rows}\n```\n" + "".join(f"line {i}\n" for i in range(30)) + "```\n"
    got = chunks(text, size=40, overlap=15, unit="chars")
    assert len(got) > 10
    for c in got:
        assert c.start == 0 or text[c.start - 1] == "\n", c.text
        assert c.end == len(text) or text[c.end] == "\n", c.text
        assert c.heading == "T"


def test_code_fence_that_fits_stays_whole() -> None:
    fence = "```python\n# comment\ndef f():\n    return 1\n```"
    text = f"# Code\n\nSome words before the code block here.\n\n{fence}\n\nAnd a few words after it.\n"
    got = chunks(text, size=len(fence) + 2, unit="chars")
    assert fence in [c.text for c in got]


def test_plain_text_degrades_to_recursive() -> None:
    doc = Document("space", "t", SPACE)
    md = run_strategy("markdown", dict(size=30, overlap=8), doc, ENV)
    rec = run_strategy("recursive", dict(size=30, overlap=8, separators="markdown"), doc, ENV)
    assert len(md) > 2 and [(c.start, c.end) for c in md] == [(c.start, c.end) for c in rec]
    assert {c.heading for c in md} == {""}


def test_chunks_never_cross_sections() -> None:
    spans = section_spans(GUIDE)
    for c in chunks(GUIDE, size=8, overlap=3):
        assert any(s <= c.start and c.end <= e and p == c.heading for s, e, p in spans), c


@PROPS
@given(doc=documents, size=st.integers(1, 40), data=st.data())
def test_markdown_contract_on_random_text(doc: Document, size: int, data: st.DataObject) -> None:
    check_random_doc("markdown", doc, size, data, ENV)


@pytest.mark.parametrize("unit,tokenizer", UNITS)
def test_markdown_exact_offsets_on_non_ascii(unit: str, tokenizer: str) -> None:
    doc = Document("d", "t", f"# Ünïcødé 😀\n\n{MIXED}\n\n## 中文\n\n{MIXED}\n")
    got = run_strategy("markdown", dict(size=6, overlap=2, unit=unit, tokenizer=tokenizer), doc, ENV)
    assert {c.heading for c in got} == {"Ünïcødé 😀", "Ünïcødé 😀 > 中文"}
    assert_chunk_contract(doc, got, 6, 2, unit, tokenizer, ENV)


@pytest.mark.parametrize(
    "params,named",
    [
        (dict(max_heading_level=7), "max_heading_level"),
        (dict(max_heading_level=0), "max_heading_level"),
    ],
)
def test_markdown_invalid_parameters(params: dict, named: str) -> None:
    with pytest.raises(ValueError, match=f"'{named}'"):
        Variant.make("markdown", **params)
