"""Model specs -> Embedders: what `sweep(models=[...])` and the CLI's `--model` take.

A spec is an Embedder (used as it is), None (the bundled all-MiniLM-L6-v2), "wordllama"
(workbench.models.static), "openai:<model>@<base_url>" (an OpenAI-compatible embeddings endpoint,
workbench.models.endpoint), any other string or path (a local sentence-transformers folder; a hub
name is refused, nothing downloads), or an `encode(texts) -> vectors` function.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

from workbench.models.base import model_fingerprint
from workbench.models.embed import DEFAULT_BACKEND, Embedder, default_model_path, fingerprint_of
from workbench.models.endpoint import OPENAI_PREFIX
from workbench.models.static import EndpointEmbedder, FunctionEmbedder, WordLlamaEmbedder

ModelSpec = Embedder | str | Path | None | Any  # Any: an encode function
WORDLLAMA = "wordllama"


def embedder_of(spec: ModelSpec, cache_dir: str | Path | None, **options: Any) -> Embedder:
    """The Embedder a spec names, caching its vectors in `cache_dir`; `options` (threads, progress,
    backend, device, engine) go to a sentence-transformers Embedder, `progress` to the others (a
    static, function or endpoint model computes in-process)."""
    if isinstance(spec, Embedder):
        return spec
    endpoint = isinstance(spec, str) and spec.startswith(OPENAI_PREFIX)
    plain = spec == WORDLLAMA or endpoint or not (spec is None or isinstance(spec, str | Path))
    if plain and (options.get("backend", DEFAULT_BACKEND) not in (DEFAULT_BACKEND, "torch")
                  or options.get("device", "cpu") != "cpu"):
        raise ValueError(f"backend= and device= apply to sentence-transformers models only, not to {spec!r}")
    if endpoint:
        return EndpointEmbedder(spec, cache_dir=cache_dir, progress=options.get("progress", True))
    if spec == WORDLLAMA:
        return WordLlamaEmbedder(cache_dir=cache_dir, progress=options.get("progress", True))
    if spec is None or isinstance(spec, str | Path):
        return Embedder(spec, cache_dir=cache_dir, **options)
    if callable(spec):
        return FunctionEmbedder(spec, cache_dir=cache_dir, progress=options.get("progress", True))
    raise TypeError("models: each must be an Embedder, None, 'wordllama', 'openai:<model>@<base_url>', a model "
                    f"folder or an encode function, got {type(spec).__name__}")


def embedders_of(models: Sequence[ModelSpec], cache_dir: str | Path | None, **options: Any) -> list[Embedder]:
    """One Embedder per spec; an empty list or one model twice (same fingerprint) is refused."""
    if isinstance(models, str | Path) or not isinstance(models, Sequence) or not models:
        raise ValueError(f"models must be a non-empty list of model specs, got {models!r}")
    out = [embedder_of(m, cache_dir, **options) for m in models]
    fps = [e.fingerprint for e in out]
    twice = sorted({e.name for e in out if fps.count(e.fingerprint) > 1})
    if twice:
        raise ValueError(f"models: the same model twice (same fingerprint): {twice}")
    return out


@cache
def plain_fingerprints() -> frozenset[str]:
    """The bundled model's fingerprints on torch and on onnx (float32): their results keep plain variant
    keys. The two give the same vectors to float noise (equal recall@5 and MRR@5 on every dataset of
    bench/backends.md), so, like the device, the backend is not part of what a result row is about,
    though each keeps its own vector cache; onnx-int8 and openvino-bf16 move the scores and are hashed
    like another model."""
    fp = model_fingerprint(default_model_path())
    return frozenset(fingerprint_of(fp, backend) for backend in ("torch", "onnx"))


def result_key(variant_key: str, embedder: Embedder) -> str:
    """What a result row is about, a (variant, model): the variant key for the bundled default model
    (`plain_fingerprints`: every existing cache and saved result stays valid), `<variant key>@<8 hex
    digits>` of the full fingerprint for any other (a hash: one model's backends share the start of
    their fingerprints)."""
    fp = embedder.fingerprint
    if fp in plain_fingerprints():
        return variant_key
    return f"{variant_key}@{hashlib.sha256(fp.encode()).hexdigest()[:8]}"


def variant_key(key: str) -> str:
    """The variant key of a result key (its part before '@')."""
    return key.partition("@")[0]
