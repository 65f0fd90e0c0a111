"""Other tools' evaluation sets -> this workbench's `corpus.jsonl` + `questions.jsonl` (+ a README.md).

One reader per format, each returning an `Imported` (documents, questions, what was dropped and
why); `import_dataset` writes it atomically. Formats with offsets (SQuAD, Chroma) keep them after
checking the text there; formats with passages only (LlamaIndex, RAGAS, mtcb) locate each passage
as a quote (labels.locate.locate_quote) and write its offsets and the quote; BEIR's relevance
judgements are whole documents, so its spans are whole-document spans, flagged `document_level`.
A reference answer, where a format has one, is kept in each question's `reference_answer`.
Nothing is lost silently: every question left out is counted under its reason.
"""

from __future__ import annotations

import ast
import csv
import inspect
import json
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.core.io import publish
from workbench.core.locate import QuoteError, QuoteNotFound, locate_quote
from workbench.dataset import DatasetError, Document
from workbench.ingest.folder import read_folder
from workbench.ingest.jsonl import read_corpus, read_jsonl

REFERENCE = "reference_answer"  # the per-question field that keeps a format's reference answer text


@dataclass(frozen=True)
class Imported:
    """A converted set: `documents` and `questions` as the lines of corpus.jsonl and questions.jsonl,
    `dropped` (why -> how many questions), `notes` (what the README says of the conversion)."""

    format: str
    source: str
    documents: list[dict[str, Any]]
    questions: list[dict[str, Any]]
    dropped: Counter[str] = field(default_factory=Counter)
    notes: tuple[str, ...] = ()

    def summary(self) -> str:
        """One line: what was imported, and each reason questions were dropped with its count."""
        gone = "; ".join(f"{n} {why}" for why, n in self.dropped.most_common()) or "none"
        return (f"imported {len(self.documents)} documents and {len(self.questions)} questions from {self.format} "
                f"{self.source}; dropped: {gone}")


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise DatasetError(path, None, None, f"cannot open: {e.strerror}") from e
    except json.JSONDecodeError as e:
        raise DatasetError(path, e.lineno, None, f"invalid JSON ({e.msg} at column {e.colno})") from e


def _need(obj: Any, key: str, kind: type, path: Path, where: int | None, name: str | None = None) -> Any:
    """obj[key] as a `kind`, else a DatasetError naming the file, the line or row, and the field `name`."""
    name = name or key
    if not isinstance(obj, dict) or key not in obj:
        raise DatasetError(path, where, name, "is missing")
    if not isinstance(obj[key], kind) or isinstance(obj[key], bool):
        raise DatasetError(path, where, name, f"must be {kind.__name__}, got {type(obj[key]).__name__}")
    return obj[key]


def _span(docs: Mapping[str, str], doc_id: str, start: int, text: str, path: Path, where: int | None,
          name: str) -> dict[str, Any]:
    """An answer at a given offset, after checking that the document holds `text` there."""
    if docs[doc_id][start:start + len(text)] != text:
        found = docs[doc_id].find(text)
        hint = f"; the text is at {found}" if found >= 0 else "; the text is nowhere in the document"
        raise DatasetError(path, where, name, f"{text[:40]!r} is not at offset {start} of {doc_id!r}{hint}")
    return {"doc_id": doc_id, "start": start, "end": start + len(text)}


# --- formats with offsets ------------------------------------------------------------------------------------


def read_squad(src: Path, documents: str = "article", prefix: str | None = None) -> Imported:
    """SQuAD v1.1 / v2.0 JSON. documents="article" (as ../shared/datasets/squad_v11_dev): one document per
    article, its paragraphs joined with a blank line, doc_id `<prefix>-NN`; "paragraph": one per paragraph,
    `<prefix>-NN-PP`. The annotators' distinct spans are alternatives (any one is a right answer: scoring
    the first alone under-counts a retriever that returns another's), their texts the reference answers;
    unanswerable (v2 `is_impossible`) questions are dropped and counted."""
    if documents not in ("article", "paragraph"):
        raise ValueError(f"read_squad: parameter 'documents' must be 'article' or 'paragraph', got {documents!r}")
    prefix = prefix or "squad-" + src.name.split("-v")[0].removesuffix(".json")
    data = _need(_json(src), "data", list, src, None)
    docs: list[dict[str, Any]] = []
    questions: list[dict[str, Any]] = []
    dropped: Counter[str] = Counter()
    for a, article in enumerate(data):
        title = _need(article, "title", str, src, None, f"data[{a}].title")
        paragraphs = _need(article, "paragraphs", list, src, None, f"data[{a}].paragraphs")
        texts = [_need(p, "context", str, src, None, f"data[{a}].paragraphs[{i}].context")
                 for i, p in enumerate(paragraphs)]
        starts = [sum(len(t) + 2 for t in texts[:i]) for i in range(len(texts))]  # "\n\n" between paragraphs
        for i, (p, context) in enumerate(zip(paragraphs, texts, strict=True)):
            doc_id = f"{prefix}-{a:02d}-{i:02d}" if documents == "paragraph" else f"{prefix}-{a:02d}"
            offset = 0 if documents == "paragraph" else starts[i]
            if documents == "paragraph" or i == 0:
                text = context if documents == "paragraph" else "\n\n".join(texts)
                docs.append({"doc_id": doc_id, "title": title, "text": text})
            for j, qa in enumerate(_need(p, "qas", list, src, None, f"data[{a}].paragraphs[{i}].qas")):
                at = f"data[{a}].paragraphs[{i}].qas[{j}]"
                qid = _need(qa, "id", str, src, None, f"{at}.id")
                answers = _need(qa, "answers", list, src, None, f"{at}.answers")
                if qa.get("is_impossible") or not answers:
                    dropped["unanswerable (SQuAD v2 is_impossible, or no answers)"] += 1
                    continue
                spans: list[dict[str, Any]] = []
                for n, ans in enumerate(answers):
                    text = _need(ans, "text", str, src, None, f"{at}.answers[{n}].text")
                    start = _need(ans, "answer_start", int, src, None, f"{at}.answers[{n}].answer_start")
                    if context[start:start + len(text)] != text:
                        raise DatasetError(src, None, f"{at}.answers[{n}].answer_start",
                                           f"{text[:40]!r} is not at offset {start} of its context (question {qid})")
                    span = {"doc_id": doc_id, "start": offset + start, "end": offset + start + len(text)}
                    if span not in spans:
                        spans.append(span)
                texts = list(dict.fromkeys(a["text"] for a in answers))
                evidence = {"answers": spans} if len(spans) == 1 else {"alternatives": [[s] for s in spans]}
                questions.append({"qid": qid, "question": _need(qa, "question", str, src, None, f"{at}.question"),
                                  **evidence, REFERENCE: texts if len(texts) > 1 else texts[0]})
    notes = (f"One document per {documents}" + (", its paragraphs joined with a blank line (\"\\n\\n\"), each answer "
             "offset shifted by its paragraph's start" if documents == "article" else "") + ".",
             "Each annotator's distinct span is an alternative (`alternatives`, any one answers the question; "
             f"`answers` when there is one); `{REFERENCE}` holds their distinct texts.")
    return Imported("squad", src.name, docs, questions, dropped, notes)


def read_chroma(src: Path, corpora: Path | None = None) -> Imported:
    """Chroma's chunking_evaluation `questions_df.csv` (question, references, corpus_id) with its corpora
    (`corpora/<corpus_id>.md` beside it unless given): one document per corpus, each reference
    (content, start_index, end_index) a span after checking the text there; qid `chroma-<row>`."""
    csv_path = src / "questions_df.csv" if src.is_dir() else src
    corpora = corpora or csv_path.parent / "corpora"
    texts: dict[str, str] = {}
    questions: list[dict[str, Any]] = []
    try:
        handle = csv_path.open(encoding="utf-8", newline="")
    except OSError as e:
        raise DatasetError(csv_path, None, None, f"cannot open: {e.strerror}") from e
    with handle:
        reader = csv.DictReader(handle)
        for row_number, row in enumerate(reader):
            line = reader.line_num
            for column in ("question", "references", "corpus_id"):
                if not row.get(column):
                    raise DatasetError(csv_path, line, column, "is missing or empty")
            corpus = row["corpus_id"]
            if corpus not in texts:
                path = corpora / f"{Path(corpus).name}.md"
                try:
                    texts[corpus] = path.read_text(encoding="utf-8")
                except OSError as e:
                    raise DatasetError(csv_path, line, "corpus_id", f"corpus {corpus!r}: cannot read {path}: "
                                       f"{e.strerror}") from e
            try:
                refs = json.loads(row["references"])
            except json.JSONDecodeError as e:
                raise DatasetError(csv_path, line, "references", f"invalid JSON ({e.msg})") from e
            spans = []
            for i, ref in enumerate(refs if isinstance(refs, list) else [None]):
                name = f"references[{i}]"
                content = _need(ref, "content", str, csv_path, line, f"{name}.content")
                start = _need(ref, "start_index", int, csv_path, line, f"{name}.start_index")
                span = _span(texts, corpus, start, content, csv_path, line, f"{name}.start_index")
                if span["end"] != _need(ref, "end_index", int, csv_path, line, f"{name}.end_index"):
                    raise DatasetError(csv_path, line, f"{name}.end_index",
                                       f"is {ref['end_index']}, but start_index + len(content) is {span['end']}")
                spans.append(span)
            if not spans:
                raise DatasetError(csv_path, line, "references", "is an empty list")
            questions.append({"qid": f"chroma-{row_number:04d}", "question": row["question"], "answers": spans})
    docs = [{"doc_id": c, "title": c, "text": t} for c, t in texts.items()]
    notes = ("One document per corpus file; every reference (content, start_index, end_index) checked against "
             "`text[start:end] == content`. All spans of a question are jointly required evidence.",)
    return Imported("chroma", csv_path.name, docs, questions, Counter(), notes)


def read_beir(src: Path, split: str = "test") -> Imported:
    """A BEIR folder: corpus.jsonl (_id, title, text), queries.jsonl (_id, text), qrels/<split>.tsv
    (query-id, corpus-id, score). Judgements are of whole documents, so each relevant document (score
    > 0) is a whole-document span and each question says `document_level`; queries without one are
    dropped and counted, as are documents without text (and the judgements on them)."""
    docs: list[dict[str, Any]] = []
    empty: set[str] = set()
    for n, obj in read_jsonl(src / "corpus.jsonl"):
        doc_id, text = _need(obj, "_id", str, src / "corpus.jsonl", n), _need(obj, "text", str, src / "corpus.jsonl", n)
        if not text.strip():
            empty.add(doc_id)
            continue
        docs.append({"doc_id": doc_id, "title": obj.get("title") or doc_id, "text": text})
    size = {d["doc_id"]: len(d["text"]) for d in docs}
    queries = {_need(o, "_id", str, src / "queries.jsonl", n): _need(o, "text", str, src / "queries.jsonl", n)
               for n, o in read_jsonl(src / "queries.jsonl")}
    qrels = src / "qrels" / f"{split}.tsv"
    relevant: dict[str, list[str]] = {}
    dropped: Counter[str] = Counter()
    try:
        lines = qrels.read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise DatasetError(qrels, None, None, f"cannot open: {e.strerror} (parameter 'split' is {split!r})") from e
    for n, line in enumerate(lines, 1):
        cells = line.split("\t")
        if n == 1 and cells[:2] == ["query-id", "corpus-id"] or not line.strip():
            continue
        if len(cells) != 3 or not cells[2].strip().lstrip("-").isdigit():
            raise DatasetError(qrels, n, None, f"expected query-id, corpus-id and an integer score, got {line[:60]!r}")
        qid, doc_id, score = cells[0], cells[1], int(cells[2])
        if qid not in queries:
            raise DatasetError(qrels, n, "query-id", f"unknown query {qid!r} (not in queries.jsonl)")
        if doc_id in empty:
            dropped["judgements on documents without text"] += 1
        elif doc_id not in size:
            raise DatasetError(qrels, n, "corpus-id", f"unknown document {doc_id!r} (not in corpus.jsonl)")
        elif score > 0 and doc_id not in relevant.setdefault(qid, []):
            relevant[qid].append(doc_id)
    questions = [{"qid": qid, "question": text, "document_level": True,
                  "answers": [{"doc_id": d, "start": 0, "end": size[d]} for d in relevant[qid]]}
                 for qid, text in queries.items() if relevant.get(qid)]
    dropped["queries without a relevant document in this split"] += len(queries) - len(questions)
    notes = (f"Split {split!r}. BEIR judges whole documents: every answer is a whole-document span (`document_level`"
             ": true in each question), so precision and IoU measure chunk size, not boundaries; read recall. Several "
             "relevant documents of one query are all required evidence here, where BEIR takes any one.",)
    return Imported("beir", src.name, docs, questions, +dropped, notes)


# --- formats with passages, located as quotes ----------------------------------------------------------------


def _documents(docs: Path) -> list[dict[str, Any]]:
    """The documents a quote format's passages are located in: a corpus.jsonl, or a folder of files."""
    if docs.is_file():
        loaded = read_corpus(docs)
    else:
        loaded, _ = read_folder(docs)
        if not loaded:
            raise DatasetError(docs, None, None, "no documents (parameter 'docs')")
    return [{"doc_id": x.doc.doc_id, "title": x.doc.title, "text": x.doc.text} for x in loaded]


def _locate(docs: Mapping[str, Document], quote: str, doc_id: str | None, name: str, dropped: Counter[str],
            how: Counter[str]) -> dict[str, Any] | None:
    """An answer with offsets and the quote; None (counted in `dropped`) when the quote is not found
    or is ambiguous, since a passage the text does not hold is no label."""
    try:
        found = locate_quote(docs, quote, doc_id)
    except QuoteError as e:
        dropped[f"{name} passages {'not found' if isinstance(e, QuoteNotFound) else 'found in several places'}"] += 1
        return None
    how[found.how] += 1
    return {"doc_id": found.doc_id, "start": found.start, "end": found.end,
            "quote": docs[found.doc_id].text[found.start:found.end]}


def _quoted(fmt: str, src: Path, docs: list[dict[str, Any]], rows: Iterator[tuple[int | None, str, str, list[str],
            str | None, str | None]], passage: str, extra: tuple[str, ...] = ()) -> Imported:
    """The questions of a quote format: rows of (line, qid, question, passages, reference answer, doc id)."""
    by_id = {d["doc_id"]: Document(d["doc_id"], d["title"], d["text"]) for d in docs}
    questions, dropped, how = [], Counter(), Counter()
    for line, qid, text, passages, reference, doc_id in rows:
        if doc_id is not None and doc_id not in by_id:
            raise DatasetError(src, line, passage, f"question {qid!r}: its document {doc_id!r} is not among the "
                               f"{len(by_id)} documents given")
        answers = [_locate(by_id, p, doc_id, passage, dropped, how) for p in passages if p.strip()]
        if not answers or None in answers:
            dropped["questions with a passage not located"] += 1
            continue
        q = {"qid": qid, "question": text, "answers": list({json.dumps(a): a for a in answers}.values())}
        questions.append(q | ({REFERENCE: reference} if reference else {}))
    located = ", ".join(f"{n} {h}" for h, n in how.most_common())
    notes = (f"Each `{passage}` passage located as a quote in the documents given (exactly, then normalised, then "
             f"fuzzily; how: {located or 'none'}); each answer keeps its offsets and the quote as it stands in the "
             "document. A question with a passage not found, or found in several places, is dropped.", *extra)
    return Imported(fmt, src.name, docs, questions, dropped, notes)


def read_llamaindex(src: Path, docs: Path) -> Imported:
    """LlamaIndex's EmbeddingQAFinetuneDataset JSON (what generate_question_context_pairs returns and
    save_json writes: queries, corpus of node texts, relevant_docs), its node texts located in `docs`."""
    data = _json(src)
    queries = _need(data, "queries", dict, src, None)
    corpus = _need(data, "corpus", dict, src, None)
    relevant = _need(data, "relevant_docs", dict, src, None)

    def rows() -> Iterator[tuple[int | None, str, str, list[str], str | None, str | None]]:
        for qid, text in queries.items():
            nodes = relevant.get(qid) or []
            missing = [n for n in nodes if n not in corpus]
            if missing:
                raise DatasetError(src, None, f"relevant_docs[{qid!r}]", f"node {missing[0]!r} is not in 'corpus'")
            yield None, qid, text, [corpus[n] for n in nodes], None, None

    return _quoted("llamaindex", src, _documents(docs), rows(), "corpus")


def _ragas_rows(src: Path) -> Iterator[tuple[int | None, dict[str, Any]]]:
    """The samples of a RAGAS test set: JSONL (Testset.to_jsonl), a JSON list, or CSV (to_pandas().to_csv,
    whose reference_contexts is a Python list literal)."""
    if src.suffix == ".csv":
        with src.open(encoding="utf-8", newline="") as handle:
            reader = csv.DictReader(handle)
            for row in reader:
                try:
                    contexts = ast.literal_eval(row.get("reference_contexts") or "[]")
                except (ValueError, SyntaxError) as e:
                    raise DatasetError(src, reader.line_num, "reference_contexts", "is not a list literal") from e
                yield reader.line_num, row | {"reference_contexts": contexts}
    elif src.suffix == ".jsonl":
        yield from ((n, obj.get("eval_sample", obj)) for n, obj in read_jsonl(src))
    else:
        data = _json(src)
        yield from ((None, obj.get("eval_sample", obj) if isinstance(obj, dict) else obj)
                    for obj in (data.get("samples", []) if isinstance(data, dict) else data))


def read_ragas(src: Path, docs: Path) -> Imported:
    """A RAGAS test set (user_input, reference_contexts, reference), its contexts located in `docs`;
    the reference answer kept, qid `ragas-<sample>`."""
    def rows() -> Iterator[tuple[int | None, str, str, list[str], str | None, str | None]]:
        for i, (line, s) in enumerate(_ragas_rows(src)):
            text = _need(s, "user_input", str, src, line, "user_input" if line else f"[{i}].user_input")
            contexts = _need(s, "reference_contexts", list, src, line)
            yield line, f"ragas-{i:04d}", text, contexts, s.get("reference"), None

    return _quoted("ragas", src, _documents(docs), rows(), "reference_contexts")


def read_mtcb(src: Path, key: str | None = None) -> Imported:
    """mtcb's datasets as rows (corpus.jsonl: text and a key such as title or repo; questions.jsonl:
    question, answer, chunk-must-contain): each `chunk-must-contain` string located as a quote in the
    document with the question's key (`key`: None takes the first of title, repo, id both files have;
    without one, anywhere in the corpus). The answer is kept as the reference answer."""
    corpus = list(read_jsonl(src / "corpus.jsonl"))
    qrows = list(read_jsonl(src / "questions.jsonl"))
    key = key or next((k for k in ("title", "repo", "id") if all(k in o for _, o in corpus + qrows)), None)
    docs = []
    for n, obj in corpus:
        text = _need(obj, "text", str, src / "corpus.jsonl", n)
        doc_id = str(obj[key]) if key else f"mtcb-{n - 1:04d}"
        docs.append({"doc_id": doc_id, "title": str(obj.get("title") or doc_id), "text": text})
    path = src / "questions.jsonl"

    def rows() -> Iterator[tuple[int | None, str, str, list[str], str | None, str | None]]:
        for i, (n, q) in enumerate(qrows):
            yield (n, f"mtcb-q{i:04d}", _need(q, "question", str, path, n),
                   [_need(q, "chunk-must-contain", str, path, n)], q.get("answer"), str(q[key]) if key else None)

    where = f"in the document with the same {key!r}" if key else "anywhere in the corpus (no shared key)"
    return _quoted("mtcb", path, docs, rows(), "chunk-must-contain", (f"Each passage is sought {where}.",))


READERS: dict[str, Callable[..., Imported]] = {
    "squad": read_squad, "chroma": read_chroma, "beir": read_beir,
    "llamaindex": read_llamaindex, "ragas": read_ragas, "mtcb": read_mtcb,
}


def readme(imported: Imported) -> str:
    """The README.md written beside the files: where they came from and what was dropped."""
    gone = "\n".join(f"- {n} {why}" for why, n in imported.dropped.most_common()) or "- nothing"
    notes = "\n".join(f"- {n}" for n in imported.notes)
    return (f"# Imported from {imported.format}: `{imported.source}`\n\nWritten by `python -m workbench import "
            f"{imported.format}` (workbench.labels.importers).\n\n| | |\n|---|---|\n| documents | "
            f"{len(imported.documents):,} |\n| questions | {len(imported.questions):,} |\n\n## Conversion\n{notes}\n\n"
            f"## Dropped\n{gone}\n")


def import_dataset(fmt: str, src: str | Path, out: str | Path, **options: Any) -> Imported:
    """Convert `src` in format `fmt` (one of READERS) into folder `out`: corpus.jsonl, questions.jsonl and
    README.md, written whole or not at all; `out` must not exist yet (or be empty). `options` go to the
    reader (docs= for llamaindex and ragas, documents= for squad, split= for beir, key= for mtcb)."""
    if fmt not in READERS:
        raise ValueError(f"import_dataset: parameter 'fmt' must be one of {sorted(READERS)}, got {fmt!r}")
    src, out = Path(src), Path(out)
    if not src.exists():
        raise DatasetError(src, None, None, "does not exist")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise FileExistsError(f"import_dataset: parameter 'out': {out} exists and is not an empty folder")
    params = inspect.signature(READERS[fmt]).parameters
    unknown = sorted(set(options) - set(params) - {"src"})
    missing = [n for n, p in params.items() if p.default is p.empty and n != "src" and n not in options]
    if unknown or missing:
        takes = ", ".join(n for n in params if n != "src") or "none"
        raise ValueError(f"import_dataset: format {fmt!r} " + (f"takes no option {unknown[0]!r}" if unknown else
                         f"needs option {missing[0]!r}") + f" (its options: {takes})")
    imported = READERS[fmt](src, **{k: Path(v) if k in ("docs", "corpora") else v for k, v in options.items()})
    if not imported.questions:
        raise DatasetError(src, None, None, f"no question could be imported ({imported.summary()})")

    def write(tmp: Path) -> None:
        for name, rows in (("corpus.jsonl", imported.documents), ("questions.jsonl", imported.questions)):
            (tmp / name).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        (tmp / "README.md").write_text(readme(imported), encoding="utf-8")

    if out.exists():
        out.rmdir()  # empty: publish renames the finished folder into its place
    publish(out, write)
    return imported
