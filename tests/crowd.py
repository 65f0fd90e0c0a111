"""A 40-variant result without a model, as the trial's grid was (four strategies, sizes, three
retrievers): its scores drawn at random, so the figures and the report are tested at a realistic
grid in seconds. Each retriever of one chunking shares its chunks, so its precision_omega too.
With it, answers an LLM might have given (no LLM runs), the race a search of 300 candidates might
have run to end with some of its variants, and what a crowded figure is checked with: the hues a
panel draws."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.colors import to_hex

from workbench.evaluation import stats
from workbench.results.answers import CEILING, FLOOR, Answers
from workbench.results.provenance import Provenance
from workbench.results.result import SweepResult
from workbench.variant import Variant, grid

RETRIEVERS = ["dense", "bm25", "hybrid"]
VARIANTS = [*(v for s in ("fixed", "recursive", "sentence") for v in grid(s, size=[64, 128, 256, 512],
                                                                             retriever=RETRIEVERS)),
            *grid("semantic", breakpoint_percentile=[80, 95], max_size=256, retriever=RETRIEVERS[:2])]
KS, BUDGETS, QUESTIONS = (1, 3, 5, 10), (256, 512, 1024, 2048), 60
_STRATEGY = {"fixed": 0.0, "recursive": 0.04, "sentence": 0.02, "semantic": 0.03}
_RETRIEVER = {"dense": 0.0, "bm25": -0.05, "hybrid": 0.04}


def _size(v: Variant) -> int:
    return int(v.kwargs.get("size", v.kwargs.get("max_size", 0)))


def _quality(v: Variant, rng: np.random.Generator) -> float:
    """The chance the evidence's chunk ranks first at each try: best near 256 tokens, hybrid ahead."""
    return 0.16 + _STRATEGY[v.strategy] + _RETRIEVER[v.retriever] - 0.05 * abs(np.log2(_size(v) / 256)) \
        + rng.uniform(-0.02, 0.02)


def forty(seed: int = 0) -> SweepResult:
    """The result: recall, hit, mrr and context_tokens at each k, recall at each budget, precision_omega."""
    rng = np.random.default_rng(seed)
    shared = rng.uniform(size=QUESTIONS)  # how hard each question is, for every variant alike
    evidence = rng.uniform(30, 120, QUESTIONS)  # tokens of each question's evidence
    qids = [f"q{i:03d}" for i in range(QUESTIONS)]
    rows, variants = [], []
    for v in VARIANTS:
        p = _quality(v, rng)
        u = np.clip(0.75 * shared + 0.25 * rng.uniform(size=QUESTIONS), 1e-9, 1 - 1e-9)
        rank = np.ceil(np.log1p(-u) / np.log1p(-p))  # the first rank holding evidence
        size = _size(v)
        tokens = size * (0.8 + 0.1 * rng.uniform(size=QUESTIONS))
        spread = np.random.default_rng(int(v.chunking_key, 16)).uniform(0, 0.4 * size, QUESTIONS)  # the chunks'
        omega = np.minimum(1.0, evidence / (size + spread))
        values: dict[tuple[str, int, int], np.ndarray] = {("precision_omega", 0, 0): omega}
        for k in KS:
            found = (rank <= k).astype(float)
            values |= {("recall", k, 0): found, ("hit", k, 0): found, ("mrr", k, 0): found / rank,
                       ("context_tokens", k, 0): k * tokens}
        for b in BUDGETS:
            values[("recall", 0, b)] = (rank <= b // size).astype(float)
        rows += [pd.DataFrame({"key": v.key, "variant": v.label, "model": "MiniLM", "qid": qids, "k": k,
                               "budget": b, "metric": metric, "value": value})
                 for (metric, k, b), value in values.items()]
        variants.append({"key": v.key, "variant": v.label, "model": "MiniLM", "strategy": v.strategy,
                         "contextual_header": False, "late": False, "retriever": v.retriever, **v.stage_params,
                         **v.kwargs, "chunks": 40_000 // size, "truncated_chunks": 0,
                         "tokens_embedded": 40_000 * (v.retriever != "bm25"), "seconds": 1.0})
    pq = pd.concat(rows, ignore_index=True)
    config = {"dataset": "forty", "dataset_fingerprint": "forty", "questions": QUESTIONS, "ks": list(KS),
              "budgets": list(BUDGETS), "grid": [v.spec() for v in VARIANTS],
              "models": [{"name": "MiniLM", "fingerprint": "minilm", "window": 256}], "date": "2024-12-06"}
    return SweepResult(pq, stats.summarize(pq, n_resamples=500), pd.DataFrame(variants),
                       Provenance.from_config(config))


def answers(result: SweepResult, n: int = 3) -> Answers:
    """The answer-quality tables of the n best variants by recall, between the floor and the
    ceiling, their F1 drawn at random: what the report's "Answer quality" section renders."""
    rng = np.random.default_rng(1)
    ranked = result.ranking().head(n)
    rows = [(FLOOR, "no context (floor)", FLOOR), *((r.key, r.variant, "variant") for r in ranked.itertuples()),
            (CEILING, "the evidence (ceiling)", CEILING)]
    qids = sorted(set(result.per_question["qid"]))
    per_question = pd.DataFrame([{"key": key, "variant": name, "kind": kind, "qid": q, "question": f"What of {q}?",
                                  "answer": f"an answer to {q}", "references": ("the answer",),
                                  "graded_against": "reference", "f1": rng.uniform()}
                                 for key, name, kind in rows for q in qids])
    def interval(name: str, mean: float) -> dict[str, float]:
        return {name: mean, f"{name}_low": mean - 0.06, f"{name}_high": mean + 0.06}

    table = pd.DataFrame([{"key": key, "variant": name, "kind": kind, "graded_against": "reference",
                           "questions": len(qids), **interval("f1", f1), **interval("exact_match", f1 / 2),
                           **interval("f1_vs_best", f1 - 0.7), "f1_vs_best_p": 0.01,
                           **interval("f1_vs_floor", f1 - 0.2), "f1_vs_floor_p": 0.01,
                           "context_tokens": 900.0, "tokens_generated": 2_000, "seconds": 30.0}
                          for (key, name, kind), f1 in zip(rows, [0.2, *np.linspace(0.7, 0.6, n), 0.9], strict=True)])
    config = {"llm": "qwen2.5-0.5b", "max_tokens": 64, "context_tokens": 1024, "encoding": "cl100k_base",
              "ranked_by": "recall@5", "confidence": 0.95}
    return Answers(table, per_question, config)


def race(result: SweepResult, candidates: int = 300, seed: int = 0) -> pd.DataFrame:
    """A search's race (workbench.run.search.RACE_COLUMNS) over `candidates`, ending with `result`'s
    five best by recall: the preview drops all but 30 (12 past the budget, the rest below the tied
    set), the sample's round 15 as worse and 10 as not among the five best, the whole corpus one of
    the five as worse; four finish, the best first."""
    rng = np.random.default_rng(seed)
    ranked = result.ranking()
    keys = [*ranked["key"], *(f"c{i:04d}" for i in range(candidates - len(ranked)))]
    labels = [*ranked["variant"], *(f"fixed(size={16 + i}, overlap=0)" for i in range(candidates - len(ranked)))]
    score = np.r_[np.linspace(0.9, 0.8, 5), rng.uniform(0.3, 0.78, candidates - 5)]
    order = np.argsort(-score, kind="stable")
    rows = []

    def add(i: int, round_: int, stage: str, documents: int, mean: float, status: str, reason: str = "",
            corrected: float = np.nan) -> None:
        rows.append({"key": keys[i], "variant": labels[i], "model": "MiniLM", "round": round_, "stage": stage,
                     "documents": documents, "metric": "recall", "k": 5, "mean": mean, "ci_low": mean - 0.05,
                     "ci_high": mean + 0.05, "corrected": corrected, "status": status, "reason": reason})

    for rank, i in enumerate(order):
        reason = "" if rank < 30 else "past the budget after the preview" if rank < 42 else \
            f"below the calibrated tied set (corrected {score[i]:.3f}, best 0.900, preview error left 0.020)"
        add(i, 1, "preview", 20, score[i] - 0.03, "dropped" if reason else "kept", reason, score[i])
    for rank, i in enumerate(order[:30]):
        reason = "" if rank < 5 else "not among the 5 best left for the whole corpus" if rank < 15 else \
            f"worse than the best on the same questions (behind {labels[0]} by 0.100, p_holm 0.001 <= 0.025)"
        add(i, 2, "real", 20, score[i] + 0.01, "dropped" if reason else "kept", reason)
    for rank, i in enumerate(order[:5]):
        worse = rank == 4
        add(i, 3, "whole corpus", 40, score[i], "dropped" if worse else "final",
            "worse than the best on the same questions (behind it by 0.100, p_holm 0.01 <= 0.025)" * worse)
    return pd.DataFrame(rows)


def colours_drawn(ax: Axes) -> set[str]:
    """The hues of the lines, bars and bands of a panel ("#rrggbb"), greys, black and white left out."""
    found = [line.get_color() for line in ax.get_lines()] + [p.get_facecolor() for p in ax.patches]
    found += [c for coll in ax.collections for c in (*coll.get_facecolors(), *coll.get_edgecolors())]
    hexes = {to_hex(c, keep_alpha=False) for c in found}
    return {h for h in hexes if len({h[1:3], h[3:5], h[5:7]}) > 1}
