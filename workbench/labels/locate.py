"""A piece of text -> its exact [start, end) in a document: exactly, else modulo whitespace.

Pure text in, offsets out (never a Chunk or a Span): chunker adapters locate the pieces of
libraries that return texts, and label tools the quotes people write. Finding a piece that is
not there is an error for the caller to name, never a silently misplaced span.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Literal

How = Literal["hint", "exact", "whitespace"]  # a given offset confirmed, str.find, any whitespace run matching any


@dataclass(frozen=True, slots=True)
class Found:
    start: int
    end: int
    how: How


class NotFound(ValueError):
    """Piece `index` of a sequence is not in the text at or after offset `cursor`."""

    def __init__(self, index: int, piece: str, cursor: int):
        super().__init__(f"piece {index} is not in the text after offset {cursor} "
                         f"(searched exactly and modulo whitespace): {piece[:60]!r}")
        self.index, self.piece, self.cursor = index, piece, cursor


def find(text: str, piece: str, cursor: int = 0, after: int = 0) -> Found | None:
    """First occurrence of `piece` starting at or after `cursor` and ending after `after`:
    exactly, else with any run of whitespace matching any other. A match ending inside the
    previous piece would add nothing, so it is taken for an earlier copy of the text and skipped
    ("the the\\nthe" split into lines must place the second "the" on the second line)."""
    if not piece.strip():
        raise ValueError("find: parameter 'piece' is blank: whitespace matches everywhere")
    start = text.find(piece, cursor)
    while start >= 0:
        if start + len(piece) > after:
            return Found(start, start + len(piece), "exact")
        start = text.find(piece, start + 1)
    pattern = re.compile(r"\s+".join(map(re.escape, piece.split())))
    m = next((m for m in pattern.finditer(text, cursor) if m.end() > after), None)
    return None if m is None else Found(m.start(), m.end(), "whitespace")


def find_in_order(text: str, pieces: Iterable[tuple[str, int | None]]) -> Iterator[Found]:
    """Where each `(piece, start hint)` of a sequence in document order lies; blank pieces are skipped.

    Each piece must start after the previous one's start (overlaps are fine) and end after its
    end. A hint is used when the text really holds the piece there; else the piece is searched
    from the previous start, exactly, then modulo whitespace (pieces that were stripped or had
    their whitespace collapsed). Raises NotFound for the first piece that is not there."""
    cursor, after = 0, 0  # the next piece starts at or after `cursor` and ends after `after`
    for i, (piece, hint) in enumerate(pieces):
        if not piece.strip():
            continue
        if hint is not None and hint >= cursor and text.startswith(piece, hint):
            found: Found | None = Found(hint, hint + len(piece), "hint")
        else:
            found = find(text, piece, cursor, after)
        if found is None:
            raise NotFound(i, piece, cursor)
        yield found
        cursor, after = found.start + 1, found.end
