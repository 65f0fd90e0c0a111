"""The plain-Python export: the workbench's own chunker, copied with everything it calls.

Nothing is rewritten: the strategy's function and what it reads are copied from the workbench's
source (workbench.export.bundle), so the file cuts what the workbench cuts, and it imports only the
libraries that chunker imports (tiktoken, NLTK, tokenizers, tree-sitter-language-pack,
markdown-it-py, numpy; sentence-transformers for semantic's embeddings), never `workbench`.
"""

from __future__ import annotations

from workbench.chunkers import ChunkEnv
from workbench.core import offline, tokens
from workbench.dataset import Document
from workbench.export import standalone
from workbench.export.bundle import bundle
from workbench.export.library import Model, model_part
from workbench.export.snippet import PARENTS, Snippet, document_args
from workbench.models.onnx import JsonTokenizer
from workbench.variant import Variant

STAND_INS = {ChunkEnv: standalone.ChunkEnv, Document: standalone.Document,
             tokens.tiktoken_encoding: standalone.tiktoken_encoding,
             offline.use_bundled_nltk_data: standalone.use_bundled_nltk_data}
NO_EXPORT = {"route": "it chunks each kind of document by another strategy: export those one by one"}


def python_snippet(variant: Variant, model: Model) -> Snippet:
    """The file that chunks as `variant` does; `model` is the embedding model (its tokenizer counts
    tokenizer="model"; semantic embeds with it)."""
    strategy = variant.strategy_entry()
    if strategy.models:
        raise ValueError(f"export: strategy {strategy.name!r} has an LLM write its chunks; a plain-Python file "
                         "cannot reproduce them")
    if strategy.name in NO_EXPORT or strategy.replaceable:
        why = NO_EXPORT.get(strategy.name, "it is a user's function, already plain Python")
        raise ValueError(f"export: strategy {strategy.name!r} has no plain-Python export: {why}")
    roots = [strategy.fn, standalone.ChunkEnv, standalone.Document]
    env = []
    if variant.kwargs.get("tokenizer") == tokens.MODEL_TOKENIZER:
        roots.append(JsonTokenizer)
        env.append("model_tokenizer=JsonTokenizer(MODEL)")
    if strategy.embeds:
        roots.append(standalone.embedder)
        env.append("embed=embedder(str(MODEL))")
    named = model_part(model) if env else None
    args = document_args(strategy)
    signature = "".join(f", {a}: str | None = None" for a in args)
    call = "".join(f", {a}={a}" for a in args)
    setup = [*(named.definitions if named else ()), f"PARAMS = {variant.kwargs!r}  # {variant.label}, every parameter"]
    body = [
        f"def chunks(text: str{signature}) -> list[Chunk]:",
        '    """The workbench\'s chunks of `text`: spans of it, with their text (and heading, and the span',
        '    handed back in their place, if any)."""',
        f'    doc = Document("document", "", text{call})',
        f"    return {strategy.fn.__name__}(doc, ChunkEnv({', '.join(env)}), **PARAMS)",
        "", "",
        f"def chunk(text: str{signature}) -> list[str]:",
        '    """The chunk texts of `text`, in order."""',
        f"    return [c.text for c in chunks(text{call})]",
    ]
    if strategy.name in PARENTS:
        body += ["", "", f"def parents(text: str{signature}) -> list[str]:",
                 '    """What each chunk hands the LLM in its place (its parent), in chunk order."""',
                 f"    return [text[c.parent_start : c.parent_end] for c in chunks(text{call})]"]
    return Snippet(bundle(roots, STAND_INS, named.imports if named else ()), setup, body)
