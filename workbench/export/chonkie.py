"""Chunkings built with Chonkie's chunkers, one shape per strategy."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from workbench.chunkers.code import AUTO
from workbench.chunkers.recursive import PRESETS
from workbench.core.tokens import MODEL_TOKENIZER
from workbench.export.library import (
    HEADER,
    MODEL_TOKENS,
    Attempt,
    Library,
    Model,
    Part,
    attempt,
    blank_window,
    decoded_word_pieces,
    model_part,
    source_as_markdown,
    split_character,
)

NAME = "Chonkie"
IMPORT = "from chonkie import {}"
STRIPPED = ["def chunk(text: str) -> list[str]:",
            '    """The chunk texts of `text`, in order, without their edge whitespace (as the workbench\'s)."""',
            "    return [t for c in CHUNKER.chunk(text) if (t := c.text.strip())]"]
MERGE = ("how pieces merge: Chonkie merges the pieces of one level by their summed token counts and never across "
         "a piece it split again; the workbench merges neighbours by a chunk's own tokens")


def _tokenizer(p: Mapping[str, Any], model: Model) -> Part:
    """TOKENIZER: what Chonkie counts sizes with, as the workbench counts them."""
    if p.get("unit", "tokens") == "chars":
        return Part(definitions=('TOKENIZER = "character"',))
    if p["tokenizer"] == MODEL_TOKENIZER:
        return model_part(model) + Part(imports=("from tokenizers import Tokenizer",), definitions=(MODEL_TOKENS,))
    # an Encoding, not its name: Chonkie would fetch the name's tokenizer from the Hugging Face Hub
    return Part(imports=("import tiktoken",), definitions=(
        f'TOKENIZER = tiktoken.get_encoding("{p["tokenizer"]}")  # tiktoken downloads it once (TIKTOKEN_CACHE_DIR: '
        "a folder holding it)",))


def fixed(p: Mapping[str, Any], model: Model) -> Attempt:
    gaps = [blank_window(NAME)]
    if p["unit"] == "tokens":
        gaps.append(decoded_word_pieces(NAME) if p["tokenizer"] == MODEL_TOKENIZER else split_character(NAME))
    part = _tokenizer(p, model) + Part(imports=(IMPORT.format("TokenChunker"),), gaps=tuple(gaps), setup=(
        f"CHUNKER = TokenChunker(tokenizer=TOKENIZER, chunk_size={p['size']}, chunk_overlap={p['overlap']})",))
    body = ["def chunk(text: str) -> list[str]:", '    """The chunk texts of `text`, in order."""',
            "    return [c.text for c in CHUNKER.chunk(text)]"]
    return attempt(part, body)


def _levels(separators: tuple[str, ...]) -> str:
    """RecursiveRules levels for the workbench's separators, coarsest first: whole separators at
    the end of their piece ("prev"), a space as Chonkie's whitespace level."""
    levels = [f"RecursiveLevel(delimiters=[{s!r}], include_delim='prev')" for s in separators if s != " "]
    if " " in separators:
        levels.append("RecursiveLevel(whitespace=True)")
    return "RecursiveRules(levels=[\n    " + ",\n    ".join(levels) + ",\n])"


def _recursive(separators: tuple[str, ...], p: Mapping[str, Any], model: Model, gaps: tuple[str, ...]) -> Attempt:
    extra = ((f"overlap={p['overlap']}: Chonkie's RecursiveChunker has no overlap",) if p["overlap"] else ())
    part = _tokenizer(p, model) + Part(
        imports=(IMPORT.format("RecursiveChunker, RecursiveLevel, RecursiveRules"),),
        setup=(f"RULES = {_levels(separators)}", f"CHUNKER = RecursiveChunker(tokenizer=TOKENIZER, "
               f"chunk_size={p['size']}, rules=RULES, min_characters_per_chunk=1)"),
        gaps=("separators: Chonkie cuts after a whole separator (\". \" leaves the space with the sentence before; "
              "the workbench leaves it with the next)", MERGE, *gaps, *extra))
    return attempt(part, STRIPPED)


def recursive(p: Mapping[str, Any], model: Model) -> Attempt:
    return _recursive(p["custom_separators"] or PRESETS[p["separators"]], p, model, ())


def markdown(p: Mapping[str, Any], model: Model) -> Attempt:
    return _recursive(PRESETS["markdown"], p, model, (
        f"sections: no workbench chunk crosses a heading of level {p['max_heading_level']} or less; Chonkie cuts at "
        "headings first but merges across them",
        "tables and code blocks: the workbench keeps each whole while it fits",
        source_as_markdown(NAME)))


def sentence(p: Mapping[str, Any], model: Model) -> Attempt:
    gaps = ["sentences: the workbench splits them with punkt (abbreviations, decimals) and at every line break; "
            "Chonkie at '. ', '! ', '? ' and line breaks",
            "a sentence over the size: the workbench cuts it into windows, Chonkie keeps it whole"]
    if p["overlap"]:
        gaps.append("overlap: the workbench repeats whole sentences, Chonkie's chunk_overlap counts tokens")
    part = _tokenizer(p, model) + Part(imports=(IMPORT.format("SentenceChunker"),), gaps=tuple(gaps), setup=(
        f"CHUNKER = SentenceChunker(tokenizer=TOKENIZER, chunk_size={p['size']}, chunk_overlap=0, "
        "min_characters_per_sentence=1)",))
    return attempt(part, STRIPPED)


def semantic(p: Mapping[str, Any], model: Model) -> Attempt:
    return Attempt(None, (f"breakpoint_percentile={p['breakpoint_percentile']:g}: Chonkie's SemanticChunker cuts "
                          "where the similarity of sentence windows falls below a fixed threshold, after smoothing, "
                          "never at a percentile of the document's distances",))


def code(p: Mapping[str, Any], model: Model) -> Attempt:
    gaps = ["the syntax tree: the workbench keeps comments with the node below them and splits an over-size node "
            "by its children down to lines; Chonkie groups a node's children by their summed token counts"]
    if p["header"]:
        gaps.append(HEADER)
    part = _tokenizer(p, model) + Part(
        imports=(IMPORT.format("CodeChunker, RecursiveChunker"),), packages=("tree-sitter-language-pack",),
        setup=(f"SIZE = {p['size']}", "TEXT = RecursiveChunker(tokenizer=TOKENIZER, chunk_size=SIZE)  # text in no "
               "language"), gaps=tuple(gaps))
    language = "language" if p["language"] == AUTO else repr(p["language"])
    body = ["def chunk(text: str, language: str | None = None) -> list[str]:",
            '    """The chunk texts of `text`, source code in `language` (a tree-sitter grammar\'s name)."""',
            f"    chunker = TEXT if {language} is None else CodeChunker(tokenizer=TOKENIZER, chunk_size=SIZE, "
            f"language={language})",
            "    return [t for c in chunker.chunk(text) if (t := c.text.strip())]"]
    return attempt(part, body)


def parent_child(p: Mapping[str, Any], model: Model) -> Attempt:
    return Attempt(None, (f"parent={p['parent']!r}: Chonkie's chunks return themselves; it has no parent to hand "
                          "back in a chunk's place",))


LIBRARY = Library(NAME, "chonkie", "chonkie", {
    "fixed": fixed, "recursive": recursive, "sentence": sentence, "markdown": markdown, "semantic": semantic,
    "code": code, "parent_child": parent_child,
})
