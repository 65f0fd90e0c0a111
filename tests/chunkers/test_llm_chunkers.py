"""The LLM strategies with the real bundled model (SmolLM2-135M) on two tiny documents: exact spans,
propositions embedded in place of their passage, a re-run that generates nothing, llm_chunk's size
guarantee, counted fallbacks for answers that cannot be used, and parameters refused up front.

Generation is slow on this machine (seconds per decoding step on busy cores), so answers are kept
short and every test after the first reuses the cached generations where it can.
"""

from __future__ import annotations

import shutil
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest
from chunkcheck import GENERATES

from workbench.chunkers import STRATEGIES, ChunkEnv, run_strategy
from workbench.chunkers.llm import LLMChunkWarning, parse_starts, parse_statements, passages
from workbench.core.params import IncompatibleParams
from workbench.core.tokens import TiktokenTokenizer
from workbench.dataset import Dataset, Document, Question, Span
from workbench.evaluation.score_cache import ScoreCache
from workbench.evaluation.settings import Settings
from workbench.models.embed import Embedder
from workbench.models.llm import default_model_path, llm_fingerprint
from workbench.retrieval.index import ChunkIndex, IndexStore, returned_token_counts
from workbench.run.session import sweep
from workbench.variant import Variant

FACTS = Document("facts", "Two facts", (
    "Marie Curie was a physicist and chemist. She was born in Warsaw in 1867 and won two Nobel Prizes.\n\n"
    "The Eiffel Tower stands in Paris. It was finished in 1889 and is made of wrought iron."))
STORY = Document("story", "A short story", (
    "The train left the station at dawn. Anna watched the fields go by.\n\n"
    "At noon the weather turned. Rain hit the windows and the lights flickered.\n\n"
    "By evening they reached the coast. The sea was calm again."))
PROPS = {"passage_size": 28, "max_tokens": 24}  # two passages, short answers
CHUNK = {"window": 6, "max_tokens": 12}  # the story's six sentences in one window


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("llm-chunkers")


def fresh(cache_dir: Path) -> ChunkEnv:
    """An env as a new run has: nothing kept but the cache folder."""
    return ChunkEnv(llm_cache_dir=cache_dir)


def assert_exact(doc: Document, chunks: list) -> None:
    assert chunks
    for c in chunks:
        assert c.doc_id == doc.doc_id
        assert 0 <= c.start < c.end <= len(doc.text)
        assert c.text == doc.text[c.start : c.end]
    assert all(a.start <= b.start for a, b in pairwise(chunks))


@pytest.mark.llm
def test_propositions_embed_statements_and_return_their_passage(cache_dir: Path) -> None:
    env = fresh(cache_dir)
    chunks = run_strategy("propositions", PROPS, FACTS, env)
    assert_exact(FACTS, chunks)
    spans = passages(FACTS, PROPS["passage_size"], "cl100k_base", env)
    assert len(spans) == 2
    assert {(c.start, c.end) for c in chunks} == set(spans)  # every chunk is a source passage, each has one
    assert all(c.embed_text for c in chunks) and any(c.embed_text != c.text for c in chunks)
    assert all(c.context_text is None for c in chunks)  # context="passage": the passage is what is sent
    assert env.llm_cost["tokens_generated"] > 0 and env.llm_cost["fallbacks"] == 0
    print("propositions:", [c.embed_text for c in chunks], dict(env.llm_cost))

    again = fresh(cache_dir)  # a re-run: everything cached, nothing generated, the same chunks and cost
    assert run_strategy("propositions", PROPS, FACTS, again) == chunks
    assert again.llms["llm"].stats.generated_tokens == 0 and again.llms["llm"].stats.cached == 2
    assert again.llm_cost == env.llm_cost


@pytest.mark.llm
def test_context_says_what_is_sent_and_counted(cache_dir: Path) -> None:
    run_strategy("propositions", PROPS, FACTS, fresh(cache_dir))  # generated here unless a test before did
    env = fresh(cache_dir)
    sent = run_strategy("propositions", PROPS | {"context": "proposition"}, FACTS, env)
    assert env.llms["llm"].stats.generated_tokens == 0  # the same generations as context="passage"
    assert all(c.context_text == c.embed_text for c in sent)
    data = Dataset("facts", (FACTS,), ())
    by_passage = returned_token_counts(run_strategy("propositions", PROPS, FACTS, env), data)["cl100k_base"]
    by_statement = returned_token_counts(sent, data)["cl100k_base"]
    count = TiktokenTokenizer("cl100k_base").count
    assert list(by_statement) == [count(c.embed_text) for c in sent]
    assert list(by_passage) == [count(c.text) for c in sent]
    assert sum(by_statement) != sum(by_passage)


@pytest.mark.llm
def test_a_ranking_keeps_the_best_proposition_of_a_passage_once(cache_dir: Path) -> None:
    chunks = run_strategy("propositions", PROPS, FACTS, fresh(cache_dir))
    returned = returned_token_counts(chunks, Dataset("facts", (FACTS,), ()))
    index = ChunkIndex(chunks, None, returned, {})
    order = np.arange(len(chunks))[::-1]  # the last proposition ranked first
    hits = index.hits((np.linspace(1, 0, len(chunks)), order), k=len(chunks))
    assert [(h.span.start, h.span.end) for h in hits] == list(dict.fromkeys((chunks[i].start, chunks[i].end)
                                                                             for i in order))
    assert hits[0].chunk_id == order[0]


def test_a_sweep_scores_propositions_on_passages_with_their_model_cost(cache_dir: Path, embedder: Embedder) -> None:
    born = FACTS.text.index("She was born")
    question = Question("q1", "Where was Marie Curie born?", (Span("facts", born, FACTS.text.index(" and won")),))
    data = Dataset("facts", (FACTS,), (question,))
    variants = [Variant.make("propositions", **PROPS), Variant.make("propositions", **PROPS, context="proposition")]
    result = sweep(data, variants, embedder=embedder, store=cache_dir, progress=False, ks=(1, 2), budgets=())
    rows = result.variants.set_index("key")
    assert (rows["index_tokens_generated"] > 0).all() and (rows["index_llm_fallbacks"] == 0).all()
    assert rows["index_tokens_generated"].nunique() == 1  # one set of generations behind both
    passages_of = set(passages(FACTS, PROPS["passage_size"], "cl100k_base", fresh(cache_dir)))
    for _, hits in result.hits.groupby("key"):
        spans = list(zip(hits["start"], hits["end"], strict=True))
        assert len(spans) == 2 and len(set(spans)) == 2 and set(spans) <= passages_of  # each passage once
    s = result.summary
    sent = s[(s["metric"] == "context_tokens") & (s["k"] == 1)].set_index("key")["mean"]
    assert sent[variants[1].key] < sent[variants[0].key]  # a statement is shorter than its passage


@pytest.mark.llm
def test_unusable_answers_fall_back_to_the_passage_counted_and_warned(cache_dir: Path) -> None:
    env = fresh(cache_dir)
    with pytest.warns(LLMChunkWarning, match="2 of 2 passages gave no statement"):
        chunks = run_strategy("propositions", PROPS | {"max_tokens": 1}, FACTS, env)  # one word: no statement
    assert_exact(FACTS, chunks)
    assert [c.embed_text for c in chunks] == [None, None] and env.llm_cost["fallbacks"] == 2


def test_parse_statements_drops_bullets_fragments_and_repeats() -> None:
    answer = "1. Marie Curie was a physicist.\n- Marie Curie was a physicist.\nStatements:\n* She won two prizes"
    assert parse_statements(answer) == ["Marie Curie was a physicist.", "She won two prizes"]
    assert parse_starts("Pieces 3 and 5 start chunks.", 6) == [3, 5]
    assert parse_starts("0", 6) == [] and parse_starts("The pieces are fine.", 6) is None
    assert parse_starts("9, 12", 6) is None  # no piece of the window: nonsense, not "no split"


@pytest.mark.llm
def test_llm_chunk_keeps_whole_sentences_and_its_max_size(cache_dir: Path) -> None:
    env = fresh(cache_dir)
    chunks = run_strategy("llm_chunk", CHUNK, STORY, env)
    assert_exact(STORY, chunks)
    assert len(chunks) > 1  # the model's cuts: cut by size (a fallback), the 44-token story is one chunk
    assert "".join(STORY.text.split()) == "".join("".join(c.text for c in chunks).split())  # all of it, once
    print("llm_chunk:", [c.text for c in chunks], dict(env.llm_cost))
    count = TiktokenTokenizer("cl100k_base").count
    tight = fresh(cache_dir)
    small = run_strategy("llm_chunk", CHUNK | {"max_size": 8}, STORY, tight)  # the same answers, cached
    assert tight.llms["llm"].stats.generated_tokens == 0
    assert_exact(STORY, small)
    assert max(count(c.text) for c in small) <= 8
    over = sum(count(c.text) > 8 for c in chunks)
    assert (tight.llm_cost["fallbacks"] > 0) == (over > 0)


@pytest.mark.llm
def test_llm_chunk_nonsense_is_cut_by_size_counted(cache_dir: Path) -> None:
    env = fresh(cache_dir)
    with pytest.warns(LLMChunkWarning, match="answered with no sentence number"):
        chunks = run_strategy("llm_chunk", CHUNK | {"max_tokens": 1, "max_size": 16}, STORY, env)
    assert_exact(STORY, chunks)
    assert env.llm_cost["fallbacks"] >= 1
    assert max(TiktokenTokenizer("cl100k_base").count(c.text) for c in chunks) <= 16


def test_the_model_files_name_the_index_entry_and_the_scores(tmp_path: Path, embedder: Embedder) -> None:
    """A changed model file under the same path (the same variant key) never serves the old chunks or scores."""
    model = tmp_path / "copy.gguf"
    shutil.copyfile(default_model_path(), model)
    v = Variant.make("llm_chunk", **CHUNK, model=str(model))
    data, store = Dataset("story", (STORY,), ()), IndexStore(tmp_path)
    scores = ScoreCache(tmp_path, data, embedder.fingerprint, Settings())
    before = store.path(v, data, embedder), scores.path(v)
    assert before[0].name.endswith(llm_fingerprint(str(model))) and before[1].name.endswith(llm_fingerprint(str(model)))
    with model.open("ab") as f:
        f.write(b"\0")
    assert Variant.make("llm_chunk", **CHUNK, model=str(model)).key == v.key
    after = store.path(v, data, embedder), scores.path(v)
    assert after[0] != before[0] and after[1] != before[1]
    plain = Variant.make("sentence")  # a strategy without a model: its entry is named as it always was
    assert store.path(plain, data, embedder).name == f"{plain.key}-{data.corpus_fingerprint}-{embedder.fingerprint}"


@pytest.mark.parametrize(("strategy", "params", "message"), [
    ("propositions", {"passage_size": 4}, "parameter 'passage_size' must be in [8, inf]"),
    ("propositions", {"context": "both"}, "parameter 'context' must be one of ['passage', 'proposition']"),
    ("propositions", {"max_tokens": 0}, "parameter 'max_tokens' must be in [1, 4096]"),
    ("llm_chunk", {"window": 1}, "parameter 'window' must be in [2, 64]"),
    ("llm_chunk", {"max_size": "big"}, "parameter 'max_size' must be int"),
])
def test_bad_parameters_are_refused_before_any_generation(strategy: str, params: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        Variant.make(strategy, **params)


def test_the_strategies_left_out_of_the_property_tests_are_the_llm_ones() -> None:
    assert GENERATES == {name for name, s in STRATEGIES.items() if s.models}


def test_a_model_that_is_not_there_is_refused_up_front(tmp_path: Path) -> None:
    with pytest.raises(IncompatibleParams, match="is not a local transformers causal LM"):
        Variant.make("propositions", model=str(tmp_path / "missing"))
