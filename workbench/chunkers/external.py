"""What users run in production today, as sweepable strategies: LangChain's
RecursiveCharacterTextSplitter and LlamaIndex's SentenceSplitter, with the libraries' own
parameter names, so a user's current splitter is one row among ours.

Both come through `adapters.factory_strategy`: the library splits, `locate` recovers exact
offsets. Their cache version is derived from the library's version, so upgrading the library
does not serve chunks of the old one. LangChain is optional: `langchain_recursive` is registered
only when `langchain-text-splitters` is installed.
"""

from __future__ import annotations

import hashlib
import importlib.util
from importlib.metadata import version as installed_version
from typing import Any

from workbench.chunkers.adapters import factory_strategy
from workbench.chunkers.registry import check_overlap, strategy
from workbench.core.params import UNIT_PARAM, Param
from workbench.core.tokens import TiktokenTokenizer

ENCODING = "cl100k_base"  # the tiktoken encoding that counts "tokens" (LlamaIndex's default too)
OVERLAP_RULE = check_overlap("chunk_size", "chunk_overlap")


def library_version(distribution: str) -> int:
    """A cache version that changes with the installed version of `distribution`."""
    tag = f"{distribution}=={installed_version(distribution)}"
    return int(hashlib.sha256(tag.encode()).hexdigest()[:12], 16)


def langchain_recursive(chunk_size: int, chunk_overlap: int, unit: str) -> Any:
    """RecursiveCharacterTextSplitter with its default separators, lengths in cl100k tokens (what
    `from_tiktoken_encoder` counts, from the bundled encoding: tiktoken's own lookup would
    download it) or in characters (`len`)."""
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    length = TiktokenTokenizer(ENCODING).count if unit == "tokens" else len
    return RecursiveCharacterTextSplitter(chunk_size=chunk_size, chunk_overlap=chunk_overlap, length_function=length)


def llamaindex_sentence(chunk_size: int, chunk_overlap: int) -> Any:
    """SentenceSplitter with its defaults otherwise (cl100k tokens, paragraph separator "\\n\\n\\n")."""
    from llama_index.core.node_parser import SentenceSplitter

    return SentenceSplitter(chunk_size=chunk_size, chunk_overlap=chunk_overlap)


def _register(name: str, factory: Any, help: str, params: dict[str, Param], distribution: str) -> None:
    fn, check = factory_strategy(name, factory, OVERLAP_RULE)
    strategy(name, help, params, check=check, version=library_version(distribution))(fn)


if importlib.util.find_spec("langchain_text_splitters") is not None:
    _register(
        "langchain_recursive",
        langchain_recursive,
        "LangChain's RecursiveCharacterTextSplitter (paragraphs, lines, words, characters), "
        "offsets located in the source.",
        {
            "chunk_size": Param(256, "maximum chunk length in `unit`", lo=1, label=True, unit=UNIT_PARAM),
            "chunk_overlap": Param(0, "length repeated between neighbours, in [0, chunk_size)", lo=0, label=True,
                                   unit=UNIT_PARAM),
            "unit": Param("tokens", f"length function: {ENCODING} tokens (from_tiktoken_encoder) or characters (len)",
                          choices=("tokens", "chars")),
        },
        "langchain-text-splitters",
    )

_register(
    "llamaindex_sentence",
    llamaindex_sentence,
    "LlamaIndex's SentenceSplitter (sentences packed up to chunk_size tokens), offsets located in the source.",
    {
        "chunk_size": Param(256, "maximum chunk length", lo=1, label=True, unit="tokens"),
        "chunk_overlap": Param(0, "tokens repeated between neighbours, in [0, chunk_size)", lo=0, label=True,
                               unit="tokens"),
    },
    "llama-index-core",
)
