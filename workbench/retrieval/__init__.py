"""Retrieval: indexes over a variant's chunks (FAISS, BM25) and the stages that rank them."""
