"""One chunker per kind of document, measured as one variant: each document goes to a member strategy
by its kind, language, extension or folder.

Why: a corpus of documentation and source code wants `code` on its modules and `markdown` on its
pages, and a sweep of either alone judges the other half by a chunker that does not understand it.
A route is a strategy like any other (keyed, cached, scored); its chunks are the members' chunks,
exact spans of their documents. Members are written as a variant's label or text, without modifiers
or retriever (those are the route's): "code(size=256)", "markdown:size=512". The first rule that
matches a document names its member; else `code` for source code (a document with a language),
`text` for the rest.

    >>> params = STRATEGIES["route"].resolve({"text": "fixed:size=64", "rules": [["ext:.rst", "sentence(size=64)"]]})
    >>> params["text"], params["rules"]
    ('fixed(size=64, overlap=0)', (('ext:.rst', 'sentence(size=64, overlap=0)'),))
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from pathlib import PurePosixPath
from typing import Any

from workbench.chunkers.base import ChunkEnv
from workbench.chunkers.registry import STRATEGIES, get_strategy, strategy
from workbench.core.chunk import Chunk
from workbench.core.params import Param, parse_value, short_value, split_outside
from workbench.dataset import Document

# what a rule matches: ext:.rst, folder:docs, language:python, kind:pdf (what names the chunks: not a group field,
# which may change without changing the corpus's fingerprint)
SELECTORS = ("ext", "folder", "language", "kind")


@lru_cache(maxsize=256)
def member(spec: str) -> tuple[str, tuple[tuple[str, Any], ...]]:
    """(strategy, its resolved parameters) of a member written "name(p=v, ...)" or "name:p=v,...";
    ValueError naming what is wrong (a modifier, an LLM strategy, a route in a route)."""
    spec = spec.strip()
    if len(split_outside(spec, "+")) > 1:
        raise ValueError(f"member {spec!r}: a member is a strategy and its parameters, no +modifier or retriever "
                         "(those are the route's)")
    if "(" in spec:
        name, _, args = spec.partition("(")
        if not args.endswith(")"):
            raise ValueError(f"member {spec!r}: expected name(param=value, ...)")
        args = args[:-1]
    else:
        name, _, args = spec.partition(":")
    name = name.strip()
    if name not in STRATEGIES:
        raise ValueError(f"member {spec!r}: unknown strategy {name!r}; choose one of {sorted(STRATEGIES)}")
    s = get_strategy(name)
    if s.models or name == "route":
        raise ValueError(f"member {spec!r}: {'a route' if name == 'route' else 'an LLM strategy'} cannot be a member")
    given = {}
    for item in filter(None, (a.strip() for a in split_outside(args, ","))):
        key, eq, raw = item.partition("=")
        if not eq:
            raise ValueError(f"member {spec!r}: expected param=value, got {item!r}")
        given[key.strip()] = parse_value(raw.strip())
    return name, tuple(s.resolve(given).items())


def label(spec: str) -> str:
    """A member's canonical form, as a variant's label shows it: "code(size=256)"."""
    name, params = member(spec)
    schema = get_strategy(name).params
    shown = [f"{k}={short_value(v)}" for k, v in params if schema[k].label or schema[k].default != v]
    return f"{name}({', '.join(shown)})"


def rules(value: tuple[Any, ...]) -> tuple[tuple[str, str], ...]:
    """The `rules` parameter: [selector, member] pairs in canonical form; ValueError naming a bad one."""
    out = []
    for rule in value:
        if not isinstance(rule, list | tuple) or len(rule) != 2 or not all(isinstance(x, str) for x in rule):
            raise ValueError(f"a rule is [selector, member], got {rule!r}")
        kind, _, wanted = rule[0].partition(":")
        if kind not in SELECTORS or not wanted:
            raise ValueError(f"selector {rule[0]!r}: expected one of {[f'{s}:...' for s in SELECTORS]}")
        out.append((rule[0], label(rule[1])))
    return tuple(out)


def matches(selector: str, doc: Document) -> bool:
    """Whether `doc` is what `selector` names: its extension, a folder its id lies in, its language or
    the kind it was read as."""
    kind, _, wanted = selector.partition(":")
    path = PurePosixPath(doc.doc_id)
    if kind == "ext":
        return path.suffix.lower() == wanted.lower()
    if kind == "folder":
        return wanted.strip("/") in [str(p) for p in path.parents]
    return (doc.language if kind == "language" else doc.kind) == wanted


def chosen(doc: Document, params: Mapping[str, Any]) -> str:
    """The member that chunks `doc`: the first rule matching it, else `code` or `text`."""
    found = next((m for selector, m in params["rules"] if matches(selector, doc)), None)
    return found or (params["code"] if doc.language else params["text"])


def _fallback(doc: Document, params: Mapping[str, Any]) -> str | None:
    """The chosen member's fallback on `doc` (a route sends a document where it is read as meant, or says so)."""
    name, resolved = member(chosen(doc, params))
    fallback = get_strategy(name).fallback
    return fallback(doc, dict(resolved)) if fallback else None


def _identity(params: Mapping[str, Any]) -> dict[str, Any]:
    """Every member's version and resolved parameters: a member re-versioned names new chunks."""
    members = dict.fromkeys([params["code"], params["text"], *(m for _, m in params["rules"])])
    return {"members": [[get_strategy(member(m)[0]).version, *member(m)] for m in members]}


@strategy(
    "route",
    "One strategy per kind of document: source code (a document with a language) to `code`, every other "
    "document to `text`, unless a rule matches it first (by extension, folder, language or kind). Members are "
    "written as labels, code(size=256), without modifiers: those are the route's.",
    {
        "code": Param("code(size=256)", "the strategy for source code", label=True, normalize=label),
        "text": Param("recursive(size=256)", "the strategy for every other document", label=True, normalize=label),
        "rules": Param((), "[selector, strategy] pairs tried first, in order; a selector is ext:.rst, folder:docs, "
                       "language:python or kind:pdf", normalize=rules),
    },
    embeds=True,  # a member may (semantic): chunk in the driver, where the embedder is
    fallback=_fallback,
    identity=_identity,
)
def route(doc: Document, env: ChunkEnv, *, code: str, text: str, rules: tuple[tuple[str, str], ...]) -> list[Chunk]:
    name, params = member(chosen(doc, {"code": code, "text": text, "rules": rules}))
    return get_strategy(name).fn(doc, env, **dict(params))
