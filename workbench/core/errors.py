"""How an error reaches a person: one line, in the CLI and in the widgets' message area alike."""

from __future__ import annotations


def describe(e: BaseException) -> str:
    """The exception's type and message, then its notes (e.g. "while sweeping variant fixed(size=8)")."""
    notes = "; ".join(getattr(e, "__notes__", ()))
    return f"{type(e).__name__}: {e}" + (f" ({notes})" if notes else "")
