"""Where the expensive stages run: in this process (no engine, the default), or on a Ray cluster.

Why Ray and not a pool of our own: a corpus of millions of documents outgrows one machine, and Ray
already places work on a cluster's CPUs and GPUs. What runs remotely is only a model's computation
of a batch (an Embedder's uncached texts): each Ray actor rebuilds one model from its `spec()`
(`from_spec` refuses a worker whose model files give another fingerprint) and turns batches into
arrays, and the driver reads and writes every cache; a worker never sees the driver's cache folder.
The batches are those an in-process run computes, in the same order, with the driver's thread
count, so the vectors, the caches and every score equal a local run's to the last digit (on the
same kind of CPU; a GPU's vectors differ from a CPU's by float noise, as they do in-process).

`get_engine("ray", address)` connects to a running cluster ("auto", "HOST:PORT" or
"ray://HOST:PORT"), or without an address starts a small local one (LOCAL_CPUS CPUs, no dashboard,
no usage report). Ray is an optional extra: pip install "workbench[ray]".
"""

from __future__ import annotations

import json
import os
import socket
import tempfile
from collections.abc import Iterator, Sequence
from typing import Any

from workbench.models.base import Model, from_spec

ENGINES = ("local", "ray")
LOCAL_CPUS = 2  # a local Ray instance's CPUs: the workers it runs (one per CPU) share this machine
CONNECT_SECONDS = 5  # how long a cluster's address may take to answer before it is refused
EXTRA = 'pip install "workbench[ray]" (or: pip install -r requirements-ray.txt)'


def _ray() -> Any:
    try:
        import ray
    except ImportError as e:
        raise ImportError(f"engine='ray' needs Ray, an optional extra: {EXTRA}") from e
    return ray


def get_engine(name: str = "local", address: str | None = None, workers: int | None = None) -> RayEngine | None:
    """The engine `name` names: None for "local" (models compute in this process), else a RayEngine."""
    if name not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, got {name!r}")
    if name == "local":
        if address is not None or workers is not None:
            raise ValueError("address and workers are for engine='ray', got engine='local'")
        return None
    return RayEngine(address, workers)


WORKER_ARGUMENTS = ("cache_dir", "progress", "device")  # constructor arguments each worker sets for itself


def worker_spec(model: Model) -> dict[str, Any]:
    """`model.spec()` less what a worker sets itself (WORKER_ARGUMENTS, left None): one spec, so one
    set of actors, however the driver's copy shows progress or where it caches. `threads` left to
    torch's default becomes the driver's: torch's float sums change with the thread count, and a
    worker must compute what this process would, to the last bit."""
    spec = model.spec()
    arguments = {k: None if k in WORKER_ARGUMENTS else v for k, v in spec["arguments"].items()}
    if "threads" in arguments and arguments["threads"] is None:
        import torch

        arguments["threads"] = torch.get_num_threads()
    return spec | {"arguments": arguments}


def check_address(address: str) -> None:
    """Refuse an address Ray would retry for minutes: not "auto", "HOST:PORT" or "ray://HOST:PORT",
    or nothing answering at HOST:PORT within CONNECT_SECONDS."""
    if address == "auto":
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f'address must be "auto", "HOST:PORT" or "ray://HOST:PORT", got {address!r}')
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_SECONDS).close()
    except OSError as e:
        raise ConnectionError(f"no Ray cluster answers at address {address!r} ({e}); is `ray start --head` "
                              "running there, and is the port the one it printed?") from e


class _Worker:
    """A Ray actor's state: one model, rebuilt from its spec on the first batch (so that a refusal
    reaches the driver as that batch's error). Its cache folder is its node's temporary
    "workbench-worker" (a backend keeps its exported model there, atomically written, shared by the
    node's workers); no worker touches the driver's caches."""

    def __init__(self, spec: dict[str, Any]):
        self.spec = spec
        self.model: Model | None = None

    def run(self, method: str, batch: Any) -> Any:
        if self.model is None:
            import ray

            mine = {"cache_dir": os.path.join(tempfile.gettempdir(), "workbench-worker"), "progress": False,
                    "device": "cuda" if ray.get_gpu_ids() else "cpu"}
            arguments = {k: mine.get(k, v) for k, v in self.spec["arguments"].items()}
            self.model = from_spec(self.spec | {"arguments": arguments})
        return getattr(self.model, method)(batch)


class RayEngine:
    """Batches of a model's work on Ray actors, one model per actor: `workers` actors (default one
    per GPU when the cluster has GPUs, each asking for one, else one per `cpus_per_worker` CPUs).
    Actors are made on a model's first batch and kept, model loaded, until another model's batches
    come or `close`: an actor holds its CPUs (or GPU) while it lives, so a second model's actors would
    wait forever for those of the first (a +context sweep takes turns: the LLM, then the embedder)."""

    def __init__(self, address: str | None = None, workers: int | None = None, cpus_per_worker: float = 1):
        if workers is not None and workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        if cpus_per_worker <= 0:
            raise ValueError(f"cpus_per_worker must be > 0, got {cpus_per_worker}")
        ray = _ray()
        if address is not None:
            check_address(address)
        self.workers, self.cpus_per_worker = workers, cpus_per_worker
        self.started = not ray.is_initialized()  # this engine's own connection, which `close` ends
        if self.started:
            os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # offline: Ray reports nothing home
            try:
                if address is None:
                    # "local": a new instance of its own, even when another is running on this machine
                    ray.init(address="local", num_cpus=LOCAL_CPUS, include_dashboard=False, log_to_driver=False)
                else:
                    ray.init(address=address, log_to_driver=False)
            except Exception as e:  # Ray raises ConnectionError, ValueError or a bare Exception
                where = "start a local Ray instance" if address is None else f"connect to a Ray cluster at {address!r}"
                raise ConnectionError(f"engine='ray' could not {where}: {e}") from e
        self._actors: dict[str, list[Any]] = {}  # by model spec
        self._pools: dict[str, Any] = {}

    def _pool(self, spec: dict[str, Any]) -> Any:
        key = json.dumps(spec, sort_keys=True)
        if key not in self._pools:
            import ray

            for other in list(self._actors):
                self._stop(other)
            from ray.util import ActorPool

            resources = ray.cluster_resources()
            gpus = int(resources.get("GPU", 0))
            n = self.workers or gpus or max(1, int(resources.get("CPU", 1) // self.cpus_per_worker))
            actor = ray.remote(num_cpus=self.cpus_per_worker, num_gpus=1 if gpus else 0)(_Worker)
            self._actors[key] = [actor.remote(spec) for _ in range(n)]
            self._pools[key] = ActorPool(self._actors[key])
        return self._pools[key]

    def map(self, model: Model, method: str, batches: Sequence[Any]) -> Iterator[Any]:
        """`model.<method>(batch)` of every batch, in order, each as soon as it and those before it are done.
        A worker's error is raised here as itself (e.g. the ValueError of a model that differs there)."""
        from ray.exceptions import RayTaskError

        spec = worker_spec(model)
        pool = self._pool(spec)
        try:
            yield from pool.map(lambda actor, batch: actor.run.remote(method, batch), batches)
        except RayTaskError as e:
            self._stop(json.dumps(spec, sort_keys=True))  # its other actors may be mid-batch
            cause = e.cause if isinstance(e.cause, Exception) else e
            cause.add_note(f"on a Ray worker computing {type(model).__name__}.{method}")
            raise cause from None

    def _stop(self, key: str) -> None:
        import ray

        self._pools.pop(key, None)
        for actor in self._actors.pop(key, []):
            if ray.is_initialized():
                ray.kill(actor)

    def close(self) -> None:
        """Stop the actors, and Ray itself when this engine started or connected it."""
        import ray

        for key in list(self._actors):
            self._stop(key)
        if self.started:
            ray.shutdown()

    def __enter__(self) -> RayEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
