"""Models and their content-addressed output caches: base.py (what every model shares: name,
fingerprint, device, spec), cache.py (the caches), embed.py (Embedder, token embeddings),
onnx.py (its ONNX backends), late.py (late chunking's pooling); the LLM and rerankers next."""
