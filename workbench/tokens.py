"""Token counting and token boundaries, as character offsets so chunks stay exact spans.

Two families: tiktoken encodings (what an LLM is billed in; the context-cost unit) and the
embedding model's own word-piece tokenizer (what its 256-token window is counted in).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any, Protocol

import numpy as np

TIKTOKEN_ENCODINGS = ("cl100k_base", "o200k_base")
MODEL_TOKENIZER = "model"


class Tokenizer(Protocol):
    name: str

    def count(self, text: str) -> int: ...

    def boundaries(self, text: str) -> np.ndarray:
        """Sorted char offsets where tokens start, ending with len(text); a run of tokens
        [i, j) covers text[b[i]:b[j]]. Offsets fall on character boundaries."""
        ...


@cache
def _encoding(name: str) -> Any:
    import tiktoken

    return tiktoken.get_encoding(name)


@cache
def _token_nbytes(name: str) -> np.ndarray:
    """Byte length of every token id of encoding `name` (0 for unused ids), so a document's
    token offsets are one cumulative sum instead of a decode per token."""
    enc = _encoding(name)
    out = np.zeros(enc.max_token_value + 1, dtype=np.int64)
    for token in range(len(out)):
        try:
            out[token] = len(enc.decode_single_token_bytes(token))
        except KeyError:  # ids between the ordinary and the special tokens
            pass
    return out


@dataclass(frozen=True)
class TiktokenTokenizer:
    name: str = "cl100k_base"

    def count(self, text: str) -> int:
        return len(_encoding(self.name).encode(text, disallowed_special=()))

    def count_many(self, texts: list[str]) -> list[int]:
        return [len(t) for t in _encoding(self.name).encode_batch(texts, disallowed_special=())]

    def boundaries(self, text: str) -> np.ndarray:
        tokens = _encoding(self.name).encode_to_numpy(text, disallowed_special=())
        byte_starts = np.concatenate([[0], np.cumsum(_token_nbytes(self.name)[tokens])])
        raw = text.encode("utf-8")
        if len(raw) == len(text):  # ASCII: byte offsets are char offsets
            return byte_starts
        # byte offset -> char offset; a token that starts inside a multi-byte character is
        # snapped back to that character's start, so every boundary is a valid str index.
        lead = np.frombuffer(raw, dtype=np.uint8) & 0xC0 != 0x80
        char_of_byte = np.concatenate([np.cumsum(lead) - 1, [len(text)]])
        b = char_of_byte[byte_starts]
        return np.maximum.accumulate(b)


@dataclass(frozen=True)
class HFTokenizer:
    """The embedding model's fast tokenizer, without special tokens, via offset mappings."""

    name: str
    tokenizer: Any

    def count(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"])

    def boundaries(self, text: str) -> np.ndarray:
        enc = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
        starts = [s for s, _ in enc["offset_mapping"]]
        return np.maximum.accumulate(np.array([0, *starts[1:], len(text)], dtype=np.int64))


def get_tokenizer(name: str, model_tokenizer: Any = None) -> Tokenizer:
    """`cl100k_base`/`o200k_base`, or `model` for the embedding model's tokenizer."""
    if name in TIKTOKEN_ENCODINGS:
        return TiktokenTokenizer(name)
    if name == MODEL_TOKENIZER:
        if model_tokenizer is None:
            raise ValueError("tokenizer='model' needs an embedding model")
        return HFTokenizer(MODEL_TOKENIZER, model_tokenizer)
    raise ValueError(f"tokenizer must be one of {(*TIKTOKEN_ENCODINGS, MODEL_TOKENIZER)}, got {name!r}")
