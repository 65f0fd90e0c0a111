"""Rerankers: score (question, passage) pairs, so a second retrieval stage can reorder the first
stage's top n (workbench.retrieval.rerank).

Why models of their own: a cross-encoder reads the question and the passage together, which is
what makes it better than a cosine of two vectors and also what makes it slow, one forward pass
per pair. Pairs are therefore scored in batches and each score is cached by content (the
reranker's fingerprint names the file, the pair's text the row), so a variant that reranks the
same candidates again, or another k, scores nothing.

A reranker is named by a spec string, the stage's `model` parameter: "llm" (the bundled LLM as a
pointwise judge, the default: it works offline), a GGUF file or a local causal-LM folder (that LLM
as the judge), or a local sentence-transformers CrossEncoder folder (its config.json names a
sequence-classification architecture). A hub name is refused: nothing is downloaded. So is an
endpoint ("openai:...", which other `model` parameters accept): it returns text, not logits.

The LLM judge reads a fixed rubric (JUDGE) and answers nothing: one forward pass per pair gives the
next-token logits, and the score is P(yes) / (P(yes) + P(no)), each the SUM of the probabilities
of the answer's spellings that are one token ("yes", "Yes", " yes", ...), since the model may
start its answer with any of them. It is a probability in [0, 1]; the softmax normaliser cancels.
"""

from __future__ import annotations

import json
import time
from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from workbench.models.base import Engine, Model, local_model_path, model_fingerprint, resolve_device
from workbench.models.cache import RerankCache, cache_file, pair_key
from workbench.models.endpoint import OPENAI_PREFIX
from workbench.models.llm import LLM, LLM_SPEC, Prompt

DEFAULT_BATCH = 32  # pairs per forward pass
JUDGE_BATCH = 8  # prompts per forward pass of an LLM judge (more were no faster per pair here)
# The judge's rubric: its name and version enter the judge's fingerprint, so bump the version
# whenever the wording or the answer words change (the scores would mean something else). The
# passage and the rubric come first, so that the pairs of one passage (a chunk in the top n of
# many questions) share all of their prompt but the question, which the judge reads once
# (LLMJudgeReranker). The order costs the bundled 135M judge nothing measurable: on the top 8
# chunks of 30 chroma_small questions its ROC AUC for "the chunk holds evidence" was 0.58 this
# way, 0.53 with the question first (version 1) and 0.49 to 0.53 in three other orders: near chance.
JUDGE = Prompt("rerank-judge", 2, "Passage: {passage}\n\nDoes the passage answer this question? Answer yes or no."
               "\n\nQuestion: {question}")
ANSWERS = {"yes": ("yes", "Yes", "YES", " yes", " Yes", " YES"), "no": ("no", "No", "NO", " no", " No", " NO")}


@dataclass
class RerankStats:
    """What a reranker did since it was made: pairs scored by the model, pairs read from the cache, seconds."""

    scored: int = 0
    cached: int = 0
    seconds: float = 0.0


class Reranker(Model):
    """Scores (question, passage) pairs, higher = more relevant; `score` reads the cache first.
    `engine` (workbench.run.engine) computes the uncached batches elsewhere, e.g. on a Ray cluster:
    the driver makes the same batches in the same order, so the scores are a local run's."""

    cache: RerankCache | None
    batch_size: int

    def __init__(self, engine: Engine | None = None) -> None:
        self.stats = RerankStats()
        self.engine = engine

    @abstractmethod
    def batch_scores(self, batch: Sequence[tuple[str, str]]) -> np.ndarray:
        """The scores of one batch of pairs (one forward pass), without the cache: what a worker runs."""

    def batches(self, pairs: Sequence[tuple[str, str]]) -> list[list[int]]:
        """The indices of `pairs`, batch after batch, as the model computes them (here: as given)."""
        return [list(range(b, min(b + self.batch_size, len(pairs)))) for b in range(0, len(pairs), self.batch_size)]

    def _compute(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """Scores of pairs none of which is cached, batch by batch, here or on the engine."""
        rows = self.batches(pairs)
        batches = [[pairs[i] for i in r] for r in rows]
        computed = self.engine.map(self, "batch_scores", batches) if self.engine else map(self.batch_scores, batches)
        out = np.zeros(len(pairs), dtype=np.float64)
        bar = tqdm(computed, total=len(rows), desc=f"reranking ({self.name})", unit="batch", disable=len(rows) < 2)
        for r, scores in zip(rows, bar, strict=True):
            out[r] = scores
        return out

    def score(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """One float64 score per pair, each distinct pair computed once ever (per cache)."""
        keys = [pair_key(q, p) for q, p in pairs]
        found = self.cache.get_many(keys) if self.cache is not None else {}
        missing: dict[bytes, tuple[str, str]] = {}
        for k, pair in zip(keys, pairs, strict=True):
            if k not in found and k not in missing:
                missing[k] = pair
        if missing:
            t0 = time.perf_counter()
            computed = dict(zip(missing, map(float, self._compute(list(missing.values()))), strict=True))
            self.stats.seconds += time.perf_counter() - t0
            if self.cache is not None:
                self.cache.put_many(computed)
            found.update(computed)
        self.stats.scored += len(missing)
        self.stats.cached += len(pairs) - len(missing)
        return np.array([found[k] for k in keys], dtype=np.float64)


class CrossEncoderReranker(Reranker):
    """A sentence-transformers CrossEncoder from a local folder (e.g. ms-marco-MiniLM-L-6-v2 saved
    with `CrossEncoder(...).save(folder)` on a machine that is online)."""

    def __init__(self, model: str | Path, cache_dir: str | Path | None = None, batch_size: int = DEFAULT_BATCH,
                 device: str = "cpu", engine: Engine | None = None):
        super().__init__(engine)
        self.path = local_model_path(model, ("config.json",), "cross-encoder")
        self.fingerprint = f"ce-{model_fingerprint(self.path)}"
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.name = self.path.name
        self.device = resolve_device(device)
        self.batch_size = batch_size
        self.cache_dir = None if cache_dir is None else Path(cache_dir)
        self.cache = None if self.cache_dir is None else RerankCache(cache_file(self.cache_dir, "rerank",
                                                                                self.fingerprint))

    def arguments(self) -> dict[str, Any]:
        return {"model": str(self.path), "cache_dir": None if self.cache_dir is None else str(self.cache_dir),
                "batch_size": self.batch_size, "device": self.device}

    @cached_property
    def model(self) -> Any:
        from sentence_transformers import CrossEncoder

        return CrossEncoder(str(self.path), device=self.device, local_files_only=True)

    def batch_scores(self, batch: Sequence[tuple[str, str]]) -> np.ndarray:
        scores = self.model.predict([list(p) for p in batch], batch_size=self.batch_size, show_progress_bar=False,
                                    convert_to_numpy=True)
        return np.asarray(scores, dtype=np.float64).reshape(len(batch))


class LLMJudgeReranker(Reranker):
    """A local LLM as a pointwise judge (see the module docstring): `model` is None (the bundled
    SmolLM2), a GGUF file or a causal-LM folder; the LLM's own cache folder is `cache_dir` (where
    a GGUF is converted once).

    Why the pairs are grouped by passage: a first stage's top n of many questions holds the same
    chunks again and again, and the rubric puts the passage first, so the pairs of one passage
    share all of their prompt but the question. Each such passage is one unit of work, which
    reads that prefix once into the KV cache and then only each pair's question (a tenth of a
    prompt or less), `batch_size` pairs a forward pass; passages judged once are batched
    together, shortest prompts first (least padding)."""

    def __init__(self, model: str | Path | None = None, cache_dir: str | Path | None = None,
                 batch_size: int = JUDGE_BATCH, device: str = "cpu", threads: int | None = None,
                 engine: Engine | None = None):
        super().__init__(engine)
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.cache_dir = None if cache_dir is None else Path(cache_dir)
        self.llm = LLM(model, cache_dir=self.cache_dir, device=device, threads=threads, progress=False)
        self.name, self.device, self.batch_size = f"{self.llm.name} judge", self.llm.device, batch_size
        self.fingerprint = judge_fingerprint(self.llm)
        self.cache = None if self.cache_dir is None else RerankCache(cache_file(self.cache_dir, "rerank",
                                                                                self.fingerprint))

    def arguments(self) -> dict[str, Any]:
        llm = self.llm.arguments()
        return {"model": llm["model"], "cache_dir": llm["cache_dir"], "batch_size": self.batch_size,
                "device": self.device, "threads": self.llm.threads}

    @cached_property
    def answer_ids(self) -> tuple[list[int], list[int]]:
        """The token ids of the spellings of "yes" and of "no" that are one token each."""
        return answer_ids(self.llm, f"reranker {self.name!r}")

    def batches(self, pairs: Sequence[tuple[str, str]]) -> list[list[int]]:
        """Units of work: all the pairs of each shared passage, the most shared first, its shortest
        questions first; then the passages judged once, `batch_size` at a time, shortest prompts first."""
        shared, alone = [], []
        for rows in by_passage(pairs):
            if len(rows) > 1:
                shared.append(sorted(rows, key=lambda i: len(pairs[i][0])))
            else:
                alone += rows
        shared.sort(key=len, reverse=True)
        alone.sort(key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
        return shared + [alone[b : b + self.batch_size] for b in range(0, len(alone), self.batch_size)]

    def batch_scores(self, batch: Sequence[tuple[str, str]]) -> np.ndarray:
        """Each passage that several pairs of the unit share from its prompt prefix read once,
        `batch_size` pairs a forward pass; the unit's other pairs as whole prompts (see the class docstring)."""
        chats = [JUDGE.messages({"question": q, "passage": p}) for q, p in batch]
        yes, no = self.answer_ids
        out = np.zeros(len(batch), dtype=np.float64)
        alone = []
        for rows in by_passage(batch):
            prefix = self.llm.shared_prefix([chats[i] for i in rows]) if len(rows) > 1 else None
            if prefix is None:
                alone += rows
                continue
            for b in range(0, len(rows), self.batch_size):
                part = rows[b : b + self.batch_size]
                out[part] = yes_share(self.llm.next_token_logits([chats[i] for i in part], yes + no, prefix), len(yes))
        if alone:
            out[alone] = p_yes(self.llm, [chats[i] for i in alone], self.batch_size, self.answer_ids)
        return out


def by_passage(pairs: Sequence[tuple[str, str]]) -> list[list[int]]:
    """The indices of the pairs of each distinct passage, passages in order of first appearance."""
    rows: dict[str, list[int]] = {}
    for i, (_, passage) in enumerate(pairs):
        rows.setdefault(passage, []).append(i)
    return list(rows.values())


def answer_ids(llm: LLM, who: str) -> tuple[list[int], list[int]]:
    """The token ids of the spellings of "yes" and of "no" (ANSWERS) that are one token each of
    `llm`'s tokenizer; ValueError naming `who` when an answer has none."""
    ids = {}
    for answer, spellings in ANSWERS.items():
        tokens = [llm.tokenizer.encode(s, add_special_tokens=False) for s in spellings]
        ids[answer] = sorted({t[0] for t in tokens if len(t) == 1})
        if not ids[answer]:
            raise ValueError(f"{who}: no spelling of {answer!r} is one token of its tokenizer")
    return ids["yes"], ids["no"]


def yes_share(logits: np.ndarray, n_yes: int) -> np.ndarray:
    """P(yes) / (P(yes) + P(no)) of each row of next-token logits whose first `n_yes` columns are
    the spellings of yes and the others those of no (see the module docstring)."""
    lse_yes = np.logaddexp.reduce(logits[:, :n_yes], axis=1)
    lse_no = np.logaddexp.reduce(logits[:, n_yes:], axis=1)
    return 1.0 / (1.0 + np.exp(lse_no - lse_yes))


def p_yes(llm: LLM, chats: Sequence[list[dict[str, str]]], batch_size: int,
          ids: tuple[list[int], list[int]]) -> np.ndarray:
    """P(yes) / (P(yes) + P(no)) of each chat's answer from the next-token logits (`ids`: see
    `answer_ids`; `yes_share`), `batch_size` chats per forward pass, shortest first."""
    yes, no = ids
    order = sorted(range(len(chats)), key=lambda i: len(chats[i][-1]["content"]))  # least padding
    out = np.zeros(len(chats), dtype=np.float64)
    for b in range(0, len(order), batch_size):
        rows = order[b : b + batch_size]
        out[rows] = yes_share(llm.next_token_logits([chats[i] for i in rows], yes + no), len(yes))
    return out


def judge_fingerprint(llm: LLM) -> str:
    return f"judge-{llm.fingerprint}-{JUDGE.name}-v{JUDGE.version}"


def reranker_kind(spec: str) -> str:
    """"llm" (an LLM judge) or "cross-encoder", from the spec alone: "llm", a .gguf file, or a
    local folder whose config.json names a causal-LM or a sequence-classification architecture."""
    if spec.startswith(OPENAI_PREFIX):
        raise ValueError(f"+rerank parameter 'model': {spec!r} is an endpoint, which returns text, but the LLM judge "
                         f"reads next-token logits: use {LLM_SPEC!r}, a .gguf file, or a local causal-LM or "
                         "cross-encoder folder")
    path = Path(spec)
    if spec == LLM_SPEC or (path.suffix == ".gguf" and path.is_file()):
        return "llm"
    if not (path / "config.json").is_file():
        raise ValueError(f"model {spec!r} is not {LLM_SPEC!r}, a .gguf file or a local cross-encoder or causal-LM "
                         "folder (no config.json); hub names cannot be downloaded here, pass a folder path")
    try:
        architectures = json.loads((path / "config.json").read_text()).get("architectures") or []
    except (ValueError, AttributeError) as e:
        raise ValueError(f"model {spec!r}: {path / 'config.json'} is not a JSON object ({e})") from None
    if any(a.endswith("ForSequenceClassification") for a in architectures):
        return "cross-encoder"
    if any(a.endswith("ForCausalLM") for a in architectures):
        return "llm"
    raise ValueError(f"model {spec!r}: {path / 'config.json'} field 'architectures' is {architectures!r}, "
                     "neither a sequence classifier (a cross-encoder) nor a causal LM (an LLM judge)")


def make_reranker(spec: str, cache_dir: str | Path | None, engine: Engine | None = None) -> Reranker:
    if reranker_kind(spec) == "cross-encoder":
        return CrossEncoderReranker(spec, cache_dir, engine=engine)
    return LLMJudgeReranker(None if spec == LLM_SPEC else spec, cache_dir, engine=engine)


def reranker_fingerprint(spec: str) -> str:
    """The fingerprint of the reranker `spec` names, without loading it: what keys the scores of
    the variants that rerank with it, so a changed model never serves their old scores."""
    if reranker_kind(spec) == "llm":
        return judge_fingerprint(LLM(None if spec == LLM_SPEC else spec, cache_dir=None, progress=False))
    return CrossEncoderReranker(spec).fingerprint  # hashes the files, loads nothing


class Rerankers:
    """The rerankers of one sweep, by spec, each loaded once and sharing one cache folder (and the
    engine that computes their uncached pairs, None: this process)."""

    def __init__(self, cache_dir: str | Path | None, engine: Engine | None = None):
        self.cache_dir = None if cache_dir is None else Path(cache_dir)
        self.engine = engine
        self._loaded: dict[str, Reranker] = {}

    def get(self, spec: str) -> Reranker:
        if spec not in self._loaded:
            self._loaded[spec] = make_reranker(spec, self.cache_dir, self.engine)
        return self._loaded[spec]

    @property
    def seconds(self) -> float:
        """Seconds the loaded rerankers spent scoring, all together (a variant's share is a difference)."""
        return sum(r.stats.seconds for r in self._loaded.values())
