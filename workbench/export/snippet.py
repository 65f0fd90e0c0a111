"""What every exported file shares: its layout, what `chunk` takes besides the text, the model it
names, and its runnable end (`python chunker.py FILE` prints the chunks of FILE)."""

from __future__ import annotations

from dataclasses import dataclass

from workbench.chunkers.registry import Strategy

PARENTS = ("parent_child", "sentence_window")  # strategies whose chunks hand the LLM a parent span in their place
MAIN = '''if __name__ == "__main__":
    import sys

    pieces = chunk(open(sys.argv[1], encoding="utf-8").read())
    for i, piece in enumerate(pieces):
        print(f"--- chunk {i + 1} of {len(pieces)}, {len(piece)} characters ---")
        print(piece)'''


@dataclass(frozen=True)
class Snippet:
    """An export's code: its definitions (imports first), the settings it is built from, and the
    functions it defines (`chunk`, and `parents` where chunks hand back a parent)."""

    definitions: str
    setup: list[str]
    body: list[str]

    def code(self) -> str:
        """The code that builds the chunking and defines `chunk`, without a docstring or a runnable end."""
        return "\n".join(["from __future__ import annotations", "", self.definitions.rstrip(), "", "", *self.setup,
                          "", "", *self.body])

    def render(self, header: str) -> str:
        """The whole file, `header` its docstring."""
        return "\n".join([f'"""{header}\n"""', "", self.code(), "", "", MAIN, ""])


def imports(lines: list[str]) -> str:
    """Import lines as a file starts with them: plain imports first, each kind sorted."""
    return "\n".join(sorted(set(lines), key=lambda line: (line.startswith("from "), line)))


def document_args(strategy: Strategy) -> tuple[str, ...]:
    """What `chunk` takes besides the text: the document's programming language where the strategy
    reads it (its fallback says when it cuts source code another way), and for code the path, which
    the header it sizes chunks with names."""
    return ("language",) * (strategy.fallback is not None) + ("path",) * (strategy.name == "code")
