"""Quality without labels: how a variant's cuts follow the text, measured with the embedding model's
vectors of the documents' sentences, for a folder with no questions yet.

Why: most teams start with no labelled questions, and recent work scores chunkings without them
(boundary clarity and chunk stickiness from a language model's perplexity, ACL 2025). These two
measures take the same idea with the embedding model the sweep uses, whose sentence vectors are
computed once for every variant (and cached by content):

- `cut_contrast`: the mean cosine of adjacent sentences a variant keeps in one chunk, minus that of
  adjacent sentences it cuts apart; a cut inside a sentence parts a sentence from itself (cosine 1).
  Positive when the cuts fall where the text changes more than where it does not.
- `cohesion`: the mean cosine of each sentence of a chunk to the chunk's mean sentence, over the
  chunks of two sentences or more (weighted by their sentences): how much a chunk is about one thing.

How far to trust them is measured, not assumed: bench/label_free.md ranks the variants of labelled
datasets by each measure and by recall and reports Spearman's rho with its interval (TRUST says what
it found). `semantic` places its cuts by these same vectors, which favours it by construction.
"""

from __future__ import annotations

import json
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from workbench.chunkers.sentence import sentence_spans
from workbench.core.chunk import Bounds, Chunk
from workbench.core.io import write_text
from workbench.dataset import Dataset
from workbench.variant import Variant

# Bump when a measure is computed otherwise: it names the cache files (Session.label_free).
LABEL_FREE_VERSION = 1
MEASURES = ("cut_contrast", "cohesion")
# What bench/label_free.md found, said wherever the measures are shown.
TRUST = ("label-free measures rank variants only loosely like recall on labelled data (bench/label_free.md): "
         "use them to screen out chunkings that cut text apart, not to pick the best")


@dataclass(frozen=True)
class Sentences:
    """A document's sentences (`sentence_spans`: lines, then punkt) and their unit vectors, a row each."""

    bounds: list[Bounds]
    vectors: np.ndarray

    @property
    def adjacent(self) -> np.ndarray:
        """The cosine of each sentence with the next (n - 1 values)."""
        return np.einsum("ij,ij->i", self.vectors[:-1], self.vectors[1:])


@dataclass(frozen=True)
class LabelFree:
    """One chunking's measures and what they were computed over (cached per index entry)."""

    cut_contrast: float
    cohesion: float
    kept_pairs: int  # adjacent sentence pairs in one chunk
    cut_pairs: int  # adjacent pairs cut apart, and cuts inside a sentence
    cohesive_chunks: int  # chunks of two sentences or more


def sentences(dataset: Dataset, encode: Callable[[list[str]], np.ndarray]) -> dict[str, Sentences]:
    """Every document's Sentences, the vectors from `encode` (texts -> unit vectors, e.g. Embedder.encode),
    called once for the whole corpus."""
    spans = {d.doc_id: sentence_spans(d.text) for d in dataset.documents}
    texts = [d.text[a:b] for d in dataset.documents for a, b in spans[d.doc_id]]
    vectors = np.asarray(encode(texts), dtype=np.float32)
    out, at = {}, 0
    for d in dataset.documents:
        n = len(spans[d.doc_id])
        out[d.doc_id] = Sentences(spans[d.doc_id], vectors[at:at + n])
        at += n
    return out


def cut_pairs(bounds: Sequence[Bounds], chunks: Sequence[Chunk], length: int) -> tuple[np.ndarray, int]:
    """Which adjacent sentence pairs of a document the chunks cut apart (a mask over the n - 1 pairs),
    and how many cuts fall inside a sentence. A cut is a chunk's start or end inside the document."""
    starts, ends = [a for a, _ in bounds], [b for _, b in bounds]
    cut = np.zeros(max(len(bounds) - 1, 0), dtype=bool)
    inside = 0
    for p in {c.end for c in chunks if c.end < length} | {c.start for c in chunks if c.start > 0}:
        i = bisect_right(starts, p) - 1  # the last sentence starting at or before p
        if i >= 0 and starts[i] < p < ends[i]:
            inside += 1
            continue
        k = bisect_right(ends, p) - 1  # the last sentence ending at or before p: the cut follows it
        if 0 <= k < len(cut):
            cut[k] = True
    return cut, inside


def cohesions(found: Sentences, chunks: Sequence[Chunk]) -> list[tuple[float, int]]:
    """Each chunk of two sentences or more: the mean cosine of its sentences (those whose middle it
    holds) to their mean, and how many they are."""
    middles = [(a + b) / 2 for a, b in found.bounds]
    out = []
    for c in chunks:
        i, j = bisect_left(middles, c.start), bisect_left(middles, c.end)
        if j - i >= 2:
            v = found.vectors[i:j]
            centre = v.mean(axis=0)
            out.append((float((v @ centre).mean() / np.linalg.norm(centre)), j - i))
    return out


def measure(dataset: Dataset, found: dict[str, Sentences], chunks: Sequence[Chunk]) -> LabelFree:
    """Both measures of one chunking of `dataset`, pooled over its documents."""
    by_doc: dict[str, list[Chunk]] = {}
    for c in chunks:
        by_doc.setdefault(c.doc_id, []).append(c)
    kept, parted, weighted = [], [], []
    for d in dataset.documents:
        s, mine = found[d.doc_id], by_doc.get(d.doc_id, [])
        cut, inside = cut_pairs(s.bounds, mine, len(d.text))
        sims = s.adjacent
        kept.append(sims[~cut])
        parted.extend([sims[cut], np.ones(inside, dtype=np.float32)])
        weighted.extend(cohesions(s, mine))
    kept_all, cut_all = np.concatenate(kept) if kept else np.zeros(0), np.concatenate(parted) if parted else np.zeros(0)
    contrast = float(kept_all.mean() - cut_all.mean()) if len(kept_all) and len(cut_all) else float("nan")
    n = sum(w for _, w in weighted)
    cohesion = sum(c * w for c, w in weighted) / n if n else float("nan")
    return LabelFree(contrast, float(cohesion), len(kept_all), len(cut_all), len(weighted))


def row(variant: Variant, found: LabelFree, chunks: int, key: str) -> dict[str, object]:
    """A variant's row of the label-free table."""
    return {"key": key, "label": variant.label, "chunks": chunks, "cut_contrast": found.cut_contrast,
            "cohesion": found.cohesion}


def table(rows: Sequence[dict[str, object]]) -> pd.DataFrame:
    """The label-free table: one row per variant, in order."""
    return pd.DataFrame(list(rows), columns=["key", "label", "chunks", *MEASURES])


def cache_file(root: Path, entry: str) -> Path:
    """Where the measures of the chunking whose index entry is named `entry` are kept."""
    return root / "label_free" / f"{entry}-v{LABEL_FREE_VERSION}.json"


def save(path: Path, found: LabelFree, chunks: int) -> None:
    write_text(path, json.dumps({**asdict(found), "chunks": chunks}))


def load(path: Path) -> tuple[LabelFree, int] | None:
    """The cached measures and chunk count, or None when absent or unreadable (computed again)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        chunks = data.pop("chunks")
        return LabelFree(**data), chunks
    except (OSError, ValueError, TypeError, KeyError):
        return None
