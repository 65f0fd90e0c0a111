"""Importers, each on a real file in its schema: the shared excerpts written back into the original
format (SQuAD, Chroma, BEIR, RAGAS, mtcb), and a dataset built and saved by LlamaIndex itself."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest
from conftest import REPO

from workbench.cli import main
from workbench.dataset import DatasetError
from workbench.ingest import load_dataset
from workbench.ingest.jsonl import read_jsonl
from workbench.labels.importers import REFERENCE, import_dataset

DATA = REPO / "tests" / "data"


def lines(path: Path) -> list[dict]:
    return [obj for _, obj in read_jsonl(path)]


def squad_json(tmp: Path) -> Path:
    """The SQuAD excerpt back in SQuAD v2.0 JSON: paragraphs split at the blank lines the conversion
    joined them with, every span an annotator answer at its paragraph offset; one unanswerable question."""
    docs = {d["doc_id"]: d for d in lines(DATA / "squad_v11_dev" / "corpus.jsonl")}
    articles = {doc_id: {"title": d["title"], "paragraphs": []} for doc_id, d in docs.items()}
    starts = {}
    for doc_id, d in docs.items():
        at = 0
        for context in d["text"].split("\n\n"):
            starts[doc_id, at] = len(articles[doc_id]["paragraphs"])
            articles[doc_id]["paragraphs"].append({"context": context, "qas": []})
            at += len(context) + 2
    for q in lines(DATA / "squad_v11_dev" / "questions.jsonl"):
        first = q["answers"][0]
        start = max(s for (d, s) in starts if d == first["doc_id"] and s <= first["start"])
        p = articles[first["doc_id"]]["paragraphs"][starts[first["doc_id"], start]]
        text = docs[first["doc_id"]]["text"]
        p["qas"].append({"id": q["qid"], "question": q["question"], "answers": [
            {"text": text[a["start"]:a["end"]], "answer_start": a["start"] - start} for a in q["answers"] +
            q["alt_answers"]]})
    articles["squad-dev-00"]["paragraphs"][0]["qas"].append(
        {"id": "v2-impossible", "question": "Who won Super Bowl 49?", "answers": [], "is_impossible": True,
         "plausible_answers": [{"text": "Denver Broncos", "answer_start": 177}]})
    path = tmp / "dev-v2.0.json"
    path.write_text(json.dumps({"version": "v2.0", "data": list(articles.values())}), encoding="utf-8")
    return path


def test_squad_round_trips_the_shared_copy_and_counts_unanswerable_questions(tmp_path: Path) -> None:
    src = squad_json(tmp_path)
    imported = import_dataset("squad", src, tmp_path / "out", prefix="squad-dev")
    assert imported.dropped == {"unanswerable (SQuAD v2 is_impossible, or no answers)": 1}
    expected = lines(DATA / "squad_v11_dev" / "questions.jsonl")
    got = lines(tmp_path / "out" / "questions.jsonl")
    ids = {"squad-dev-00": "squad-dev-00", "squad-dev-01": "squad-dev-03"}  # the excerpt kept articles 0 and 3

    def renamed(spans: list[dict]) -> list[dict]:
        return [s | {"doc_id": ids[s["doc_id"]]} for s in spans]

    # the excerpt's answers and alt_answers are the annotators' distinct spans: each an alternative now
    assert [(q["qid"], renamed(spans_of(q))) for q in got] == [(q["qid"], q["answers"] + q["alt_answers"])
                                                              for q in expected]
    assert all(("alternatives" in q) == bool(e["alt_answers"]) for q, e in zip(got, expected, strict=True))
    corpus = lines(tmp_path / "out" / "corpus.jsonl")
    assert [d["text"] for d in corpus] == [d["text"] for d in lines(DATA / "squad_v11_dev" / "corpus.jsonl")]
    ds = load_dataset(tmp_path / "out")
    first = ds.questions[0].answers[0]
    assert got[0][REFERENCE] == ds.docs[first.doc_id].text[first.start:first.end] == "Denver Broncos"
    before = load_dataset(DATA / "squad_v11_dev")  # the same references, the spans now alternatives
    assert [q.references for q in ds.questions] == [q.references for q in before.questions]
    assert [len(q.any_of) for q in ds.questions] == [1 + len(e["alt_answers"]) for e in expected]
    readme = (tmp_path / "out" / "README.md").read_text()
    assert "dev-v2.0.json" in readme and "- 1 unanswerable" in readme

    by_paragraph = import_dataset("squad", src, tmp_path / "para", documents="paragraph")
    paras = {d["doc_id"]: d["text"] for d in by_paragraph.documents}
    assert len(paras) == sum(d["text"].count("\n\n") + 1 for d in corpus)
    assert all(paras[a["doc_id"]][a["start"]:a["end"]] in ([q[REFERENCE]] if isinstance(q[REFERENCE], str)
                                                           else q[REFERENCE])
               for q in by_paragraph.questions for a in spans_of(q))


def spans_of(q: dict) -> list[dict]:
    """The spans of a question line, of every alternative."""
    return q["answers"] if "answers" in q else [a for alt in q["alternatives"] for a in alt]


def test_a_squad_offset_off_by_one_is_refused_naming_the_field(tmp_path: Path) -> None:
    src = squad_json(tmp_path)
    data = json.loads(src.read_text())
    data["data"][0]["paragraphs"][0]["qas"][1]["answers"][0]["answer_start"] += 1
    src.write_text(json.dumps(data))
    with pytest.raises(DatasetError, match=r"dev-v2.0.json: field 'data\[0\].paragraphs\[0\].qas\[1\].answers\[0\]"
                       r".answer_start' 'Carolina Panthers' is not at offset 250"):
        import_dataset("squad", src, tmp_path / "out")
    assert not (tmp_path / "out").exists()  # nothing half written


def chroma_csv(tmp: Path) -> Path:
    """The Chroma excerpt back as chunking_evaluation's questions_df.csv and corpora/<corpus_id>.md."""
    (tmp / "corpora").mkdir(parents=True)
    docs = {d["doc_id"]: d["text"] for d in lines(DATA / "chroma_general" / "corpus.jsonl")}
    for doc_id, text in docs.items():
        (tmp / "corpora" / f"{doc_id}.md").write_text(text, encoding="utf-8")
    with (tmp / "questions_df.csv").open("w", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow(["question", "references", "corpus_id"])
        for q in lines(DATA / "chroma_general" / "questions.jsonl"):
            refs = [{"content": docs[a["doc_id"]][a["start"]:a["end"]], "start_index": a["start"],
                     "end_index": a["end"]} for a in q["answers"]]
            w.writerow([q["question"], json.dumps(refs), q["answers"][0]["doc_id"]])
    return tmp


def test_chroma_questions_keep_their_offsets_and_a_wrong_one_names_row_and_field(tmp_path: Path) -> None:
    src = chroma_csv(tmp_path / "chroma")
    imported = import_dataset("chroma", src, tmp_path / "out")
    expected = lines(DATA / "chroma_general" / "questions.jsonl")
    assert [(q["question"], q["answers"]) for q in imported.questions] == [
        (q["question"], q["answers"]) for q in expected]
    assert load_dataset(tmp_path / "out").n_chars == load_dataset(DATA / "chroma_general").n_chars
    rows = (src / "questions_df.csv").read_text(encoding="utf-8").splitlines(keepends=True)
    rows[3] = rows[3].replace('"start_index"": ', '"start_index"": 1')
    (src / "questions_df.csv").write_text("".join(rows), encoding="utf-8")
    with pytest.raises(DatasetError, match=r"questions_df.csv, line 4: field 'references\[0\].start_index'"):
        import_dataset("chroma", src, tmp_path / "bad")


def test_beir_relevance_becomes_whole_document_spans_flagged_so(tmp_path: Path) -> None:
    """QMSum's excerpt is document-level already: written as BEIR, it must come back as it was."""
    src = tmp_path / "beir"
    (src / "qrels").mkdir(parents=True)
    docs = lines(DATA / "qmsum_val" / "corpus.jsonl")
    qs = lines(DATA / "qmsum_val" / "questions.jsonl")
    (src / "corpus.jsonl").write_text("".join(json.dumps({"_id": d["doc_id"], "title": d["title"], "text": d["text"]})
                                              + "\n" for d in docs))
    queries = [{"_id": q["qid"], "text": q["question"]} for q in qs] + [{"_id": "unjudged", "text": "Who spoke?"}]
    (src / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (src / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{q['qid']}\t{a['doc_id']}\t1\n" for q in qs for a in q["answers"]))
    imported = import_dataset("beir", src, tmp_path / "out")
    size = {d["doc_id"]: len(d["text"]) for d in docs}
    whole = [[{"doc_id": d, "start": 0, "end": size[d]} for d in dict.fromkeys(a["doc_id"] for a in q["answers"])]
             for q in qs]
    assert [(q["qid"], q["answers"]) for q in imported.questions] == [(q["qid"], w) for q, w in zip(qs, whole,
                                                                                                 strict=True)]
    assert all(q["document_level"] for q in imported.questions)
    assert imported.dropped == {"queries without a relevant document in this split": 1}
    assert "whole-document span" in (tmp_path / "out" / "README.md").read_text()
    with pytest.raises(DatasetError, match=r"dev.tsv: cannot open.*parameter 'split' is 'dev'"):
        import_dataset("beir", src, tmp_path / "dev", split="dev")


def test_llamaindex_node_texts_are_located_where_llamaindex_cut_them(tmp_path: Path) -> None:
    """Nodes cut by LlamaIndex's SentenceSplitter, in the JSON EmbeddingQAFinetuneDataset.save_json writes
    (its model dump: queries, corpus, relevant_docs, mode). llama-index-core 0.14 no longer ships the class
    (it moved to llama-index-finetuning, not installed), so the test writes that schema itself."""
    from llama_index.core import Document as LlamaDocument
    from llama_index.core.node_parser import SentenceSplitter

    (tmp_path / "docs").mkdir()
    shutil.copy(DATA / "semantic" / "sotu_2024.txt", tmp_path / "docs")
    text = (DATA / "semantic" / "sotu_2024.txt").read_text(encoding="utf-8")
    nodes = SentenceSplitter(chunk_size=128, chunk_overlap=16).get_nodes_from_documents([LlamaDocument(text=text)])
    picked = [nodes[1], nodes[5], nodes[9]]
    questions = ["Who did the President invite to the Capitol?", "What is happening in Ukraine?",
                 "What did the President say about democracy?"]
    qa = {"queries": {f"q{i}": q for i, q in enumerate(questions)},
          "corpus": {n.node_id: n.get_content() for n in nodes},
          "relevant_docs": {f"q{i}": [n.node_id] for i, n in enumerate(picked)}, "mode": "text"}
    (tmp_path / "qa.json").write_text(json.dumps(qa, indent=4))
    imported = import_dataset("llamaindex", tmp_path / "qa.json", tmp_path / "out", docs=tmp_path / "docs")
    got = [(a["doc_id"], a["start"], a["end"]) for q in imported.questions for a in q["answers"]]
    assert got == [("sotu_2024.txt", n.start_char_idx, n.end_char_idx) for n in picked]
    assert all(a["quote"] == text[a["start"]:a["end"]] for q in imported.questions for a in q["answers"])
    assert load_dataset(tmp_path / "out").questions[2].question == questions[2]


def test_ragas_reference_contexts_are_located_and_what_is_not_found_is_counted(tmp_path: Path) -> None:
    """RAGAS's documented test-set row (user_input, reference_contexts, reference, synthesizer_name),
    from Chroma's excerpt; one context copied with its line breaks collapsed, one that is nowhere."""
    docs = {d["doc_id"]: d["text"] for d in lines(DATA / "chroma_general" / "corpus.jsonl")}
    qs = lines(DATA / "chroma_general" / "questions.jsonl")
    rows = [{"user_input": q["question"], "reference": f"answer {i}", "synthesizer_name": "single_hop_specific_query",
             "reference_contexts": [" ".join(docs[a["doc_id"]][a["start"]:a["end"]].split()) for a in q["answers"]]}
            for i, q in enumerate(qs)]
    rows.append({"user_input": "What is the GDP of Mars?", "reference": "none", "synthesizer_name": "x",
                 "reference_contexts": ["The GDP of Mars grew by three percent in the last quarter of trading."]})
    (tmp_path / "testset.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    imported = import_dataset("ragas", tmp_path / "testset.jsonl", tmp_path / "out",
                              docs=DATA / "chroma_general" / "corpus.jsonl")
    def stripped(a: dict) -> dict:  # the quotes were copied without their outer whitespace
        t = docs[a["doc_id"]][a["start"]:a["end"]]
        return a | {"start": a["start"] + len(t) - len(t.lstrip()), "end": a["end"] - len(t) + len(t.rstrip())}

    assert [[{k: a[k] for k in ("doc_id", "start", "end")} for a in q["answers"]] for q in imported.questions] == [
        [stripped(a) for a in q["answers"]] for q in qs]
    assert [q[REFERENCE] for q in imported.questions] == [f"answer {i}" for i in range(len(qs))]
    assert imported.dropped == {"reference_contexts passages not found": 1, "questions with a passage not located": 1}
    assert "1 questions with a passage not located" in imported.summary()


def test_mtcb_chunk_must_contain_is_located_in_the_document_of_its_title(tmp_path: Path) -> None:
    """mtcb's rows (corpus: title, text; questions: title, question, answer, chunk-must-contain) from
    the SQuAD excerpt, each passage the sentence holding the answer."""
    docs = lines(DATA / "squad_v11_dev" / "corpus.jsonl")
    text = {d["doc_id"]: d["text"] for d in docs}
    rows = []
    for q in lines(DATA / "squad_v11_dev" / "questions.jsonl")[:40]:
        a = q["answers"][0]
        t = text[a["doc_id"]]
        lo, hi = t.rfind(". ", 0, a["start"]), t.find(".", a["end"])
        rows.append({"title": a["doc_id"], "question": q["question"], "answer": t[a["start"]:a["end"]],
                     "chunk-must-contain": t[0 if lo < 0 else lo + 2:hi + 1]})
    (tmp_path / "mtcb").mkdir()
    (tmp_path / "mtcb" / "corpus.jsonl").write_text("".join(json.dumps({"title": d["doc_id"], "text": d["text"]})
                                                            + "\n" for d in docs))
    (tmp_path / "mtcb" / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    imported = import_dataset("mtcb", tmp_path / "mtcb", tmp_path / "out")
    assert len(imported.questions) + imported.dropped["questions with a passage not located"] == 40
    assert len(imported.questions) >= 30
    for q in imported.questions:
        (a,) = q["answers"]
        assert q[REFERENCE] in text[a["doc_id"]][a["start"]:a["end"]] == a["quote"]
    assert load_dataset(tmp_path / "out").questions


def test_the_cli_prints_the_counts_and_refuses_a_folder_in_use(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    src = squad_json(tmp_path)
    main(["import", "squad", str(src), "--out", str(tmp_path / "out")])
    printed = capsys.readouterr().out
    assert "imported 2 documents and 130 questions from squad dev-v2.0.json; dropped: 1 unanswerable" in printed
    with pytest.raises(SystemExit, match="out.*exists and is not an empty folder"):
        main(["import", "squad", str(src), "--out", str(tmp_path / "out")])
    with pytest.raises(SystemExit, match="format 'squad' takes no option 'docs'"):
        main(["import", "squad", str(src), "--out", str(tmp_path / "o2"), "--docs", str(tmp_path)])
    with pytest.raises(SystemExit, match="format 'ragas' needs option 'docs'"):
        main(["import", "ragas", str(src), "--out", str(tmp_path / "o3")])
