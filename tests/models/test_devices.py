"""device= for every model: "cuda" without a GPU is refused when the model is made (before any
weights load), naming the way out; "auto" takes the GPU when torch sees one, else the CPU. On a
machine with a GPU the same tests check that it is taken (bench/gpu.py measures it)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from workbench.models.embed import Embedder
from workbench.models.llm import LLM
from workbench.models.rerank import CrossEncoderReranker

MODELS: dict[str, Callable[[Path, str, Path], Any]] = {
    "embedder": lambda cache, device, ce: Embedder(cache_dir=cache, device=device),
    "llm": lambda cache, device, ce: LLM(cache_dir=cache, device=device),
    "cross-encoder": lambda cache, device, ce: CrossEncoderReranker(ce, cache_dir=cache, device=device),
}


@pytest.mark.parametrize("name", list(MODELS))
def test_cuda_is_refused_without_a_gpu_and_auto_takes_what_there_is(name: str, tmp_path: Path,
                                                                   cross_encoder: Path) -> None:
    import torch

    make = MODELS[name]
    gpu = torch.cuda.is_available()
    model = make(tmp_path, "auto", cross_encoder)
    assert model.device == ("cuda" if gpu else "cpu")
    assert "model" not in vars(model) and "_local" not in vars(model)  # nothing loaded to decide
    if gpu:
        assert make(tmp_path, "cuda", cross_encoder).device == "cuda"
    else:
        with pytest.raises(ValueError, match="device='cuda' but torch sees no CUDA GPU.*use device='cpu' or 'auto'"):
            make(tmp_path, "cuda", cross_encoder)
    with pytest.raises(ValueError, match="device must be one of"):
        make(tmp_path, "tpu", cross_encoder)
