"""Contextual retrieval (Anthropic, 2024): an LLM reads a chunk's document and writes one or two
sentences that situate the chunk in it; they are embedded and indexed for BM25 above the chunk's
text (Chunk.context, Chunk.embed_text), while what a search returns stays the chunk's span.

Window: a document longer than `doc_tokens` (cl100k_base tokens, the unit of context cost, so a
cached run never loads the LLM's tokenizer) is read in fixed, consecutive windows of that many
tokens, and a chunk reads the window holding its first character (its own text is in the prompt in
full anyway). Fixed windows rather than one centred on each chunk, so that all the chunks of a
window open their prompts with it and the LLM reads it once (LLM.generate's `shared`).

The contexts' model cost (tokens generated, seconds, as each generation cost when it was made, so
a cached re-run reports what the contexts cost, not zero) goes in the index cost beside the
chunks' context cost, in the columns every index-time LLM fills (index_tokens_generated,
index_llm_seconds: workbench.retrieval.index.build_index).
"""

from __future__ import annotations

import hashlib
from bisect import bisect_right
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from workbench.core.chunk import Chunk
from workbench.core.tokens import TiktokenTokenizer
from workbench.dataset import Document
from workbench.models.llm import LLM, Prompt, llm_fingerprint

# Anthropic's contextual retrieval prompt. Its name and version name every generation and the
# index entries of +context variants (context_fingerprint): bump the version when the wording changes.
CONTEXT = Prompt(
    "chunk-context", 1,
    "<document>\n{document}\n</document>\nHere is the chunk we want to situate within the whole document\n"
    "<chunk>\n{chunk}\n</chunk>\nPlease give a short succinct context to situate this chunk within the overall "
    "document for the purposes of improving search retrieval of the chunk. Answer only with the succinct context "
    "and nothing else.")


def context_fingerprint(params: Mapping[str, Any]) -> str:
    """What names a +context variant's entries besides its key (which names the LLM by its spec):
    the LLM's files (or endpoint) and the prompt's version, so another model or prompt never serves
    old contexts. Raises ValueError naming `model` when it names no LLM; loads nothing."""
    try:
        fingerprint = llm_fingerprint(params["model"])
    except ValueError as e:
        raise ValueError(f"+context parameter 'model': {e}") from None
    return hashlib.sha256(f"{fingerprint}-{CONTEXT.name}-v{CONTEXT.version}".encode()).hexdigest()[:12]


def windows(doc: Document, chunks: Sequence[Chunk], doc_tokens: int) -> list[str]:
    """The text of `doc` each chunk reads: the whole document, or its window (module docstring)."""
    b = TiktokenTokenizer().boundaries(doc.text).tolist()
    n = len(b) - 1
    if n <= doc_tokens:
        return [doc.text] * len(chunks)
    out = []
    for c in chunks:
        w = (bisect_right(b, c.start) - 1) // doc_tokens
        out.append(doc.text[b[w * doc_tokens] : b[min((w + 1) * doc_tokens, n)]])
    return out


def context_items(docs: Mapping[str, Document], chunks: Sequence[Chunk], doc_tokens: int) -> list[dict[str, str]]:
    """The CONTEXT prompt's inputs, one per chunk: the document (or window) it reads, and its text."""
    rows: dict[str, list[int]] = {}
    for i, c in enumerate(chunks):
        rows.setdefault(c.doc_id, []).append(i)
    read = [""] * len(chunks)
    for doc_id, idx in rows.items():
        for i, text in zip(idx, windows(docs[doc_id], [chunks[i] for i in idx], doc_tokens), strict=True):
            read[i] = text
    return [{"document": w, "chunk": c.text} for w, c in zip(read, chunks, strict=True)]


def contextualize(docs: Mapping[str, Document], chunks: Sequence[Chunk], llm: LLM, *, doc_tokens: int,
                  max_tokens: int, reuse: bool = True, stop: Callable[[], bool] | None = None,
                  ) -> tuple[list[Chunk], dict[str, Any]]:
    """Each chunk with its context (in `context`, and above its embedded text), and their model cost
    as ChunkEnv.llm_cost counts an LLM chunker's ("tokens_generated", "llm_seconds"): one index cost.
    `reuse`: read each window once for all its chunks (False: once per chunk; the same text). `stop`:
    asked between batches (LLM.generate)."""
    made = llm.generate(CONTEXT, context_items(docs, chunks, doc_tokens), max_tokens=max_tokens,
                        desc="chunk contexts", shared="document" if reuse else None, stop=stop)
    out = [replace(c, context=g.value, embed_text=f"{g.value}\n\n{c.embed_text or c.text}" if g.value else c.embed_text)
           for c, g in zip(chunks, made, strict=True)]
    cost = {"tokens_generated": sum(g.generated_tokens for g in made), "llm_seconds": sum(g.seconds for g in made)}
    return out, cost
