"""Where the expensive stages run: in this process (no engine, the default), or on a Ray cluster.

Why Ray and not a pool of our own: a corpus of millions of documents outgrows one machine, and Ray
already places work on a cluster's CPUs and GPUs. What runs remotely is a model's computation of a
batch (an Embedder's uncached texts): each Ray actor rebuilds one model from its `spec()`
(`from_spec` refuses a worker whose model files give another fingerprint) and turns batches into
arrays, and the driver reads and writes every cache; a worker never sees the driver's cache folder.
The batches are those an in-process run computes, in the same order, with the driver's thread
count, so the vectors, the caches and every score equal a local run's to the last digit (on the
same kind of CPU; a GPU's vectors differ from a CPU's by float noise, as they do in-process).
A big corpus' documents are chunked on the same actors too (`apply`), in batches of whole documents,
the chunks coming back in corpus order. Not by Ray Data's `map_batches`: its tasks ask for CPUs of
their own, which the model actors hold while they live (they would wait, or the model would be
unloaded and loaded again for every variant), and its Arrow batches would turn a chunk's None fields
and ints into nulls and floats that must then be turned back.

`get_engine("ray", address)` connects to a running cluster ("auto", "HOST:PORT" or
"ray://HOST:PORT"), or without an address starts a small local one (LOCAL_CPUS CPUs, no dashboard,
no usage report). Ray is an optional extra: pip install "workbench[ray]".
"""

from __future__ import annotations

import json
import os
import socket
import tempfile
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from workbench.models.base import Model, from_spec

ENGINES = ("local", "ray")
LOCAL_CPUS = 2  # a local Ray instance's CPUs: the workers it runs (one per CPU) share this machine
# a corpus of more characters than this is chunked on the engine, in batches of about this many characters
# (documents are never split); a smaller one chunks faster in the driver than it ships to workers and back
CHUNK_CHARS = 1_000_000
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
    "workbench-worker"; an ONNX backend's exported model is in the node's model store
    (workbench.models.onnx.model_store, atomically written, shared by the node's workers); no worker
    touches the driver's caches."""

    def __init__(self, spec: dict[str, Any] | None):
        self.spec = spec
        self.model: Model | None = None

    def call(self, fn: Callable[[Any], Any], batch: Any) -> Any:
        """`fn(batch)`: work that needs no model (chunking), on an actor whatever model it holds."""
        return fn(batch)

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
    wait forever for those of the first (a sweep generates what every build needs before it embeds:
    IndexStore.generate). Work that needs no model (`apply`: chunking a corpus of more than `chunk_chars`
    characters) runs on whichever actors are alive, so it neither waits for their CPUs nor makes them
    load a model again."""

    def __init__(self, address: str | None = None, workers: int | None = None, cpus_per_worker: float = 1,
                 chunk_chars: int = CHUNK_CHARS):
        if chunk_chars < 1:
            raise ValueError(f"chunk_chars must be >= 1, got {chunk_chars}")
        if workers is not None and workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        if cpus_per_worker <= 0:
            raise ValueError(f"cpus_per_worker must be > 0, got {cpus_per_worker}")
        ray = _ray()
        if address is not None:
            check_address(address)
        self.workers, self.cpus_per_worker, self.chunk_chars = workers, cpus_per_worker, chunk_chars
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
        self._actors: dict[str, list[Any]] = {}  # by model spec ("null": actors without a model)
        self._pools: dict[str, Any] = {}

    def _pool(self, key: str) -> Any:
        """The actors of the model spec `key` names (JSON), made when absent, the others stopped first."""
        if key not in self._pools:
            import ray

            for other in list(self._actors):
                self._stop(other)
            from ray.util import ActorPool

            resources = ray.cluster_resources()
            gpus = int(resources.get("GPU", 0))
            n = self.workers or gpus or max(1, int(resources.get("CPU", 1) // self.cpus_per_worker))
            actor = ray.remote(num_cpus=self.cpus_per_worker, num_gpus=1 if gpus else 0)(_Worker)
            self._actors[key] = [actor.remote(json.loads(key)) for _ in range(n)]
            self._pools[key] = ActorPool(self._actors[key])
        return self._pools[key]

    def map(self, model: Model, method: str, batches: Sequence[Any]) -> Iterator[Any]:
        """`model.<method>(batch)` of every batch, in order, each as soon as it and those before it are done.
        A worker's error is raised here as itself (e.g. the ValueError of a model that differs there)."""
        key = json.dumps(worker_spec(model), sort_keys=True)
        yield from self._map(key, lambda actor, batch: actor.run.remote(method, batch), batches,
                             f"computing {type(model).__name__}.{method}")

    def apply(self, fn: Callable[[Any], Any], batches: Sequence[Any], what: str) -> Iterator[Any]:
        """`fn(batch)` of every batch, in order, on the actors alive (actors without a model when none
        are): work that needs no model, `what` naming it in a worker's error. `fn` is sent once."""
        import ray

        key = next(iter(self._pools), json.dumps(None))
        ref = ray.put(fn)
        yield from self._map(key, lambda actor, batch: actor.call.remote(ref, batch), batches, what)

    def _map(self, key: str, submit: Callable[[Any, Any], Any], batches: Sequence[Any], what: str) -> Iterator[Any]:
        from ray.exceptions import RayTaskError

        try:
            yield from self._pool(key).map(submit, batches)
        except RayTaskError as e:
            self._stop(key)  # its other actors may be mid-batch
            cause = e.cause if isinstance(e.cause, Exception) else e
            cause.add_note(f"on a Ray worker {what}")
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
