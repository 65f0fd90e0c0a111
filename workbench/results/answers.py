"""Answer quality for the best variants: the LLM answers every question from each variant's
retrieved context at one token budget, and the answers are graded, beside two anchors.

Why: retrieval metrics say whether the evidence came back; whether a model answers from what came
back (packed under a budget, among distractors) is what to ask of the best two or three variants
before choosing. Two anchors frame every table: no context (the floor: what the model knows or
guesses) and the evidence itself as context (the ceiling: what it makes of perfect retrieval at
this budget). A variant near the ceiling leaves little to gain from chunking; a ceiling near the
floor says the model, not retrieval, is the limit.

Context: a variant's hits as the sweep kept them (SweepResult.hits, its top max(ks) units per
question), packed in rank order under `context_tokens` as the budget metrics pack them
(metrics.pack: a unit that would exceed the budget is dropped whole), in the result's budget
encoding, units joined by a blank line; the evidence anchor's text (the question's spans, merged)
is cut at the budget. `context_tokens` in the tables is what was sent, the units' tokens.

Grading, per question (`graded_against` says which): where the dataset has reference answers
(Question.references), SQuAD's: answers and references normalised (lower case, punctuation and
the articles a/an/the dropped, white space collapsed), token F1 and exact match, the max over
the references. Else the same against the text of the evidence spans (one reference): F1 is then
mostly how much of the evidence the answer repeats, and exact match is near 0. Optionally the model
judges each answer with a fixed rubric (JUDGE, against the references or the evidence): P(yes) from
its next-token logits (workbench.models.rerank.p_yes, as the LLM reranker), correct when > 0.5.

Every generation is cached (workbench.models.llm), and so is every judgement (by the rubric's
messages, in a file named by the model, the rubric and its version): a re-run generates nothing.
tokens_generated and seconds are what the answers cost when they were generated (perhaps runs ago);
Answers.config says what this call generated.
"""

from __future__ import annotations

import json
import re
import string
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from workbench.core.io import atomic_write, write_text
from workbench.core.tokens import TiktokenTokenizer, tiktoken_encoding
from workbench.dataset import Dataset, Hit, Question, Span
from workbench.evaluation import evidence, metrics, stats
from workbench.models.cache import RerankCache, cache_file, json_key
from workbench.models.estimate import estimate_generation
from workbench.models.llm import LLM, LLMError, Prompt
from workbench.models.rerank import JUDGE_BATCH, answer_ids, p_yes

if TYPE_CHECKING:
    from workbench.results.result import SweepResult

DEFAULT_TOP = 2
DEFAULT_CONTEXT_TOKENS = 1024  # one budget of the sweep's DEFAULT_BUDGETS: a few chunks, well inside SmolLM2's 8k
DEFAULT_MAX_TOKENS = 32  # an answer is a few words
FLOOR, CEILING = "floor", "ceiling"  # the anchors' keys (and `kind`); variants have kind "variant"
LABELS = {FLOOR: "(no context)", CEILING: "(evidence as context)"}
REFERENCE, EVIDENCE = "reference", "evidence"  # what a question's answer is graded against

# Prompts and the rubric: their names and versions key the cache; bump a version when the wording changes.
ANSWER = Prompt("answer", 1, "Context:\n{context}\n\nQuestion: {question}\n\n"
                "Answer the question from the context, in a few words.")
CLOSED = Prompt("answer-closed", 1, "Question: {question}\n\nAnswer the question in a few words.")
JUDGE = Prompt("answer-judge", 1, "Question: {question}\n\nReference answer: {reference}\n\n"
               "Proposed answer: {answer}\n\nIs the proposed answer correct? Answer yes or no.")
METRICS = ("f1", "exact_match", "judge")  # per question, each in [0, 1]


# -- grading (SQuAD v1.1's evaluation script) ---------------------------------------------------------

def normalize_answer(text: str) -> str:
    """SQuAD's normalisation: lower case, no punctuation, no articles, single spaces."""
    text = "".join(c for c in text.lower() if c not in set(string.punctuation))
    return " ".join(re.sub(r"\b(a|an|the)\b", " ", text).split())


def token_f1(answer: str, reference: str) -> float:
    """The harmonic mean of token precision and recall of the normalised texts (SQuAD); two
    texts empty once normalised agree (1.0), one empty against words does not (0.0)."""
    a, r = normalize_answer(answer).split(), normalize_answer(reference).split()
    if not a or not r:
        return float(a == r)
    common = sum((Counter(a) & Counter(r)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(a), common / len(r)
    return 2 * precision * recall / (precision + recall)


def exact_match(answer: str, reference: str) -> float:
    return float(normalize_answer(answer) == normalize_answer(reference))


def grade(answer: str, references: Sequence[str]) -> tuple[float, float]:
    """(F1, exact match) of `answer`, each the max over `references` (SQuAD's alternatives)."""
    if not references:
        raise ValueError("grade: no reference to grade against")
    return max(token_f1(answer, r) for r in references), max(exact_match(answer, r) for r in references)


# -- the contexts --------------------------------------------------------------------------------------

def evidence_text(dataset: Dataset, question: Question) -> str:
    """The text of a question's evidence spans, merged per document, in the order they are given."""
    merged = evidence.by_doc(question.answers)
    return "\n\n".join(dataset.docs[d].text[s:e] for d in merged for s, e in merged[d])


def cut(text: str, budget: int, encoding: str) -> tuple[str, int]:
    """`text` cut to its first `budget` tokens of `encoding`, and the tokens it keeps."""
    enc = tiktoken_encoding(encoding)
    tokens = enc.encode(text, disallowed_special=())
    return (text, len(tokens)) if len(tokens) <= budget else (enc.decode(tokens[:budget]), budget)


def packed_contexts(result: SweepResult, dataset: Dataset, key: str, budget: int, encoding: str
                    ) -> dict[str, tuple[str, int]]:
    """qid -> (the context of variant `key` under `budget`, its tokens) from the hits the result kept."""
    hits = result.hits[result.hits["key"] == key].sort_values(["qid", "rank"], kind="stable")
    if hits.empty:
        raise ValueError(f"variant {result.label_of(key)} has no hits in the result (a result saved before hits "
                         "were kept?): sweep it again")
    texts = {(r.doc_id, r.start, r.end): dataset.docs[r.doc_id].text[r.start : r.end] for r in hits.itertuples()}
    counts = dict(zip(texts, TiktokenTokenizer(encoding).count_many(list(texts.values())), strict=True))
    out = {}
    for qid, rows in hits.groupby("qid", sort=False):
        ranked = [Hit(Span(*at), r.score, r.chunk_id, {encoding: counts[at]})
                  for r in rows.itertuples() for at in [(r.doc_id, r.start, r.end)]]
        sent = metrics.pack(ranked, budget, encoding)
        out[str(qid)] = ("\n\n".join(texts[(h.span.doc_id, h.span.start, h.span.end)] for h in sent),
                         sum(h.tokens[encoding] for h in sent))
    return out


# -- the evaluation ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Answers:
    """What `evaluate` measured.

    table:        one row per variant and anchor, floor first, ceiling last: key, variant, kind
                  (floor, variant, ceiling), graded_against (reference, evidence, or both with counts),
                  questions, then the mean of each metric (f1, exact_match; judge when asked: the
                  share judged correct) with its bootstrap interval (<metric>_low, <metric>_high),
                  the paired F1 difference against the best variant (f1_vs_best: row minus best;
                  _low, _high, _p: BCa interval and sign-flip p-value) and against the floor
                  (f1_vs_floor), context_tokens (mean tokens sent per question, in `encoding`),
                  tokens_generated (all its answers) and seconds (of model time, when generated)
    per_question: one row per row of `table` x question: key, variant, kind, qid, question, context,
                  context_tokens, answer, references (what it was graded against), graded_against,
                  f1, exact_match, judge and p_yes (when asked), generated_tokens, seconds, cached
    config:       the LLM, the budget, the prompts' versions, the ranking, and what this call generated
    """

    table: pd.DataFrame
    per_question: pd.DataFrame
    config: dict[str, Any]

    def save(self, folder: str | Path) -> dict[str, Path]:
        """answers.csv, answers_per_question.parquet and answers_config.json, each atomically."""
        out = Path(folder)
        out.mkdir(parents=True, exist_ok=True)
        paths = {"answers": out / "answers.csv", "answers_per_question": out / "answers_per_question.parquet",
                 "answers_config": out / "answers_config.json"}
        atomic_write(paths["answers"], lambda p: self.table.to_csv(p, index=False))
        per_question = self.per_question.assign(references=self.per_question["references"].map(list))
        atomic_write(paths["answers_per_question"], lambda p: per_question.to_parquet(p, index=False))
        write_text(paths["answers_config"], json.dumps(self.config, indent=2, default=str))
        return paths


def ranked_keys(result: SweepResult, metric: str = "recall", k: int | None = None) -> list[str]:
    """The result's keys by mean `metric`@k, best first (SweepResult.ranking: by key, so a result of
    several models ranks its (variant, model) rows)."""
    return list(result.ranking(metric, k)["key"])


def evaluate(
    result: SweepResult,
    dataset: Dataset,
    top: int = DEFAULT_TOP,
    *,
    variants: Sequence[Any] | None = None,
    llm: LLM | None = None,
    context_tokens: int = DEFAULT_CONTEXT_TOKENS,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    judge: bool = False,
    metric: str = "recall",
    k: int | None = None,
    confidence: float | None = None,
    stop: Callable[[], bool] | None = None,
    on_estimate: Callable[[str], None] | None = None,
) -> Answers:
    """Answer every question of `dataset` from the context of the `top` best variants of `result`
    (all, when it has fewer) by mean `metric`@k (default: recall at the sweep's default k), or of
    `variants` (keys, labels or Variants) when given, and from the two anchors; grade the answers (see the module
    docstring). `dataset` is the one the result was measured on (its hits are spans into it).
    `llm`: default the bundled SmolLM2-135M in the default cache folder; `context_tokens`: the
    budget, in the result's budget encoding; `max_tokens`: of one answer; `judge`: the model also
    judges each answer (local backend: it reads next-token logits). `confidence`: of the intervals
    (default: the sweep's). `stop()` is asked between batches of generations (LLM.generate).
    `on_estimate(line)`, when given, hears before each prompt's generations what they will cost
    (workbench.run.estimate.estimate_generation: its timed sample is kept, so nothing is generated twice)."""
    if isinstance(top, bool) or not isinstance(top, int) or top < 1:
        raise ValueError(f"top must be an int >= 1, got {top!r}")
    if isinstance(context_tokens, bool) or not isinstance(context_tokens, int) or context_tokens < 1:
        raise ValueError(f"context_tokens must be an int >= 1 (tokens), got {context_tokens!r}")
    if result.hits.empty or result.per_question.empty:
        raise ValueError("the result holds no questions (no hits: a result saved before hits were kept, or a sweep "
                         "of no questions): nothing to answer from")
    result.provenance.check_about(dataset, "answers (the result's hits point into the texts it was measured on)")
    keys = ranked_keys(result, metric, k)[:top] if variants is None else list(dict.fromkeys(map(result.key_of,
                                                                                                 variants)))
    if not keys:
        raise ValueError("variants is empty: give at least one variant")
    llm = LLM() if llm is None else llm
    if judge and llm.backend != "local":
        raise ValueError("judge=True reads the model's next-token logits: it needs an LLM with backend='local'")
    encoding = result.provenance.settings.budget_encoding
    confidence = result.confidence if confidence is None else confidence
    asked = set(result.hits["qid"])
    questions = {q.qid: q for q in dataset.questions if q.qid in asked}
    refs = {qid: q.references or (evidence_text(dataset, q),) for qid, q in questions.items()}

    rows: list[dict[str, Any]] = []  # one per (row of the table, question), in table order
    contexts = {key: packed_contexts(result, dataset, key, context_tokens, encoding) for key in keys}
    for kind, key in [(FLOOR, FLOOR), *(("variant", key) for key in keys), (CEILING, CEILING)]:
        label = LABELS.get(key) or result.label_of(key)
        for qid, q in questions.items():
            context, n = (("", 0) if kind == FLOOR else cut(evidence_text(dataset, q), context_tokens, encoding)
                          if kind == CEILING else contexts[key].get(qid, ("", 0)))
            rows.append({"key": key, "variant": label, "kind": kind, "qid": qid, "question": q.question,
                         "context": context, "context_tokens": n, "references": refs[qid],
                         "graded_against": REFERENCE if q.references else EVIDENCE})
    before = (llm.stats.generated, llm.stats.generated_tokens, llm.stats.seconds)
    closed = [r for r in rows if r["kind"] == FLOOR]
    opened = [r for r in rows if r["kind"] != FLOOR]
    for prompt, part in ((CLOSED, closed), (ANSWER, opened)):
        items = [{"question": r["question"], "context": r["context"]} for r in part]
        if on_estimate is not None:
            on_estimate(estimate_generation(llm, prompt, items, max_tokens).line())
        made = llm.generate(prompt, items, max_tokens=max_tokens, stop=stop, desc="answers")
        for r, g in zip(part, made, strict=True):
            f1, em = grade(g.value, r["references"])
            r |= {"answer": g.value, "f1": f1, "exact_match": em, "generated_tokens": g.generated_tokens,
                  "seconds": g.seconds, "cached": g.cached}
    if judge:
        for r, p in zip(rows, judgements(llm, rows), strict=True):
            r |= {"judge": float(p > 0.5), "p_yes": p}
    per_question = pd.DataFrame(rows)
    config = {"llm": llm.name, "llm_fingerprint": llm.fingerprint, "context_tokens": context_tokens,
              "encoding": encoding, "max_tokens": max_tokens, "judge": judge, "confidence": confidence,
              "ranked_by": f"{metric}@{result.default_k if k is None else k}", "variants": keys,
              "prompts": {p.name: p.version for p in (ANSWER, CLOSED, *([JUDGE] if judge else []))},
              "dataset": dataset.name, "dataset_fingerprint": dataset.fingerprint,
              "generated": llm.stats.generated - before[0], "generated_tokens": llm.stats.generated_tokens - before[1],
              "generation_seconds": round(llm.stats.seconds - before[2], 3)}
    return Answers(summary_table(per_question, confidence), per_question, config)


def judgements(llm: LLM, rows: Sequence[dict[str, Any]]) -> list[float]:
    """P(yes) of the rubric JUDGE for each answered row, each read from the judge's cache or
    computed once (next-token logits, in batches); ValueError when one is not a number."""
    chats = [JUDGE.messages({"question": r["question"], "reference": " | ".join(r["references"]),
                             "answer": r["answer"]}) for r in rows]
    keys = [json_key(c) for c in chats]
    cache = (RerankCache(cache_file(llm.cache_dir, "rerank", f"judge-{llm.fingerprint}-{JUDGE.name}-v{JUDGE.version}"))
             if llm.cache_dir else None)
    found = cache.get_many(keys) if cache is not None else {}
    missing = {k: c for k, c in zip(keys, chats, strict=True) if k not in found}
    if missing:
        scores = p_yes(llm, list(missing.values()), JUDGE_BATCH, answer_ids(llm, f"judge {llm.name!r}"))
        computed = dict(zip(missing, map(float, scores), strict=True))
        if cache is not None:  # not `if cache`: an empty cache has len 0
            cache.put_many({k: p for k, p in computed.items() if np.isfinite(p)})
        found |= computed
    for r, key in zip(rows, keys, strict=True):
        if not np.isfinite(found[key]):
            raise LLMError(f"judge {llm.name!r}: P(yes) is not a number for question {r['qid']!r} of "
                           f"{r['variant']} (its yes/no logits are not finite); the other judgements are cached")
    return [found[key] for key in keys]


def summary_table(per_question: pd.DataFrame, confidence: float = 0.95) -> pd.DataFrame:
    """The table of `Answers` from its per-question rows: means with intervals (stats.summarize) and
    paired F1 differences (stats.paired_compare) against the best variant and the floor."""
    names = [m for m in METRICS if m in per_question.columns]
    long = per_question.melt(id_vars=["key", "variant", "qid"], value_vars=names, var_name="metric").assign(k=0)
    means = stats.summarize(long, confidence=confidence)
    order = list(dict.fromkeys(per_question["key"]))
    firsts = per_question.drop_duplicates("key").set_index("key")
    sums = per_question.groupby("key")[["generated_tokens", "seconds"]].sum()
    variants = per_question[per_question["kind"] == "variant"].groupby("key", sort=False)["f1"].mean()
    best = str(variants.idxmax())  # the first of equal means, in rank order
    rows = []
    for key in order:
        row: dict[str, Any] = {"key": key, "variant": firsts.at[key, "variant"], "kind": firsts.at[key, "kind"]}
        mine = per_question[per_question["key"] == key]
        against = mine["graded_against"].value_counts()
        row["graded_against"] = (str(against.index[0]) if len(against) == 1
                                 else ", ".join(f"{n} {what}" for what, n in against.items()))
        row["questions"] = len(mine)
        for m in names:
            s = means[(means["key"] == key) & (means["metric"] == m)].iloc[0]
            row |= {m: s["mean"], f"{m}_low": s["ci_low"], f"{m}_high": s["ci_high"]}
        for name, other in (("f1_vs_best", best), ("f1_vs_floor", FLOOR)):
            c = (stats.paired_compare(long, other, key, "f1", 0, confidence) if key != other and len(mine) >= 2
                 else {"diff": np.nan, "ci_low": np.nan, "ci_high": np.nan, "p_value": np.nan})
            row |= {name: c["diff"], f"{name}_low": c["ci_low"], f"{name}_high": c["ci_high"],
                    f"{name}_p": c["p_value"]}
        row |= {"context_tokens": float(mine["context_tokens"].mean()),
                "tokens_generated": int(sums.at[key, "generated_tokens"]), "seconds": round(sums.at[key, "seconds"], 3)}
        rows.append(row)
    return pd.DataFrame(rows)


def text_table(answers: Answers) -> str:
    """The table as fixed-width text, for the CLI: each mean with its interval, the F1 difference
    against the best variant with its interval, and the costs."""
    t = answers.table
    judge = "judge" in t.columns
    level = f"{answers.config['confidence']:.0%}"
    head = ["variant", f"F1 [{level} CI]", "exact match", *(["judge"] if judge else []), "F1 vs best [CI]",
            "graded against", "context tokens", "tokens generated", "seconds"]
    lines = []
    for r in t.itertuples(index=False):
        vs = ("-" if pd.isna(r.f1_vs_best)
              else f"{r.f1_vs_best:+.3f} [{r.f1_vs_best_low:+.3f}, {r.f1_vs_best_high:+.3f}]")
        lines.append([r.variant, f"{r.f1:.3f} [{r.f1_low:.3f}, {r.f1_high:.3f}]",
                      f"{r.exact_match:.3f} [{r.exact_match_low:.3f}, {r.exact_match_high:.3f}]",
                      *([f"{r.judge:.3f} [{r.judge_low:.3f}, {r.judge_high:.3f}]"] if judge else []), vs,
                      r.graded_against, f"{r.context_tokens:,.0f}", f"{r.tokens_generated:,}", f"{r.seconds:.1f}"])
    widths = [max(len(row[c]) for row in [head, *lines]) for c in range(len(head))]
    return "\n".join("  ".join(cell.ljust(w) if c == 0 else cell.rjust(w)
                               for c, (cell, w) in enumerate(zip(row, widths, strict=True))).rstrip()
                     for row in [head, *lines])
