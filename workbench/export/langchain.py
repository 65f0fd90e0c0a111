"""Chunkings built with LangChain's text splitters (langchain-text-splitters), one shape per strategy."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from workbench.chunkers.code import AUTO
from workbench.chunkers.recursive import PRESETS, _separator
from workbench.core.tokens import MODEL_TOKENIZER
from workbench.export.library import (
    HEADER,
    Attempt,
    Library,
    Model,
    Part,
    attempt,
    blank_window,
    decoded_word_pieces,
    source_as_markdown,
    split_character,
    tokens_part,
)

IMPORT = "from langchain_text_splitters import {}"
CHUNK = ["def chunk(text: str) -> list[str]:", '    """The chunk texts of `text`, in order."""',
         "    return SPLITTER.split_text(text)"]
NAME = "LangChain"
BLANK = blank_window(NAME)
MERGE = ("how pieces merge: LangChain merges the pieces of a piece it splits again only with each other, the "
         "workbench with the pieces around it too")
SUMMED = ("unit=tokens: LangChain adds up its pieces' token counts, the workbench counts a chunk's own tokens (a "
          "word cut between two pieces counts twice in LangChain)")
LANGUAGES = {"python": "PYTHON", "javascript": "JS", "typescript": "TS", "tsx": "TS", "jsx": "JS", "go": "GO",
             "rust": "RUST", "java": "JAVA", "c": "C", "cpp": "CPP", "csharp": "CSHARP", "ruby": "RUBY",
             "php": "PHP"}  # tree-sitter grammar -> langchain_text_splitters.Language
WINDOWS = '''class _Windows:
    """LangChain's token windows (split_text_on_tokens) over the model's word pieces, as a splitter."""

    def split_text(self, text: str) -> list[str]:
        windows = TokenWindows(chunk_overlap={overlap}, tokens_per_chunk={size}, decode=TOKENIZER.decode,
                               encode=tokens)
        return split_text_on_tokens(text=text, tokenizer=windows)'''


def _sized(p: Mapping[str, Any]) -> tuple[str, ...]:
    return (SUMMED,) if p.get("unit", "tokens") == "tokens" else ()


def _fixed(p: Mapping[str, Any], model: Model, name: str = "SPLITTER") -> Part:
    """`name` = the splitter that cuts windows of p["size"] units, repeating p["overlap"]."""
    size, overlap = p["size"], p["overlap"]
    if p["unit"] == "chars":
        return Part(imports=(IMPORT.format("CharacterTextSplitter"),), gaps=(BLANK,), setup=(
            f'{name} = CharacterTextSplitter(separator="", chunk_size={size}, chunk_overlap={overlap}, '
            "strip_whitespace=False)",))
    if p["tokenizer"] == MODEL_TOKENIZER:
        return tokens_part("tokens", MODEL_TOKENIZER, model) + Part(
            imports=(IMPORT.format("Tokenizer as TokenWindows, split_text_on_tokens"),),
            definitions=(WINDOWS.format(size=size, overlap=overlap),), setup=(f"{name} = _Windows()",),
            gaps=(decoded_word_pieces(NAME), BLANK))
    return Part(imports=(IMPORT.format("TokenTextSplitter"),), packages=("tiktoken",), setup=(
        f'{name} = TokenTextSplitter(encoding_name="{p["tokenizer"]}", chunk_size={size}, chunk_overlap={overlap}, '
        "disallowed_special=())",), gaps=(split_character(NAME), BLANK))


def fixed(p: Mapping[str, Any], model: Model) -> Attempt:
    return attempt(_fixed(p, model), CHUNK)


def _regex(sep: str) -> str:
    """A zero-width pattern cutting where the workbench cuts at `sep`: after its leading run of
    whitespace or marks (so ". " leaves the full stop with its sentence, "\\n## " opens the next piece)."""
    off = _separator(sep)[1]
    return (f"(?<={re.escape(sep[:off])})" if off else "") + (f"(?={re.escape(sep[off:])})" if sep[off:] else "")


def recursive(p: Mapping[str, Any], model: Model) -> Attempt:
    cuts = [*(_regex(s) for s in p["custom_separators"] or PRESETS[p["separators"]]), ""]  # "": characters, last
    return attempt(tokens_part(p["unit"], p["tokenizer"], model) + Part(
        imports=(IMPORT.format("RecursiveCharacterTextSplitter"),), gaps=(MERGE, *_sized(p)), setup=(
            f"SEPARATORS = {cuts!r}  # zero-width: cut where the workbench cuts, coarsest first",
            "SPLITTER = RecursiveCharacterTextSplitter(separators=SEPARATORS, is_separator_regex=True, "
            f"keep_separator=True, chunk_size={p['size']}, chunk_overlap={p['overlap']}, length_function=length)")),
        CHUNK)


def _sentence(p: Mapping[str, Any], model: Model, size: int, overlap: int, name: str = "SPLITTER") -> Part:
    """`name` = NLTK's punkt sentences packed up to `size` units."""
    gaps = ("sentences: the workbench ends one at every line break and knows e.g., i.e., vs, cf, fig, al and approx "
            "as abbreviations; LangChain's NLTKTextSplitter runs punkt alone",
            "a sentence over the size: the workbench cuts it into windows, LangChain keeps it whole")
    if overlap:
        gaps += ("overlap: the workbench repeats whole sentences, LangChain's chunk_overlap counts units",)
    return tokens_part(p.get("unit", "tokens"), p["tokenizer"], model) + Part(
        imports=(IMPORT.format("NLTKTextSplitter"),), packages=("nltk",), gaps=(*gaps, *_sized(p)), setup=(
            f'{name} = NLTKTextSplitter(separator="", use_span_tokenize=True, chunk_size={size}, chunk_overlap=0, '
            'length_function=length)  # punkt reads NLTK\'s punkt_tab: nltk.download("punkt_tab")',))


def sentence(p: Mapping[str, Any], model: Model) -> Attempt:
    return attempt(_sentence(p, model, p["size"], p["overlap"]), CHUNK)


def markdown(p: Mapping[str, Any], model: Model) -> Attempt:
    return attempt(tokens_part(p["unit"], p["tokenizer"], model) + Part(
        imports=(IMPORT.format("Language, RecursiveCharacterTextSplitter"),), setup=(
            "SPLITTER = RecursiveCharacterTextSplitter.from_language(Language.MARKDOWN, "
            f"chunk_size={p['size']}, chunk_overlap={p['overlap']}, length_function=length)",), gaps=(
            f"sections: no workbench chunk crosses a heading of level {p['max_heading_level']} or less; LangChain "
            "prefers to cut at headings but merges across them",
            "tables and code blocks: the workbench keeps each whole while it fits, LangChain cuts them at blank lines",
            source_as_markdown(NAME), MERGE, *_sized(p))), CHUNK)


def semantic(p: Mapping[str, Any], model: Model) -> Attempt:
    return Attempt(None, (f"breakpoint_percentile={p['breakpoint_percentile']:g}: langchain-text-splitters has no "
                          "semantic splitter (langchain-experimental's SemanticChunker joins a chunk's sentences with "
                          "spaces: its chunks are not spans of the text)",))


def code(p: Mapping[str, Any], model: Model) -> Attempt:
    languages = ", ".join(f"{k!r}: Language.{v}" for k, v in LANGUAGES.items())
    gaps = ["the syntax tree: the workbench keeps a function, class or method whole while it fits and splits a bigger "
            "one by its children (tree-sitter); LangChain cuts at separators ('\\nclass ', '\\ndef ', ...)"]
    if p["header"]:
        gaps.append(HEADER)
    part = tokens_part(p["unit"], p["tokenizer"], model) + Part(
        imports=(IMPORT.format("Language, RecursiveCharacterTextSplitter"),), definitions=(
            f"LANGUAGES = {{{languages}}}",), setup=(f"SIZE = {p['size']}",), gaps=(*gaps, MERGE, *_sized(p)))
    language = "language" if p["language"] == AUTO else repr(p["language"])
    body = ["def chunk(text: str, language: str | None = None) -> list[str]:",
            '    """The chunk texts of `text`, source code in `language` (a tree-sitter grammar\'s name)."""',
            f"    if {language} in LANGUAGES:",
            f"        splitter = RecursiveCharacterTextSplitter.from_language(LANGUAGES[{language}], chunk_size=SIZE, "
            "chunk_overlap=0, length_function=length)",
            "    else:  # text in no language: blank lines, then lines",
            '        splitter = RecursiveCharacterTextSplitter(separators=["\\n\\n", "\\n", " "], chunk_size=SIZE, '
            "chunk_overlap=0, length_function=length)",
            "    return splitter.split_text(text)"]
    return attempt(part, body)


def parent_child(p: Mapping[str, Any], model: Model) -> Attempt:
    """Parents by one splitter, children by another inside each: what LangChain's ParentDocumentRetriever does."""
    if p["parent"] != "fixed":
        return Attempt(None, (f"parent={p['parent']!r}: LangChain's ParentDocumentRetriever takes parents from a "
                              "splitter, never the sentences around a child nor a Markdown section",))
    sized = {"overlap": 0, "unit": "tokens", "tokenizer": p["tokenizer"]}
    parents = _fixed(sized | {"size": p["parent_size"]}, model, "PARENTS")
    children = (_sentence(p, model, p["child_size"], 0, "CHILDREN") if p["child"] == "sentence"
                else _fixed(sized | {"size": p["child_size"]}, model, "CHILDREN"))
    capped = ("max_parent_tokens: LangChain returns the whole parent",) if p["max_parent_tokens"] else ()
    body = ["def pairs(text: str) -> list[tuple[str, str]]:",
            '    """(child, parent) for every child, in order: the children are embedded, the parents returned."""',
            "    return [(c, parent) for parent in PARENTS.split_text(text) for c in CHILDREN.split_text(parent)]",
            "", "",
            "def chunk(text: str) -> list[str]:", '    """The chunk texts (the children) of `text`, in order."""',
            "    return [c for c, _ in pairs(text)]", "", "",
            "def parents(text: str) -> list[str]:", '    """What each chunk hands the LLM in its place: its parent."""',
            "    return [parent for _, parent in pairs(text)]"]
    return attempt(parents + children + Part(gaps=capped), body)


def langchain_recursive(p: Mapping[str, Any], model: Model) -> Attempt:
    """The workbench's adapter of this very splitter: the same construction."""
    return attempt(tokens_part(p["unit"], "cl100k_base", model) + Part(
        imports=(IMPORT.format("RecursiveCharacterTextSplitter"),), setup=(
            f"SPLITTER = RecursiveCharacterTextSplitter(chunk_size={p['chunk_size']}, "
            f"chunk_overlap={p['chunk_overlap']}, length_function=length)",)), CHUNK)


LIBRARY = Library(NAME, "langchain_text_splitters", "langchain-text-splitters", {
    "fixed": fixed, "recursive": recursive, "sentence": sentence, "markdown": markdown, "semantic": semantic,
    "code": code, "parent_child": parent_child, "langchain_recursive": langchain_recursive,
})
