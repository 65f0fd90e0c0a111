"""A fake embedding model for the fast tier (docs/testing.md): tests about the workbench's logic
(metrics, verdicts, plots, reports, widgets, chunk and stage contracts) need vectors, not the
bundled model's, so they get these in milliseconds and without torch.

`hashed_words` is an `encode(texts) -> vectors` function, the model extension point that
`sweep(models=[...])` documents (workbench/models/choose.py), so the workbench runs it as it runs
any model: a FunctionEmbedder with its own vector cache. Each lower-cased word, and its first five
letters (a crude stem: "refund" and "refunds" meet), adds a signed one to a column chosen by a
stable hash (crc32, the same in every process), and each three characters a tenth of that; a
constant column keeps every row, even an empty text's, off zero (a real model's never is: a zero
vector makes cosine distances NaN). The rows are L2-normalised. Texts that share words are close,
as with a real model, so a question still retrieves the passage that answers it more often than not;
the characters make two different texts score differently against a question almost always, as a
real model's do (ties order by position, which a test should not lean on), and the scores are
deterministic.
"""

from __future__ import annotations

import re
import zlib
from functools import cache
from pathlib import Path

import numpy as np

from workbench.models.choose import embedder_of, result_key
from workbench.models.embed import Embedder, default_model_path
from workbench.models.onnx import JsonTokenizer
from workbench.variant import Variant

DIM = 256
WORD = re.compile(r"\w+")


def hashed_words(texts: list[str]) -> np.ndarray:
    """One row per text: its words, stems and character trigrams hashed into DIM signed columns, and
    a constant one, L2-normalised."""
    out = np.zeros((len(texts), DIM), dtype=np.float32)
    out[:, 0] = 0.05
    for row, text in enumerate(texts):
        words = WORD.findall(text.lower())
        pieces = [(w, 1.0) for w in words] + [(w[:5], 1.0) for w in words if len(w) > 5]
        chars = " ".join(text.lower().split())
        pieces += [(chars[i : i + 3], 0.1) for i in range(len(chars) - 2)]
        for piece, weight in pieces:
            h = zlib.crc32(piece.encode())
            out[row, h % DIM] += weight if h & (1 << 31) else -weight
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def embedder(cache_dir: str | Path | None) -> Embedder:
    """`hashed_words` as the workbench makes a model of it (a FunctionEmbedder), caching in `cache_dir`."""
    return embedder_of(hashed_words, cache_dir, progress=False)


def model_tokenizer() -> JsonTokenizer:
    """The bundled model's word-piece tokenizer alone (its tokenizer.json, no weights): what
    tokenizer="model" counts with, for chunkers that size in the model's tokens."""
    return JsonTokenizer(default_model_path())


@cache
def key(variant: Variant) -> str:
    """The key of `variant`'s rows in a result of the fake model: like any model but the bundled one,
    its hash follows the variant key (workbench.models.choose.result_key)."""
    return result_key(variant.key, embedder(None))
