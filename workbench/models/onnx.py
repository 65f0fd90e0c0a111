"""ONNX backends: a model's transformer exported once, offline, from its local PyTorch weights,
optionally quantized to int8, and run through onnxruntime (faster on a CPU), or compiled by OpenVINO
to run in bfloat16 on a CPU's matrix units (AMX or AVX512_BF16).

The exported file is a model artifact, kept once per machine in the model store (`model_store`),
not in each cache folder. Exporting needs torch and sentence-transformers; running an export does
not: `OnnxEncoder` tokenizes with the `tokenizers` library (the folder's tokenizer.json) and pools
in numpy, for models whose modules.json it reproduces exactly (a Transformer, mean Pooling, and
optionally Normalize: all-MiniLM-L6-v2's stack). Importing torch and transformers takes seconds, a
third of a small cold sweep. Any other model keeps sentence-transformers, with the transformer
swapped for `onnx_transformer`.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import warnings
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from workbench.core.io import publish

OPENVINO_BF16 = "openvino-bf16"
ONNX_BACKENDS = ("onnx", "onnx-int8", OPENVINO_BF16)
# the export each backend runs (`export_file`): its own for int8, the float one for OpenVINO
EXPORTS = {OPENVINO_BF16: "onnx"}
# onnxruntime graph fusions left out of a backend's sessions, because they slow it down. The int8
# export's SkipLayerNormFusion (each residual Add and LayerNormalization as one kernel) ran a window
# slower on one thread, its token vectors no nearer the float export's (bench/backends.md). The float
# export has no such pattern: its vectors are the same bits without that fusion.
SKIPPED_FUSIONS = {"onnx-int8": ["SkipLayerNormFusion"]}
# Bump a backend's revision when its vectors change for the same model files (its export or its
# sessions' options); it enters the backend's fingerprints. Revision 1 adds nothing.
# onnx-int8 2: without SKIPPED_FUSIONS (its token vectors moved within int8's rounding).
BACKEND_REVISIONS = {"onnx-int8": 2}
ONNX_FILE = "model.onnx"
# Padded word pieces in one pass of the model on a CPU (OnnxEncoder): one 256-piece window, or
# several short texts. bench/backends.md measures it against 32 texts a pass. OpenVINO's bfloat16
# matrix units want bigger passes (PASS_TOKENS_OF).
PASS_TOKENS = 256
PASS_TOKENS_OF = {OPENVINO_BF16: 2048}
# texts tokenized at a time by `OnnxEncoder.encode`: a tokenizer's Encoding keeps offsets, tokens and masks,
# about 200 bytes a word piece; the 44,316 texts of a 100-file folder's floor held at once were 0.8 GB of its
# 1.2 GB peak (bench/folders.md); each text's ids are kept, 8 bytes a word piece
TOKENIZE_SLICE = 1024
MODELS_ENV = "WORKBENCH_MODELS"  # the model store's folder, if not the per-user default
# the module stack OnnxEncoder reproduces: a Transformer, mean Pooling, then (optionally) Normalize
ST_MODULES = "sentence_transformers.models."
STACKS = ([f"{ST_MODULES}Transformer", f"{ST_MODULES}Pooling"],
          [f"{ST_MODULES}Transformer", f"{ST_MODULES}Pooling", f"{ST_MODULES}Normalize"])


def model_store() -> Path:
    """Where exported models live, one copy per machine: $WORKBENCH_MODELS, else
    $XDG_CACHE_HOME/workbench/models, else ~/.cache/workbench/models."""
    if os.environ.get(MODELS_ENV):
        return Path(os.environ[MODELS_ENV])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "workbench" / "models"


def export_file(model_fingerprint: str, backend: str, legacy_dir: Path | None = None) -> Path:
    """Where the `backend` export of a model is read from: <legacy_dir> (a cache folder's models/,
    where exports were kept before the store) when it holds one, else the model store."""
    name = Path(f"{model_fingerprint}-{EXPORTS.get(backend, backend)}") / ONNX_FILE
    if legacy_dir is not None and (legacy_dir / name).exists():
        return legacy_dir / name
    return model_store() / name


def exported_model(transformer: Callable[[], Any], model_fingerprint: str, backend: str,
                   legacy_dir: Path | None = None) -> Path:
    """The `backend` model file of the model `model_fingerprint` (`export_file`), exported (and
    quantized) on first use into <model store>/<model fingerprint>-<backend>/, atomically, and
    reused ever after; int8 is quantized from the float export, which is kept too (and which
    OpenVINO compiles as it is). `transformer()`
    gives the sentence-transformers Transformer module, asked for only when the float export is
    missing (loading it imports torch: quantizing needs only onnxruntime)."""
    file = export_file(model_fingerprint, backend, legacy_dir)
    if file.exists():
        return file
    fp32 = export_file(model_fingerprint, "onnx", legacy_dir)
    if not fp32.exists():
        publish(fp32.parent, lambda tmp: export_onnx(transformer(), tmp / ONNX_FILE))
    if file != fp32:
        publish(file.parent, lambda tmp: quantize_onnx(fp32, tmp / ONNX_FILE))
    return file

def onnx_providers(device: str) -> list[str]:
    """onnxruntime execution providers for a resolved device, checked against the installed build
    (every build runs on a CPU: that needs no check, nor importing onnxruntime, which a warm sweep never runs)."""
    if device == "cpu":
        return ["CPUExecutionProvider"]
    import onnxruntime as ort

    wanted = ["CUDAExecutionProvider", "CPUExecutionProvider"]
    if wanted[0] not in ort.get_available_providers():
        raise ValueError(f"device={device!r} needs onnxruntime's {wanted[0]} (the onnxruntime-gpu build for CUDA); "
                         f"this onnxruntime has {ort.get_available_providers()}")
    return wanted


def check_device(backend: str, device: str) -> None:
    """Refuse, up front, a device a non-torch backend cannot run on: OpenVINO's bfloat16 runs on a CPU,
    onnxruntime on a GPU needs its CUDA build (`onnx_providers`)."""
    if backend == OPENVINO_BF16 and device != "cpu":
        raise ValueError(f"backend={OPENVINO_BF16!r} runs on a CPU, got device={device!r}: "
                         "use backend='onnx' or 'torch' on a GPU")
    onnx_providers(device)


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
        # tests/models/test_backends.py checks the exported model against torch on texts of every length
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


def onnx_session(file: Path, backend: str, device: str, threads: int | None) -> Any:
    """An onnxruntime session of a backend's export, at `threads` (None: one per core), without
    the fusions SKIPPED_FUSIONS names for that backend."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads or 0  # 0: onnxruntime's default, one per core
    return ort.InferenceSession(str(file), options, providers=onnx_providers(device),
                                disabled_optimizers=SKIPPED_FUSIONS.get(backend, []))


class OrtRunner:
    """An export run by onnxruntime (`onnx_session`): feeds by input name in, token embeddings out."""

    def __init__(self, file: Path, backend: str, device: str, threads: int | None):
        self.session = onnx_session(file, backend, device, threads)
        self.inputs = [i.name for i in self.session.get_inputs()]
        self.dim = int(self.session.get_outputs()[0].shape[-1])

    def __call__(self, feeds: dict[str, np.ndarray]) -> np.ndarray:
        return self.session.run(None, {n: feeds[n] for n in self.inputs})[0]


class OpenVinoRunner:
    """The float export compiled by OpenVINO for the CPU with bfloat16 as its inference precision:
    matrix products on the bfloat16 units (AMX, AVX512_BF16), accumulated in float32. Its vectors
    are not torch's bits (bench/backends.md measures how near), so the backend has its own
    fingerprint; a CPU without those units is refused rather than run in float32 under that name.
    `streams` passes run at once, one per calling thread, each on an idle request (made when none is)."""

    def __init__(self, file: Path, device: str, threads: int | None, streams: int):
        check_device(OPENVINO_BF16, device)
        import openvino as ov

        core = ov.Core()
        if "BF16" not in core.get_property("CPU", "OPTIMIZATION_CAPABILITIES"):
            raise ValueError(f"backend={OPENVINO_BF16!r} needs a CPU with bfloat16 units (AMX or AVX512_BF16); "
                             "OpenVINO finds none on this one: use backend='onnx' (the default) or 'onnx-int8'")
        self.compiled = core.compile_model(core.read_model(str(file)), "CPU", {
            "INFERENCE_PRECISION_HINT": "bf16", "NUM_STREAMS": str(streams),
            "INFERENCE_NUM_THREADS": str(threads or cores())})
        precision = self.compiled.get_property("INFERENCE_PRECISION_HINT").get_type_name()
        if precision != "bf16":
            raise ValueError(f"backend={OPENVINO_BF16!r}: OpenVINO compiled the model for {precision}, not bf16, "
                             "on this CPU: use backend='onnx' (the default) or 'onnx-int8'")
        self.inputs = [i.get_any_name() for i in self.compiled.inputs]
        self.dim = int(self.compiled.outputs[0].get_partial_shape()[-1].get_length())
        self._idle: queue.SimpleQueue = queue.SimpleQueue()  # requests no thread is running: reused across calls

    def __call__(self, feeds: dict[str, np.ndarray]) -> np.ndarray:
        try:
            request = self._idle.get_nowait()
        except queue.Empty:
            request = self.compiled.create_infer_request()
        try:
            request.infer({n: feeds[n] for n in self.inputs})
            return request.get_output_tensor(0).data.copy()
        finally:
            self._idle.put(request)


def runner(file: Path, backend: str, device: str, threads: int | None, workers: int = 1) -> OrtRunner | OpenVinoRunner:
    """What runs a backend's export for `workers` passes at once: OpenVINO for openvino-bf16 (a stream
    per worker, `threads` in all), else onnxruntime (one session every worker calls: one thread a pass
    when there are several, else `threads`)."""
    if backend == OPENVINO_BF16:
        return OpenVinoRunner(file, device, threads, workers)
    return OrtRunner(file, backend, device, 1 if workers > 1 else threads)


def onnx_transformer(file: Path, backend: str, config: Any, device: str, threads: int | None) -> Any:
    """A torch module that stands in for the Hugging Face model inside sentence-transformers'
    Transformer module: same tensors in, same `last_hidden_state` out, computed by onnxruntime.
    (Built here, not at import, so that importing this module never imports torch.)"""
    import torch

    run = runner(file, backend, device, threads)

    class OnnxModel(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.config = config  # read by sentence-transformers, e.g. for the embedding dimension
            self.device = torch.device(device)

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                    token_type_ids: torch.Tensor | None = None, **_: Any) -> dict[str, torch.Tensor]:
            given = {"input_ids": input_ids, "attention_mask": attention_mask,
                     "token_type_ids": torch.zeros_like(input_ids) if token_type_ids is None else token_type_ids}
            out = run({n: t.cpu().numpy() for n, t in given.items()})
            return {"last_hidden_state": torch.from_numpy(out).to(input_ids.device)}

    return OnnxModel()




def _special(value: Any) -> str | None:
    """A special token as tokenizer_config.json or special_tokens_map.json spell it (text or a dict)."""
    return value.get("content") if isinstance(value, dict) else value


class JsonTokenizer:
    """A model folder's tokenizer.json run by the `tokenizers` library, answering the calls this
    package makes of a transformers fast tokenizer (which is built from the same file) without
    importing transformers, which imports torch: `tok(text or texts, add_special_tokens=...,
    return_offsets_mapping=..., return_special_tokens_mask=...)` and `pad_token_id`."""

    def __init__(self, folder: Path):
        from tokenizers import Tokenizer

        self.backend = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.backend.no_truncation()
        self.backend.no_padding()
        pad = None
        for name in ("tokenizer_config.json", "special_tokens_map.json"):
            if pad is None and (folder / name).exists():
                pad = _special(json.loads((folder / name).read_text(encoding="utf-8")).get("pad_token"))
        self.pad_token = pad
        self.pad_token_id = None if pad is None else self.backend.token_to_id(pad)

    def __call__(self, text: str | Sequence[str], add_special_tokens: bool = True,
                 return_offsets_mapping: bool = False, return_special_tokens_mask: bool = False,
                 verbose: bool = True) -> dict[str, list]:
        """input_ids and attention_mask, and offset_mapping and special_tokens_mask when asked:
        lists for one text, lists of lists for a list of texts."""
        one = isinstance(text, str)
        encs = self.backend.encode_batch([text] if one else list(text), add_special_tokens=add_special_tokens)
        out = {"input_ids": [e.ids for e in encs], "attention_mask": [e.attention_mask for e in encs]}
        if return_offsets_mapping:
            out["offset_mapping"] = [[tuple(o) for o in e.offsets] for e in encs]
        if return_special_tokens_mask:
            out["special_tokens_mask"] = [e.special_tokens_mask for e in encs]
        return {k: v[0] for k, v in out.items()} if one else out


def reproducible(folder: Path) -> bool:
    """Whether `OnnxEncoder` computes this sentence-transformers folder's vectors exactly: its
    modules.json is a Transformer, mean Pooling and optionally Normalize, its pooling config
    asks for the mean alone, it does not lower-case in the module, and it has a tokenizer.json."""
    try:
        modules = json.loads((folder / "modules.json").read_text())
        pooling = json.loads((folder / modules[1]["path"] / "config.json").read_text())
        config = json.loads((folder / "sentence_bert_config.json").read_text())
    except (OSError, ValueError, IndexError, KeyError):
        return False
    modes = {k: v for k, v in pooling.items() if k.startswith("pooling_mode")}
    return ([m.get("type") for m in modules] in STACKS and modes and all(v == (k == "pooling_mode_mean_tokens")
            for k, v in modes.items()) and not config.get("do_lower_case") and (folder / "tokenizer.json").exists()
            and modules[0].get("path", "") == "")


class OnnxEncoder:
    """An exported model run without torch: `JsonTokenizer` truncated to the model's
    max_seq_length, texts in order of length, padded to the longest of each pass, onnxruntime for
    the token embeddings, and mean pooling over the attention mask plus L2 normalisation in numpy
    (`reproducible` says for which models that is the whole stack).

    On a CPU it runs `workers` (default: `threads`, else one per core) passes at once, each on one
    thread, each of at most `pass_tokens(backend)` padded word pieces: small passes stay in a core's
    cache and need no sync between threads (bench/backends.md: "onnx" against "onnx, 1 session"); on
    OpenVINO one stream per worker. With one worker (always on a GPU), one pass of `batch_size` texts
    at a time on `threads` threads."""

    def __init__(self, folder: Path, file: Path, backend: str, max_tokens: int, device: str, threads: int | None,
                 workers: int | None = None):
        self.tokenizer = JsonTokenizer(folder)
        self.truncating = JsonTokenizer(folder).backend  # a second copy, which truncates
        self.truncating.enable_truncation(max_tokens)
        self.pad_id = self.tokenizer.pad_token_id or 0
        self.workers = cpu_workers(device, threads, workers)
        self.backend = backend
        self.runner = runner(file, backend, device, threads, self.workers)
        self.dim = self.runner.dim

    def hidden(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """(batch, tokens, dim) float32 token embeddings of padded token ids and their mask."""
        given = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        return self.runner(given).astype(np.float32, copy=False)

    def passes(self, widths: Sequence[int], batch_size: int) -> list[range]:
        """The passes (`plan_passes`) for texts of these widths (ascending), as this encoder runs them."""
        return plan_passes(widths, batch_size, pass_tokens(self.backend) if self.workers > 1 else None)

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> Iterator[Any]:
        """fn of each item, in order, `workers` at a time (onnxruntime releases the GIL while it runs)."""
        if self.workers == 1 or len(items) < 2:
            yield from map(fn, items)
            return
        with ThreadPoolExecutor(self.workers) as pool:
            yield from pool.map(fn, items)

    def encode(self, texts: Sequence[str], batch_size: int) -> np.ndarray:
        """L2-normalised mean-pooled float32 vectors, one row per text, at most `batch_size` texts a pass."""
        ids: list[np.ndarray] = []
        for i in range(0, len(texts), TOKENIZE_SLICE):  # a slice's Encodings alive at a time, not every text's
            ids += [np.asarray(e.ids, dtype=np.int64)
                    for e in self.truncating.encode_batch([t.strip() for t in texts[i : i + TOKENIZE_SLICE]])]
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        passes = [[order[i] for i in rows] for rows in self.passes([len(ids[i]) for i in order], batch_size)]

        def pooled(rows: list[int]) -> np.ndarray:
            tokens, mask = padded([ids[i] for i in rows], self.pad_id)
            weights = mask.astype(np.float32)
            mean = np.einsum("btd,bt->bd", self.hidden(tokens, mask), weights)
            mean /= np.maximum(weights.sum(axis=1, keepdims=True), 1e-9)
            return mean / np.maximum(np.linalg.norm(mean, axis=1, keepdims=True), 1e-12)

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for rows, vecs in zip(passes, self.map(pooled, passes), strict=True):
            out[rows] = vecs
        return out


def padded(rows: Sequence[Sequence[int]], pad_id: int) -> tuple[np.ndarray, np.ndarray]:
    """int64 token ids padded with `pad_id` to the longest row, and their attention mask."""
    width = max(map(len, rows))
    ids = np.full((len(rows), width), pad_id, dtype=np.int64)
    mask = np.zeros((len(rows), width), dtype=np.int64)
    for r, row in enumerate(rows):
        ids[r, : len(row)] = row
        mask[r, : len(row)] = 1
    return ids, mask


def pass_tokens(backend: str) -> int:
    """Padded word pieces in one of a backend's passes on a CPU with several workers."""
    return PASS_TOKENS_OF.get(backend, PASS_TOKENS)


def bf16_units() -> bool:
    """Whether this CPU lists bfloat16 matrix units (AMX or AVX512_BF16) in /proc/cpuinfo: a cheap
    look, without importing OpenVINO (whose own answer is what `OpenVinoRunner` rests on), to
    suggest the backend where it would run."""
    info = Path("/proc/cpuinfo")
    try:
        return bool({"amx_bf16", "avx512_bf16"} & set(info.read_text().split()))
    except OSError:
        return False


def faster_backend(backend: str, device: str) -> str:
    """A backend this machine runs several times faster than `backend`, with rankings that matched its
    own (bench/peers.md), or "": openvino-bf16 for onnx on a CPU with bfloat16 units."""
    return OPENVINO_BF16 if backend == "onnx" and device == "cpu" and bf16_units() else ""


def cpu_workers(device: str, threads: int | None, workers: int | None = None) -> int:
    """The passes an encoder runs at once: on a CPU `workers`, else `threads`, else one per core; one on a GPU."""
    return (workers or threads or cores()) if device == "cpu" else 1


def plan_passes(widths: Sequence[int], batch_size: int, max_tokens: int | None) -> list[range]:
    """Consecutive runs of `widths` (ascending, in word pieces), one per model pass: at most
    `batch_size` rows and, with `max_tokens`, at most that many padded word pieces (rows times
    the widest), never fewer than one row.

    >>> plan_passes([10, 20, 30, 200, 250], 32, 256)
    [range(0, 3), range(3, 4), range(4, 5)]
    """
    out, start = [], 0
    while start < len(widths):
        end = start + 1
        while end < len(widths) and end - start < batch_size and (
                max_tokens is None or (end - start + 1) * widths[end] <= max_tokens):
            end += 1
        out.append(range(start, end))
        start = end
    return out


def cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
