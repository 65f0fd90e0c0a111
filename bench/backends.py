"""Embedding backends side by side in one process: torch, onnx, onnx-int8 and openvino-bf16
(workbench.models.embed).

Throughput: the same chroma_small texts (fixed 256-token chunks, and sentence-sized chunks) through
each backend's model, in length order and batches as the Embedder runs them, with torch,
onnxruntime and OpenVINO held to 2 threads. After an untimed warm-up, each round runs the backends
in order and then in reverse (A B C D D C B A for four), so a
machine that slows down within it favours none; a speed-up is torch's time over the backend's
within one round, and the median over rounds is kept (the load of a shared machine changes
between rounds more than within one). Quality: recall@5 and MRR@5 of fixed(size=256) and
recursive(size=256), one `wb.sweep` per backend and dataset: all of data/chroma_small and
data/mixed, and, when ../shared/datasets sits beside the repo, the first documents of squad_v11_dev
and qmsum_val (SUBSETS: a few minutes of torch embedding). Everything lives in one fresh temporary
cache (the ONNX export included). Writes bench/backends.md.

    nice -n 10 python -m bench.backends [--chunks 32] [--sentences 128] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from functools import partial
from pathlib import Path

import torch

from bench.harness import BENCH, REPO, SHARED, SMALL, Start, header, lap, table
from workbench import load_dataset, sweep
from workbench.chunkers import ChunkEnv, run_strategy
from workbench.dataset import Dataset
from workbench.models.embed import BACKENDS, Embedder
from workbench.models.onnx import OPENVINO_BF16, PASS_TOKENS, OnnxEncoder, export_file, pass_tokens
from workbench.variant import parse_variant

THREADS = 2
VARIANTS = ("fixed:size=256", "recursive:size=256")
# onnx as it ran before passes of PASS_TOKENS side by side (workbench.models.onnx.OnnxEncoder): one session
# of THREADS threads, `batch_size` texts a pass; timed, not scored (its vectors are onnx's)
ONE_SESSION = "onnx, 1 session"
TIMED = (*BACKENDS, ONE_SESSION)
SUBSETS = {"squad_v11_dev": (4, 200), "qmsum_val": (2, 200)}  # shared dataset: (first documents, at most questions)


def quality_datasets() -> list[tuple[Dataset, str]]:
    """(dataset, how it was cut) for the quality rows: the bundled ones whole, the shared ones cut."""
    out = [(load_dataset(REPO / "data" / name), "all") for name in ("chroma_small", "mixed")
           if (REPO / "data" / name).exists()]
    for name, (n_docs, n_questions) in SUBSETS.items():
        if (SHARED / name).exists():
            full = load_dataset(SHARED / name)
            ds = full.select([d.doc_id for d in full.documents[:n_docs]], max_questions=n_questions)
            out.append((ds, f"first {n_docs} of {len(full.documents)} documents, {len(ds.questions)} "
                            f"of {len(full.questions)} questions"))
    return out


def chunk_texts(ds: Dataset, env: ChunkEnv, strategy: str, size: int, n: int) -> list[str]:
    """n chunk texts of one strategy, taken evenly across the corpus, in length order."""
    texts = [c.text for doc in ds.documents for c in run_strategy(strategy, {"size": size}, doc, env)]
    step = max(1, len(texts) // n)
    return sorted(texts[::step][:n], key=len)


def scores_at_5(ds: Dataset, embedder: Embedder, cache: Path) -> dict[tuple[str, str], float]:
    """{(metric, variant): mean} of recall@5 and MRR@5."""
    result = sweep(ds, [parse_variant(v) for v in VARIANTS], ks=(5,), embedder=embedder, store=cache,
                   progress=False, budgets=())
    rows = result.summary.query("metric in ('recall', 'mrr') and k == 5")
    return dict(zip(zip(rows["metric"], rows["variant"], strict=True), rows["mean"], strict=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=32, help="fixed 256-token chunk texts timed")
    parser.add_argument("--sentences", type=int, default=128, help="sentence-sized texts timed")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of A B C D D C B A passes")
    parser.add_argument("--out", type=Path, default=BENCH / "backends.md")
    args = parser.parse_args()
    start = Start()
    torch.set_num_threads(THREADS)
    ds = load_dataset(SMALL)
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp)
        embedders = {b: Embedder(cache_dir=cache, backend=b, threads=THREADS, progress=False) for b in BACKENDS}
        env = ChunkEnv(model_tokenizer=embedders["torch"].tokenizer)
        sets = {f"fixed(size=256) chunks, {args.chunks}": chunk_texts(ds, env, "fixed", 256, args.chunks),
                f"sentence(size=32) chunks, {args.sentences}": chunk_texts(ds, env, "sentence", 32, args.sentences)}
        onnx = embedders["onnx"]
        onnx.onnx_encoder  # noqa: B018 (exports the model)
        timed = embedders | {ONE_SESSION: Embedder(cache_dir=cache, backend="onnx", threads=THREADS, progress=False)}
        timed[ONE_SESSION].__dict__["onnx_encoder"] = OnnxEncoder(
            onnx.path, export_file(onnx.model_fingerprint, "onnx"), "onnx", onnx.max_tokens, "cpu", THREADS, workers=1)
        for e in timed.values():  # untimed: export, quantization, loading, first batches
            e.vectors(next(iter(sets.values()))[:8])
        rounds: dict[tuple[str, str], list[float]] = {(s, b): [] for s in sets for b in TIMED}  # s per round
        for r in range(args.rounds):
            for name, texts in sets.items():
                spent = dict.fromkeys(TIMED, 0.0)
                for b in [*TIMED, *reversed(TIMED)]:
                    spent[b] += lap(partial(timed[b].vectors, texts))[1].wall_s
                for b in TIMED:
                    rounds[name, b].append(spent[b] / 2)
                print(f"round {r + 1}, {name}: " + ", ".join(f"{b} {spent[b] / 2:.2f} s" for b in TIMED), flush=True)
        quality = []
        for qds, cut in quality_datasets():
            scores, took = lap(lambda: {b: scores_at_5(qds, e, cache) for b, e in embedders.items()})  # noqa: B023
            quality.append((qds, cut, scores))
            print(f"{qds.name}: scored in {took.wall_s:.0f} s", flush=True)

    def speed(name: str, b: str) -> str:
        ratios = [t / mine for t, mine in zip(rounds[name, "torch"], rounds[name, b], strict=True)]
        return (f"{len(sets[name]) / statistics.median(rounds[name, b]):.1f} texts/s, "
                f"x{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})")

    def score_rows(scores: dict[str, dict[tuple[str, str], float]]) -> list[list[str]]:
        def cell(b: str, m: str, v: str) -> str:
            return f"{scores[b][m, v]:.4f} ({100 * (scores[b][m, v] - scores['torch'][m, v]):+.2f})"

        return [[f"{m}@5 {v}", *(cell(b, m, v) for b in BACKENDS)] for m, v in sorted(scores["torch"])]

    text = "\n".join([
        header("Embedding backends: throughput and recall", start),
        ("Shared with other engineers' work: absolute times are noisy; the ratios come from passes run side by "
         "side."),
        "",
        (f"The all-MiniLM-L6-v2 bundled model, batch {embedders['torch'].batch_size}, texts in length order, torch and "
         f"onnxruntime at {THREADS} threads. onnx: the transformer exported once to ONNX and run by onnxruntime, "
         f"{THREADS} one-thread passes at once of at most {PASS_TOKENS} padded word pieces each (OnnxEncoder); "
         "onnx-int8: the same, dynamically quantized (int8 weights per channel, uint8 activations); "
         f"{OPENVINO_BF16}: the float export compiled by OpenVINO with bfloat16 as its inference precision (the "
         f"CPU's AMX units), one stream per core, passes of at most {pass_tokens(OPENVINO_BF16)} padded word pieces; "
         f"{ONE_SESSION}: the same export as it ran before that, one {THREADS}-thread session taking "
         f"{embedders['torch'].batch_size} texts a pass (the same vectors: timed only). torch runs in "
         "sentence-transformers; the ONNX backends without torch (OnnxEncoder: tokenizers, onnxruntime or "
         "OpenVINO, the same mean pooling and normalisation in numpy). After a warm-up, each round ran every "
         "text set through the backends in the order of the columns and then in reverse; "
         f"{args.rounds} rounds. Shown: median throughput, "
         "and the speed-up over torch measured within each round, as median (lowest-highest over rounds)."),
        "",
        "## Throughput",
        "",
        table(["", *TIMED], [[name, *(speed(name, b) for b in TIMED)] for name in sets]),
        "",
        "## recall@5 and MRR@5, points vs torch in brackets",
        "",
        *[line for qds, cut, scores in quality for line in [
            f"### {qds.name}: {len(qds.documents)} documents, {len(qds.questions)} questions ({cut})", "",
            table(["", *BACKENDS], score_rows(scores)), ""]],
        "Targets (issue 10): >= 2x throughput for some ONNX option, recall@5 within 1 point of torch. "
        "Decision (issue 21): onnx is the default for new caches (backend=\"auto\") when its recall@5 and MRR@5 "
        "equal torch's on every dataset above and it is faster.",
        "",
    ])
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
