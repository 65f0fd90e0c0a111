"""Models and their content-addressed output caches: base.py (what every model shares: name,
fingerprint, device, spec), cache.py (the caches), embed.py (Embedder, token embeddings),
onnx.py (its ONNX backends), late.py (late chunking's pooling), llm.py (the LLM layer), rerank.py
(rerankers), context.py (contextual retrieval's chunk contexts, written by the LLM)."""
