"""A chunking variant: an immutable, hashable spec (strategy + parameters + modifiers + retrieval stages).

Its `key` is a hash of the fully resolved spec (defaults filled in, strategy and stage versions
included), so two spellings of the same variant share one cache entry and a changed chunker never
serves stale chunks. Retrieval stages (workbench.retrieval.stages: dense, bm25, hybrid, ...) never
change the chunks, so the index cache entry is named by `chunking_key` (the key with dense
retrieval), combined with the corpus and model fingerprints: a dense and a BM25 variant of one
chunking share chunks and FAISS index.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from tqdm.auto import tqdm

from workbench.chunkers import ChunkEnv, get_strategy
from workbench.chunkers.registry import Strategy
from workbench.core.chunk import Chunk
from workbench.core.params import IncompatibleParams, Param, parse_value, resolve, short_value, split_outside
from workbench.core.stages import DENSE, STAGES, first_stages, get_stage
from workbench.dataset import Dataset, Document
from workbench.models.llm import LLM_SPEC

StageSpec = tuple[str, tuple[tuple[str, Any], ...], int]  # (stage name, sorted resolved params, stage version)
MODIFIERS = {  # the +modifiers that are not retrieval stages, and what each does (the CLI lists them)
    "header": 'contextual chunk header: embed "title > heading path" above each chunk\'s text; the text alone '
              "is returned",
    "late": "late chunking: run the model over the whole document window, then pool each chunk's token "
            "embeddings (not with +header or +context)",
    "context": "contextual retrieval: an LLM reads the document and writes one or two sentences situating each "
               "chunk, embedded and indexed for BM25 above its text; the text alone is returned "
               "(+context:max_tokens=32 sets its parameters; not with +late)",
}
CONTEXT_PARAMS = {  # +context's parameters (workbench.models.context makes the contexts)
    "model": Param(LLM_SPEC, f"the LLM that writes the contexts: {LLM_SPEC!r} (the bundled SmolLM2-135M-Instruct), "
                   "a local .gguf file or Hugging Face folder, or an endpoint 'openai:<model>@<base_url>'"),
    "doc_tokens": Param(2048, "how much of the document the LLM reads per chunk: a longer document is read in "
                        "windows of this many cl100k_base tokens, the one holding the chunk", lo=64, unit="tokens"),
    "max_tokens": Param(48, "the longest context the LLM may write", lo=1, hi=512, unit="tokens"),
}


def make_stages(retrieval: Sequence[str | tuple[str, Mapping[str, Any]]]) -> tuple[StageSpec, ...]:
    """Validated stage specs, dense first when the first stage given cannot rank on its own:
    ["hybrid"], [("hybrid", {"rrf_k": 30})], ["bm25", ("rerank", {"n": 50})]."""
    out: list[StageSpec] = []
    for item in retrieval:
        name, params = (item, {}) if isinstance(item, str) else item
        stage = get_stage(name)
        if stage.first and out:
            raise ValueError(f"retrieval stage {name!r} ranks the chunks itself, so it can only come first; got "
                             f"{[s[0] for s in out] + [name]}")
        if not stage.first and not out:
            out.append((DENSE, (), get_stage(DENSE).version))
        out.append((name, tuple(sorted(stage.resolve(params).items())), stage.version))
    return tuple(out) or ((DENSE, (), get_stage(DENSE).version),)


def _stage_kwargs(stages: tuple[StageSpec, ...], given: dict[str, Any], strategy: str) -> tuple[StageSpec, ...]:
    """Stage parameters given among Variant.make's keywords (rrf_k=30) applied to the stage that has
    them; one of a stage the variant does not use is a clash unless it is that stage's default."""
    used = {name for name, _, _ in stages}
    out = list(stages)
    own = get_strategy(strategy).params
    values: dict[int, dict[str, Any]] = {}  # by stage: all its keywords at once, so its `check` sees them together
    for key in [k for k in given if k not in own and any(k in s.params for s in STAGES.values())]:
        value = given.pop(key)
        owners = [i for i, (name, _, _) in enumerate(out) if key in get_stage(name).params]
        if not owners:
            owner = next(n for n, s in STAGES.items() if key in s.params and n not in used)
            if value == STAGES[owner].params[key].default:
                continue
            raise IncompatibleParams(f"{strategy}: parameter {key!r} applies to retriever={owner!r} only, "
                                     f"got retriever={'+'.join(sorted(used))!r}")
        values.setdefault(owners[0], {})[key] = value
    for i, changes in values.items():
        name, params, version = out[i]
        out[i] = (name, tuple(sorted(get_stage(name).resolve(dict(params) | changes).items())), version)
    return tuple(out)


DENSE_ONLY = make_stages([DENSE])  # the retrieval of a variant that names none


# Bump when `with_header` embeds another text for the same chunks: it renames the entries of +header variants
# only (2: a title equal to the first heading is not repeated).
HEADER_VERSION = 2


@dataclass(frozen=True)
class Variant:
    strategy: str
    params: tuple[tuple[str, Any], ...]
    contextual_header: bool = False  # embed "title > heading path" + text; return the text only
    late: bool = False  # late chunking: pool token embeddings of the whole document window
    version: int = 1  # the strategy's version when the variant was made: part of its identity
    stages: tuple[StageSpec, ...] = DENSE_ONLY  # the retriever, run in order; never changes the chunks
    context: tuple[tuple[str, Any], ...] | None = None  # +context's resolved CONTEXT_PARAMS; None: no context

    @classmethod
    def make(cls, strategy: str, *, contextual_header: bool = False, late: bool = False,
             contextual: bool | Mapping[str, Any] = False, retriever: str | None = None,
             retrieval: Sequence[str | tuple[str, Mapping[str, Any]]] | None = None, **params: Any) -> Variant:
        """Validate and canonicalise; raises ValueError naming the bad parameter. The retriever is
        `retriever` (one first stage: "dense", "bm25", "hybrid") or `retrieval` (stages in order);
        a stage's parameters may ride among the keywords: make("fixed", retriever="hybrid", rrf_k=30).
        `contextual`: True, or CONTEXT_PARAMS ({"model": "my.gguf", "doc_tokens": 1024}), for +context;
        with contextual_header the context comes first, then the header, then the text."""
        if contextual_header and late:
            raise IncompatibleParams(f"{strategy}: contextual_header and late cannot be combined: late chunking "
                                     "embeds the document itself, so a header would change nothing")
        if contextual is not False and late:
            raise IncompatibleParams(f"{strategy}: +context and +late cannot be combined: late chunking pools the "
                                     "document's own tokens, so a written context would change nothing")
        context = None if contextual is False else _context_params(strategy, contextual)
        if retriever is not None and retrieval is not None:
            raise ValueError(f"{strategy}: give retriever= or retrieval=, not both")
        if retriever is not None and retriever not in first_stages():
            raise ValueError(f"parameter 'retriever' must be one of {list(first_stages())}, got {retriever!r}")
        spec = get_strategy(strategy)
        stages = _stage_kwargs(make_stages(retrieval or [retriever or DENSE]), params, strategy)
        resolved = spec.resolve(params)
        return cls(strategy, tuple(sorted(resolved.items())), bool(contextual_header), bool(late), spec.version,
                   stages, context)

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> Variant:
        """The variant `spec()` describes (a result's config["grid"] holds these)."""
        retrieval = [(s["stage"], s.get("params", {})) for s in spec["retrieval"]] if "retrieval" in spec else None
        return cls.make(spec["strategy"], contextual_header=spec.get("contextual_header", False),
                        late=spec.get("late", False), contextual=spec.get("context", False), retrieval=retrieval,
                        **spec.get("params", {}))

    @property
    def kwargs(self) -> dict[str, Any]:
        return dict(self.params)

    @property
    def contextual(self) -> bool:
        return self.context is not None

    @property
    def retriever(self) -> str:
        """The stages' names joined: "dense", "bm25", "hybrid", "hybrid+rerank"."""
        return "+".join(name for name, _, _ in self.stages)

    @property
    def embeds(self) -> bool:
        """Whether retrieval reads the chunks' vectors (dense, hybrid), so truncation matters."""
        return any(get_stage(name).embeds for name, _, _ in self.stages)

    @property
    def stage_params(self) -> dict[str, Any]:
        """Every stage parameter by name ({"rrf_k": 60} for hybrid): columns of the variants table."""
        return {k: v for _, params, _ in self.stages for k, v in params}

    def spec(self) -> dict[str, Any]:
        """The spec for `Variant.make(strategy, contextual_header=, late=, **params)`. One first stage
        rides in params as {"retriever": name, **its params} (only when not dense), so a dense
        variant's spec and key are what they were before retrievers existed and a bm25 or hybrid
        one's what they were before stages; a longer retrieval, or a re-versioned stage, is listed;
        +context's parameters only when it is on."""
        spec: dict[str, Any] = {"strategy": self.strategy, "params": self.kwargs,
                                "contextual_header": self.contextual_header, "late": self.late}
        if self.context is not None:
            spec["context"] = dict(self.context)
        if len(self.stages) > 1 or self.stages[0][2] != 1:
            spec["retrieval"] = [{"stage": n, "params": dict(p)} | ({"version": v} if v != 1 else {})
                                 for n, p, v in self.stages]
        elif self.stages[0][0] != DENSE:
            spec["params"] = self.kwargs | {"retriever": self.stages[0][0], **dict(self.stages[0][1])}
        return spec

    @property
    def key(self) -> str:
        header = {"header_version": HEADER_VERSION} if self.contextual_header and HEADER_VERSION != 1 else {}
        identity = get_strategy(self.strategy).identity
        spec = self.spec() | {"version": self.version} | header | (dict(identity(self.kwargs)) if identity else {})
        return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]

    @property
    def chunking(self) -> Variant:
        """The same chunks retrieved densely: what every retriever of this chunking shares."""
        return replace(self, stages=DENSE_ONLY)

    @property
    def chunking_key(self) -> str:
        """The key of the chunks alone (the same for every retriever): names the index entry."""
        return self.chunking.key

    def _stage_mods(self, form: str) -> list[str]:
        """The retrieval stages after a dense start, as "+hybrid(rrf_k=30)" (label) or
        "+hybrid:rrf_k=30" (text); parameters shown only when not their default."""
        out = []
        for i, (name, params, _) in enumerate(self.stages):
            if i == 0 and name == DENSE:
                continue
            schema = get_stage(name).params
            given = [(k, v) for k, v in params if schema[k].default != v]
            if form == "label":
                shown = ", ".join(f"{k}={short_value(v)}" for k, v in given)
                out.append(f"+{name}" + (f"({shown})" if shown else ""))
            else:
                shown = ",".join(f"{k}={_text_value(v)}" for k, v in given)
                out.append(f"+{name}" + (f":{shown}" if shown else ""))
        return out

    def _context_mod(self, form: str) -> list[str]:
        """["+context"], with its parameters that are not their defaults, as _stage_mods shows a stage's."""
        if self.context is None:
            return []
        given = [(k, v) for k, v in self.context if CONTEXT_PARAMS[k].default != v]
        if form == "label":
            shown = ", ".join(f"{k}={short_value(v)}" for k, v in given)
            return ["+context" + (f"({shown})" if shown else "")]
        shown = ",".join(f"{k}={_text_value(v)}" for k, v in given)
        return ["+context" + (f":{shown}" if shown else "")]

    @property
    def label(self) -> str:
        """Short human name: strategy, its main parameters, any others that differ from their
        defaults, and the modifiers."""
        schema = get_strategy(self.strategy).params
        values = self.kwargs
        shown = [f"{k}={short_value(values[k])}" for k, p in schema.items() if p.label or p.default != values[k]]
        mods = [m for m, on in (("+header", self.contextual_header), ("+late", self.late)) if on]
        return f"{self.strategy}({', '.join(shown)})" + "".join(mods + self._context_mod("label") +
                                                                self._stage_mods("label"))

    def __str__(self) -> str:
        return self.label

    @property
    def text(self) -> str:
        """The variant as `parse_variant` and the CLI's -v read it: parse_variant(v.text) == v."""
        schema = get_strategy(self.strategy).params
        given = ",".join(f"{k}={_text_value(v)}" for k, v in self.params if schema[k].default != v)  # defaults left out
        mods = [m for m, on in (("+header", self.contextual_header), ("+late", self.late)) if on]
        return f"{self.strategy}{':' if given else ''}{given}" + "".join(mods + self._context_mod("text") +
                                                                         self._stage_mods("text"))

    def strategy_entry(self) -> Strategy:
        """The registered strategy that chunks this variant, refused when re-registered at another version."""
        strategy = get_strategy(self.strategy)
        if strategy.version != self.version:  # re-registered since: its chunks would not be this variant's
            raise ValueError(f"variant {self.label} was made for version {self.version} of strategy "
                             f"{self.strategy!r}, which is now registered as version {strategy.version}; "
                             "make the variant again")
        return strategy

    def fallbacks(self, dataset: Dataset) -> dict[str, str]:
        """The documents this variant's strategy chunks some other way than it is meant to (markdown on
        source code, code on prose), with why: doc_id -> reason (Strategy.fallback)."""
        fallback = self.strategy_entry().fallback
        if fallback is None:
            return {}
        reasons = ((d.doc_id, fallback(d, self.kwargs)) for d in dataset.documents)
        return {doc_id: reason for doc_id, reason in reasons if reason}

    def chunk(self, dataset: Dataset, env: ChunkEnv, progress: bool = False) -> list[Chunk]:
        """Chunk every document, in dataset order (so each document's chunks are contiguous); a
        +context variant's contexts are written by the index build (workbench.models.context)."""
        docs = tqdm(dataset.documents, desc=f"chunking {self.label}", disable=not progress, unit="doc")
        return self.chunk_documents(self.strategy_entry(), docs, env)

    def chunk_documents(self, strategy: Strategy, documents: Iterable[Document], env: ChunkEnv) -> list[Chunk]:
        """The chunks of `documents`, in their order, by `strategy` (this variant's `strategy_entry`,
        given so that a process whose registry lacks a user's strategy, a Ray worker, chunks by it too)."""
        out: list[Chunk] = []
        for doc in documents:
            chunks = strategy.fn(doc, env, **self.kwargs)
            out.extend([with_header(doc, c) for c in chunks] if self.contextual_header else chunks)
        return out


def _context_params(strategy: str, contextual: bool | Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    given = {} if contextual is True else contextual
    if not isinstance(given, Mapping):
        raise ValueError(f"{strategy}: parameter 'contextual' must be True, False or a dict of "
                         f"{sorted(CONTEXT_PARAMS)}, got {contextual!r}")
    resolved = resolve(f"{strategy} +context", CONTEXT_PARAMS, given)
    if not resolved["model"]:  # a str (resolve checks the type)
        raise ValueError(f"{strategy} +context: parameter 'model' must name an LLM ({LLM_SPEC!r}, a .gguf file, "
                         "a local model folder or 'openai:<model>@<base_url>'), got ''")
    return tuple(sorted(resolved.items()))


def with_header(doc: Document, chunk: Chunk) -> Chunk:
    """Contextual chunk header: embed "title > heading path" above the text; span and text stay. The title
    is left out when the path starts with it (a page titled by its first heading says it once)."""
    title = "" if chunk.heading.split(" > ", 1)[0] == doc.title else doc.title
    path = " > ".join(p for p in (title, chunk.heading) if p)
    return replace(chunk, embed_text=f"{path}\n\n{chunk.embed_text or chunk.text}")


def _text_value(v: Any) -> str:
    """A value as parse_variant reads it back: bare when it reads back as itself, else JSON."""
    return v if isinstance(v, str) and parse_value(v) == v and "," not in v and "+" not in v else json.dumps(v)


def _parse_args(text: str, args: str) -> dict[str, Any]:
    """'size=256,overlap=32' -> {"size": 256, "overlap": 32}."""
    params: dict[str, Any] = {}
    for item in filter(None, (a.strip() for a in split_outside(args, ","))):
        key, eq, raw = item.partition("=")
        if not eq:
            raise ValueError(f"variant {text!r}: expected name=value, got {item!r}")
        params[key.strip()] = parse_value(raw.strip())
    return params


def parse_variant(text: str) -> Variant:
    """'fixed:size=256,overlap=32+header' -> Variant; modifiers '+header', '+late', '+context' (its
    parameters after a colon: '+context:doc_tokens=1024') and retrieval
    stages in order, each with its parameters after a colon: '+bm25', '+hybrid:rrf_k=30'. A value
    may be JSON: 'recursive:size=128,custom_separators=["\\n\\n", ". "]'."""
    head, *mods = split_outside(text.strip(), "+")
    named = [(m.partition(":")[0].strip(), _parse_args(text, m.partition(":")[2])) for m in mods]
    unknown = sorted({n for n, _ in named} - set(MODIFIERS) - set(STAGES))
    if unknown:
        known = ", ".join(f"+{m}" for m in [*MODIFIERS, *(s for s in STAGES if s != DENSE)])
        raise ValueError(f"variant {text!r}: unknown modifier(s) {unknown}; known: {known}")
    if any(args for n, args in named if n in MODIFIERS and n != "context"):
        raise ValueError(f"variant {text!r}: +header and +late take no parameter")
    contexts = [args for n, args in named if n == "context"]
    firsts = [n for n, _ in named if n in STAGES and get_stage(n).first]
    if len(firsts) > 1:
        raise ValueError(f"variant {text!r}: one retriever at most, got {['+' + r for r in firsts]}")
    stages = [(n, args) for n, args in named if n in STAGES]
    name, _, args = head.partition(":")
    return Variant.make(name.strip(), contextual_header=any(n == "header" for n, _ in named),
                        late=any(n == "late" for n, _ in named), contextual=contexts[0] if contexts else False,
                        retrieval=stages or None, **_parse_args(text, args))


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


def grid(strategy: str, *, contextual_header: bool = False, late: bool = False,
         contextual: bool | Mapping[str, Any] = False, **lists: Any) -> list[Variant]:
    """Every combination of the listed values: grid("fixed", size=[128, 256], overlap=[0, 32]),
    retrievers included: grid("fixed", size=256, retriever=["dense", "bm25", "hybrid"]).
    Combinations whose values clash (overlap >= size, rrf_k without hybrid) are skipped, so grids stay
    simple; a value that is invalid on its own still raises."""
    out, skipped = expand(strategy, {"contextual_header": contextual_header, "late": late, "contextual": contextual,
                                     **lists})
    if not out:
        raise ValueError(f"grid({strategy!r}, ...): every combination is invalid, e.g. {skipped[-1]}")
    return out
