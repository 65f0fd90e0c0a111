"""Retrieval: indexes over a variant's chunks (FAISS, BM25) and the stages that rank them."""

from workbench.retrieval import stages  # noqa: F401  (registers dense, bm25 and hybrid in workbench.retrievers)
