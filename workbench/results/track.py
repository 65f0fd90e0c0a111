"""Experiment tracking: a result logged to MLflow, one run per variant under one run for the sweep.

Why: after the verdict a team keeps a record of what it tried in the tracker it already runs. `track`
logs the sweep as a run (the settings as parameters, the verdict as its note, report.html, the tables and
the figures as artifacts) and each variant as a child run: its parameters, every metric at every cut-off
with its interval (`recall_at_5`, `recall_at_5_ci_low`, `recall_at_5_ci_high`), its costs (chunks, tokens
embedded, build seconds, ann_recall, ...) as metrics, and where the verdict puts it (tag
`workbench.verdict`: best, trade-off, tied, worse). The store is whatever the URI names: a tracking server
(http://...), a database (sqlite:///mlflow.db), MLflow's file store (with MLFLOW_ALLOW_FILE_STORE=true).

Idempotent: the sweep's run is tagged with a fingerprint of what was measured (dataset, models, settings,
grid and every summary number; not the date or this run's seconds) and each child with its variant's key,
so logging the same result again (a re-run served from the cache) finds the finished runs and logs
nothing; a child left unfinished by an interrupted log is deleted and logged again.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

if TYPE_CHECKING:
    from mlflow import MlflowClient

    from workbench.results.result import SweepResult
    from workbench.results.verdict import Verdict

PACKAGE = "mlflow-skinny==3.17.2"  # what to install to log (requirements-mlflow.txt)
FINGERPRINT, KEY, STANDING = "workbench.fingerprint", "workbench.key", "workbench.verdict"
SWEEP = "sweep"  # the KEY of the sweep's own run
NOTE = "mlflow.note.content"  # what MLflow's UI shows as a run's description
IDENTITY = ("variant", "model", "strategy", "contextual_header", "late", "retriever")  # a variant's parameters


@dataclass(frozen=True)
class Tracked:
    """Where a result was logged: the sweep's run, its experiment, and the variants logged now (none when
    every run was there already)."""

    run_id: str
    experiment: str
    experiment_id: str
    logged: tuple[str, ...]

    def url(self, uri: str) -> str | None:
        """The sweep's run in the tracking server's UI (None for a store without one)."""
        if not uri.startswith(("http://", "https://")):
            return None
        return f"{uri.rstrip('/')}/#/experiments/{self.experiment_id}/runs/{self.run_id}"


def track(result: SweepResult, uri: str, experiment: str | None = None, folder: str | Path | None = None,
          verdict: Verdict | None = None) -> Tracked:
    """Log `result` to the MLflow tracking store at `uri`, in `experiment` (default: "workbench <dataset>").
    folder: the result's saved folder (the CLI's --out: report.html, tables, figures), logged as the sweep's
    artifacts; default: the tables, saved to a temporary folder. verdict: when computed already (default:
    computed here; none when the result allows none)."""
    try:
        from mlflow import MlflowClient
        from mlflow.exceptions import MlflowException
    except ImportError:
        raise ImportError(f"mlflow: the mlflow package is not installed: pip install {PACKAGE}") from None
    _check_reachable(uri)
    name = experiment or f"workbench {result.provenance.dataset.name}"
    try:
        client = MlflowClient(tracking_uri=uri)
        found = client.get_experiment_by_name(name)
    except MlflowException as e:  # a store MLflow refuses (its file store, unless allowed), an unknown scheme
        if "://" not in uri and "MLFLOW_ALLOW_FILE_STORE" in str(e):
            raise ValueError(f"mlflow: {uri} is a folder, MLflow's file store, which MLflow refuses unless "
                             "MLFLOW_ALLOW_FILE_STORE=true; a local store it keeps: "
                             f"sqlite:///{(Path(uri).resolve() / 'mlflow.db').as_posix()}") from None
        raise ValueError(f"mlflow: {uri}: {(str(e).strip().splitlines() or ['refused'])[0]}") from None
    experiment_id = found.experiment_id if found is not None else client.create_experiment(name)
    if verdict is None:
        try:
            verdict = result.verdict()
        except ValueError:  # no recall: the runs are logged without a standing
            pass
    fp = fingerprint(result)
    runs = client.search_runs([experiment_id], f"tags.`{FINGERPRINT}` = '{fp}' and tags.`{KEY}` = '{SWEEP}'")
    if runs and runs[0].info.status == "FINISHED":
        return Tracked(runs[0].info.run_id, name, experiment_id, ())
    note = "\n\n".join(verdict.sentences()) if verdict is not None else "no verdict (no recall measured)"
    parent = runs[0].info.run_id if runs else client.create_run(
        experiment_id, run_name=f"sweep {result.provenance.date}", tags={FINGERPRINT: fp, KEY: SWEEP, NOTE: note}
    ).info.run_id
    _log(client, parent, _sweep_params(result), {})  # again when resuming an interrupted log: the same values
    _artifacts(client, parent, result, folder)
    children = client.search_runs([experiment_id], f"tags.`mlflow.parentRunId` = '{parent}'")
    done = {r.data.tags[KEY]: r for r in children}
    logged = []
    for key, row in zip(result.keys, result.variants.to_dict("records"), strict=True):
        if key in done and done[key].info.status == "FINISHED":
            continue
        if key in done:  # left unfinished by an interrupted log
            client.delete_run(done[key].info.run_id)
        tags = {FINGERPRINT: fp, KEY: key, "mlflow.parentRunId": parent}
        if verdict is not None:
            tags[STANDING] = standing(verdict, key)
        run = client.create_run(experiment_id, run_name=row["variant"], tags=tags).info.run_id
        params, costs = _variant_params(result, row)
        _log(client, run, params, costs | _metrics(result, key))
        _finish(client, run)
        logged.append(row["variant"])
    _finish(client, parent)
    return Tracked(parent, name, experiment_id, tuple(logged))


def fingerprint(result: SweepResult) -> str:
    """A hash of what the result measured: its dataset, models, settings, grid and every summary number."""
    p = result.provenance
    measured = {"dataset": p.dataset.fingerprint, "models": [m.fingerprint for m in p.models],
                "settings": p.settings.config(), "grid": [dict(g) for g in p.grid],
                "summary": result.summary[["key", "metric", "k", "budget", "mean", "ci_low", "ci_high", "n"]].to_json(
                    orient="values", double_precision=15)}
    return hashlib.sha256(json.dumps(measured, sort_keys=True, default=str).encode()).hexdigest()[:16]


def standing(verdict: Verdict, key: str) -> str:
    """Where the verdict puts a variant: best, trade-off, tied (with the best) or worse."""
    if key == verdict.best:
        return "best"
    return "trade-off" if key == verdict.trade_off else "tied" if key in verdict.tied else "worse"


def metric_name(metric: str, k: int, budget: int) -> str:
    """An MLflow metric name for a summary row: recall_at_5, context_tokens_at_1024_tokens, precision_omega."""
    return f"{metric}_at_{k}" if k > 0 else f"{metric}_at_{budget}_tokens" if budget > 0 else metric


def _metrics(result: SweepResult, key: str) -> dict[str, float]:
    """Every summary row of the variant: its mean, and its interval when it has one."""
    s = result.summary[result.summary["key"] == key]
    budget = s["budget"] if "budget" in s else pd.Series(0, index=s.index)
    out: dict[str, float] = {}
    for metric, k, b, mean, low, high in zip(s["metric"], s["k"], budget, s["mean"], s["ci_low"], s["ci_high"],
                                             strict=True):
        name = metric_name(metric, int(k), int(b))
        out[name] = float(mean)
        if not (pd.isna(low) or pd.isna(high)):
            out |= {f"{name}_ci_low": float(low), f"{name}_ci_high": float(high)}
    return out


def _variant_params(result: SweepResult, row: dict[str, Any]) -> tuple[dict[str, str], dict[str, float]]:
    """A variant's row as (parameters: what it is, and every text of its cost; metrics: every number of its
    cost), empty cells left out."""
    named = {*IDENTITY, *result.grid_params}
    params, costs = {}, {}
    for column, value in row.items():
        if column == "key" or value is None or (isinstance(value, float) and pd.isna(value)) or value == "":
            continue
        if column in named or isinstance(value, (bool, str)):
            params[column] = str(value)
        else:
            costs[column] = float(value)
    return params, costs


def _sweep_params(result: SweepResult) -> dict[str, str]:
    p = result.provenance
    settings = {k: json.dumps(v) if isinstance(v, (list, dict)) else str(v) for k, v in p.settings.config().items()}
    return {"dataset": p.dataset.name, "dataset_fingerprint": p.dataset.fingerprint,
            "questions": str(p.dataset.questions), "models": ", ".join(m.name for m in p.models),
            "variants": str(len(result.keys)), **settings, **({"command": p.command} if p.command else {})}


def _log(client: MlflowClient, run: str, params: dict[str, str], metrics: dict[str, float]) -> None:
    """Parameters and metrics in MLflow's batches (at most 100 parameters, 1000 metrics a call)."""
    from mlflow.entities import Metric, Param

    now = int(time.time() * 1000)
    items = [Param(k, v[:6000]) for k, v in params.items()]
    for i in range(0, len(items), 100):
        client.log_batch(run, params=items[i : i + 100])
    values = [Metric(k, v, now, 0) for k, v in metrics.items()]
    for i in range(0, len(values), 1000):
        client.log_batch(run, metrics=values[i : i + 1000])


def _artifacts(client: MlflowClient, run: str, result: SweepResult, folder: str | Path | None) -> None:
    """The saved folder's files (report.html, the tables, the figures), or the tables saved here."""
    if folder is not None:
        client.log_artifacts(run, str(folder))
        return
    with tempfile.TemporaryDirectory() as tmp:
        result.save(tmp)
        client.log_artifacts(run, tmp)


def _finish(client: MlflowClient, run: str) -> None:
    """Mark a run finished, without the two lines MLflow's client prints to stdout for each run of a server
    (`Tracked.url` names the sweep's)."""
    with contextlib.redirect_stdout(io.StringIO()):
        client.set_terminated(run)


def _check_reachable(uri: str) -> None:
    """A tracking server answers its health check, or one line says it does not (MLflow's own client
    retries for minutes first)."""
    if not uri.startswith(("http://", "https://")):
        return
    import requests

    try:
        requests.get(uri.rstrip("/") + "/health", timeout=10).raise_for_status()
    except requests.RequestException as e:
        raise ConnectionError(f"mlflow: cannot reach the tracking server at {uri}: {type(e).__name__}") from None
