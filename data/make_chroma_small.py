"""Rebuild data/chroma_small from the shared chroma_general dataset (run from the repo root).

The three smallest of Chroma's five corpora keep the demo inside its time budget on 2 CPU cores
while still mixing prose (a speech), encyclopaedic text and chat logs.
"""

import json
import sys
from pathlib import Path

from workbench.ingest import load_dataset
from workbench.core.io import write_text

KEEP = ["state_of_the_union", "wikitexts", "chatlogs"]

src = Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/datasets/chroma_general")
out = Path(__file__).parent / "chroma_small"
ds = load_dataset(src).select(doc_ids=KEEP)


def write_jsonl(path: Path, rows: list[dict]) -> None:
    write_text(path, "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))


write_jsonl(out / "corpus.jsonl", [{"doc_id": d.doc_id, "title": d.title, "text": d.text} for d in ds.documents])
write_jsonl(
    out / "questions.jsonl",
    [{"qid": q.qid, "question": q.question,
      "answers": [{"doc_id": a.doc_id, "start": a.start, "end": a.end} for a in q.answers]} for q in ds.questions],
)
print(f"{len(ds.documents)} documents, {len(ds.questions)} questions -> {out}")
