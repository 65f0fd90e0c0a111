"""The plain LlamaIndex loop an engineer writes by hand to compare chunkings: for every variant,
split, build a VectorStoreIndex and retrieve the top 5 for every question. No cache, library
defaults everywhere (HuggingFaceEmbedding's batch of 10 included): the baseline that
bench/perf.py times as a whole fresh process, like a user's script.

Variants are a LlamaIndex parser and its keyword arguments (values are JSON):
  sentence:chunk_size=256,chunk_overlap=51      -> SentenceSplitter(chunk_size=256, chunk_overlap=51)
  semantic:breakpoint_percentile_threshold=90   -> SemanticSplitterNodeParser(..., embed_model=the model)
`--out` writes every question's retrieved spans [doc_id, start, end] per variant, so that
bench/perf.py can score recall@5 with the workbench's own metric.

Run from the repo root:
  python bench/llamaindex_loop.py --model DIR --data data/chroma_small -v sentence:chunk_size=256
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from llama_index.core import Document, VectorStoreIndex
from llama_index.core.embeddings import BaseEmbedding
from llama_index.core.node_parser import NodeParser, SemanticSplitterNodeParser, SentenceSplitter
from llama_index.embeddings.huggingface import HuggingFaceEmbedding

TOP_K = 5


def parse_variant(spec: str) -> tuple[str, dict[str, Any]]:
    """'sentence:chunk_size=256,chunk_overlap=51' -> ('sentence', {'chunk_size': 256, 'chunk_overlap': 51})."""
    kind, _, rest = spec.partition(":")
    if kind not in ("sentence", "semantic"):
        raise ValueError(f"variant {spec!r}: parser must be 'sentence' or 'semantic', got {kind!r}")
    pairs = (item.split("=", 1) for item in rest.split(",") if item)
    return kind, {name: json.loads(value) for name, value in pairs}


def parser(kind: str, kwargs: dict[str, Any], embed_model: BaseEmbedding) -> NodeParser:
    if kind == "sentence":
        return SentenceSplitter(**kwargs)
    return SemanticSplitterNodeParser(embed_model=embed_model, **kwargs)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="local sentence-transformers model folder")
    p.add_argument("--data", type=Path, default=Path("data/chroma_small"), help="corpus.jsonl + questions.jsonl")
    p.add_argument("--variant", "-v", action="append", required=True, help="a variant (repeatable), see above")
    p.add_argument("--out", type=Path, help="write the retrieved spans of every question here (JSON)")
    args = p.parse_args()
    docs = [Document(text=d["text"], id_=d["doc_id"]) for d in read_jsonl(args.data / "corpus.jsonl")]
    questions = [q["question"] for q in read_jsonl(args.data / "questions.jsonl")]
    embed_model = HuggingFaceEmbedding(model_name=args.model)
    retrieved: dict[str, list[list[tuple[str, int, int]]]] = {}
    for spec in args.variant:
        nodes = parser(*parse_variant(spec), embed_model).get_nodes_from_documents(docs)
        retriever = VectorStoreIndex(nodes, embed_model=embed_model).as_retriever(similarity_top_k=TOP_K)
        retrieved[spec] = [[(n.node.ref_doc_id, n.node.start_char_idx, n.node.end_char_idx)
                            for n in retriever.retrieve(q)] for q in questions]
    if args.out:
        args.out.write_text(json.dumps(retrieved))


if __name__ == "__main__":
    main()
