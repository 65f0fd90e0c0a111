"""Source code chunked along its syntax tree (tree-sitter), so a function is never cut while it fits.

Why a parser and not separators: "\\ndef " misses methods, decorators and every other language, and
a regex cannot tell a nested function from a string. The tree's nodes are the units: siblings
that fit merge up to `size` (a run of small functions, a class header with its first method), and a
node over `size` splits by its children, down to lines for a leaf (a long string or comment).
Comments directly above a node stay with it. tree-sitter recovers from syntax errors, so broken
code still chunks. Each chunk's heading is the signatures of the definitions around its first
line ("class Cache > def get(self, key)"); with `header` the path and that heading are embedded
above the text, which stays the exact source span.

    >>> doc = Document("m.py", "m", "def f():\\n    return 1\\n\\ndef g():\\n    return 2\\n", language="python")
    >>> [c.text for c in code(doc, ChunkEnv(), size=14, unit="tokens", tokenizer="cl100k_base",
    ...                       language="auto", header=True)]
    ['def f():\\n    return 1', 'def g():\\n    return 2']
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache, lru_cache
from typing import TYPE_CHECKING

import numpy as np

from workbench.chunkers.base import ChunkEnv
from workbench.chunkers.recursive import Units, recursive_spans
from workbench.chunkers.registry import strategy
from workbench.chunkers.units import SIZE, TOKENIZER, UNIT, unit_boundaries
from workbench.core.chunk import Bounds, Chunk, make_chunk, strip_span
from workbench.core.params import Param
from workbench.dataset import Document

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

# The node types whose signature names a chunk's scope, per tree-sitter grammar (the languages offered).
DEFINITIONS: dict[str, frozenset[str]] = {
    "python": frozenset({"function_definition", "class_definition", "decorated_definition"}),
    "javascript": frozenset({"function_declaration", "generator_function_declaration", "class_declaration",
                             "method_definition"}),
    "typescript": frozenset({"function_declaration", "generator_function_declaration", "class_declaration",
                             "abstract_class_declaration", "method_definition", "interface_declaration"}),
    "go": frozenset({"function_declaration", "method_declaration", "type_declaration"}),
    "rust": frozenset({"function_item", "impl_item", "trait_item", "struct_item", "enum_item", "mod_item"}),
    "java": frozenset({"class_declaration", "interface_declaration", "enum_declaration", "record_declaration",
                       "method_declaration", "constructor_declaration"}),
    "c": frozenset({"function_definition", "struct_specifier"}),
    "cpp": frozenset({"function_definition", "class_specifier", "struct_specifier", "namespace_definition"}),
    "csharp": frozenset({"namespace_declaration", "class_declaration", "interface_declaration", "struct_declaration",
                         "enum_declaration", "record_declaration", "method_declaration", "constructor_declaration"}),
    "ruby": frozenset({"module", "class", "method", "singleton_method"}),
    "php": frozenset({"function_definition", "class_declaration", "interface_declaration", "trait_declaration",
                      "method_declaration"}),
    "bash": frozenset({"function_definition"}),
}
DEFINITIONS["tsx"] = DEFINITIONS["typescript"]
GRAMMARS = {"jsx": "javascript"}  # a language read by another's grammar (Pygments names .jsx "jsx")
AUTO = "auto"  # the document's own `language`
LINE_SEPARATORS = ("\n\n", "\n", " ")  # a leaf over `size`, and text in no language, split by lines
SCOPE_SEP = " > "
HEADER_SHARE = 4  # a header longer than 1/4 of `size` is cut to the definitions' names


@cache
def _parser(language: str) -> Parser:
    import tree_sitter_language_pack as tslp  # loads with the first code chunking, not with every sweep

    return tslp.get_parser(language)  # type: ignore[arg-type]  # a name of DEFINITIONS


class _Source:
    """One parsed text: byte offsets of the tree as character offsets, and sizes in units."""

    def __init__(self, text: str, units: Units, size: int):
        self.text, self.units, self.size = text, units, size
        raw = text.encode("utf-8")
        ascii_only = len(raw) == len(text)
        # the byte offset where each character starts: a byte offset maps to its character by search
        self._starts = None if ascii_only else np.flatnonzero((np.frombuffer(raw, np.uint8) & 0xC0) != 0x80)

    def byte(self, char: int) -> int:
        """The byte offset of a character of the text (not its end)."""
        return char if self._starts is None else int(self._starts[char])

    def char(self, byte: int) -> int:
        return byte if self._starts is None else int(np.searchsorted(self._starts, byte))

    def bounds(self, node: Node) -> Bounds:
        return self.char(node.start_byte), self.char(node.end_byte)

    def fits(self, start: int, end: int) -> bool:
        return self.units.count(start, end) <= self.size

    def lines(self, start: int, end: int) -> list[Bounds]:
        return recursive_spans(self.text, start, end, self.units, self.size, 0, LINE_SEPARATORS)


def _items(src: _Source, node: Node) -> list[tuple[int, int, Node | None]]:
    """The node's children as (start, end, child), empty ones left out; comments directly above a
    child (no blank line between) join it, and other comments stand as items of their own (None), as
    does text between children that no child holds (error recovery: an ERROR node running on past an
    unclosed "/*" to the end of the file)."""
    out: list[tuple[int, int, Node | None]] = []
    pending: int | None = None  # start of the comments waiting for the child below them
    last = pending
    done = src.bounds(node)[0]  # where the text not yet in an item starts
    for child in node.children:
        s, e = src.bounds(child)
        if e <= s:
            continue
        if src.text[done:s].strip():
            if pending is not None:
                out.append((pending, last, None))
                pending = None
            out.append((done, s, None))
        done = e
        if pending is not None and "\n\n" in src.text[last:s]:
            out.append((pending, last, None))  # a blank line parts the comments from what follows
            pending = None
        if _is_comment(child):
            if pending is None and out and "\n" not in src.text[out[-1][1] : s]:  # a comment ending a line
                out[-1] = (out[-1][0], e, out[-1][2])
                continue
            pending, last = (s if pending is None else pending), e
            continue
        out.append((s if pending is None else pending, e, child))
        pending = None
    if pending is not None:
        out.append((pending, last, None))
    end = src.bounds(node)[1]
    if src.text[done:end].strip():
        out.append((done, end, None))
    return out


def _carries(node: Node, child: Node, named: bool) -> bool:
    """Whether the run before a `child` over `size` rides into its first span instead of standing
    alone: when it is `node`'s own header ("def f(x):", decorators: what precedes its body or its
    definition), or a header carried in plus punctuation ("func F() {" before a block's statements)."""
    return not named or any(child == node.child_by_field_name(f) for f in ("body", "definition"))


def _split(src: _Source, node: Node, carry: Bounds | None = None) -> list[Bounds]:
    """Spans of a node over `size`: consecutive children merged while they fit, and a child over
    `size` split the same way (its comments, and a header before it, carried into its first span);
    what follows a split child starts a new span, so no span straddles a split unit's end (but
    closing punctuation, "}", joins the span before it when it fits)."""
    out: list[Bounds] = []
    run: Bounds | None = carry  # the items merged so far, not yet emitted
    named = False  # whether the run holds a named node besides the carry (else punctuation: "{", "}")
    for s, e, child in _items(src, node):
        is_named = child is None or child.is_named
        start = run[0] if run else s
        if src.fits(start, e):
            run, named = (start, e), named or is_named
            continue
        if src.fits(s, e):
            if run:
                out.append(run)
            run, named = (s, e), is_named
            continue
        own = src.bounds(child)[0] if child is not None else s
        if run and not (child is not None and _carries(node, child, named)):
            out.append(run)
            start = s
        head = (start, own) if start < own else None
        if child is not None and child.children:
            if head and not src.fits(*head):
                out += src.lines(*head)
                head = None
            out += _split(src, child, head)
            tail = src.bounds(child)[1]  # a comment closing the child's last line is in the item, not the child
            if tail < e and out and src.fits(out[-1][0], e):
                out[-1] = (out[-1][0], e)
            elif tail < e:
                out += src.lines(tail, e)
        else:
            out += src.lines(start, e)
        run, named = None, False
    if run and not named and out and src.fits(out[-1][0], run[1]):
        out[-1], run = (out[-1][0], run[1]), None
    if run:
        out.append(run)
    return out


def _signature(src: _Source, node: Node) -> str:
    """A definition's text up to its body (its first line when it has none), on one line."""
    node = node.child_by_field_name("definition") or node  # a decorated definition: the one decorated
    start, end = src.bounds(node)
    body = node.child_by_field_name("body")
    if body is None:
        return " ".join(src.text[start:end].split("\n", 1)[0].split()).rstrip(" :{")
    before = [c for c in node.children if c.end_byte <= body.start_byte and not _is_comment(c)]
    return " ".join(src.text[start : src.char(before[-1].end_byte) if before else start].split()).rstrip(" :{")


def _is_comment(node: Node) -> bool:
    """A comment, or PHP's opening tag: nothing that names a scope, kept with what follows."""
    return node.type in ("comment", "php_tag") or node.type.endswith("_comment")


def _scope(src: _Source, root: Node, span: Bounds, kinds: frozenset[str]) -> str:
    """Signatures of the definitions around the span's first code (past its leading comments),
    outermost first."""
    path, byte, end = [], src.byte(span[0]), src.byte(span[1] - 1)
    node: Node | None = root
    while node is not None:  # (Node.first_child_for_byte crashes tree-sitter 0.26.1)
        node = next((c for c in node.children if c.end_byte > byte and not _is_comment(c)), None)
        if node is None or node.start_byte > end:
            break
        byte = max(byte, node.start_byte)
        if node.type in kinds and (node.parent is None or node.parent.type not in kinds):
            path.append(_signature(src, node))  # (a decorated definition's inner one is the same)
    return SCOPE_SEP.join(path)


@lru_cache(maxsize=8)
def _parsed(language: str, text: str) -> tuple[_Source, Node]:
    """`text` parsed once for `scope_at`, which a viewer calls for every chunk it names (sizes unused)."""
    return _Source(text, Units([0, len(text)]), 0), _parser(language).parse(text.encode("utf-8")).root_node


def scope_at(doc: Document, start: int, end: int) -> str:
    """The heading `code` gives a chunk [start, end) of `doc` ("class Cache > def get(self, key)"), for a
    chunk cut by another strategy; "" when the document has no grammar here."""
    name = check_language(doc, AUTO)
    if name is None:
        return ""
    src, root = _parsed(name, doc.text)
    return _scope(src, root, (start, end), DEFINITIONS[name])


def definition_spans(doc: Document) -> list[Bounds]:
    """The functions, methods and classes of `doc` (its grammar's DEFINITIONS), nested ones too, as
    character spans in order of their start; a decorated definition once, with its decorators; []
    when the document has no grammar here. What `code` keeps whole while it fits, so what the chunk
    audit (workbench.results.audit) counts when another cut splits one."""
    name = check_language(doc, AUTO)
    if name is None:
        return []
    src, root = _parsed(name, doc.text)
    kinds, out, todo = DEFINITIONS[name], [], [root]
    while todo:
        node = todo.pop()
        todo.extend(node.children)
        wrapped = node.parent is not None and node.parent.type in kinds and node.parent.end_byte == node.end_byte
        if node.type in kinds and not wrapped:
            out.append(src.bounds(node))
    return sorted(out)


def check_language(doc: Document, language: str) -> str | None:
    """The grammar to parse `doc` with: `language`, or with "auto" the document's own (None: it has
    none, or one without a grammar here, e.g. a language guessed for a file with no extension, so
    a mixed corpus still chunks: by blank lines, then lines)."""
    if language != AUTO:
        return language
    name = GRAMMARS.get(doc.language or "", doc.language)
    return name if name in DEFINITIONS else None


@strategy(
    "code",
    "Source code along its tree-sitter syntax tree: functions, methods and classes whole while they fit, small "
    "siblings merged up to `size`, bigger ones split by their children, then lines; path, class and signature "
    "embedded above each chunk. A document without a language (or in one without a grammar here) is cut at blank "
    "lines, then lines.",
    {
        "size": SIZE,
        "unit": UNIT,
        "tokenizer": TOKENIZER,
        "language": Param(AUTO, "tree-sitter grammar; auto: the document's `language`",
                          choices=(AUTO, *sorted(DEFINITIONS))),
        "header": Param(True, "embed 'path > class > signature' above each chunk"),
    },
    # 2: text an ERROR node holds past its last child (after an unclosed "/*") is chunked, not dropped; 3: the
    # embedded header counts inside `size`
    version=3,
    fallback=lambda doc, params: (None if check_language(doc, params["language"]) else
                                  f"{'no grammar for ' + doc.language if doc.language else 'not source code'}: "
                                  "cut at blank lines, then lines"),
)
def code(doc: Document, env: ChunkEnv, *, size: int, unit: str, tokenizer: str, language: str,
         header: bool) -> list[Chunk]:
    text = doc.text
    units = Units(unit_boundaries(text, unit, tokenizer, env))
    src = _Source(text, units, size)
    name = check_language(doc, language)
    if name is None:
        return [make_chunk(doc, s, e) for s, e in src.lines(0, len(text))]
    root = _parser(name).parse(text.encode("utf-8")).root_node
    spans = [(0, len(text))] if src.fits(0, len(text)) else _split(src, root)
    length = env.length_fn(unit, tokenizer)

    def head(s: int, e: int) -> str:
        return _header(doc, src, root, name, (s, e), lambda h: length(h) <= size // HEADER_SHARE)

    out = []
    for span in spans:
        for s, e in _headed(src, span, size, (lambda s, e: length(head(s, e))) if header else None):
            embed = f"{head(s, e)}{text[s:e]}" if header else None
            out.append(make_chunk(doc, s, e, heading=_scope(src, root, (s, e), DEFINITIONS[name]), embed_text=embed))
    return out


def _header(doc: Document, src: _Source, root: Node, name: str, span: Bounds, fits: Callable[[str], bool]) -> str:
    """What `header` embeds above a chunk: "path > class > signature" and a blank line; with the
    signatures cut to their names ("class Serializer > def __init__") when that does not `fit`."""
    scope = _scope(src, root, span, DEFINITIONS[name])
    path = doc.path or doc.doc_id
    full = f"{SCOPE_SEP.join(p for p in (path, scope) if p)}\n\n"
    if fits(full):
        return full
    names = SCOPE_SEP.join(s.split("(", 1)[0].rstrip() for s in scope.split(SCOPE_SEP)) if scope else ""
    return f"{SCOPE_SEP.join(p for p in (path, names) if p)}\n\n"


def _headed(src: _Source, span: Bounds, size: int, header: Callable[[int, int], int] | None) -> list[Bounds]:
    """The span stripped, and with a header (its length in units by `header`) split by lines again until
    header and text fit in `size` together: the model reads both, so the header counts inside the size."""
    stripped = strip_span(src.text, *span)
    if stripped is None:
        return []
    s, e = stripped
    extra = header(s, e) if header else 0
    if src.units.count(s, e) + extra <= size or e - s <= 1:
        return [(s, e)]
    smaller = _Source(src.text, src.units, max(1, size - extra))
    pieces = smaller.lines(s, e)
    if pieces == [(s, e)]:  # one line over what is left: it stays whole, as any leaf over `size` is cut by units
        return pieces
    return [p for piece in pieces for p in _headed(src, piece, size, header)]
