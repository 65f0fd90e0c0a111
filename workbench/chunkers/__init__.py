"""Chunking strategies, one module per family; importing this package registers them all."""

from workbench.chunkers import fixed  # noqa: F401  (registers its strategies)
from workbench.chunkers.base import Chunk, ChunkEnv, make_chunk
from workbench.chunkers.registry import STRATEGIES, Param, get_strategy, run_strategy

__all__ = ["STRATEGIES", "Chunk", "ChunkEnv", "Param", "get_strategy", "make_chunk", "run_strategy"]
