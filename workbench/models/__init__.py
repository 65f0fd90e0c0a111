"""Models: the embedder (and, next, the LLM and rerankers) with their content-addressed caches."""
