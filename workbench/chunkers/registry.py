"""Strategy name -> chunking function and its parameter schema.

Every chunker module registers its strategies here with `@strategy(...)`; adding a strategy
touches its own module, one import in `chunkers/__init__.py` and its tests. Parameters are
validated when a Variant is made, long before any chunking or embedding starts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from workbench.chunkers.base import ChunkEnv
from workbench.core.chunk import Chunk
from workbench.core.params import Param, add_entry, get_entry, resolve
from workbench.dataset import Document

ChunkFn = Callable[..., list[Chunk]]  # fn(doc, env, **params) -> chunks


@dataclass(frozen=True)
class Asks:
    """What a strategy will ask an LLM for on one document, said before it generates (a Strategy's
    `generations` hook), so that a sweep can estimate it: the generations whose inputs are known
    now, and bounds on those whose inputs wait on the answers (llm_chunk's later windows)."""

    model: str  # the LLM, as the strategy's `models` parameter names it
    prompt: Any  # a workbench.models.llm.Prompt (the model layer sits above the chunkers)
    items: list[dict[str, Any]]  # the prompt's inputs, one generation each
    max_tokens: int
    later: tuple[int, int] = (0, 0)  # generations still to come once these are answered: at least, at most


@dataclass(frozen=True)
class Strategy:
    name: str
    fn: ChunkFn
    params: Mapping[str, Param]
    help: str
    check: Callable[[dict[str, Any]], None] | None = None  # cross-parameter rules
    version: int = 1  # bump when the output for the same parameters changes: invalidates caches
    replaceable: bool = False  # registered by an adapter: registering the name again replaces it
    # parameters naming an LLM (workbench.models.llm.llm_of) that writes the chunks: its fingerprint names
    # the variant's index entry and scores, so another model never serves them
    models: tuple[str, ...] = ()
    # fn(doc, env, **params) -> [Asks]: what the strategy's LLMs will be asked for the document, found without
    # generating (workbench.run.estimate); None: not known before generating
    generations: Callable[..., list[Asks]] | None = None
    # calls ChunkEnv.embed (semantic): its sentence vectors are the embedder's, computed and cached where the
    # embedder is, so an engine never ships its documents to workers (workbench.retrieval.index.chunk_corpus)
    embeds: bool = False
    # fn(doc, params) -> why the strategy chunks `doc` some other way (markdown on source code, code on prose),
    # None when it reads it as meant: said in the variant's row and a warning, never silent (Variant.fallbacks)
    fallback: Callable[[Document, Mapping[str, Any]], str | None] | None = None
    # params -> what else names its chunks beyond them (route: its members' versions and resolved parameters),
    # part of the variant's key
    identity: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None

    def resolve(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """Fill defaults and validate; raises ValueError naming the parameter and its range."""
        return resolve(self.name, self.params, params, self.check)


STRATEGIES: dict[str, Strategy] = {}  # the one registry table: what may be replaced is a field of its entries


def strategy(
    name: str,
    help: str,
    params: Mapping[str, Param],
    check: Callable[[dict[str, Any]], None] | None = None,
    version: int = 1,
    replaceable: bool = False,
    models: tuple[str, ...] = (),
    generations: Callable[..., list[Asks]] | None = None,
    embeds: bool = False,
    fallback: Callable[[Document, Mapping[str, Any]], str | None] | None = None,
    identity: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None,
) -> Callable[[ChunkFn], ChunkFn]:
    def register(fn: ChunkFn) -> ChunkFn:
        add_entry(STRATEGIES, "strategy", name, Strategy(name, fn, dict(params), help, check, version, replaceable,
                                                         models, generations, embeds, fallback, identity))
        return fn

    return register


def get_strategy(name: str) -> Strategy:
    return get_entry(STRATEGIES, "strategy", name)


def unregister(name: str) -> Strategy:
    """Remove strategy `name` and return it, e.g. a user function that was only an experiment
    (re-registering an adapter replaces it without this)."""
    if name not in STRATEGIES:
        raise ValueError(f"cannot unregister unknown strategy {name!r}; registered: {sorted(STRATEGIES)}")
    return STRATEGIES.pop(name)


def check_overlap(size_key: str = "size", overlap_key: str = "overlap") -> Callable[[dict[str, Any]], None]:
    """Cross-parameter rule shared by sized chunkers: 0 <= overlap < size."""

    def check(p: dict[str, Any]) -> None:
        if not 0 <= p[overlap_key] < p[size_key]:
            raise ValueError(
                f"parameter '{overlap_key}' must be in [0, {size_key}) = [0, {p[size_key]}), got {p[overlap_key]}"
            )

    return check


def run_strategy(name: str, params: Mapping[str, Any], doc: Document, env: ChunkEnv) -> list[Chunk]:
    s = get_strategy(name)
    return s.fn(doc, env, **s.resolve(params))
