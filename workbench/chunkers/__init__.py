"""Chunking strategies, one module per family; importing this package registers them all."""

# isort: off
from workbench.chunkers import fixed, hierarchy, markdown, recursive, semantic, sentence  # noqa: F401  (register)
from workbench.chunkers import code, llm, pages, tables  # noqa: F401  (register)
# after the built-in families, so they come first in every list of strategies
from workbench.chunkers import external  # noqa: F401  (registers langchain_recursive, llamaindex_sentence)
from workbench.chunkers import automerge  # noqa: F401  (registers auto_merging: LlamaIndex's hierarchy)
from workbench.chunkers import route  # noqa: F401  (registers route: a strategy per kind of document)
# isort: on
from workbench.chunkers.adapters import register_factory, register_function, register_node_parser
from workbench.chunkers.base import ChunkEnv
from workbench.chunkers.registry import STRATEGIES, get_strategy, run_strategy, unregister
from workbench.chunkers.where import where
from workbench.core.chunk import Chunk, make_chunk
from workbench.core.params import Param

__all__ = [
    "STRATEGIES", "Chunk", "ChunkEnv", "Param", "get_strategy", "make_chunk", "register_factory", "register_function",
    "register_node_parser", "run_strategy", "unregister", "where",
]
