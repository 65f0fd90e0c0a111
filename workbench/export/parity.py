"""Whether an exported file cuts what the workbench cuts: it is run as a user would run it, in a
fresh Python process, on every document of the corpus, and its chunks are compared with the
workbench's, document by document.

The process gets no `workbench` to import (a plain-Python export must stand alone), and finds
tiktoken's and NLTK's data in llama-index-core's bundled copies (TIKTOKEN_CACHE_DIR, NLTK_DATA set
for it alone), so a check downloads nothing.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from workbench.core.chunk import Chunk
from workbench.core.locate import find
from workbench.core.offline import bundled_nltk_data, bundled_tiktoken
from workbench.dataset import Document

# Runs the file (argv[1]) on the documents (argv[2], JSON) and writes each one's chunks (argv[3]):
# chunk() is given the document fields it takes, parents() is asked when the file defines it.
DRIVER = """
import inspect, json, runpy, sys
sys.modules["workbench"] = None  # an export stands alone
code = runpy.run_path(sys.argv[1], run_name="export")
takes = inspect.signature(code["chunk"]).parameters
out = []
for doc in json.load(open(sys.argv[2], encoding="utf-8")):
    fields = {k: doc[k] for k in ("language", "path") if k in takes}
    row = {"chunks": code["chunk"](doc["text"], **fields)}
    if "parents" in code:
        row["parents"] = code["parents"](doc["text"], **fields)
    out.append(row)
json.dump(out, open(sys.argv[3], "w", encoding="utf-8"))
"""


class ExportRunError(RuntimeError):
    """The exported file failed to run; the message is its error's last line."""


def run_export(code: str, documents: Sequence[Document]) -> list[dict[str, list[str]]]:
    """Each document's {"chunks": [...], "parents": [...] if defined} as the file `code` gives them."""
    with tempfile.TemporaryDirectory(prefix="workbench-export-") as tmp:
        file, docs, out = Path(tmp, "chunker.py"), Path(tmp, "documents.json"), Path(tmp, "chunks.json")
        file.write_text(code, encoding="utf-8")
        docs.write_text(json.dumps([{"text": d.text, "language": d.language, "path": d.path or d.doc_id}
                                    for d in documents]), encoding="utf-8")
        env = dict(os.environ, TIKTOKEN_CACHE_DIR=str(bundled_tiktoken()), NLTK_DATA=str(bundled_nltk_data()),
                   HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
        done = subprocess.run([sys.executable, "-c", DRIVER, str(file), str(docs), str(out)], env=env,
                              capture_output=True, text=True, cwd=tmp)
        if done.returncode != 0:
            raise ExportRunError(_error(done.stderr) or f"exit status {done.returncode}")
        return json.loads(out.read_text(encoding="utf-8"))


def _error(stderr: str) -> str:
    """The exception a traceback ends with, on one line (a pydantic error spans several)."""
    lines = stderr.strip().splitlines()
    starts = [i for i, line in enumerate(lines) if re.match(r"[A-Za-z_][\w.]*(Error|Exception)\b", line)]
    shown = lines[starts[-1]:] if starts else lines[-1:]
    return " ".join(line.strip() for line in shown if not line.strip().startswith("For further information"))


@dataclass(frozen=True)
class Parity:
    """How an export's chunks compare with the workbench's on a corpus."""

    documents: int
    differing: tuple[str, ...]  # the documents whose chunk texts (or parents) differ, in corpus order
    chunks: int  # the workbench's
    produced: int  # the export's
    identical: int  # workbench chunks the export cut too: the same text in the same document
    boundaries: int  # the workbench's chunk edges (starts and ends, per document, distinct) where the export placed any
    moved: tuple[int, ...]  # for each of them it does not cut at: how far its nearest edge is, in characters
    unplaced: int  # the export's chunks not found in their document (their text changed)
    parents_differ: int  # chunks whose parent (the text handed back in their place) differs

    @property
    def exact(self) -> bool:
        return not self.differing

    def lines(self, who: str) -> tuple[str, ...]:
        """What the check found, one fact a line: that the chunks are the workbench's, or how many
        documents differ, then ("- ") the share of chunks identical, the boundaries kept and how far
        the others moved, the chunks not in the source, the parents that differ."""
        if self.exact:
            return (f"{who}'s chunks are the workbench's on all {self.documents} documents ({self.chunks} chunks, "
                    "the same texts in the same order).",)
        share = self.identical / self.chunks if self.chunks else 0.0
        out = [f"{who}'s chunks differ in {len(self.differing)} of {self.documents} documents: {self.produced} "
               f"chunks against the workbench's {self.chunks}.",
               f"- identical chunks: {self.identical} of the workbench's {self.chunks} ({share:.0%})"]
        if self.boundaries:
            kept = self.boundaries - len(self.moved)
            moved = (f"; the others are {statistics.median(self.moved):g} characters from its nearest (median), "
                     f"at most {max(self.moved)}") if self.moved else ""
            out.append(f"- boundaries: {kept} of the workbench's {self.boundaries} are {who}'s too "
                       f"({kept / self.boundaries:.0%}){moved}")
        if self.unplaced:
            out.append(f"- not in the source text as written: {self.unplaced} of its chunks" +
                       (" (so no boundary compares)" if not self.boundaries else ""))
        if self.parents_differ:
            out.append(f"- parents: {self.parents_differ} of the workbench's chunks hand back another")
        return tuple(out)


def compare(documents: Sequence[Document], chunks: Sequence[Chunk], produced: Sequence[dict[str, list[str]]]
            ) -> Parity:
    """The export's chunks (`produced`, one row per document) against the workbench's `chunks`."""
    by_doc: dict[str, list[Chunk]] = {d.doc_id: [] for d in documents}
    for c in chunks:
        by_doc[c.doc_id].append(c)
    differing, identical, boundaries, unplaced, parents_differ = [], 0, 0, 0, 0
    moved: list[int] = []
    for doc, row in zip(documents, produced, strict=True):
        ours = by_doc[doc.doc_id]
        texts, theirs = [c.text for c in ours], row["chunks"]
        parents = [doc.text[c.parent_start : c.parent_end] for c in ours if c.parent_start is not None]
        wrong_parents = sum(a != b for a, b in zip(parents, row.get("parents", []), strict=False))
        wrong_parents += abs(len(parents) - len(row.get("parents", parents)))
        if texts != theirs or wrong_parents:
            differing.append(doc.doc_id)
        identical += sum((Counter(texts) & Counter(theirs)).values())
        parents_differ += wrong_parents
        edges = sorted({e for c in ours for e in (c.start, c.end)})
        spans = _placed(doc.text, theirs)
        unplaced += len([t for t in theirs if t.strip()]) - len(spans)
        if spans:  # else nothing of the export's says where it cut
            cuts = sorted({e for span in spans for e in span})
            boundaries += len(edges)
            moved += [d for d in (min(abs(e - c) for c in cuts) for e in edges) if d]
    return Parity(len(documents), tuple(differing), len(chunks), sum(len(r["chunks"]) for r in produced), identical,
                  boundaries, tuple(moved), unplaced, parents_differ)


def _placed(text: str, pieces: Sequence[str]) -> list[tuple[int, int]]:
    """Where the pieces lie in `text`, searched in order (exactly, else modulo whitespace); a piece
    found nowhere after the previous one is left out."""
    out: list[tuple[int, int]] = []
    cursor, after = 0, 0
    for piece in pieces:
        if not piece.strip():
            continue
        found = find(text, piece, cursor, after)
        if found is not None:
            out.append((found.start, found.end))
            cursor, after = found.start + 1, max(after, found.end)
    return out

