"""HTML: the main content only, as Markdown-like text (headings, lists, tables, code kept), so the
structure-aware chunkers apply; navigation, headers, footers, scripts and styles are dropped.

BeautifulSoup's pure-Python parser builds the tree (no depth limit that would flatten a page
silently), markdownify writes the Markdown. The main content is what the page marks as such
(<main>, role="main", a single <article>), which documentation generators (Sphinx, MkDocs) all do.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from workbench.dataset import Document
from workbench.ingest.report import Unreadable
from workbench.ingest.text import read_utf8

if TYPE_CHECKING:
    from bs4 import BeautifulSoup, Tag

MAX_DEPTH = 200  # deeper nesting is refused by name: no real page needs it, and conversion recurses per level
DROP = ("script", "style", "noscript", "template", "nav", "aside", "form", "iframe", "svg", "button", "img")
DROP_ROLES = ("navigation", "banner", "contentinfo", "complementary", "search")
DROP_CLASSES = ("headerlink",)  # the "¶" permalink Sphinx and MkDocs put in every heading


def depth(root: Tag) -> int:
    """How deeply elements nest below `root`, counted without recursion (the point is to refuse before recursing)."""
    from bs4 import Tag  # not at module level: see read_html
    deepest, todo = 0, [(root, 0)]
    while todo:
        node, d = todo.pop()
        deepest = max(deepest, d)
        todo.extend((c, d + 1) for c in node.children if isinstance(c, Tag))
    return deepest


def main_content(soup: BeautifulSoup) -> Tag:
    """The element the page marks as its main content, else the body, with the boilerplate removed."""
    articles = soup.find_all("article")
    main = soup.find("main") or soup.find(attrs={"role": "main"}) or (articles[0] if len(articles) == 1 else None)
    if main is None:
        main = soup.body or soup
        for tag in main.find_all(["header", "footer"]):
            tag.decompose()
    drop = main.find_all(DROP) + main.find_all(attrs={"role": list(DROP_ROLES)}) + main.find_all(class_=DROP_CLASSES)
    drop += main.find_all(attrs={"aria-hidden": "true"}) + main.find_all(attrs={"hidden": True})
    for tag in drop:
        if not tag.decomposed:
            tag.decompose()
    return main


def read_html(file: Path, doc_id: str) -> Document:
    """The page's main content as Markdown-like text, titled by <title> (else its first <h1>, else the file name)."""
    from bs4 import BeautifulSoup  # bs4 and markdownify load with the first HTML file, not with every dataset
    from markdownify import MarkdownConverter
    soup = BeautifulSoup(read_utf8(file), "html.parser")
    if (d := depth(soup)) > MAX_DEPTH:
        raise Unreadable(file, "unreadable", f"HTML nested {d:,} levels deep (at most {MAX_DEPTH})")
    head = soup.title or soup.find("h1")
    title = " ".join(head.get_text().split()) if head else ""
    try:
        markdown = MarkdownConverter(heading_style="atx", bullets="-", escape_underscores=False,
                                     escape_asterisks=False).convert_soup(main_content(soup))
    except RecursionError as e:  # the depth check makes this unlikely; a crash it must never be
        raise Unreadable(file, "unreadable", "HTML nested too deeply to convert") from e
    text = re.sub(r"\n[ \t]*(\n[ \t]*)+\n", "\n\n", markdown).strip() + "\n"
    return Document(doc_id, title or file.stem, text, kind="html", path=doc_id)
