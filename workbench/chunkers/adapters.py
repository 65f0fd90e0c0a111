"""Bring your own chunker: wrap a plain `str -> list[str]` function (`register_function`) or any
LlamaIndex NodeParser (`register_node_parser`) as a registered strategy, so it is compared,
cached and scored like the built-in ones. A factory of LangChain splitters or LlamaIndex parsers
plus a parameter schema (`register_factory`) makes a *sweepable* strategy: its sizes appear in
grids and the widgets like ours (not in the CLI, which cannot import user code).

Such chunkers return texts, not offsets, so each piece is located in the source
(`labels.locate`: searching forward, first exactly, then modulo whitespace) and turned into an
exact-span Chunk; a piece that cannot be found is an error, never a silently misplaced span.
Adapted strategies may be re-registered under the same name (notebook cells are re-run);
built-in ones are never replaced.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from workbench.chunkers.base import ChunkEnv
from workbench.chunkers.registry import STRATEGIES, ChunkFn, strategy, unregister
from workbench.core.chunk import Chunk, make_chunk
from workbench.core.locate import NotFound, find_in_order
from workbench.core.params import Param
from workbench.dataset import Document

Pieces = Iterable[tuple[str, int | None]]  # (piece text, start hint) in document order


def locate(name: str, doc: Document, pieces: Pieces) -> list[Chunk]:
    """Exact chunks for `(piece text, start hint)` pairs given in document order, each placed by
    `labels.locate.find_in_order` (a confirmed hint, else exactly, else modulo whitespace; blank
    pieces dropped). A piece not in the source is an error naming the strategy and document."""
    try:
        return [make_chunk(doc, f.start, f.end) for f in find_in_order(doc.text, pieces)]
    except NotFound as e:
        raise ValueError(
            f"strategy {name!r}: chunk {e.index} of document {doc.doc_id!r} is not in the source text "
            f"(searched from offset {e.cursor}, exactly and modulo whitespace): {e.piece[:60]!r}"
        ) from None


def _register(
    name: str,
    fn: ChunkFn,
    help: str,
    version: int,
    params: Mapping[str, Param] | None = None,
    check: Callable[[dict[str, Any]], None] | None = None,
) -> None:
    """Register `fn`, replacing an earlier adapter of the same name."""
    if name in STRATEGIES:
        if not STRATEGIES[name].replaceable:
            raise ValueError(f"strategy {name!r} is built in and cannot be replaced; choose another name")
        unregister(name)
    strategy(name, help, params or {}, check=check, version=version, replaceable=True)(fn)


def register_function(name: str, fn: Callable[[str], list[str]], version: int = 1, help: str = "") -> None:
    """Register `fn(text) -> pieces` as strategy `name`.

    Bump `version` whenever `fn` changes behaviour: it is part of `Variant.key`, so cached chunks
    and indexes of the old function are not reused."""

    def chunk(doc: Document, env: ChunkEnv) -> list[Chunk]:
        return locate(name, doc, ((piece, None) for piece in fn(doc.text)))

    _register(name, chunk, help or f"user function {_qualname(fn)}", version)


def parser_version(parser: Any) -> int:
    """A version number derived from the parser's class and settings: any change of settings
    changes `Variant.key`. (Settings outside `to_dict()`, such as a custom tokenizer, are not seen.)"""
    kind = f"{type(parser).__module__}.{type(parser).__qualname__}"
    config = json.dumps(parser.to_dict(), sort_keys=True, default=repr)
    return int(hashlib.sha256(f"{kind}\0{config}".encode()).hexdigest()[:12], 16)


def register_node_parser(name: str, parser: Any, help: str = "") -> None:
    """Register a LlamaIndex NodeParser (SentenceSplitter, TokenTextSplitter, MarkdownNodeParser,
    ...) as strategy `name`. LlamaIndex gives a node offsets when it finds the node's exact text
    searching forward from the previous node's start; they are used when the source confirms
    them, and a node without them (its text not verbatim in the source, e.g. whitespace changed)
    is located modulo whitespace."""

    def chunk(doc: Document, env: ChunkEnv) -> list[Chunk]:
        return locate(name, doc, node_pieces(parser, doc.text))

    _register(name, chunk, help or f"LlamaIndex {type(parser).__name__}", parser_version(parser))


def node_pieces(parser: Any, text: str) -> Pieces:
    """A LlamaIndex NodeParser's node texts with their start offsets (hints for `locate`)."""
    from llama_index.core import Document as LlamaDocument
    from llama_index.core.schema import MetadataMode

    nodes = parser.get_nodes_from_documents([LlamaDocument(text=text)])
    return [(n.get_content(metadata_mode=MetadataMode.NONE), n.start_char_idx) for n in nodes]


def splitter_pieces(splitter: Any, text: str) -> Pieces:
    """The pieces of a LlamaIndex NodeParser (with offset hints) or of a LangChain TextSplitter
    (texts only: `locate` finds them)."""
    if hasattr(splitter, "get_nodes_from_documents"):
        return node_pieces(splitter, text)
    return [(piece, None) for piece in splitter.split_text(text)]


class _Built(dict):
    """Splitters built per parameter set. Pickled empty: another process (a Ray worker restoring the
    registries) builds its own, since a built splitter may hold a tokenizer that, unpickled, fetches
    its encoding from the network."""

    def __reduce__(self) -> tuple[type, tuple[()]]:
        return (_Built, ())


def factory_strategy(
    name: str, factory: Callable[..., Any], check: Callable[[dict[str, Any]], None] | None = None
) -> tuple[ChunkFn, Callable[[dict[str, Any]], None]]:
    """The chunking function and the parameter check of a strategy built by `factory(**params)`.

    The check builds the splitter, so the library's own refusals (overlap > size, a bad option)
    are raised when a Variant is made, not in the middle of a sweep; the splitter built for each
    parameter set is kept for the chunking that follows."""
    made = _Built()  # parameters -> splitter

    def build(params: Mapping[str, Any]) -> Any:
        key = tuple(sorted(params.items()))
        if key not in made:
            splitter = factory(**params)
            if not hasattr(splitter, "get_nodes_from_documents") and not hasattr(splitter, "split_text"):
                raise TypeError(
                    f"strategy {name!r}: the factory returned {type(splitter).__name__}, neither a LlamaIndex "
                    "NodeParser (get_nodes_from_documents) nor a LangChain TextSplitter (split_text)"
                )
            made[key] = splitter
        return made[key]

    def check_and_build(params: dict[str, Any]) -> None:
        if check is not None:
            check(params)
        build(params)

    def chunk(doc: Document, env: ChunkEnv, **params: Any) -> list[Chunk]:
        return locate(name, doc, splitter_pieces(build(params), doc.text))

    return chunk, check_and_build


def register_factory(
    name: str,
    factory: Callable[..., Any],
    params: Mapping[str, Param],
    version: int = 1,
    help: str = "",
    check: Callable[[dict[str, Any]], None] | None = None,
) -> None:
    """Register `factory(**params)`, returning a LangChain TextSplitter or a LlamaIndex NodeParser,
    as strategy `name`, sweepable over `params` like the built-in strategies. `check` adds rules
    between parameters (registry.check_overlap); the library's own checks run too. Bump
    `version` when the factory changes behaviour: it is part of `Variant.key`."""
    fn, checked = factory_strategy(name, factory, check)
    _register(name, fn, help or f"splitter from {_qualname(factory)}", version, params, checked)


def _qualname(fn: Any) -> str:
    return repr(getattr(fn, "__qualname__", fn))
