"""ONNX backends: a model's transformer exported once, offline, from its local PyTorch weights,
optionally quantized to int8, and run through onnxruntime (faster on a CPU).

Only the transformer is swapped: tokenizer, pooling and normalisation stay the library's own,
and the stand-in module maps the same torch tensors to the same `last_hidden_state`, so token
embeddings (late chunking, the preview) come through it too.
"""

from __future__ import annotations

import logging
import warnings
from pathlib import Path
from typing import Any

from workbench.io import publish

ONNX_BACKENDS = ("onnx", "onnx-int8")
ONNX_FILE = "model.onnx"


def exported_model(transformer: Any, models_dir: Path, model_fingerprint: str, backend: str) -> Path:
    """The `backend` model file of the model `model_fingerprint`, exported (and quantized) on
    first use into <models_dir>/<model fingerprint>-<backend>/, atomically, and reused ever
    after; int8 is quantized from the float export, which is kept too."""
    fp32 = models_dir / f"{model_fingerprint}-onnx" / ONNX_FILE
    if not fp32.exists():
        publish(fp32.parent, lambda tmp: export_onnx(transformer, tmp / ONNX_FILE))
    if backend == "onnx":
        return fp32
    int8 = models_dir / f"{model_fingerprint}-{backend}" / ONNX_FILE
    if not int8.exists():
        publish(int8.parent, lambda tmp: quantize_onnx(fp32, tmp / ONNX_FILE))
    return int8

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


