"""What the sweeper decides, kept apart from how it draws (no ipywidgets here, so it is tested
alone): the grid a user typed, a sweep running one variant at a time, which figures must be
rebuilt and which only re-highlighted, and the question-by-question comparison of two variants.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd

from workbench.chunkers import STRATEGIES
from workbench.core.errors import describe
from workbench.core.io import write_text
from workbench.dataset import Dataset
from workbench.evaluation import stats
from workbench.evaluation.score_cache import ScoreCache
from workbench.evaluation.settings import Settings
from workbench.models.choose import result_key, variant_key
from workbench.models.embed import Embedder
from workbench.models.estimate import GenerationEstimate, duration, generation_line
from workbench.models.llm import Stopped
from workbench.results.combine import combine
from workbench.results.result import SweepResult
from workbench.run.estimate import Estimate
from workbench.run.grid import GridSpec
from workbench.run.search import BUDGET, search
from workbench.run.session import Session
from workbench.variant import Variant

# ---------------------------------------------------------------------------------------- settings


def sweep_settings(result: SweepResult | None, session: Session, ks: Sequence[int] | None = None) -> Settings:
    """The settings a panel sweeps new variants with: those of `result` (so `combine` accepts what
    it measures: a saved run of the CLI's, say), which must be of the session's data and models and
    hold every cut-off of `ks` (ValueError naming what differs), else the session's with `ks`."""
    if result is None:
        return session.settings if ks is None else Settings.of(session.settings, ks=tuple(ks))
    result.provenance.check_about(session.dataset, "the panel's result")
    missing = sorted(set(ks or ()) - set(result.ks))
    if missing:
        raise ValueError(f"the panel's result was swept at ks {result.ks}, without {missing} of the ks asked for: "
                         "leave ks out to take the result's, or sweep it again with them")
    models = session.models
    ours = {e.fingerprint for e in models}
    theirs = {m.fingerprint: f"{m.name} ({m.backend})" for m in result.provenance.models}
    other = sorted(name for fp, name in theirs.items() if fp not in ours)
    if other:
        raise ValueError(f"result has model_fingerprint of {other}, none of the panel's models "
                         f"{[f'{e.name} ({e.backend})' for e in models]}: pass models= (or embedder=) the result was "
                         "measured with (its backend too)")
    return result.provenance.settings


# ---------------------------------------------------------------------------------------- memory


@dataclass(frozen=True)
class Restored:
    """What a SweeperMemory brings back: the grid last typed (None: nothing remembered), the
    variants measured before whose scores are cached, and one reason per variant left out."""

    grid: GridSpec | None
    variants: dict[str, list[Variant]]  # by model fingerprint: those whose scores with that model are cached
    left_out: list[str]


@dataclass(frozen=True)
class SweeperMemory:
    """The last grid a sweeper ran and every variant it measured, for one dataset, set of models
    and settings, as a small JSON file in the store's folder: running the sweeper's cell again (or
    restarting the kernel) brings both back, the scores from the score cache, so nothing is
    measured again. The file is named by what a restored variant must share to combine."""

    path: Path
    models: tuple[Embedder, ...]
    scores: tuple[ScoreCache, ...]  # one per model, in the same order

    @classmethod
    def of(cls, root: str | Path, dataset: Dataset, models: Sequence[Embedder], settings: Settings) -> SweeperMemory:
        setting = hashlib.sha256(json.dumps(settings.config(), sort_keys=True).encode()).hexdigest()[:12]
        fps = [e.fingerprint for e in models]
        named = fps[0] if len(fps) == 1 else hashlib.sha256(" ".join(fps).encode()).hexdigest()[:16]
        path = Path(root) / "sweeper" / f"{dataset.fingerprint}-{named}-{setting}.json"
        return cls(path, tuple(models), tuple(ScoreCache(Path(root), dataset, fp, settings) for fp in fps))

    def save(self, grid: GridSpec, result: SweepResult) -> None:
        """Remember the grid (as typed), the variants of `result` (their specs, the provenance's grid) and
        which model measured which (by fingerprint: the variant keys)."""
        spec = {"strategies": list(grid.strategies), "ranges": dict(grid.ranges), "retrievers": list(grid.retrievers),
                "contextual_header": list(grid.contextual_header), "late": list(grid.late)}
        measured = {e.fingerprint: [variant_key(k) for k in result.keys if result_key(variant_key(k), e) == k]
                    for e in self.models}
        write_text(self.path, json.dumps({"grid": spec, "variants": list(result.provenance.grid),
                                          "measured_with": measured}, indent=1, default=str))

    def load(self) -> Restored:
        """The remembered grid and the variants that can be restored; a variant whose strategy is
        no longer registered, or whose scores are no longer cached (e.g. after a code change), is
        left out with its reason; a strategy no longer registered leaves the grid."""
        if not self.path.exists():
            return Restored(None, {}, [])
        saved = json.loads(self.path.read_text(encoding="utf-8"))
        g = saved["grid"]
        grid = GridSpec(tuple(s for s in g["strategies"] if s in STRATEGIES), g["ranges"], tuple(g["retrievers"]),
                        tuple(g["contextual_header"]), tuple(g["late"]))
        measured = saved.get("measured_with")  # absent in a file of one model: that model measured them all
        variants: dict[str, list[Variant]] = {}
        left_out = []
        for spec in saved["variants"]:
            try:
                v = Variant.from_spec(spec)
            except ValueError as e:
                left_out.append(f"{spec.get('strategy')}: {e}")
                continue
            for model, scores in zip(self.models, self.scores, strict=True):
                if measured is not None and v.key not in measured.get(model.fingerprint, []):
                    continue
                if scores.has(v):
                    variants.setdefault(model.fingerprint, []).append(v)
                else:
                    left_out.append(f"{v.label}{' · ' + model.name if len(self.models) > 1 else ''}: "
                                    "its scores are no longer cached")
        return Restored(grid, variants, left_out)


# ---------------------------------------------------------------------------------------- run


@dataclass
class SweepRun:
    """One Run of the sweeper: `sweep_steps` over the (variant, model) pairs not measured yet, one
    at a time, model after model, with progress accounting and a stop flag checked between variants
    and between an LLM's generations (what finished is kept: every variant, every generation, in
    the caches, so the next Run resumes). When some build will generate, what it will generate is
    estimated first (`estimate_line`, workbench.run.estimate.generation_estimates); a grid without one
    costs nothing more. `run()` is synchronous; the widget calls it in a thread. `on_step(run)` is
    called once the estimate is made, after each finished variant and after a stop or an error,
    e.g. to redraw."""

    session: Session  # its settings score the variants (a panel's: those of its result, so they combine)
    variants: Sequence[Variant]
    models: Sequence[Embedder] | None = None  # every variant is measured with each; None: the session's
    result: SweepResult | None = None  # earlier measurements; grows with every finished variant
    on_step: Callable[[SweepRun], None] | None = None
    unit: ClassVar[str] = "variants"  # what `done` and `total` count

    def __post_init__(self) -> None:
        self.models = self.session.models if self.models is None else self.models
        if isinstance(self.models, Embedder) or not self.models:
            raise ValueError(f"models: give a non-empty list of Embedders, got {self.models!r}")
        known = set(self.result.keys) if self.result is not None else set()
        unique = list({v.key: v for v in self.variants}.values())
        self.todo = [(e, [v for v in unique if result_key(v.key, e) not in known]) for e in self.models]
        self.done = 0
        self.step_seconds: list[float] = []
        self.embedded = self.reused = 0  # texts, this run (the questions' included)
        self.error: str | None = None
        self.estimate_line: str | None = None  # what the builds will generate, said before they start
        self.stopped_at: str | None = None  # the generation a Stop ended, e.g. "... stopped after 3 of 9 generations"
        self.running = False
        self._stop = threading.Event()
        self._started = 0.0

    @property
    def total(self) -> int:
        return sum(len(variants) for _, variants in self.todo)

    def stop(self) -> None:
        """Stop before the next variant or generation: a variant that generates stops after its
        current batch (the generations made are cached, the variant not measured); another finishes
        and is kept."""
        self._stop.set()

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self._started if self._started else 0.0

    @property
    def seconds_left(self) -> float | None:
        """Mean seconds per finished variant x variants remaining; None before the first."""
        if not self.step_seconds:
            return None
        return sum(self.step_seconds) / len(self.step_seconds) * (self.total - self.done)

    def progress_text(self) -> str:
        left = self.seconds_left
        text = (f"{self.done}/{self.total} {self.unit} · {self.embedded} texts embedded, {self.reused} reused · "
                f"{self.elapsed:.1f} s")
        if self.error:
            return text + " · failed"
        if self.stopped and self.running:
            return text + " · stopping after this variant or generation"
        if self.running and left is not None:
            return text + f" · about {left:.0f} s left"
        return text + (" · stopped" if self.stopped and self.done < self.total else "")

    def run(self) -> SweepResult | None:
        """Measure the variants in order until done, stopped or failed; returns the result
        (earlier measurements plus every finished variant). Exceptions land in `error`."""
        self.running, self._started = True, time.perf_counter()
        stats0 = self._texts()
        try:
            if self.total and not self.stopped:
                self._estimate()
                last = self._started
                for step in self._steps():
                    self.result = self._merged(step)
                    now = time.perf_counter()
                    self.step_seconds.append(now - last)
                    last, self.done = now, self.done + 1
                    self._count(stats0)
                    self._notify()
                    if self.stopped:
                        break
        except Stopped as e:  # a stop, not a failure: what finished is cached
            self.stopped_at = "; ".join([str(e), *getattr(e, "__notes__", ())])
        except Exception as e:  # noqa: BLE001  (the panel shows it; what finished is kept)
            self.error = describe(e)
        finally:
            self.running = False
            self._count(stats0)
        self._notify()
        return self.result

    def _steps(self) -> Iterator[SweepResult]:
        """Each variant's result as it finishes, model after model."""
        return (step for embedder, variants in self.todo if variants
                for step in self.session.steps(variants, models=[embedder], stop=self._stop.is_set))

    def _merged(self, step: SweepResult) -> SweepResult:
        """The panel's result with `step` added (a search's race kept: combine keeps none)."""
        if self.result is None:
            return step
        merged = combine([self.result, step])
        merged.race = step.race if step.race is not None else self.result.race
        return merged

    def _estimate(self) -> None:
        """`estimate_line`, when some variant's build will generate (each variant once, with the first
        model that measures it); stopped by `stop` too."""
        seen: set[str] = set()
        made: list[GenerationEstimate] = []
        unestimated = 0
        for embedder, variants in self.todo:
            new = [v for v in variants if v.key not in seen]
            seen.update(v.key for v in new)
            estimates, n = self.session.generation_estimates(new, embedder, stop=self._stop.is_set)
            made, unestimated = made + list(estimates), unestimated + n
        line = generation_line(made, unestimated)
        if line:
            self.estimate_line = line
            self._notify()

    def _texts(self) -> tuple[int, int]:
        """Texts embedded and reused so far by the run's models."""
        return (sum(e.stats.embedded for e in self.models), sum(e.stats.cached for e in self.models))

    def _count(self, stats0: tuple[int, int]) -> None:
        now = self._texts()
        self.embedded, self.reused = now[0] - stats0[0], now[1] - stats0[1]

    def _notify(self) -> None:
        if self.on_step is not None:
            self.on_step(self)


@dataclass
class SearchRun(SweepRun):
    """One Search of the sweeper: workbench.run.search over `variants` (every one a candidate, measured
    before or not: the search reads the caches) with `models`, as SweepRun runs a sweep: the same Stop
    (asked between the search's rounds and an LLM's generations), progress, errors and result (with
    the race). Its estimate says what the search may cost at most: `budget` of sweeping them all."""

    k: int | None = None  # the cut-off the race compares at (default: the search's)
    budget: float = BUDGET
    unit: ClassVar[str] = "searches"

    @property
    def total(self) -> int:
        return 1 if self.variants else 0

    def _steps(self) -> Iterator[SweepResult]:
        session = self.session.on(self.session.dataset)
        session.models = list(self.models)  # the models ticked
        yield search(session, list({v.key: v for v in self.variants}.values()), k=self.k, budget=self.budget,
                     stop=self._stop.is_set)

    def _estimate(self) -> None:
        self.estimate_line = search_line(self.session.estimate(self.variants), self.budget, len(self.variants))
        self._notify()


def search_line(estimates: Mapping[str, Estimate], budget: float, variants: int) -> str:
    """What a search of `variants` may cost at most, from the estimate of sweeping them all
    (Session.estimate, per model): the search spends at most `budget` of that sweep's embedding."""
    most = f"estimate: the search embeds at most {budget:.0%} of what sweeping the {variants} variants would"
    parts = [f"{name}: {'all cached' if e.cached else f'about {duration(budget * e.seconds)} of embedding at most'}"
             f" (the sweep: {duration(e.seconds)}, {e.texts:,} texts)" for name, e in estimates.items()]
    return most + (": " + "; ".join(parts) if parts else "")


@dataclass
class DrawBudget:
    """Redraw the plots during a sweep only while drawing has cost at most `share` of the sweep's
    time, so they fill in without slowing it much: a cold variant (seconds of embedding) is drawn
    as it finishes, a run of cached ones skips drawings; the end is always drawn."""

    share: float = 0.05
    spent: float = 0.0  # seconds spent drawing during this sweep

    def due(self, elapsed: float, finished: bool) -> bool:
        return finished or self.spent <= self.share * elapsed


# ---------------------------------------------------------------------------------------- scrub


class Redraw(Enum):
    """What a change costs on screen: nothing, a highlight blitted on the drawn base, or new bases."""

    NONE = "none"
    HIGHLIGHT_ONLY = "highlight"
    REBUILD = "rebuild"


@dataclass
class ScrubState:
    """The plots' settings and the selected variant. A figure's base depends on the measured
    variants, k and the chosen axes; the selection is only a highlight on it."""

    keys: tuple[str, ...] = ()  # measured variants, sweep order
    k: int | None = None
    axes: tuple[Any, ...] = ()  # e.g. (parameter of by_parameter, heatmap metric)
    selected: str | None = None

    def update(self, keys: Sequence[str] | None = None, k: int | None = None,
               axes: tuple[Any, ...] | None = None) -> Redraw:
        """New settings: REBUILD if anything the bases depend on changed, else NONE. A selection
        that is no longer measured moves to the last variant."""
        new = (tuple(self.keys if keys is None else keys), self.k if k is None else k,
               self.axes if axes is None else axes)
        if new == (self.keys, self.k, self.axes):
            return Redraw.NONE
        self.keys, self.k, self.axes = new
        if self.selected not in self.keys:
            self.selected = self.keys[-1] if self.keys else None
        return Redraw.REBUILD

    def select(self, key: str | None) -> Redraw:
        """Select a measured variant: only the highlight moves."""
        if key is not None and key not in self.keys:
            raise ValueError(f"variant {key!r} is not measured; measured: {list(self.keys)}")
        if key == self.selected:
            return Redraw.NONE
        self.selected = key
        return Redraw.HIGHLIGHT_ONLY


# ---------------------------------------------------------------------------------------- compare


def retrieves(value: float) -> bool:
    """A question is retrieved at k when its hit is 1 (or its recall above 0)."""
    return value > 0


def disagreements(result: SweepResult, a: str, b: str, k: int, metric: str = "hit",
                  dataset: Dataset | None = None) -> pd.DataFrame:
    """The questions one variant retrieves at k and the other misses, both ways: one row each
    with qid, (question), retrieved_by and missed_by (keys) and both values, a's misses first."""
    a, b = result.key_of(a), result.key_of(b)
    if a == b:
        raise ValueError(f"compare: pick two different variants, got {result.label_of(a)} twice")
    pq = result.per_question
    sel = pq[(pq["metric"] == metric) & (pq["k"] == k) & pq["key"].isin([a, b])]
    if sel.empty:
        raise ValueError(f"no {metric}@{k} in the result; metrics: {sorted(set(pq['metric']))}, "
                         f"ks: {sorted(set(pq['k']))}")
    wide = sel.pivot(index="qid", columns="key", values="value").reindex(columns=[a, b]).dropna()
    got_a, got_b = wide[a].map(retrieves), wide[b].map(retrieves)
    rows = [{"qid": qid, "retrieved_by": winner, "missed_by": loser, "metric": metric, "k": k,
             "value_a": wide.at[qid, a], "value_b": wide.at[qid, b]}
            for mask, winner, loser in ((got_b & ~got_a, b, a), (got_a & ~got_b, a, b))
            for qid in wide.index[mask]]
    table = pd.DataFrame(rows, columns=["qid", "retrieved_by", "missed_by", "metric", "k", "value_a", "value_b"])
    if dataset is not None:
        text = {q.qid: q.question for q in dataset.questions}
        table.insert(1, "question", table["qid"].map(text))
    return table


@dataclass(frozen=True)
class Comparison:
    """Two measured variants (keys), k and the metric that decides retrieved or missed."""

    a: str
    b: str
    k: int
    metric: str = "hit"

    def table(self, result: SweepResult, dataset: Dataset | None = None) -> pd.DataFrame:
        return disagreements(result, self.a, self.b, self.k, self.metric, dataset)

    def paired(self, result: SweepResult, n_resamples: int = 9999) -> dict[str, Any]:
        """b - a in recall@k, paired over questions: difference, BCa interval (at the result's confidence), p-value."""
        return stats.paired_compare(result.per_question, self.a, self.b, "recall", self.k, result.confidence,
                                    n_resamples=n_resamples)
