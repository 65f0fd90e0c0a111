"""Small-to-big retrieval: search small, precise chunks; hand the LLM their larger context.

Each child Chunk is what gets embedded; its parent_start/parent_end is what gets returned.
Children that share a parent get the identical parent span, so the retrieval layer can
deduplicate parents by span. `max_parent_tokens` trims an oversized parent to a token window
around its child, so one huge section can never flood the context.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from typing import Any

import numpy as np

from workbench.chunkers.base import ChunkEnv
from workbench.chunkers.fixed import fixed
from workbench.chunkers.markdown import section_spans
from workbench.chunkers.registry import strategy
from workbench.chunkers.sentence import covered, cut_windows, pack, sentences_of
from workbench.chunkers.units import TOKENIZER, unit_boundaries
from workbench.core.chunk import Bounds, Chunk, make_chunk, strip_span
from workbench.core.params import Param
from workbench.dataset import Document

MAX_PARENT_TOKENS = Param(0, "trim returned parents to this many tokens around the child (0 = no cap)", lo=0,
                          unit="tokens")


def cap_parent(
    text: str, parent: Bounds, child: Bounds, max_tokens: int, b: np.ndarray, count: Callable[[str], int]
) -> Bounds:
    """`parent` trimmed to at most `max_tokens` tokens (counted alone), centred on `child` and
    always containing it (a child over the cap is returned alone); unchanged when it fits.
    The document's token boundaries `b` place the window cheaply; `count` confirms it, since a
    slice can re-tokenize a little longer."""
    if not max_tokens:
        return parent
    (pa, pb), (ca, cb) = parent, child
    first, last = int(np.searchsorted(b, pa, "right")) - 1, int(np.searchsorted(b, pb, "left"))
    if last - first <= max_tokens and count(text[pa:pb]) <= max_tokens:
        return parent
    c_first, c_last = int(np.searchsorted(b, ca, "right")) - 1, int(np.searchsorted(b, cb, "left"))
    if c_last - c_first >= max_tokens:
        return child
    lo = max(first, min(c_first - (max_tokens - (c_last - c_first)) // 2, last - max_tokens))
    hi = min(last, lo + max_tokens)
    while True:
        span = strip_span(text, min(ca, max(pa, int(b[lo]))), max(cb, min(pb, int(b[hi])))) or child
        if lo >= c_first and hi <= c_last or count(text[span[0] : span[1]]) <= max_tokens:
            return span
        if c_first - lo > hi - c_last:  # drop a token from the side with more context
            lo += 1
        else:
            hi -= 1


def window_parent(sentences: list[Bounds], ends: list[int], child: Bounds, window: int) -> Bounds:
    """From `window` sentences before the child's first sentence to `window` after its last."""
    first = bisect.bisect_right(ends, child[0])  # the sentence holding the child's first char
    last = bisect.bisect_left(ends, child[1])  # ... and its last one
    return sentences[max(0, first - window)][0], sentences[min(len(sentences) - 1, last + window)][1]


def _check_parent_child(p: dict[str, Any]) -> None:
    if p["parent"] == "fixed" and p["child_size"] > p["parent_size"]:
        raise ValueError(f"parameter 'child_size' must be <= parent_size = {p['parent_size']}, got {p['child_size']}")
    if p["max_parent_tokens"] and p["max_parent_tokens"] < p["child_size"]:
        raise ValueError(
            f"parameter 'max_parent_tokens' must be 0 or >= child_size = {p['child_size']}, "
            f"got {p['max_parent_tokens']}"
        )


@strategy(
    "parent_child",
    "Embed small children (`child_size` tokens, fixed windows or packed sentences); return their "
    "parent: a `parent_size`-token fixed chunk, `window` sentences around the child, or the "
    "Markdown section. Children never straddle fixed or section parents.",
    {
        "child_size": Param(128, "child size in tokens of `tokenizer`", lo=1, label=True, unit="tokens"),
        "child": Param(
            "sentence", "how children are cut: packed whole sentences, or fixed windows", choices=("sentence", "fixed")
        ),
        "parent": Param("fixed", "what a child returns", choices=("fixed", "window", "section"), label=True),
        "parent_size": Param(512, "parent size in tokens, for parent='fixed'", lo=1, unit="tokens"),
        "window": Param(2, "sentences on each side of the child, for parent='window'", lo=0, slider_hi=10,
                        unit="sentences"),
        "max_parent_tokens": MAX_PARENT_TOKENS,
        "tokenizer": TOKENIZER,
    },
    check=_check_parent_child,
    version=2,  # 2: heading paths without MkDocs/Pandoc "{ #anchor }" attributes
)
def parent_child(
    doc: Document,
    env: ChunkEnv,
    *,
    child_size: int,
    child: str,
    parent: str,
    parent_size: int,
    window: int,
    max_parent_tokens: int,
    tokenizer: str,
) -> list[Chunk]:
    text = doc.text
    sentences = sentences_of(text)
    if parent == "fixed":
        parents = [
            (c.start, c.end, "")
            for c in fixed(doc, env, size=parent_size, overlap=0, unit="tokens", tokenizer=tokenizer)
        ]
    elif parent == "section":
        parents = section_spans(text)
    else:
        parents = [(0, len(text), "")]  # children over the whole text; each gets its own window
    ends = [e for _, e in sentences]
    b = unit_boundaries(text, "tokens", tokenizer, env)
    count = env.length_fn("tokens", tokenizer)
    out = []
    for start, end, heading in parents:
        pa, pb = strip_span(text, start, end) or (start, start)  # an empty parent holds no children
        if child == "sentence":
            children = pack(text, covered(text, sentences, pa, pb), child_size, 0, "tokens", tokenizer, env)
        else:
            children = cut_windows(text, pa, pb, child_size, "tokens", tokenizer, env)
        for c in children:
            span = window_parent(sentences, ends, c, window) if parent == "window" else (pa, pb)
            ps, pe = cap_parent(text, span, c, max_parent_tokens, b, count)
            out.append(make_chunk(doc, *c, heading=heading, parent_start=ps, parent_end=pe))
    return out


@strategy(
    "sentence_window",
    "Embed each sentence alone; return it with `window` sentences on each side "
    "(LlamaIndex's SentenceWindowNodeParser, as exact spans).",
    {
        "window": Param(3, "sentences returned on each side of the matched one", lo=0, label=True, slider_hi=10,
                        unit="sentences"),
        "max_parent_tokens": MAX_PARENT_TOKENS,
        "tokenizer": TOKENIZER,
    },
)
def sentence_window(
    doc: Document, env: ChunkEnv, *, window: int, max_parent_tokens: int, tokenizer: str
) -> list[Chunk]:
    sentences = sentences_of(doc.text)
    ends = [e for _, e in sentences]
    b = unit_boundaries(doc.text, "tokens", tokenizer, env)
    count = env.length_fn("tokens", tokenizer)
    out = []
    for s in sentences:
        ps, pe = cap_parent(doc.text, window_parent(sentences, ends, s, window), s, max_parent_tokens, b, count)
        out.append(make_chunk(doc, *s, parent_start=ps, parent_end=pe))
    return out
