"""A chunking variant: an immutable, hashable spec (strategy + parameters + modifiers + retriever).

Its `key` is a hash of the fully resolved spec (defaults filled in, strategy version included),
so two spellings of the same variant share one cache entry and a changed chunker never serves
stale chunks. The retriever (dense, bm25, hybrid) never changes the chunks, so the index cache
entry is named by `chunking_key` (the key without the retriever), combined with the corpus and
model fingerprints: a dense and a BM25 variant of one chunking share chunks and FAISS index.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from tqdm.auto import tqdm

from workbench.chunkers import Chunk, ChunkEnv, get_strategy
from workbench.dataset import Dataset, Document
from workbench.params import IncompatibleParams

RETRIEVERS = ("dense", "bm25", "hybrid")  # hybrid: reciprocal rank fusion of dense and bm25
DEFAULT_RRF_K = 60


@dataclass(frozen=True)
class Variant:
    strategy: str
    params: tuple[tuple[str, Any], ...]
    contextual_header: bool = False  # embed "title > heading path" + text; return the text only
    late: bool = False  # late chunking: pool token embeddings of the whole document window
    version: int = 1  # the strategy's version when the variant was made: part of its identity
    retriever: str = "dense"  # one of RETRIEVERS; never changes the chunks
    rrf_k: int = DEFAULT_RRF_K  # hybrid only: the constant k of 1 / (k + rank)

    @classmethod
    def make(cls, strategy: str, *, contextual_header: bool = False, late: bool = False, retriever: str = "dense",
             rrf_k: int = DEFAULT_RRF_K, **params: Any) -> Variant:
        """Validate and canonicalise; raises ValueError naming the bad parameter."""
        if contextual_header and late:
            raise IncompatibleParams(f"{strategy}: contextual_header and late cannot be combined: late chunking "
                                     "embeds the document itself, so a header would change nothing")
        if retriever not in RETRIEVERS:
            raise ValueError(f"parameter 'retriever' must be one of {list(RETRIEVERS)}, got {retriever!r}")
        if isinstance(rrf_k, bool) or not isinstance(rrf_k, int) or rrf_k < 1:
            raise ValueError(f"parameter 'rrf_k' must be an int >= 1, got {rrf_k!r}")
        if rrf_k != DEFAULT_RRF_K and retriever != "hybrid":
            raise IncompatibleParams(f"{strategy}: parameter 'rrf_k' applies to retriever='hybrid' only, "
                                     f"got retriever={retriever!r}")
        spec = get_strategy(strategy)
        resolved = spec.resolve(params)
        return cls(strategy, tuple(sorted(resolved.items())), bool(contextual_header), bool(late), spec.version,
                   retriever, rrf_k)

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> Variant:
        """The variant `spec()` describes (a result's config["grid"] holds these)."""
        return cls.make(spec["strategy"], contextual_header=spec.get("contextual_header", False),
                        late=spec.get("late", False), **spec.get("params", {}))

    @property
    def kwargs(self) -> dict[str, Any]:
        return dict(self.params)

    @property
    def retrieval(self) -> dict[str, Any]:
        """The retriever fields that differ from dense: {}, {"retriever": "bm25"} or
        {"retriever": "hybrid", "rrf_k": 60}."""
        if self.retriever == "dense":
            return {}
        return {"retriever": self.retriever} | ({"rrf_k": self.rrf_k} if self.retriever == "hybrid" else {})

    def spec(self) -> dict[str, Any]:
        """The spec for `Variant.make(strategy, contextual_header=, late=, **params)`. Retriever
        fields ride in params (and only when not dense), so every rebuild from a spec keeps them
        and a dense variant's spec and key are what they were before retrievers existed."""
        return {
            "strategy": self.strategy,
            "params": self.kwargs | self.retrieval,
            "contextual_header": self.contextual_header,
            "late": self.late,
        }

    @property
    def key(self) -> str:
        spec = self.spec() | {"version": self.version}
        return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]

    @property
    def chunking(self) -> Variant:
        """The same chunks retrieved densely: what every retriever of this chunking shares."""
        return replace(self, retriever="dense", rrf_k=DEFAULT_RRF_K)

    @property
    def chunking_key(self) -> str:
        """The key of the chunks alone (the same for every retriever): names the index entry."""
        return self.chunking.key

    @property
    def label(self) -> str:
        """Short human name: strategy, its main parameters, any others that differ from their
        defaults, and the modifiers."""
        schema = get_strategy(self.strategy).params
        values = self.kwargs
        shown = [f"{k}={short_value(values[k])}" for k, p in schema.items() if p.label or p.default != values[k]]
        mods = [m for m, on in (("+header", self.contextual_header), ("+late", self.late)) if on]
        if self.retriever != "dense":
            rrf = f"(rrf_k={self.rrf_k})" if self.rrf_k != DEFAULT_RRF_K else ""
            mods.append(f"+{self.retriever}{rrf}")
        return f"{self.strategy}({', '.join(shown)})" + "".join(mods)

    def __str__(self) -> str:
        return self.label

    @property
    def text(self) -> str:
        """The variant as `parse_variant` and the CLI's -v read it: parse_variant(v.text) == v."""
        def value(v: Any) -> str:
            return v if isinstance(v, str) and parse_value(v) == v and "," not in v and "+" not in v else json.dumps(v)

        schema = get_strategy(self.strategy).params
        given = ",".join(f"{k}={value(v)}" for k, v in self.params if schema[k].default != v)  # defaults left out
        mods = [m for m, on in (("+header", self.contextual_header), ("+late", self.late)) if on]
        if self.retriever != "dense":
            rrf = f":rrf_k={self.rrf_k}" if self.rrf_k != DEFAULT_RRF_K else ""
            mods.append(f"+{self.retriever}{rrf}")
        return f"{self.strategy}{':' if given else ''}{given}" + "".join(mods)

    def chunk(self, dataset: Dataset, env: ChunkEnv, progress: bool = False) -> list[Chunk]:
        """Chunk every document, in dataset order (so each document's chunks are contiguous)."""
        strategy = get_strategy(self.strategy)
        if strategy.version != self.version:  # re-registered since: its chunks would not be this variant's
            raise ValueError(f"variant {self.label} was made for version {self.version} of strategy "
                             f"{self.strategy!r}, which is now registered as version {strategy.version}; "
                             "make the variant again")
        fn = strategy.fn
        out: list[Chunk] = []
        for doc in tqdm(dataset.documents, desc=f"chunking {self.label}", disable=not progress, unit="doc"):
            chunks = fn(doc, env, **self.kwargs)
            out.extend([with_header(doc, c) for c in chunks] if self.contextual_header else chunks)
        return out


def short_value(value: Any) -> str:
    """95.0 -> "95", 0.25 -> "0.25"; a float that 6 digits would round prints in full
    (95.0000001), so labels of different values never look alike."""
    if not isinstance(value, float):
        return str(value)
    short = f"{value:g}"
    return short if float(short) == value else repr(value)


def with_header(doc: Document, chunk: Chunk) -> Chunk:
    """Contextual chunk header: embed "title > heading path" above the text; span and text stay."""
    path = " > ".join(p for p in (doc.title, chunk.heading) if p)
    return replace(chunk, embed_text=f"{path}\n\n{chunk.embed_text or chunk.text}")


def parse_value(raw: str) -> Any:
    """'256' -> 256, '0.5' -> 0.5, 'true' -> True, anything else stays a string."""
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


def _split_outside_json(text: str, sep: str) -> list[str]:
    """Split on `sep` except inside JSON strings and brackets, so a value may be a JSON list."""
    parts, depth, start, in_string, escaped = [], 0, 0, False, False
    for i, ch in enumerate(text):
        if in_string:
            escaped, in_string = (not escaped and ch == "\\"), in_string and (escaped or ch != '"')
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    return [*parts, text[start:]]


def _parse_args(text: str, args: str) -> dict[str, Any]:
    """'size=256,overlap=32' -> {"size": 256, "overlap": 32}."""
    params: dict[str, Any] = {}
    for item in filter(None, (a.strip() for a in _split_outside_json(args, ","))):
        key, eq, raw = item.partition("=")
        if not eq:
            raise ValueError(f"variant {text!r}: expected name=value, got {item!r}")
        params[key.strip()] = parse_value(raw.strip())
    return params


def parse_variant(text: str) -> Variant:
    """'fixed:size=256,overlap=32+header' -> Variant; modifiers '+header', '+late' and a retriever
    '+bm25' or '+hybrid' (its RRF constant as '+hybrid:rrf_k=30'). A value may be JSON:
    'recursive:size=128,custom_separators=["\\n\\n", ". "]'."""
    head, *mods = _split_outside_json(text.strip(), "+")
    flags = {m.partition(":")[0]: _parse_args(text, m.partition(":")[2]) for m in mods}
    unknown = sorted(set(flags) - {"header", "late", *RETRIEVERS})
    if unknown:
        raise ValueError(f"variant {text!r}: unknown modifier(s) {unknown}; known: +header, +late, +bm25, +hybrid")
    retrievers = [r for r in RETRIEVERS if r in flags]
    if len(retrievers) > 1:
        raise ValueError(f"variant {text!r}: one retriever at most, got {['+' + r for r in retrievers]}")
    retriever = retrievers[0] if retrievers else "dense"
    extra = {m: args for m, args in flags.items() if args and m != "hybrid"}
    if extra or set(flags.get("hybrid", {})) - {"rrf_k"}:
        raise ValueError(f"variant {text!r}: only +hybrid takes a parameter (rrf_k), e.g. +hybrid:rrf_k=30")
    name, _, args = head.partition(":")
    return Variant.make(name.strip(), contextual_header="header" in flags, late="late" in flags,
                        retriever=retriever, **flags.get("hybrid", {}), **_parse_args(text, args))


def expand(strategy: str, lists: Mapping[str, Any]) -> tuple[list[Variant], list[str]]:
    """Every combination of the listed values of `Variant.make`'s arguments (a scalar is a list
    of one): the valid variants in order, and one reason per combination skipped because its
    values clash (IncompatibleParams: overlap >= size, a header with late chunking...); a value
    that is invalid on its own still raises."""
    names = list(lists)
    values = [v if isinstance(v, list | tuple) else [v] for v in lists.values()]
    out: list[Variant] = []
    skipped: list[str] = []
    for combo in itertools.product(*values):
        try:
            out.append(Variant.make(strategy, **dict(zip(names, combo, strict=True))))
        except IncompatibleParams as e:
            skipped.append(str(e))
    return out, skipped


def grid(strategy: str, *, contextual_header: bool = False, late: bool = False, **lists: Any) -> list[Variant]:
    """Every combination of the listed values: grid("fixed", size=[128, 256], overlap=[0, 32]),
    retrievers included: grid("fixed", size=256, retriever=["dense", "bm25", "hybrid"]).
    Combinations whose values clash (overlap >= size, rrf_k without hybrid) are skipped, so grids stay
    simple; a value that is invalid on its own still raises."""
    out, skipped = expand(strategy, {"contextual_header": contextual_header, "late": late, **lists})
    if not out:
        raise ValueError(f"grid({strategy!r}, ...): every combination is invalid, e.g. {skipped[-1]}")
    return out
