"""Token counting and token boundaries, as character offsets so chunks stay exact spans.

Two families: tiktoken encodings (what an LLM is billed in; the context-cost unit), read from
llama-index-core's bundled files, and the embedding model's own word-piece tokenizer (what its
256-token window is counted in).
"""

from __future__ import annotations

import binascii
import types
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any, Protocol

import numpy as np

from workbench.core.memo import TextMemo
from workbench.core.offline import bundled_tiktoken_file

TIKTOKEN_ENCODINGS = ("cl100k_base", "o200k_base")
MODEL_TOKENIZER = "model"
SpanCount = Callable[[int, int], int]  # (start, end) -> tokens in text[start:end], for one text
# characters of the texts whose token boundaries are kept (about 3 bytes each: the offsets, a slice's own text)
BOUNDARY_CHARS = 1 << 24
# characters of the texts whose span counter TiktokenTokenizer.count_span keeps (about 17 bytes each: its lists)
SPAN_CHARS = 1 << 23


class Tokenizer(Protocol):
    name: str

    def count(self, text: str) -> int: ...

    def boundaries(self, text: str) -> np.ndarray:
        """Sorted char offsets where tokens start, ending with len(text); a run of tokens
        [i, j) covers text[b[i]:b[j]]. Offsets fall on character boundaries. Read-only: kept and
        shared (every variant of a sweep sizes the same documents)."""
        ...

    def span_count(self, text: str, boundaries: np.ndarray) -> SpanCount:
        """count(text[s:e]) for many spans inside one tokenized stretch text[lo:hi], whose
        `boundaries` (shifted by lo) are at hand: what packing sentences asks, span after span."""
        ...


def _bundled_bpe(url: str, expected_hash: str | None = None) -> dict[bytes, int]:
    """tiktoken's `load_tiktoken_bpe(url)`, reading llama-index-core's bundled copy instead of
    downloading it: token (base64) and rank per line, checked against tiktoken's own hash."""
    from tiktoken.load import check_hash

    file = bundled_tiktoken_file(url)
    data = file.read_bytes()
    if expected_hash is not None and not check_hash(data, expected_hash):
        raise ValueError(f"{file} is not the file tiktoken expects from {url} (sha256 differs)")
    fields = data.split()  # token rank token rank ...: one C-level pass (a split per line cost most of a cold start)
    return dict(zip(map(binascii.a2b_base64, fields[0::2]), map(int, fields[1::2]), strict=True))


@cache
def tiktoken_encoding(name: str) -> Any:
    """The tiktoken encoding `name`, offline and without touching the environment: tiktoken's
    own constructor (so its regex pattern and special tokens), run with its one download swapped
    for the bundled file. (tiktoken reads local copies only through TIKTOKEN_CACHE_DIR, an
    environment variable every library in the process would see.)"""
    import tiktoken
    from tiktoken_ext import openai_public

    if name not in TIKTOKEN_ENCODINGS:
        raise ValueError(f"tiktoken encoding must be one of {TIKTOKEN_ENCODINGS}, got {name!r}")
    make = openai_public.ENCODING_CONSTRUCTORS[name]
    offline = types.FunctionType(make.__code__, {**make.__globals__, "load_tiktoken_bpe": _bundled_bpe})
    return tiktoken.Encoding(**offline())


@cache
def _token_nbytes(name: str) -> np.ndarray:
    """Byte length of every token id of encoding `name` (0 for unused ids), so a document's
    token offsets are one cumulative sum instead of a decode per token."""
    enc = tiktoken_encoding(name)
    out = np.zeros(enc.max_token_value + 1, dtype=np.int64)
    for token in range(len(out)):
        try:
            out[token] = len(enc.decode_single_token_bytes(token))
        except KeyError:  # ids between the ordinary and the special tokens
            pass
    return out


def _letter_space(text: str, start: int, end: int) -> list[int]:
    """Offsets p in (start, end) where text[p - 1] is an ASCII letter and text[p] a space: where
    every tiktoken piece ends (see TiktokenTokenizer.span_count)."""
    codes = np.frombuffer(text[start:end].encode("utf-32-le"), dtype=np.uint32)
    letter = (codes | 0x20) - ord("a") < 26  # A-Z or a-z; other codes wrap round to large values
    return (np.flatnonzero(letter[:-1] & (codes[1:] == ord(" "))) + start + 1).tolist()


_BOUNDARIES: TextMemo[np.ndarray] = TextMemo(BOUNDARY_CHARS)  # by (tokenizer, text)
_SPAN_COUNTERS: TextMemo[SpanCount] = TextMemo(SPAN_CHARS)  # by (tiktoken encoding, text)


def _kept_boundaries(tokenizer: TiktokenTokenizer | HFTokenizer, text: str) -> np.ndarray:
    """tokenizer's boundaries of text, found once per process while kept (BOUNDARY_CHARS): every variant of
    a sweep sizes the same documents. Read-only, since every caller shares the array."""
    def make(t: str) -> np.ndarray:
        b = tokenizer._boundaries(t)
        b.flags.writeable = False
        return b

    return _BOUNDARIES.get(tokenizer, text, make)


@dataclass(frozen=True)
class TiktokenTokenizer:
    name: str = "cl100k_base"

    def count(self, text: str) -> int:
        return len(tiktoken_encoding(self.name).encode(text, disallowed_special=()))

    def count_many(self, texts: list[str]) -> list[int]:
        """count of each text, in this thread: tiktoken's encode_batch starts a pool of threads on every
        call, which cost more than the encoding for the few chunks of one document (the audit's calls)."""
        encoding = tiktoken_encoding(self.name)
        return [len(encoding.encode(t, disallowed_special=())) for t in texts]

    def count_span(self, text: str, start: int, end: int) -> int:
        """count(text[start:end]), from the text's boundaries, found once per text and kept
        (SPAN_CHARS characters of texts): the variants of a sweep or a preview slice the same
        documents, so each document is encoded once per encoding, not once per variant."""
        return _SPAN_COUNTERS.get(self.name, text, lambda t: self.span_count(t, self.boundaries(t)))(start, end)

    def span_count(self, text: str, boundaries: np.ndarray) -> SpanCount:
        """Exact, yet encoding only each span's first and last words.

        Both encodings cut text into pieces with a regex before BPE, and a piece always ends
        between an ASCII letter and a space: no alternative of either pattern (as of tiktoken
        0.14) matches a letter then a space, none looks behind, and none decides a match before
        such a point by what follows it. So a text cut there tokenizes as its two halves do, and
        between the first and the last such cut inside a span, its tokens are the stretch's."""
        b = boundaries.tolist()
        cuts = _letter_space(text, b[0], b[-1])
        # a span's first word's tokens depend on its start alone, its last word's on its end: kept,
        # since the variants of a sweep start and end many chunks at the same places
        heads: dict[int, int] = {}
        tails: dict[int, int] = {}

        def count(start: int, end: int) -> int:
            first, last = bisect_right(cuts, start), bisect_left(cuts, end) - 1
            if first > last:
                return self.count(text[start:end])
            c1, c2 = cuts[first], cuts[last]
            head = heads.get(start)
            if head is None:
                head = heads[start] = self.count(text[start:c1])
            tail = tails.get(end)
            if tail is None:
                tail = tails[end] = self.count(text[c2:end])
            return head + bisect_left(b, c2) - bisect_left(b, c1) + tail

        return count

    def boundaries(self, text: str) -> np.ndarray:
        return _kept_boundaries(self, text)

    def _boundaries(self, text: str) -> np.ndarray:
        tokens = tiktoken_encoding(self.name).encode_to_numpy(text, disallowed_special=())
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

    def span_count(self, text: str, boundaries: np.ndarray) -> SpanCount:
        return lambda start, end: self.count(text[start:end])

    def boundaries(self, text: str) -> np.ndarray:
        return _kept_boundaries(self, text)

    def _boundaries(self, text: str) -> np.ndarray:
        enc = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
        starts = [s for s, _ in enc["offset_mapping"]]
        return np.maximum.accumulate(np.array([0, *starts[1:], len(text)], dtype=np.int64))


def get_tokenizer(name: str, model_tokenizer: Any = None) -> Tokenizer:
    """`cl100k_base`/`o200k_base`, or `model` for the embedding model's tokenizer."""
    if name in TIKTOKEN_ENCODINGS:
        return TiktokenTokenizer(name)
    if name == MODEL_TOKENIZER:
        if model_tokenizer is None:
            raise ValueError("tokenizer='model' needs an embedding model with a tokenizer (a sentence-transformers "
                             "folder or 'wordllama'; a plain encode function has none)")
        return HFTokenizer(MODEL_TOKENIZER, model_tokenizer)
    raise ValueError(f"tokenizer must be one of {(*TIKTOKEN_ENCODINGS, MODEL_TOKENIZER)}, got {name!r}")
