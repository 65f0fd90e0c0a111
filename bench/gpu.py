"""Every model stage on the GPU against the CPU, in one process: embedding chunks, late chunking
(token embeddings by document window), the LLM's generation and a cross-encoder's pair scoring.

Ready for a machine with a CUDA GPU (device="cuda" for each model); on one without, it says so and
exits with status 2, since there is nothing to compare (the refusals are tested in
tests/models/test_devices.py). Each stage runs the same inputs on both devices with no cache
(every output computed), after an untimed warm-up, and the outputs must agree (vectors to 1e-3,
rerank scores to 1e-3, generations compared and their agreement shown): a speed-up is never bought
with other numbers. Writes bench/gpu.md.

    python -m bench.gpu [--data data/chroma_small] [--texts 512] [--prompts 16] [--pairs 256]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

from bench.harness import BENCH, SMALL, Start, header, lap, table
from bench.rerank import minilm_cross_encoder  # a MiniLM-shaped cross-encoder
from workbench.chunkers import ChunkEnv, run_strategy
from workbench.ingest import load_dataset
from workbench.models.embed import Embedder
from workbench.models.late import late_vectors
from workbench.models.llm import LLM, Prompt
from workbench.models.rerank import CrossEncoderReranker

PROMPT = Prompt("gpu-bench", 1, "Summarise in one sentence:\n\n{text}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=SMALL)
    ap.add_argument("--texts", type=int, default=512, help="chunks embedded")
    ap.add_argument("--prompts", type=int, default=16, help="generations of at most 32 tokens")
    ap.add_argument("--pairs", type=int, default=256, help="(question, chunk) pairs reranked")
    ap.add_argument("--out", type=Path, default=BENCH / "gpu.md")
    args = ap.parse_args()
    start = Start()
    import torch

    if not torch.cuda.is_available():
        print("bench.gpu: torch sees no CUDA GPU on this machine; run it on one with a GPU "
              "(every model takes device='cuda')", file=sys.stderr)
        sys.exit(2)
    ds = load_dataset(args.data)
    chunks = [c for d in ds.documents for c in run_strategy("fixed", {"size": 256}, d, ChunkEnv())][: args.texts]
    texts = [c.text for c in chunks]
    questions = [q.question for q in ds.questions]
    pairs = [(questions[i % len(questions)], texts[i % len(texts)]) for i in range(args.pairs)]
    rows, outputs = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        cross_encoder = minilm_cross_encoder(Path(tmp) / "minilm-ce")
        for device in ("cpu", "cuda"):
            embedder = Embedder(cache_dir=None, device=device, progress=False)
            llm = LLM(cache_dir=None, device=device, progress=False)  # no cache: every generation computed
            reranker = CrossEncoderReranker(cross_encoder, device=device)
            stages = {
                "embedding (texts/s)": (len(texts), lambda: embedder._compute(texts, "bench")),
                "late chunking (chunks/s)": (len(chunks), lambda: late_vectors(ds.docs, chunks, embedder)),
                "reranking (pairs/s)": (len(pairs), lambda: reranker._compute(pairs)),
                "LLM generation (prompts/s)": (args.prompts, lambda: [g.text for g in llm.generate(
                    PROMPT, [{"text": t[:600]} for t in texts[: args.prompts]], max_tokens=32)]),
            }
            for name, (count, fn) in stages.items():
                fn()  # untimed: kernels compiled, weights on the device
                out, took = lap(fn)
                outputs[name, device] = out
                rows.append((name, device, count / took.wall_s))
    rate = {(n, d): r for n, d, r in rows}

    def agree(name: str) -> str:
        a, b = outputs[name, "cpu"], outputs[name, "cuda"]
        return (f"{np.mean([x == y for x, y in zip(a, b, strict=True)]):.0%} identical" if isinstance(a, list)
                else "yes" if np.allclose(np.asarray(a), np.asarray(b), atol=1e-3) else "NO")

    lines = [header("GPU against CPU, every model stage", start), f"GPU: {torch.cuda.get_device_name(0)}.", "",
             table(["stage", "CPU", "GPU", "GPU / CPU", "outputs agree"],
                   [[name, f"{rate[name, 'cpu']:.1f}", f"{rate[name, 'cuda']:.1f}",
                     f"{rate[name, 'cuda'] / rate[name, 'cpu']:.1f}x", agree(name)]
                    for name in dict.fromkeys(n for n, _, _ in rows)])]
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
