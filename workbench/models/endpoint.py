"""OpenAI-compatible endpoints (Ollama, vLLM, llama.cpp's server, Infinity, hosted APIs), as every
model of the workbench names them: "openai:<model>@<base_url>", its key read from the environment
(OPENAI_API_KEY when that is set, or "...#<VAR>" from VAR, which must be). The key is read when a
request is sent: it is never part of a spec, a fingerprint, a cache, a report or an error message.

One request loop for every endpoint model (the LLM's chat completions, the embedder's embeddings):
retried with a growing pause on a timeout, a refused connection, 429 or 5xx; any other HTTP error
is raised at once, naming the endpoint.
"""

from __future__ import annotations

import os
import time
from typing import Any

OPENAI_PREFIX = "openai:"  # a model spec naming an OpenAI-compatible endpoint
DEFAULT_KEY_ENV = "OPENAI_API_KEY"  # the variable an endpoint's key is read from unless its spec names another


def parse_endpoint(spec: str) -> tuple[str, str, str | None]:
    """(model, base_url, the variable holding its key or None) of an "openai:<model>@<base_url>[#VAR]"
    spec; ValueError naming the spec when it is not one, or when its VAR is not set."""
    model, at, where = spec[len(OPENAI_PREFIX):].partition("@")
    base_url, _, key_env = where.partition("#")
    if not (spec.startswith(OPENAI_PREFIX) and model and at and base_url):
        raise ValueError(f"model {spec!r}: an endpoint is spelled '{OPENAI_PREFIX}<model>@<base_url>' "
                         f"(e.g. '{OPENAI_PREFIX}qwen2.5:7b@http://localhost:11434/v1'), optionally '#<KEY_VAR>'")
    if key_env and not os.environ.get(key_env):
        raise ValueError(f"model {spec!r}: the environment variable {key_env!r} that holds its key is not set")
    return model, base_url, key_env or (DEFAULT_KEY_ENV if os.environ.get(DEFAULT_KEY_ENV) else None)


def redact(message: str, key_env: str | None) -> str:
    """`message` with the key blanked: an error echoing a request must not leak it."""
    key = os.environ.get(key_env) if key_env else None
    return message.replace(key, "***") if key else message


def post(client: Any, path: str, body: dict[str, Any], *, key_env: str | None, retries: int, timeout: float,
         base_url: str, error: type[Exception]) -> dict[str, Any]:
    """The JSON answer of the endpoint to `body` at `path` (an httpx.Client on `base_url`), retried
    as the module docstring says; `error` (the caller's exception class) when it cannot be had."""
    import httpx

    key = os.environ.get(key_env) if key_env else None
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    problem = ""
    for attempt in range(retries + 1):
        if attempt:
            time.sleep(min(0.5 * 2 ** (attempt - 1), 8.0))
        try:
            r = client.post(path, json=body, headers=headers)
        except httpx.TimeoutException:
            problem = f"no answer within timeout={timeout:g} s"
            continue
        except httpx.TransportError as e:
            problem = f"cannot connect ({type(e).__name__}: {e})"
            continue
        if r.status_code == 429 or r.status_code >= 500:
            problem = f"HTTP {r.status_code}: {r.text[:200]!r}"
            continue
        if r.status_code >= 400:
            raise error(redact(f"endpoint {base_url} answered HTTP {r.status_code}: {r.text[:200]!r}", key_env))
        try:
            return r.json()
        except ValueError:
            raise error(f"endpoint {base_url} sent no JSON for {path}: {r.text[:200]!r}") from None
    tries = f"{retries + 1} {'try' if retries == 0 else 'tries'}"
    raise error(redact(f"endpoint {base_url}: {problem} ({tries})", key_env))
