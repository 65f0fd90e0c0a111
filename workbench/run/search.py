"""Search: the best of a space of hundreds of variants for a fraction of sweeping them all.

Why: a grid of sizes x overlaps x strategies x retrievers x modifiers passes a few hundred variants
quickly, and sweeping it all costs a real embedding of every chunking. The search spends that only
where the answer can still change, in rounds of rising fidelity:

1. preview: every candidate scored from one token pass (workbench.retrieval.preview), on the sample
   (the documents holding the questions' evidence and as many others drawn by the seed; the whole
   corpus when it has no others);
2. calibrate: a few anchors (the preview's best and the best of each chunk-size band) measured for
   real on the sample. The preview's error grows with how small a chunk is (a pooled vector is not
   the vector a chunk gets alone), so the anchors' error is fitted as a line in log2(tokens per chunk)
   and every preview score corrected by it; what the line leaves unexplained widens the tied set.
   Candidates whose corrected interval to the best reaches it survive, with the best `finalists` by
   corrected mean, as far as the budget allows;
3. race: the survivors measured for real on the sample, then each one the paired evidence says is
   worse than the best (Holm-corrected p <= alpha / 2 over the comparisons of the round) is dropped.
   Between the rounds the leader's numeric parameters are refined: halfway to each neighbour in the
   space, measured too;
4. final: the best `finalists` left measured on the whole corpus and raced once more (skipped when
   the sample is the whole corpus: round 3 measured it already).

What it returns is a SweepResult of the last round's variants, with their intervals and the
verdict, and its `race`: one row per candidate per round it was scored in (RACE_COLUMNS). Every
real measurement is cached as a sweep's, so a later sweep of any survivor costs nothing.
The rate at which its best is in the tied set of the exhaustive sweep, and its cost, are measured
in bench/search.md, not promised here.

    >>> space = Space.of({"strategies": {"fixed": {"size": "64:512:64", "overlap": [0, 32]}},
    ...                   "retrievers": ["dense", "hybrid"]})
    >>> len(space.variants().variants)
    32
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pandas as pd

from workbench.chunkers import STRATEGIES
from workbench.dataset import Dataset
from workbench.evaluation import metrics, stats
from workbench.evaluation.settings import Settings
from workbench.models.choose import result_key
from workbench.models.embed import Embedder
from workbench.models.llm import Stopped
from workbench.results.combine import combine
from workbench.results.result import SweepResult
from workbench.run.grid import Expansion, GridSpec
from workbench.variant import Variant


class Sweeps(Protocol):
    """What the search asks of a session (workbench.run.session.Session), named here so that the session
    can offer `search` without the two modules importing each other."""

    dataset: Dataset
    settings: Settings
    models: list[Embedder]

    def on(self, dataset: Dataset) -> Sweeps: ...

    def sweep(self, variants: Sequence[Variant], *, models: Sequence[Embedder] | None = None,
              stop: Callable[[], bool] | None = None, **changes: Any) -> SweepResult: ...


RACE_COLUMNS = ["key", "variant", "model", "round", "stage", "documents", "metric", "k", "mean", "ci_low", "ci_high",
                "corrected", "texts", "status", "reason"]
SPACE_KEYS = ("strategies", "retrievers", "contextual_header", "late", "models")
ANCHORS = 5  # real measurements that calibrate the preview: its best and the best of each size band
FINALISTS = 5  # candidates measured on the whole corpus at the end (or kept past the preview at least)
BUDGET = 0.1  # share of the exhaustive sweep's embedding (in whole-corpus passes) a search may spend: bench/search.md
ALPHA = 0.05  # the chance, over the search's two races, of dropping a candidate as good as the best
MIN_SAMPLE = 5  # documents without evidence a sample holds at least (when the corpus has them)


# ---------------------------------------------------------------------------------------- space


@dataclass(frozen=True)
class Space:
    """What a search explores: per strategy its parameters' values as the sweeper takes them
    ("64:512:64", "128, 256" or a list), crossed with the retrievers and the modifiers' values;
    `models` are the embedding models to cross them with (specs, see workbench.models.choose; empty:
    the session's). `Space.of` reads the JSON or YAML form:

        {"strategies": {"fixed": {"size": "64:512:64", "overlap": [0, 32]}, "recursive": {"size": "64:512:64"}},
         "retrievers": ["dense", "hybrid"], "contextual_header": [false, true], "models": ["wordllama"]}

    A strategy may be listed by name alone (["fixed", "sentence"]: their defaults)."""

    grids: tuple[GridSpec, ...]
    models: tuple[str, ...] = ()

    @classmethod
    def of(cls, spec: Space | Mapping[str, Any] | str | Path) -> Space:
        """A Space from a mapping or a .json/.yaml/.yml file; ValueError naming the file and the key at fault."""
        if isinstance(spec, Space):
            return spec
        where = "space"
        if isinstance(spec, str | Path):
            where = str(spec)
            spec = _read(Path(spec))
        if not isinstance(spec, Mapping):
            raise ValueError(f"{where}: a space is a mapping with 'strategies' (and {', '.join(SPACE_KEYS[1:])}), "
                             f"got {type(spec).__name__}")
        unknown = sorted(set(spec) - set(SPACE_KEYS))
        if unknown:
            raise ValueError(f"{where}: unknown key(s) {unknown}; known: {list(SPACE_KEYS)}")
        strategies = spec.get("strategies")
        if isinstance(strategies, list | tuple):
            strategies = {name: {} for name in strategies}
        if not isinstance(strategies, Mapping) or not strategies:
            raise ValueError(f"{where}: 'strategies' must name at least one strategy, e.g. "
                             '{"fixed": {"size": "64:512:64"}}; the space is empty')
        dims = {name: _listed(where, name, spec.get(name, default))
                for name, default in (("retrievers", ["dense"]), ("contextual_header", [False]), ("late", [False]))}
        grids = []
        for name, ranges in strategies.items():
            if name not in STRATEGIES:
                raise ValueError(f"{where}: strategies: unknown {name!r}; known: {sorted(STRATEGIES)}")
            if not isinstance(ranges, Mapping):
                raise ValueError(f"{where}: strategies.{name} must map parameters to values, got {ranges!r}")
            ranges = {p: v if isinstance(v, str | list | tuple) else [v] for p, v in ranges.items()}  # 238: [238]
            grids.append(GridSpec((name,), ranges, tuple(dims["retrievers"]), tuple(dims["contextual_header"]),
                                  tuple(dims["late"])))
        models = tuple(str(m) for m in _listed(where, "models", spec["models"])) if "models" in spec else ()
        space = cls(tuple(grids), models)
        try:
            space.variants()
        except ValueError as e:
            raise ValueError(f"{where}: {e}") from None
        return space

    def variants(self) -> Expansion:
        """Every valid combination, duplicates removed; ValueError naming the parameter at fault or,
        when every combination clashes, one of the clashes."""
        found: dict[str, Variant] = {}
        skipped: list[str] = []
        for g in self.grids:
            try:
                made = g.variants()
            except ValueError as e:
                raise ValueError(f"strategies.{g.strategies[0]}: {e}") from None
            skipped += made.skipped
            for v in made.variants:
                found.setdefault(v.key, v)
        return Expansion(list(found.values()), skipped)


def _read(path: Path) -> Any:
    if not path.is_file():
        raise ValueError(f"{path}: no such space file")
    kind = "YAML" if path.suffix.lower() in (".yaml", ".yml") else "JSON"
    text = path.read_text(encoding="utf-8")
    try:
        if kind == "YAML":
            import yaml

            return yaml.safe_load(text)
        return json.loads(text)
    except Exception as e:  # json's ValueError, yaml's YAMLError: the file named either way
        raise ValueError(f"{path}: not valid {kind} ({str(e).splitlines()[0]})") from None


def _listed(where: str, name: str, value: Any) -> list[Any]:
    values = value if isinstance(value, list | tuple) else [value]
    if not values:
        raise ValueError(f"{where}: '{name}' is empty; leave it out for its default")
    return list(values)


# ---------------------------------------------------------------------------------------- search


@dataclass
class _Race:
    """The race so far: its rows, each a candidate's `metric`@`k` in one round."""

    metric: str
    k: int
    rows: list[dict[str, Any]] = field(default_factory=list)

    def add(self, summary: pd.DataFrame, round_: int, stage: str, documents: int, status: Mapping[str, str],
            reason: Mapping[str, str], corrected: Mapping[str, float] | None = None,
            texts: Mapping[str, int] | None = None) -> None:
        for row in summary.itertuples(index=False):
            self.rows.append({"key": row.key, "variant": row.variant, "model": row.model, "round": round_,
                              "stage": stage, "documents": documents, "metric": self.metric, "k": self.k,
                              "mean": row.mean, "ci_low": row.ci_low,
                              "ci_high": row.ci_high, "corrected": (corrected or {}).get(row.key, np.nan),
                              "texts": (texts or {}).get(row.key, 0), "status": status.get(row.key, "kept"),
                              "reason": reason.get(row.key, "")})

    def table(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows, columns=RACE_COLUMNS)


def sample_of(dataset: Dataset, seed: int = 0) -> Dataset:
    """The documents holding the questions' evidence and as many others (at least MIN_SAMPLE, as many
    as there are) drawn by `seed`: the early rounds' corpus. The dataset itself when every document
    holds evidence."""
    evidence = {a.doc_id for q in dataset.questions for a in q.spans}
    others = len(dataset.documents) - len(evidence)
    if others == 0:
        return dataset
    n = min(others, max(MIN_SAMPLE, len(evidence)))
    return dataset if n == others else dataset.with_distractors(n, seed)


def search(session: Sweeps, space: Space | Mapping[str, Any] | str | Path | Sequence[Variant], *,
           metric: str = "recall", k: int | None = None, budget: float = BUDGET, seed: int = 0, alpha: float = ALPHA,
           finalists: int = FINALISTS, refine: bool = True, stop: Callable[[], bool] | None = None) -> SweepResult:
    """The best variants of `space` for `session`'s dataset and models (see the module docstring),
    as a SweepResult of the last round with its `race`. `space` may also be a list of variants (the
    numbers refined are then those the list holds). budget: the share of the exhaustive sweep's
    embedding the search may spend (the preview and every real measurement counted, at their share of
    the corpus); ValueError when it cannot buy one round."""
    variants = list(space) if isinstance(space, Sequence) and not isinstance(space, str) else \
        Space.of(space).variants().variants
    if not variants:
        raise ValueError("the space is empty: no variant to search")
    k = metrics.default_k(session.settings.ks) if k is None else k
    if k not in session.settings.ks:
        raise ValueError(f"k={k}: the session scores at ks {list(session.settings.ks)}")
    if not 0 < budget <= 1:
        raise ValueError(f"budget must be a share of the full sweep's cost in (0, 1], got {budget}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if finalists < 1:
        raise ValueError(f"finalists must be >= 1, got {finalists}")
    models = session.models
    pairs = {result_key(v.key, e): (v, e) for v in variants for e in models}
    chunkings = {_chunking(v, e) for v, e in pairs.values() if v.embeds}
    passes = _passes(pairs.values())
    total = max(sum(passes.values()), 1.0)  # the exhaustive sweep's embedding, in whole-corpus passes
    sample = sample_of(session.dataset, seed)
    share = sample.n_chars / session.dataset.n_chars
    whole = sample is session.dataset
    units = budget * total
    anchors = min(ANCHORS, len(chunkings), max(2, int(units / 3)))  # a third of the budget at most, when it allows
    least = share * (1 + anchors) + (0 if whole else 1)
    if units < least:
        raise ValueError(f"budget {budget} buys {units:.1f} of the {total:.0f} whole-corpus passes the exhaustive "
                         f"sweep embeds, below one round ({least:.1f}: the preview, {anchors} anchors"
                         f"{'' if whole else ' and a finalist on the whole corpus'}); raise it to at least "
                         f"{least / total:.2f}")
    race, spent = _Race(metric, k), share  # the preview's token pass costs about one chunking
    on_sample = session.on(sample)
    reserve = 0.0 if whole else min(finalists, len(chunkings)) * (1 - share)  # the final round re-embeds the rest

    # 1. preview
    preview = on_sample.sweep(variants, preview=True, stop=stop)
    means = _means(preview, metric, k)
    tokens = _tokens_per_chunk(preview)

    # 2. calibrate on anchors measured for real
    _go_on(stop, "the preview")
    embedding = [key for key in means.index if pairs[key][0].embeds]
    picked = _anchors(means, tokens, embedding, anchors)
    measured: set[tuple[str, ...]] = set()  # the passes made on the sample
    texts: dict[str, int] = {}  # by the key that measured a chunking first on the sample
    real = _measure(on_sample, [pairs[key] for key in picked], stop)
    spent += share * _cost(real, pairs, measured, texts)
    real_means = _means(real, metric, k)
    shift = _calibration(means, real_means, tokens, picked)
    corrected = means + pd.Series({key: shift(tokens[key]) if key in embedding else 0.0 for key in means.index})
    corrected.update(real_means)
    residual = _residual(means, real_means, tokens, picked, shift)
    upper = _upper_bounds(preview, metric, k, corrected, residual)
    keep = list(dict.fromkeys([*picked, *_survivors(corrected, upper, finalists)]))  # anchors are measured
    chosen, left = _within_budget(keep, upper, pairs, measured, units - spent - reserve, share)
    status = {key: "dropped" for key in means.index if key not in chosen}
    reason = {key: ("past the budget after the preview" if key in left else
                    f"below the calibrated tied set (corrected {corrected[key]:.3f}, best {corrected.max():.3f}, "
                    f"preview error left {residual:.3f})") for key in status}
    race.add(_summary_at(preview, metric, k), 1, "preview", len(sample.documents), status, reason,
             corrected.to_dict())

    # 3. race on the sample, refining the leader's numbers between
    _go_on(stop, "the calibration")
    todo = [pairs[key] for key in chosen if key not in real_means.index]
    if todo:
        real = combine(real, _measure(on_sample, todo, stop))
        spent += share * _cost(real, pairs, measured, texts)
    if refine:
        leader = _means(real, metric, k).index[0]
        new: list[tuple[Variant, Embedder]] = []
        left = units - spent - reserve
        for p in _refined(variants, *pairs[leader]):  # as many as the budget buys, together
            if result_key(p[0].key, p[1]) not in pairs and _cost_of([*new, p], measured, share) <= left:
                new.append(p)
        for v, e in new:
            pairs[result_key(v.key, e)] = (v, e)
        if new:
            real = combine(real, _measure(on_sample, new, stop))
            spent += share * _cost(real, pairs, measured, texts)
    dropped = _race(real, metric, k, alpha / 2)
    alive = [key for key in _means(real, metric, k).index if key not in dropped]
    if not whole:  # only the best `finalists` go on to the whole corpus
        dropped |= {key: f"not among the {finalists} best left for the whole corpus" for key in alive[finalists:]}
        alive = alive[:finalists]
    race.add(_summary_at(real, metric, k), 2, "real" if not whole else "real, whole corpus", len(sample.documents),
             {key: "dropped" for key in dropped} | ({} if not whole else dict.fromkeys(alive, "final")), dropped,
             texts=texts)
    if whole:
        result = real
    else:  # 4. the finalists on the whole corpus
        _go_on(stop, "the race on the sample")
        result = _measure(session, [pairs[key] for key in alive], stop)
        whole_texts: dict[str, int] = {}
        _cost(result, pairs, set(), whole_texts)
        last = _race(result, metric, k, alpha / 2)
        race.add(_summary_at(result, metric, k), 3, "whole corpus", len(session.dataset.documents),
                 {key: "dropped" for key in last} | {key: "final" for key in result.keys if key not in last}, last,
                 texts=whole_texts)
    result.race = race.table()
    note = (f"searched {len(pairs)} candidates of a space of {len(variants)} variants x {len(models)} model(s) "
            f"(seed {seed}, budget {budget}): {len(chosen)} past the preview, {len(result.keys)} in the last round; "
            f"{int(result.race['texts'].sum())} texts embedded for real")
    result.provenance = result.provenance.with_(notes=(*result.provenance.notes, note))
    return result


def _go_on(stop: Callable[[], bool] | None, done: str) -> None:
    """Between rounds: Stopped when `stop()` is true (a sweep asks it only between an LLM's generations);
    what was measured is cached, so searching again resumes from it."""
    if stop is not None and stop():
        raise Stopped(f"the search was stopped after {done}; what it measured is cached")


def _chunking(v: Variant, e: Embedder) -> tuple[str, str]:
    return v.chunking_key, e.fingerprint


def _means(result: SweepResult, metric: str, k: int) -> pd.Series:
    """Mean metric@k by result key, best first."""
    s = _summary_at(result, metric, k)
    return s.set_index("key")["mean"].sort_values(ascending=stats.lower_is_better(metric), kind="stable")


def _summary_at(result: SweepResult, metric: str, k: int) -> pd.DataFrame:
    s = result.summary
    return s[(s["metric"] == metric) & (s["k"] == k) & (s["budget"] == 0)]


def _tokens_per_chunk(result: SweepResult) -> pd.Series:
    v = result.variants.set_index("key")
    return (v["tokens_embedded"] / v["chunks"].clip(lower=1)).clip(lower=1)


def _anchors(means: pd.Series, tokens: pd.Series, embedding: list[str], n: int) -> list[str]:
    """The preview's best embedding candidate and the best of each of n - 1 bands of tokens per chunk
    (equal counts, small to large): where the preview's error is measured."""
    if not embedding or n == 0:
        return []
    picked = [embedding[0]]  # `means` is best first
    by_size = sorted(embedding, key=lambda key: tokens[key])
    for band in np.array_split(np.array(by_size, dtype=object), max(n - 1, 1)):
        best = [key for key in embedding if key in set(band) and key not in picked][:1]
        picked += best
    return picked[:n]


def _calibration(preview: pd.Series, real: pd.Series, tokens: pd.Series,
                 anchors: list[str]) -> Callable[[float], float]:
    """The preview's error (real minus preview) as a line in log2(tokens per chunk), least squares over
    the anchors (a constant with fewer than three sizes, none without anchors)."""
    if not anchors:
        return lambda size: 0.0
    x = np.log2([tokens[key] for key in anchors])
    y = np.array([real[key] - preview[key] for key in anchors])
    if len(set(np.round(x, 6))) < 3:
        return lambda size, c=float(y.mean()): c
    slope, intercept = np.polyfit(x, y, 1)
    return lambda size: float(intercept + slope * math.log2(size))


def _residual(preview: pd.Series, real: pd.Series, tokens: pd.Series, anchors: list[str],
              shift: Callable[[float], float]) -> float:
    """The largest error the calibration leaves on an anchor: how far a corrected score may still be off."""
    return max((abs(real[key] - preview[key] - shift(tokens[key])) for key in anchors), default=0.0)


def _upper_bounds(preview: SweepResult, metric: str, k: int, corrected: pd.Series, residual: float) -> pd.Series:
    """Per candidate, the upper end of its corrected difference to the corrected best: the paired
    bootstrap interval of its preview difference to that best, shifted by their corrections and widened
    by the residual. At or above 0: it may be the best."""
    pq = preview.per_question
    sel = pq[(pq["metric"] == metric) & (pq["k"] == k) & (pq["budget"] == 0)]
    wide = sel.pivot(index="qid", columns="key", values="value").dropna()
    sign = -1.0 if stats.lower_is_better(metric) else 1.0
    best = (corrected * sign).idxmax()
    x = wide.to_numpy(np.float64).T * sign
    b = list(wide.columns).index(best)
    _, high = stats.mean_ci(x - x[b], preview.confidence)
    raw = wide.mean().to_numpy() * sign
    gap = (corrected[wide.columns].to_numpy() * sign - corrected[best] * sign) - (raw - raw[b])
    return pd.Series(high + gap + residual, index=wide.columns)


def _survivors(corrected: pd.Series, upper: pd.Series, finalists: int) -> list[str]:
    """Those whose upper bound reaches the best, and the best `finalists` by corrected mean, best first."""
    order = corrected.sort_values(ascending=False, kind="stable").index
    return [key for i, key in enumerate(order) if upper[key] >= 0 or i < finalists]


def _passes(pairs: Iterable[tuple[Variant, Embedder]]) -> dict[tuple[str, ...], float]:
    """The embedding passes measuring `pairs` for real makes, each weighed in whole-corpus passes of one
    chunking: every chunking's chunks (1), and semantic's sentence groups, which every percentile and
    header of one splitter and buffer shares and which hold each sentence 2 x buffer_size + 1 times."""
    out: dict[tuple[str, ...], float] = {}
    for v, e in pairs:
        if v.embeds:
            out[("chunks", *_chunking(v, e))] = 1.0
        if v.strategy == "semantic":
            b = int(v.kwargs["buffer_size"])
            out[("groups", str(v.kwargs["sentences"]), str(b), e.fingerprint)] = 2.0 * b + 1
    return out


def _cost_of(pairs: Iterable[tuple[Variant, Embedder]], measured: Collection[tuple[str, ...]],
             share: float) -> float:
    """Whole-corpus passes that measuring `pairs` on the sample adds (passes not made yet)."""
    return share * sum(w for p, w in _passes(pairs).items() if p not in measured)


def _within_budget(keep: list[str], upper: pd.Series, pairs: Mapping[str, tuple[Variant, Embedder]],
                   measured: Collection[tuple[str, ...]], units: float, share: float) -> tuple[list[str], set[str]]:
    """`keep`, the highest upper bounds first, as far as `units` passes buy (those made already
    free); and the ones left out for the budget."""
    chosen, left, bought = [], set(), set(measured)
    for key in sorted(keep, key=lambda key: -upper[key]):
        extra = _cost_of([pairs[key]], bought, share)
        if extra > units:
            left.add(key)
            continue
        units -= extra
        bought |= set(_passes([pairs[key]]))
        chosen.append(key)
    return chosen, left


def _measure(session: Sweeps, pairs: Sequence[tuple[Variant, Embedder]],
             stop: Callable[[], bool] | None) -> SweepResult:
    """A real sweep of each (variant, model) with its model alone."""
    by_model: dict[str, tuple[Embedder, list[Variant]]] = {}
    for v, e in pairs:
        by_model.setdefault(e.fingerprint, (e, []))[1].append(v)
    return combine([session.sweep(vs, models=[e], stop=stop) for e, vs in by_model.values()])


def _cost(result: SweepResult, pairs: Mapping[str, tuple[Variant, Embedder]],
          measured: set[tuple[str, ...]], texts: dict[str, int]) -> float:
    """Record the passes `result` made for the first time in `measured`, and the chunks of each chunking
    by the key that measured it first in `texts`; the whole-corpus passes they weigh."""
    added = 0.0
    for key, chunks in zip(result.variants["key"], result.variants["chunks"], strict=True):
        for p, w in _passes([pairs[key]]).items():
            if p not in measured:
                measured.add(p)
                added += w
                if p[0] == "chunks":
                    texts[key] = int(chunks)
    return added


def _race(result: SweepResult, metric: str, k: int, alpha: float) -> dict[str, str]:
    """The candidates the paired evidence says are worse than the best (Holm over the round's
    comparisons, p <= alpha), each with why."""
    if len(result.keys) < 2:
        return {}
    table = stats.against_best(result.per_question, metric, k, n_resamples=2000, seed=0,
                               confidence=result.confidence, cache=result.cache)
    worse = table[(table["p_holm"] <= alpha) & (table["diff"] * (-1 if stats.lower_is_better(metric) else 1) < 0)]
    return {row.key: f"worse than the best on the same questions (behind {row.best} by {-row.diff:.3f}, "
                     f"p_holm {row.p_holm:.3g} <= {alpha:g})"
            for row in worse.itertuples(index=False)}


def _refined(variants: Sequence[Variant], leader: Variant, model: Embedder) -> list[tuple[Variant, Embedder]]:
    """The leader with one numeric parameter moved halfway to each neighbouring value the candidates of
    its strategy take (an integer parameter rounded), those that are valid and new."""
    out = []
    for name, value in leader.kwargs.items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        values = sorted({v.kwargs[name] for v in variants if v.strategy == leader.strategy and name in v.kwargs})
        i = values.index(value)
        for other in (values[i - 1] if i > 0 else None, values[i + 1] if i + 1 < len(values) else None):
            if other is None:
                continue
            mid = (value + other) / 2
            mid = round(mid) if isinstance(value, int) else mid
            if mid in values:
                continue
            spec = leader.spec()
            spec["params"] = {**spec["params"], name: mid}
            try:
                out.append((Variant.from_spec(spec), model))
            except ValueError:  # halfway clashes with another parameter (overlap >= size)
                continue
    return out
