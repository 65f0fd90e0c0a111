"""Chunkings built with LlamaIndex's node parsers (llama-index-core), one shape per strategy."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from workbench.chunkers.code import AUTO
from workbench.export.library import (
    HEADER,
    Attempt,
    Library,
    Model,
    Part,
    attempt,
    model_part,
    source_as_markdown,
    tokens_part,
)

NAME = "LlamaIndex"
IMPORT = "from llama_index.core.node_parser import {}"
DOCUMENT = "from llama_index.core import Document"
SPLIT = ["def chunk(text: str) -> list[str]:", '    """The chunk texts of `text`, in order."""',
         "    return SPLITTER.split_text(text)"]
NODES = ["def chunk(text: str) -> list[str]:",
         '    """The chunk texts of `text`, in order (node texts without their edge whitespace)."""',
         "    nodes = SPLITTER.get_nodes_from_documents([Document(text=text)])",
         "    return [t for n in nodes if (t := n.get_content().strip())]"]
PAIRS = ["", "", "def chunk(text: str) -> list[str]:", '    """The chunk texts of `text`, in order."""',
         "    return [c for c, _ in pairs(text)]", "", "",
         "def parents(text: str) -> list[str]:", '    """What each chunk hands the LLM in its place."""',
         "    return [parent for _, parent in pairs(text)]"]  # after a `pairs(text)` -> [(chunk, parent)]
SENTENCES = ("the workbench ends a sentence at every line break and knows e.g., i.e., vs, cf, fig, al and approx as "
             "abbreviations; LlamaIndex runs punkt untrained, then its own regex")
PACKING = ("how sentences pack: SentenceSplitter splits paragraphs first, then sentences, words and characters, "
           "and merges them by their summed token counts; the workbench packs whole sentences by a chunk's own "
           "tokens and cuts a sentence over the size into windows")
WORDS = "TokenTextSplitter cuts between words (at spaces, then line breaks), the workbench every {} units"
EMBEDDING = '''SENTENCE_MODEL = SentenceTransformer(str(MODEL), device="cpu")  # the embedding model the sweep ran


class Embedding(BaseEmbedding):
    """The sentence-transformers model as LlamaIndex calls it, its vectors L2-normalised as the workbench's."""

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return SENTENCE_MODEL.encode(texts, batch_size=32, normalize_embeddings=True).tolist()

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embeddings([text])[0]

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._get_text_embedding(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_text_embedding(query)'''


def _tokenizer(p: Mapping[str, Any], model: Model) -> tuple[Part, str]:
    """The `tokens` function sizes are counted with, and the tokenizer argument that passes it."""
    if p.get("unit", "tokens") == "chars":
        return Part(), "tokenizer=list"  # one token per character
    return tokens_part("tokens", p["tokenizer"], model), "tokenizer=tokens"


def _splitter(kind: str, size: int, overlap: int, tokenizer: str) -> str:
    return f"{kind}(chunk_size={size}, chunk_overlap={overlap}, {tokenizer})"


def fixed(p: Mapping[str, Any], model: Model) -> Attempt:
    part, tokenizer = _tokenizer(p, model)
    return attempt(part + Part(
        imports=(IMPORT.format("TokenTextSplitter"),),
        setup=(f"SPLITTER = {_splitter('TokenTextSplitter', p['size'], p['overlap'], tokenizer)}",),
        gaps=("size: " + WORDS.format("size"),)), SPLIT)


def recursive(p: Mapping[str, Any], model: Model) -> Attempt:
    part, tokenizer = _tokenizer(p, model)
    return attempt(part + Part(
        imports=(IMPORT.format("SentenceSplitter"),),
        setup=(f"SPLITTER = SentenceSplitter(chunk_size={p['size']}, chunk_overlap={p['overlap']}, "
               f'paragraph_separator="\\n\\n", {tokenizer})',),
        gaps=("separators: LlamaIndex has no splitter over a list of separators; SentenceSplitter splits "
              "paragraphs, then sentences, then words", PACKING)), SPLIT)


def sentence(p: Mapping[str, Any], model: Model) -> Attempt:
    part, tokenizer = _tokenizer(p, model)
    gaps = ("sentences: " + SENTENCES, PACKING)
    if p["overlap"]:
        gaps += ("overlap: the workbench repeats whole sentences, SentenceSplitter's chunk_overlap counts tokens",)
    return attempt(part + Part(
        imports=(IMPORT.format("SentenceSplitter"),),
        setup=(f"SPLITTER = {_splitter('SentenceSplitter', p['size'], 0, tokenizer)}",), gaps=gaps), SPLIT)


def markdown(p: Mapping[str, Any], model: Model) -> Attempt:
    part, tokenizer = _tokenizer(p, model)
    part += Part(
        imports=(DOCUMENT, IMPORT.format("MarkdownNodeParser, SentenceSplitter")),
        setup=("SECTIONS = MarkdownNodeParser()  # one node per heading's section",
               f"SPLITTER = {_splitter('SentenceSplitter', p['size'], p['overlap'], tokenizer)}"),
        gaps=(f"max_heading_level={p['max_heading_level']}: MarkdownNodeParser starts a section at every heading",
              "long sections: LlamaIndex packs their sentences, the workbench splits them like recursive with the "
              "Markdown separators, keeping tables and code blocks whole while they fit",
              source_as_markdown(NAME)))
    body = ["def chunk(text: str) -> list[str]:", '    """The chunk texts of `text`: each section packed in turn."""',
            "    sections = SECTIONS.get_nodes_from_documents([Document(text=text)])",
            "    return [t for n in SPLITTER.get_nodes_from_documents(sections) if (t := n.get_content().strip())]"]
    return attempt(part, body)


def semantic(p: Mapping[str, Any], model: Model) -> Attempt:
    gaps = () if p["sentences"] == "llamaindex" else (f"sentences={p['sentences']!r}: {SENTENCES}",)
    gaps += tuple(f"{k}={p[k]}: SemanticSplitterNodeParser has no size limit" for k in ("min_size", "max_size") if p[k])
    return attempt(model_part(model) + Part(
        imports=(DOCUMENT, "from llama_index.core.embeddings import BaseEmbedding",
                 IMPORT.format("SemanticSplitterNodeParser"), "from sentence_transformers import SentenceTransformer"),
        definitions=(EMBEDDING,),
        setup=(f"SPLITTER = SemanticSplitterNodeParser(buffer_size={p['buffer_size']}, "
               f"breakpoint_percentile_threshold={p['breakpoint_percentile']}, "
               "embed_model=Embedding(embed_batch_size=32))",), gaps=gaps), NODES)


def code(p: Mapping[str, Any], model: Model) -> Attempt:
    part, tokenizer = _tokenizer(p, model)
    gaps = ("the syntax tree: the workbench merges small siblings up to the size and splits a bigger node by its "
            "children, then lines; CodeSplitter adds children until the next would overflow",)
    if p["header"]:
        gaps += (HEADER,)
    size = "max_chars=SIZE" if p["unit"] == "chars" else f'count_mode="token", max_tokens=SIZE, {tokenizer}'
    language = "language" if p["language"] == AUTO else repr(p["language"])
    part += Part(imports=(IMPORT.format("CodeSplitter, SentenceSplitter"),), packages=("tree-sitter-language-pack",),
                 setup=(f"SIZE = {p['size']}", f"TEXT = {_splitter('SentenceSplitter', 'SIZE', 0, tokenizer)}  # text "
                        "in no language"), gaps=gaps)
    body = ["def chunk(text: str, language: str | None = None) -> list[str]:",
            '    """The chunk texts of `text`, source code in `language` (a tree-sitter grammar\'s name)."""',
            f"    if {language} is None:", "        return TEXT.split_text(text)",
            f"    splitter = CodeSplitter(language={language}, {size})",
            "    return [t for piece in splitter.split_text(text) if (t := piece.strip())]"]
    return attempt(part, body)


def parent_child(p: Mapping[str, Any], model: Model) -> Attempt:
    """Parents, then children inside each: HierarchicalNodeParser with one parser per level."""
    capped = (f"max_parent_tokens={p['max_parent_tokens']}: LlamaIndex returns the whole parent",
              ) if p["max_parent_tokens"] else ()
    if p["parent"] == "window":
        return _windows(p["window"], (*capped, f"child_size={p['child_size']}: SentenceWindowNodeParser's "
                                                "children are single sentences"))
    part, tokenizer = _tokenizer(p, model)
    if p["child"] == "sentence":
        children, gaps = _splitter("SentenceSplitter", p["child_size"], 0, tokenizer), ("sentences: " + SENTENCES,
                                                                                           PACKING)
    else:
        children, gaps = _splitter("TokenTextSplitter", p["child_size"], 0, tokenizer), (
            "child='fixed': " + WORDS.format("child_size"),)
    if p["parent"] == "section":
        parents = "MarkdownNodeParser()"
        gaps += ("parent='section': MarkdownNodeParser starts a section at every heading, the workbench joins a "
                 "heading with no text of its own to its first subsection",)
    else:
        parents = _splitter("TokenTextSplitter", p["parent_size"], 0, tokenizer)
        gaps += ("parent='fixed': " + WORDS.format("parent_size"),)
    part += Part(
        imports=(DOCUMENT, IMPORT.format("HierarchicalNodeParser, MarkdownNodeParser, SentenceSplitter, "
                                         "TokenTextSplitter, get_leaf_nodes")),
        setup=("PARSER = HierarchicalNodeParser.from_defaults(node_parser_ids=['parents', 'children'], "
               f"node_parser_map={{'parents': {parents}, 'children': {children}}})",), gaps=(*gaps, *capped))
    body = ["def pairs(text: str) -> list[tuple[str, str]]:",
            '    """(child, parent) for every leaf, in order: the children are embedded, the parents returned."""',
            "    nodes = PARSER.get_nodes_from_documents([Document(text=text)])",
            "    by_id = {n.node_id: n for n in nodes}",
            "    return [(leaf.get_content().strip(), by_id[leaf.parent_node.node_id].get_content().strip())",
            "            for leaf in get_leaf_nodes(nodes)]", *PAIRS]
    return attempt(part, body)


def _windows(window: int, gaps: tuple[str, ...]) -> Attempt:
    """Each sentence a chunk, returning `window` sentences on each side: SentenceWindowNodeParser."""
    part = Part(imports=(DOCUMENT, IMPORT.format("SentenceWindowNodeParser")),
                setup=(f"PARSER = SentenceWindowNodeParser.from_defaults(window_size={window})",),
                gaps=("sentences: " + SENTENCES, "the window: LlamaIndex joins its sentences with spaces, the "
                      "workbench returns the span of the source they cover", *gaps))
    body = ["def pairs(text: str) -> list[tuple[str, str]]:",
            '    """(sentence, window) for every sentence, in order: the sentence is embedded, the window returned."""',
            "    nodes = PARSER.get_nodes_from_documents([Document(text=text)])",
            '    return [(t, n.metadata["window"].strip()) for n in nodes if (t := n.get_content().strip())]', *PAIRS]
    return attempt(part, body)


def sentence_window(p: Mapping[str, Any], model: Model) -> Attempt:
    capped = (f"max_parent_tokens={p['max_parent_tokens']}: LlamaIndex returns the whole window",
              ) if p["max_parent_tokens"] else ()
    return _windows(p["window"], capped)


def llamaindex_sentence(p: Mapping[str, Any], model: Model) -> Attempt:
    """The workbench's adapter of this very parser: the same construction."""
    return attempt(Part(imports=(IMPORT.format("SentenceSplitter"),), setup=(
        f"SPLITTER = SentenceSplitter(chunk_size={p['chunk_size']}, chunk_overlap={p['chunk_overlap']})",)), SPLIT)


LIBRARY = Library(NAME, "llama_index.core", "llama-index-core", {
    "fixed": fixed, "recursive": recursive, "sentence": sentence, "markdown": markdown, "semantic": semantic,
    "code": code, "parent_child": parent_child, "sentence_window": sentence_window,
    "llamaindex_sentence": llamaindex_sentence,
})
