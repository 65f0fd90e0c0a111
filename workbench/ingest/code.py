"""Source code: the file verbatim, its language from the extension (Pygments' table) or, with no
extension, from the content (Magika's model, shipped in its package: nothing is downloaded).

The language rides on the Document (and into the corpus fingerprint) because a code chunker reads it.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from workbench.dataset import Document
from workbench.ingest.report import Unreadable
from workbench.ingest.text import read_utf8, text_document

if TYPE_CHECKING:
    from magika import Magika

CODE_SUFFIXES = (  # read as code; the language is Pygments' first alias for the file name
    ".py", ".pyi", ".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx", ".go", ".rs", ".java", ".c", ".h", ".cpp", ".cc",
    ".cxx", ".hpp", ".hh", ".cs", ".rb", ".php", ".sh", ".bash", ".zsh",
)
MAX_LINE_CHARS = 10_000  # a longer line is minified or generated code: nothing a person reads, nor a chunk
MAGIKA_NAMES = {"shell": "bash", "cs": "csharp"}  # Magika's label -> the Pygments alias the extension would give


def code_document(file: Path, doc_id: str, text: str, language: str) -> Document:
    """`text` as a code document; a minified file (one huge line) is refused by name."""
    longest = max(map(len, text.splitlines()), default=0)
    if longest > MAX_LINE_CHARS:
        raise Unreadable(file, "unreadable", f"minified or generated code (a line of {longest:,} characters; "
                         f"at most {MAX_LINE_CHARS:,})")
    return Document(doc_id, file.name, text, kind="code", path=doc_id, language=language)


def read_code(file: Path, doc_id: str) -> Document:
    """A source file verbatim (a syntax error changes nothing: code is not parsed), titled by its file name."""
    from pygments.lexers import get_lexer_for_filename  # Pygments loads with the first code file
    from pygments.util import ClassNotFound

    text = read_utf8(file)
    try:
        language = get_lexer_for_filename(file.name).aliases[0]
    except ClassNotFound:
        language = file.suffix.lower().lstrip(".")
    return code_document(file, doc_id, text, language)


@cache
def _magika() -> Magika:
    """Loaded on first use: its model costs a second, which a folder without such files never pays."""
    from magika import Magika

    return Magika()


def read_untyped(file: Path, doc_id: str) -> Document:
    """A file without an extension (a script, a README): code or text as Magika reads its content;
    anything else (an executable, an image) is refused with what Magika took it for."""
    text = read_utf8(file)  # binary and invalid UTF-8 are refused by name before any guess
    result = _magika().identify_bytes(text.encode("utf-8")).output
    if result.group == "code":
        return code_document(file, doc_id, text, MAGIKA_NAMES.get(result.label, result.label))
    if result.group == "text":
        return text_document(file, doc_id, text, "markdown" if result.label == "markdown" else "text")
    raise Unreadable(file, "unknown type", f"its content looks like {result.description}")
