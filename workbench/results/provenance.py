"""Where a result comes from, typed: the dataset it was measured on, the models, the settings, the
grid, the library versions and what the run computed.

Why typed: every reader of a result (the verdict, the gate, the report, the widgets, the CLI) asks
the same questions of it (which confidence, which cut-offs, which model window, is it about this
dataset). Answered once here, from fields with their types, they cannot drift apart the way
`config.get(name, default)` written in many places did. Saved results keep their config.json:
`from_config` reads every format written so far (the defaults for older files are here, once) and
`config()` writes the same keys.
"""

from __future__ import annotations

import json
import platform
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from datetime import UTC, datetime
from importlib import metadata
from typing import Any

from workbench.dataset import Dataset
from workbench.evaluation import metrics
from workbench.evaluation.settings import Settings

# the libraries whose versions a result records (what could change its numbers)
VERSIONED = ("sentence-transformers", "torch", "faiss-cpu", "bm25s", "tiktoken", "llama-index-core", "numpy", "pandas",
             "onnxruntime")


def versions() -> dict[str, str]:
    """Python's and each installed VERSIONED library's version, as a result records them."""
    out = {"python": platform.python_version()}
    for name in VERSIONED:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


def now() -> str:
    """The date a result records: UTC, to the second."""
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass(frozen=True)
class DatasetIdentity:
    """Which data a result is about, and the counts its warnings read (workbench.results.verdict)."""

    name: str
    fingerprint: str  # corpus and questions: what two results must share to be combined
    corpus_fingerprint: str | None = None
    documents: int | None = None
    questions: int | None = None
    characters: int | None = None
    evidence_chars: float | None = None  # the median evidence span, in characters
    main_document: tuple[str, int] | None = None  # the document most questions have evidence in, and how many
    notes: tuple[str, ...] = ()  # what loading it said (Dataset.notes): files skipped, quotes matched loosely

    @classmethod
    def of(cls, dataset: Dataset) -> DatasetIdentity:
        d = dataset
        main = d.main_document
        return cls(d.name, d.fingerprint, d.corpus_fingerprint, len(d.documents), len(d.questions), d.n_chars,
                   d.evidence_chars, (str(main[0]), int(main[1])) if main else None, d.notes)


@dataclass(frozen=True)
class ModelInfo:
    """An embedding model of a result; window None: the model reads a whole text."""

    name: str
    fingerprint: str
    backend: str = "torch"
    window: int | None = None

    @classmethod
    def of(cls, embedder: Any) -> ModelInfo:
        """From a workbench.models.embed.Embedder (or any model with these attributes)."""
        return cls(embedder.name, embedder.fingerprint, embedder.backend, embedder.window_tokens)

    def entry(self) -> dict[str, Any]:
        return {"name": self.name, "fingerprint": self.fingerprint, "backend": self.backend, "window": self.window}


@dataclass(frozen=True)
class Computed:
    """What a run computed rather than read from the caches."""

    texts_embedded: int = 0
    texts_cached: int = 0
    token_pass_documents: int = 0  # documents a preview's token pass ran the model over (0: it was cached)

    def __add__(self, other: Computed) -> Computed:
        return Computed(self.texts_embedded + other.texts_embedded, self.texts_cached + other.texts_cached,
                        self.token_pass_documents + other.token_pass_documents)


@dataclass(frozen=True)
class Provenance:
    """A result's provenance. `grid` holds each variant's spec (Variant.spec, Variant.from_spec)."""

    dataset: DatasetIdentity
    models: tuple[ModelInfo, ...]
    settings: Settings = field(default_factory=Settings)
    grid: tuple[Mapping[str, Any], ...] = ()
    versions: Mapping[str, str] = field(default_factory=dict)
    date: str = ""
    computed: Computed = field(default_factory=Computed)
    token_pass_model: str | None = None  # a preview's: the model its token pass ran on
    command: str | None = None  # the CLI command that made it, to run it again
    notes: tuple[str, ...] = ()  # what the run said of how its rows came to be (a route proposed and measured)

    @property
    def confidence(self) -> float:
        """The level of every interval of the result, and of every tie its readers judge."""
        return self.settings.confidence

    @property
    def default_k(self) -> int:
        """The cut-off a figure, a table or a verdict uses when none is chosen (metrics.default_k)."""
        return metrics.default_k(self.settings.ks)

    @property
    def model(self) -> ModelInfo | None:
        """The one model of a result of one model, else None."""
        return self.models[0] if len(self.models) == 1 else None

    @property
    def window(self) -> int | None:
        """The word pieces the model reads (specials aside), for a result of one model with a window."""
        return self.model.window if self.model else None

    def about(self, dataset: Dataset) -> bool:
        """Whether the result was measured on exactly this dataset (same corpus and questions)."""
        return dataset.fingerprint == self.dataset.fingerprint

    def check_about(self, dataset: Dataset, what: str) -> None:
        """ValueError unless `about(dataset)`: `what` needs the dataset the result was measured on."""
        if not self.about(dataset):
            raise ValueError(f"{what}: the result was measured on {self.dataset.name!r} ({self.dataset.fingerprint}), "
                             f"not on {dataset.name!r} ({dataset.fingerprint})")

    def with_(self, **changes: Any) -> Provenance:
        return replace(self, **changes)

    def config(self) -> dict[str, Any]:
        """The result's config.json: the keys every saved result has had (a result of one model also
        names it at the top level, as results saved before `models` did)."""
        d = self.dataset
        out: dict[str, Any] = {
            "dataset": d.name, "dataset_fingerprint": d.fingerprint, "corpus_fingerprint": d.corpus_fingerprint,
            "documents": d.documents, "questions": d.questions, "characters": d.characters,
            "evidence_chars": d.evidence_chars, "main_document": list(d.main_document) if d.main_document else None,
            **({"dataset_notes": list(d.notes)} if d.notes else {})}
        if self.model:
            m = self.model
            out |= {"model": m.name, "model_fingerprint": m.fingerprint, "backend": m.backend, "model_window": m.window}
        if self.token_pass_model:
            out["token_pass_model"] = self.token_pass_model
        out |= {"models": [m.entry() for m in self.models], **self.settings.config(), "versions": dict(self.versions),
                "grid": [dict(g) for g in self.grid], "texts_embedded": self.computed.texts_embedded,
                "texts_cached": self.computed.texts_cached,
                "token_pass_documents": self.computed.token_pass_documents, "date": self.date}
        if self.command:
            out["command"] = self.command
        if self.notes:
            out["notes"] = list(self.notes)
        return out

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> Provenance:
        """A saved result's provenance, from any config.json written so far: older ones lack
        `models` (one model at the top level), the counts of a dataset, the budgets."""
        c = config
        main = c.get("main_document")
        dataset = DatasetIdentity(str(c.get("dataset", "")), str(c.get("dataset_fingerprint", "")),
                                  c.get("corpus_fingerprint"), c.get("documents"), c.get("questions"),
                                  c.get("characters"), c.get("evidence_chars"),
                                  (str(main[0]), int(main[1])) if main else None, tuple(c.get("dataset_notes", ())))
        if "models" in c:
            models = tuple(ModelInfo(m["name"], m["fingerprint"], m.get("backend", "torch"), m.get("window"))
                           for m in c["models"])
        else:  # saved before `models`: its one model at the top level
            models = (ModelInfo(str(c["model"]), str(c.get("model_fingerprint")), c.get("backend", "torch"),
                                c.get("model_window")),) if c.get("model") else ()
        computed = Computed(int(c.get("texts_embedded", 0)), int(c.get("texts_cached", 0)),
                            int(c.get("token_pass_documents", 0)))
        settings = Settings.from_config({"budgets": (), **c})  # saved before budgets: it scored none
        return cls(dataset, models, settings, tuple(c.get("grid", ())), dict(c.get("versions", {})),
                   str(c.get("date", "")), computed, c.get("token_pass_model"), c.get("command"),
                   tuple(c.get("notes", ())))


def combine_provenance(parts: list[Provenance]) -> Provenance:
    """The provenance of results joined by `combine`: the first's dataset and settings, every
    model once, every variant spec once, the counts summed and the latest date. ValueError naming
    what differs when the results cannot be joined (dataset or settings)."""
    first = parts[0]
    for p in parts[1:]:
        if p.dataset.fingerprint != first.dataset.fingerprint:
            raise ValueError(f"cannot combine results with different dataset_fingerprint: "
                             f"{first.dataset.fingerprint!r} vs {p.dataset.fingerprint!r}")
        for f in fields(Settings):  # the model may differ: runs of several models join as one result
            a, b = getattr(first.settings, f.name), getattr(p.settings, f.name)
            if a != b:
                raise ValueError(f"cannot combine results with different {f.name}: {a!r} vs {b!r}")
    models = tuple({m.fingerprint: m for p in parts for m in p.models}.values())
    grid = tuple({json.dumps(g, sort_keys=True, default=str): g for p in parts for g in p.grid}.values())
    computed = sum((p.computed for p in parts[1:]), first.computed)
    notes = tuple(dict.fromkeys(n for p in parts for n in p.notes))
    return first.with_(models=models, grid=grid, computed=computed, date=max(p.date for p in parts), notes=notes)

