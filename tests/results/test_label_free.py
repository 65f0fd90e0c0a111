"""Quality without labels (workbench.results.label_free): which sentence pairs a chunking cuts, the two
measures on text whose topics are known, and Session.label_free's table, cache and place in the audit,
the CLI and the report."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import REPO

import workbench as wb
from workbench.cli import main
from workbench.core.chunk import Chunk
from workbench.dataset import Dataset, Document
from workbench.models.embed import Embedder
from workbench.results.label_free import MEASURES, TRUST, cut_pairs, measure, sentences
from workbench.run import session as session_module
from workbench.variant import Variant

# Two topics, three sentences each: every sentence of one topic shares its words with the others.
TOPICS = ("Cats purr softly. Cats purr when fed. Cats purr at night. "
          "Rockets burn fuel fast. Rockets burn fuel in space. Rockets burn fuel on launch.")
DOC = Document("topics.txt", "topics.txt", TOPICS)
DATASET = Dataset("topics", (DOC,), ())


def topic_vectors(texts: list[str]) -> np.ndarray:
    """A unit vector per sentence: one axis for cats, one for rockets, a little of the other to tell them apart."""
    return np.array([[1.0, 0.1] if "Cats" in t else [0.1, 1.0] for t in texts], dtype=np.float32) / math.hypot(1, 0.1)


def chunks_at(*cuts: int) -> list[Chunk]:
    """The document cut at these character offsets."""
    bounds = [0, *cuts, len(TOPICS)]
    return [Chunk(DOC.doc_id, a, b, TOPICS[a:b]) for a, b in zip(bounds, bounds[1:], strict=False)]


def test_a_cut_between_sentences_parts_that_pair_and_one_inside_a_sentence_is_counted_apart() -> None:
    bounds = sentences(DATASET, topic_vectors)[DOC.doc_id].bounds
    assert len(bounds) == 6
    between = bounds[2][1] + 1  # the space after the third sentence
    cut, inside = cut_pairs(bounds, chunks_at(between), len(TOPICS))
    assert cut.tolist() == [False, False, True, False, False] and inside == 0
    cut, inside = cut_pairs(bounds, chunks_at(bounds[1][0] + 4), len(TOPICS))
    assert not cut.any() and inside == 1


def test_cuts_at_the_change_of_topic_score_above_cuts_across_it() -> None:
    found = sentences(DATASET, topic_vectors)
    bounds = found[DOC.doc_id].bounds
    at_change = measure(DATASET, found, chunks_at(bounds[3][0]))
    across = measure(DATASET, found, chunks_at(bounds[2][0], bounds[4][0]))  # each middle chunk holds both topics
    mid_sentence = measure(DATASET, found, chunks_at(bounds[3][0] + 5))
    assert at_change.cut_contrast > 0.5 > across.cut_contrast
    assert mid_sentence.cut_contrast < at_change.cut_contrast  # a sentence parted from itself counts as cosine 1
    assert at_change.cohesion == pytest.approx(1.0) and across.cohesion < 0.95
    assert (at_change.kept_pairs, at_change.cut_pairs, at_change.cohesive_chunks) == (4, 1, 2)


def test_one_chunk_has_no_cut_to_contrast() -> None:
    found = sentences(DATASET, topic_vectors)
    whole = measure(DATASET, found, chunks_at())
    assert math.isnan(whole.cut_contrast) and whole.cohesion < 1


def test_the_session_measures_each_variant_in_order_and_reads_them_back(fake_embedder: Embedder, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    data = wb.load_dataset(REPO / "tests" / "data" / "itsdangerous")
    variants = [Variant.make("fixed", size=48), Variant.make("sentence", size=96), Variant.make("fixed", size=48,
                                                                                                retriever="bm25")]
    session = wb.Session(data, cache=tmp_path, models=[fake_embedder], progress=False)
    first = session.label_free(variants)
    audited = session.audit(variants[:2], label_free=True)
    assert list(first["label"]) == [v.label for v in variants] and list(first.columns[-2:]) == list(MEASURES)
    assert first.loc[0, "cut_contrast"] < first.loc[1, "cut_contrast"]  # fixed cuts sentences, `sentence` never
    assert first.loc[0, MEASURES].tolist() == first.loc[2, MEASURES].tolist()  # a retriever does not change chunks

    def no_chunking(*args: object) -> None:
        raise AssertionError("chunked again")

    monkeypatch.setattr(session_module, "written_chunks", no_chunking)
    again = session.label_free(variants)
    pd.testing.assert_frame_equal(first, again)
    pd.testing.assert_frame_equal(audited.drop(columns="findings"),
                                  session.audit(variants[:2], label_free=True).drop(columns="findings"))
    assert audited[list(MEASURES)].to_numpy().tolist() == first.loc[:1, MEASURES].to_numpy().tolist()


def test_the_report_shows_the_measures_with_how_far_to_trust_them(fake_embedder: Embedder, tiny: Dataset,
                                                                  tmp_path: Path) -> None:
    variants = [Variant.make("fixed", size=24, retriever="bm25"), Variant.make("sentence", size=48, retriever="bm25")]
    session = wb.Session(tiny, cache=tmp_path, models=[fake_embedder], ks=(1, 3), progress=False)
    result = session.sweep(variants)
    page = wb.report.export(result, tmp_path / "out", dataset=tiny, store=session.store,
                            audit=session.audit(variants, label_free=True))["report"].read_text(encoding="utf-8")
    section = page.split('<section id="chunk-health">')[1].split("</section>")[0]
    assert "<th>cut_<wbr>contrast</th><th>cohesion</th>" in section and TRUST[1:] in section


@pytest.mark.model
def test_audit_label_free_ranks_a_folder_without_questions(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "docs"
    data.mkdir()
    (data / "topics.txt").write_text(TOPICS * 3, encoding="utf-8")
    main(["audit", str(data), "--cache", str(tmp_path / "cache"), "--quiet", "--label-free",
          "-v", "fixed:size=7", "-v", "sentence:size=40"])
    out = capsys.readouterr().out.splitlines()
    assert out[1].split()[-3:] == [*MEASURES, "variant"]
    contrast = [float(line.split()[-4]) for line in out[2:4]]  # the label (two words) follows the measures
    assert contrast[0] < contrast[1]  # 7 tokens cut inside sentences, `sentence` never does
    assert out[-1].startswith("Label-free: cut_contrast ranks first sentence(size=40")
    assert out[-1].endswith(TRUST + ".")


def test_an_audit_with_the_label_free_measures_chunks_each_variant_once(fake_embedder: Embedder, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = session_module.written_chunks

    def counted(variant: Variant, *args: object) -> object:
        calls.append(variant.label)
        return real(variant, *args)

    monkeypatch.setattr(session_module, "written_chunks", counted)
    data = wb.load_dataset(REPO / "tests" / "data" / "itsdangerous")
    variants = [Variant.make("fixed", size=48), Variant.make("sentence", size=96)]
    wb.Session(data, cache=tmp_path, models=[fake_embedder], progress=False).audit(variants, label_free=True)
    assert sorted(calls) == sorted(v.label for v in variants)
