"""How variants are scored, in one object: cut-offs, context budgets, retrieval mode, confidence, preview,
approximate search.

Why one object: these travel together from the caller to the sweep, the score cache, a result's
config, `combine` and the widgets; a new setting is one field here, and every place that must agree
on it (what names a cached score, what two results must share to be combined) reads it from here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from workbench.evaluation.metrics import DEFAULT_BUDGETS, DEFAULT_KS, check_budgets
from workbench.evaluation.stats import CONFIDENCE
from workbench.retrieval.ann import Ann

MODES = ("corpus", "document")  # search every chunk, or only the chunks of the question's own document(s)
# what a per-question score depends on: names a cached one (ann only when set, so exact scores keep their names)
SCORED = ("ks", "budgets", "budget_encoding", "mode", "ann")


@dataclass(frozen=True)
class Settings:
    """Validated when made; ks and budgets kept sorted and distinct.

    >>> Settings(ks=(5, 1, 5), budgets=()).ks
    (1, 5)
    """

    ks: tuple[int, ...] = DEFAULT_KS  # cut-offs k of the metrics at k
    budgets: tuple[int, ...] = DEFAULT_BUDGETS  # context budgets in tokens of budget_encoding; () scores none
    budget_encoding: str = "cl100k_base"
    mode: str = "corpus"  # one of MODES
    confidence: float = CONFIDENCE  # of every bootstrap interval, and of every tie judged from them
    preview: bool = False  # vectors pooled from one token pass over the corpus (workbench.retrieval.preview)
    ann: Ann | None = None  # approximate search above a chunk count (workbench.retrieval.ann); None: always exact

    def __post_init__(self) -> None:
        if not isinstance(self.preview, bool):
            raise TypeError(f"preview must be True or False, got {self.preview!r}")
        if self.ann is not None and not isinstance(self.ann, Ann):
            raise TypeError(f"ann must be an Ann (workbench.retrieval.ann) or None, got {self.ann!r}")
        if self.ann is not None and self.preview:
            raise ValueError("ann: a preview searches its pooled vectors in memory, exactly; drop ann or preview")
        ks = tuple(sorted(set(self.ks)))
        if not ks or any(isinstance(k, bool) or not isinstance(k, int) for k in ks) or ks[0] < 1:
            raise ValueError(f"ks must be positive integers, got {list(self.ks)}")
        budgets = tuple(check_budgets(self.budgets, self.budget_encoding)) if len(self.budgets) else ()
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        if isinstance(self.confidence, bool) or not 0 < self.confidence < 1:
            raise ValueError(f"confidence must be a number in (0, 1), got {self.confidence!r}")
        object.__setattr__(self, "ks", ks)
        object.__setattr__(self, "budgets", budgets)

    @classmethod
    def of(cls, settings: Settings | None = None, **changes: Any) -> Settings:
        """`settings` (default: the defaults) with `changes` applied; an unknown name is refused."""
        unknown = sorted(set(changes) - {f.name for f in fields(cls)})
        if unknown:
            raise TypeError(f"unknown setting(s) {unknown}; known: {[f.name for f in fields(cls)]}")
        return replace(settings or cls(), **changes)

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> Settings:
        """The settings a result was measured with (its config), e.g. to measure more variants that combine with it."""
        read = {"ks": tuple, "budgets": tuple, "ann": Ann.from_spec}
        return cls(**{f.name: read.get(f.name, lambda value: value)(config[f.name])
                      for f in fields(cls) if f.name in config})

    def config(self) -> dict[str, Any]:
        """The entries of a result's config; `preview` only when True and `ann` only when set, so real,
        exact results combine with older ones."""
        out = asdict(self) | {"ks": list(self.ks), "budgets": list(self.budgets)}
        for name in ("preview", "ann"):
            if not out[name]:
                del out[name]
        return out

    def scored(self) -> dict[str, Any]:
        """What the per-question scores depend on (SCORED): the score cache's name for this setting."""
        out = {name: getattr(self, name) for name in SCORED}
        if self.ann is None:
            del out["ann"]
        else:
            out["ann"] = self.ann.spec()
        return out

