"""Does the default grid fit the model: what share of each dense variant's chunks does the model
truncate, on the bundled data, a folder of documentation and code, and the shared datasets, against
the grid the CLI swept before (sizes in cl100k tokens, up to 512)?

No embedding: each variant is chunked and what it would embed is counted in the model's word pieces
(Embedder.count_truncated), as a sweep's truncated_chunks column is. BM25-only rows read whole chunks
and count no truncation. The shared datasets are read when ../shared is beside the repo (SQuAD's first
16 articles and QMSum's first 10 meetings keep the run short).

Run from the repo root: python -m bench.defaults  (a few minutes on 2 cores)
"""

from __future__ import annotations

import argparse
import tempfile

from bench.harness import BENCH, REPO, SHARED, SMALL, Start, header, table
from workbench.chunkers import ChunkEnv
from workbench.dataset import Dataset
from workbench.ingest import load_dataset
from workbench.models.embed import Embedder
from workbench.retrieval.index import embed_texts
from workbench.run.defaults import default_grid
from workbench.variant import Variant, parse_variant

# what `python -m workbench sweep` ran with no -v before the default grid fit the model
PREVIOUS = ("fixed:size=128", "fixed:size=256", "fixed:size=256,overlap=64", "fixed:size=512", "fixed:size=256+bm25",
            "fixed:size=256+hybrid", "recursive:size=256", "langchain_recursive:chunk_size=256", "sentence:size=256",
            "semantic:breakpoint_percentile=80,max_size=256", "semantic:breakpoint_percentile=95,max_size=256")


def datasets() -> dict[str, Dataset]:
    """The bundled data and the mixed folder, then the shared datasets when they are there."""
    out = {"chroma_small": load_dataset(SMALL), "itsdangerous": load_dataset(REPO / "tests" / "data" / "itsdangerous")}
    if SHARED.is_dir():
        out["chroma_general"] = load_dataset(SHARED / "chroma_general")
        squad = load_dataset(SHARED / "squad_v11_dev")
        out["squad_v11_dev[16]"] = squad.select(doc_ids=[d.doc_id for d in squad.documents[:16]])
        qmsum = load_dataset(SHARED / "qmsum_val")
        out["qmsum_val[10]"] = qmsum.select(doc_ids=[d.doc_id for d in qmsum.documents[:10]])
    return out


def truncated_share(variant: Variant, dataset: Dataset, embedder: Embedder) -> float:
    """The share of the variant's chunks the model would truncate (0 for BM25 alone)."""
    env = ChunkEnv(embed=lambda texts: embedder.encode(texts, desc="sentence groups"),
                   model_tokenizer=embedder.tokenizer)
    chunks = variant.chunk(dataset, env)
    return embedder.count_truncated(embed_texts(chunks)) / len(chunks) if variant.embeds else 0.0


def main() -> None:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    start = Start()
    cache = tempfile.TemporaryDirectory()  # semantic's sentence vectors: nothing kept
    embedder = Embedder(cache_dir=cache.name, progress=False)
    data = datasets()
    rows, worst = [], {}
    for name, ds in data.items():
        grids = {"default": default_grid(ds, embedder.window_tokens), "previous": [parse_variant(v) for v in PREVIOUS]}
        for grid, variants in grids.items():
            shares = {v.label: truncated_share(v, ds, embedder) for v in variants}
            worst[(name, grid)] = max(shares.values())
            rows += [[name, grid, label, f"{share:.1%}"] for label, share in shares.items()]
    summary = [[name, f"{worst[(name, 'default')]:.1%}", f"{worst[(name, 'previous')]:.1%}"] for name in data]
    text = (header("The default grid against the model's window", start)
            + f"\nModel: {embedder.name}, reading {embedder.window_tokens} word pieces of a text. Rule: every dense "
            "variant of the default grid is sized in the model's tokens at 94% of that window (workbench/run/"
            "defaults.py).\n\n## The worst dense variant's truncated share, per dataset\n\n"
            + table(["dataset", "default grid", "previous grid"], summary, ["---", "---:", "---:"])
            + "\n\n## Every variant\n\n"
            + table(["dataset", "grid", "variant", "truncated chunks"], rows, ["---", "---", "---", "---:"]) + "\n")
    (BENCH / "defaults.md").write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
