"""The labeller in a real JupyterLab in Chromium: text selected on the page (through the DOM selection
API across chunk pieces, and by a real mouse drag) becomes evidence whose stored span is exactly
doc.text[start:end], on a document where emoji (two UTF-16 units each), CJK and Markdown markup come
before and inside the evidence."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import nbformat
import pytest

if TYPE_CHECKING:  # imported by pytest_plugins, after the assertion rewriter is in place
    from browserkit import Server, Tab

pytest_plugins = ["browserkit"]
pytestmark = pytest.mark.browser  # besides its fixtures: every test here drives Chromium

RUN_S = 90  # kernel start and one small corpus: nothing is embedded
TEXT = ("# Café 😀 notes on `chunking`\n\n"
        "Emoji first: 👩‍💻🚀😀 then **bold** text. 退款需要五个工作日😀完成。\n\n"
        "- a [link](https://example.org/x) and `code`\n"
        "- 中文段落：旅行者号 carries a golden record 🎶.\n")
FIRST = "退款需要五个工作日😀完成。"  # after three emoji and the markup: UTF-16 and code points differ by 5 here
SECOND = "旅行者号 carries a golden record 🎶"  # selected by dragging the mouse

# Select `quote` in the labeller's text box (its first occurrence) with the DOM selection API: the box's
# text nodes are walked in UTF-16 units, so the range may start and end in different pieces.
SELECT = """([box, quote]) => {
  const nodes = [], walker = document.createTreeWalker(box, NodeFilter.SHOW_TEXT);
  let all = "";
  while (walker.nextNode()) { nodes.push([walker.currentNode, all.length]); all += walker.currentNode.data; }
  const at = all.indexOf(quote);
  if (at < 0) return null;
  const point = (u) => {
    for (let i = nodes.length - 1; i >= 0; i--) if (nodes[i][1] <= u) return [nodes[i][0], u - nodes[i][1]]; };
  const range = document.createRange();
  range.setStart(...point(at)); range.setEnd(...point(at + quote.length));
  const sel = window.getSelection(); sel.removeAllRanges(); sel.addRange(range);
  return range.getClientRects().length;
}"""
# The viewport points just inside the first and the last character of `quote`, for a mouse drag.
ENDS = """([box, quote]) => {
  const nodes = [], walker = document.createTreeWalker(box, NodeFilter.SHOW_TEXT);
  let all = "";
  while (walker.nextNode()) { nodes.push([walker.currentNode, all.length]); all += walker.currentNode.data; }
  const at = all.indexOf(quote), chars = [...quote];
  const rect = (u, n) => { for (let i = nodes.length - 1; i >= 0; i--) if (nodes[i][1] <= u) {
    const r = document.createRange(), off = u - nodes[i][1];
    r.setStart(nodes[i][0], off); r.setEnd(nodes[i][0], off + n);
    return r.getBoundingClientRect(); } };
  const first = rect(at, chars[0].length), last = rect(at + quote.length - chars.at(-1).length, chars.at(-1).length);
  return [first.left + 1, first.top + first.height / 2, last.right - 1, last.top + last.height / 2];
}"""


def test_selected_text_is_stored_as_its_exact_span(tab: Tab, lab: Server, workspace: Path) -> None:
    from browserkit import run_all

    data = workspace / "labeler"
    shutil.rmtree(data, ignore_errors=True)
    data.mkdir()
    (data / "notes.md").write_text(TEXT, encoding="utf-8")
    (data / "other.txt").write_text("A second document, so that there is a list to browse.\n", encoding="utf-8")
    notebook = workspace / "notebooks" / "labeler.ipynb"
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "language": "python",
                                                           "display_name": "Python 3 (ipykernel)"}})
    source = f"import workbench as wb\nwb.Labeler({str(data)!r}, variant='fixed:size=12')"
    nb.cells = [nbformat.v4.new_code_cell(source)]
    nbformat.write(nb, notebook)

    page = tab.page
    run_all(page, f"{lab.url}lab/tree/{notebook.name}", RUN_S)
    widget = page.locator(".jp-OutputArea-output .jupyter-widgets").first
    box = page.locator(".wb-labeler-text")
    box.wait_for(timeout=30_000)
    docs = widget.locator("select").first  # browse: the other document, then back
    docs.select_option(index=1)
    page.wait_for_function("box => box.textContent.startsWith('A second')", arg=box.element_handle())
    docs.select_option(index=0)
    page.wait_for_function("box => box.textContent.includes('退款')", arg=box.element_handle())
    assert box.text_content() == TEXT, "the page does not show the document's text as it is"
    assert box.locator("span").count() > 3, "no chunk pieces drawn"

    selected = widget.locator(".widget-html").filter(has_text=re.compile(r"^Selected \["))
    evidence = widget.locator("select").nth(1).locator("option")
    add = widget.locator("button", has_text="Add evidence")

    assert page.evaluate(SELECT, [box.element_handle(), FIRST]), "the quote is not on the page"
    selected.wait_for()
    add.click()
    evidence.first.wait_for()

    x0, y0, x1, y1 = page.evaluate(ENDS, [box.element_handle(), SECOND])
    page.mouse.move(x0, y0)
    page.mouse.down()
    page.mouse.move((x0 + x1) / 2, (y0 + y1) / 2, steps=5)
    page.mouse.move(x1, y1, steps=5)
    page.mouse.up()
    dragged = page.evaluate("() => window.getSelection().toString()")
    selected.filter(has_text=dragged[:8]).wait_for()
    add.click()
    evidence.nth(1).wait_for()

    widget.locator("textarea").fill("How long does a refund take, and what does the probe carry?")
    widget.locator("button", has_text="Save label").click()
    widget.locator("select").nth(2).locator("option").first.wait_for()
    tab.page.screenshot(path="/tmp/labeler.png", full_page=False)
    tab.screenshot("labeler-lab", widget)

    (line,) = (data / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    stored = json.loads(line)
    assert stored["question"] == "How long does a refund take, and what does the probe carry?"
    spans = [(a["doc_id"], a["start"], a["end"], a["quote"]) for a in stored["answers"]]
    assert [q for *_, q in spans] == [FIRST, dragged.strip()]
    assert all(TEXT[s:e] == q for _, s, e, q in spans)
    assert spans[0][1] == TEXT.index(FIRST) and dragged.strip() == SECOND
    assert "#b00020" not in widget.inner_html(), f"the labeller shows an error: {widget.inner_text()}"
    assert not tab.errors
