"""Retrieval: indexes over a variant's chunks (FAISS, BM25, pgvector) and the stages that rank them."""

# isort: off
from workbench.retrieval import stages  # noqa: F401  (registers dense, bm25 and hybrid in workbench.core.stages)
from workbench.retrieval import automerge  # noqa: F401  (registers auto_merge, after the first stages)
from workbench.retrieval import rerank  # noqa: F401  (registers rerank)
from workbench.retrieval import pgvector  # noqa: F401  (registers pgvector)
# isort: on
