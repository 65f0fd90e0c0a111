"""The grid a sweep runs when none is given, built from the corpus and the model's window.

The rule: every variant that embeds its chunks is sized in the model's own tokens (tokenizer=model)
and never over WINDOW_SHARE of the window it reads, so no default variant is judged by the heads
of truncated chunks (what is embedded above a chunk, the code strategy's header, counts inside
its size). Bigger chunks are shown by BM25, which reads a chunk whole; LangChain's splitter, which
counts cl100k tokens only, gets two thirds of the size (a cl100k token is more than one word
piece of a model's vocabulary, up to about one and a half on source code). A corpus with source
code gets `code`, one with Markdown or reStructuredText gets `markdown`, and one with both a route
giving each its own. A model without a window (static embeddings) reads whole texts: sizes are
then 256 cl100k tokens.
"""

from __future__ import annotations

from workbench.dataset import Dataset
from workbench.variant import Variant, parse_variant

WINDOW_SHARE = 0.94  # a chunk re-tokenized alone may gain a word piece at each edge: room for a few
MARKED = ("markdown", "rst")  # the kinds of document the markdown strategy reads as meant


def default_grid(dataset: Dataset, window: int | None) -> list[Variant]:
    """The variants a sweep of `dataset` runs when none is given (see the module docstring).

    >>> [v.label for v in default_grid(Dataset("d", (), ()), 254)][:2]
    ['fixed(size=119, overlap=0, tokenizer=model)', 'fixed(size=238, overlap=0, tokenizer=model)']
    """
    size = int(window * WINDOW_SHARE) if window else 256
    sized = f"tokenizer={'model' if window else 'cl100k_base'}"
    rows = [
        f"fixed:size={size // 2},{sized}",
        f"fixed:size={size},{sized}",
        f"fixed:size={size},overlap={size // 4},{sized}",
        f"fixed:size={2 * size},{sized}+bm25",
        f"fixed:size={size},{sized}+bm25",
        f"fixed:size={size},{sized}+hybrid",
        f"recursive:size={size},{sized}",
        f"langchain_recursive:chunk_size={2 * size // 3}",
        f"sentence:size={size},{sized}",
        f"semantic:breakpoint_percentile=80,max_size={size},{sized}",
        f"semantic:breakpoint_percentile=95,max_size={size},{sized}",
    ]
    code = any(d.language for d in dataset.documents)
    marked = any(d.kind in MARKED for d in dataset.documents)
    if code:
        rows.append(f"code:size={size},{sized}")
    if marked:
        rows.append(f"markdown:size={size},{sized}")
    if code and any(not d.language for d in dataset.documents):
        text = "markdown" if marked else "recursive"
        rows.append(f"route:code=code(size={size}, {sized}),text={text}(size={size}, {sized})")
    return [parse_variant(r) for r in rows]
