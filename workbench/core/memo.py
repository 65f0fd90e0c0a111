"""A memo of what is computed from a text, bounded by characters.

The variants of a sweep chunk the same documents, each through its own ChunkEnv: a document's
token boundaries, sentence spans and token counter are pure functions of its text, so they are
computed once per process and shared, not once per variant (on a folder of a thousand files, the
model tokenizer alone ran over every document once per variant).
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

T = TypeVar("T")
_MEMOS: weakref.WeakSet[TextMemo] = weakref.WeakSet()  # every memo made, for `forget`


class TextMemo(Generic[T]):
    """Values by (what, text), kept while their texts hold at most `chars` characters in all, the
    least recently used dropped first; a text longer than that is computed and not kept. Safe to
    share between threads (a preview chunks in its own). Values are shared: never mutate one.

    >>> memo = TextMemo[int](chars=10)
    >>> memo.get("len", "abcdef", len), memo.get("len", "abcdef", lambda t: -1)
    (6, 6)
    >>> memo.get("len", "ghijkl", len), memo.get("len", "abcdef", lambda t: -1)
    (6, -1)
    """

    def __init__(self, chars: int) -> None:
        self.chars = chars
        self._values: OrderedDict[tuple[Hashable, str], T] = OrderedDict()
        self._held = 0  # characters of the texts kept
        self._lock = threading.Lock()
        _MEMOS.add(self)

    def get(self, what: Hashable, text: str, make: Callable[[str], T]) -> T:
        """make(text), computed on the first call for (what, text) and kept."""
        key = (what, text)
        with self._lock:
            if key in self._values:
                self._values.move_to_end(key)
                return self._values[key]
        value = make(text)  # outside the lock: another thread may compute the same, which is harmless
        if len(text) > self.chars:
            return value
        with self._lock:
            if key not in self._values:
                self._values[key] = value
                self._held += len(text)
                while self._held > self.chars:
                    (_, old), _ = self._values.popitem(last=False)
                    self._held -= len(old)
        return value

    def clear(self) -> None:
        with self._lock:
            self._values.clear()
            self._held = 0


def forget() -> None:
    """Drop what every memo keeps: a benchmark timing one chunking from scratch calls it before each
    round (the rounds after the first would time lookups)."""
    for memo in list(_MEMOS):
        memo.clear()
