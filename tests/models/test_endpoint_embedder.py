"""An OpenAI-compatible embeddings endpoint as a model of the grid ("openai:<model>@<base_url>").

No embeddings server installs here from PyPI without changing this environment (infinity-emb pins
numpy 1.26; `transformers serve` has no /v1/embeddings), so the server is this module's: the HTTP
API of OpenAI's embeddings (`POST /v1/embeddings`, rows answered out of order, a bearer key
checked) over the real bundled all-MiniLM-L6-v2, on localhost. Everything on the workbench's side
(spec, requests, retries, errors, caching, the sweep) is what a user's endpoint meets."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from workbench.dataset import Dataset
from workbench.models.choose import embedder_of
from workbench.models.embed import Embedder, default_model_path
from workbench.models.static import EndpointEmbedder, EndpointError
from workbench.run.session import sweep
from workbench.variant import Variant

KEY = "sk-embed-test-never-stored"


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, list[int]]]:
    """(base_url, the batch size of every request it answered) of a local embeddings endpoint."""
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(default_model_path()), device="cpu")
    batches: list[int] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802  (http.server's name)
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if self.headers.get("Authorization") != f"Bearer {KEY}":
                return self._send(401, {"error": {"message": "invalid api key"}})
            if self.path != "/v1/embeddings" or body.get("model") != "minilm":
                return self._send(404, {"error": {"message": f"no model {body.get('model')!r} at {self.path}"}})
            batches.append(len(body["input"]))
            vectors = model.encode(body["input"], normalize_embeddings=True)
            rows = [{"object": "embedding", "index": i, "embedding": v.tolist()} for i, v in enumerate(vectors)]
            self._send(200, {"object": "list", "data": rows[::-1], "model": "minilm"})  # out of order, as allowed

        def _send(self, status: int, payload: dict) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_port}/v1", batches
    httpd.shutdown()


@pytest.fixture
def keyed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


@pytest.mark.model
def test_an_endpoint_gives_the_local_models_vectors_and_caches_them(
        server: tuple[str, list[int]], keyed: None, tmp_path: Path) -> None:
    base_url, batches = server
    e = embedder_of(f"openai:minilm@{base_url}", tmp_path, progress=False)
    assert isinstance(e, EndpointEmbedder) and e.name == f"openai:minilm@{base_url}" and e.dim == 384
    texts = [f"text number {i} about refunds and probes" for i in range(40)]
    local = Embedder(cache_dir=None, progress=False).encode(texts)
    asked = len(batches)
    np.testing.assert_allclose(e.encode(texts), local, atol=1e-5)  # rows put back in order
    assert batches[asked:] == [32, 8] and e.stats.embedded == 40  # in batches of the embedder's size
    again = embedder_of(f"openai:minilm@{base_url}", tmp_path, progress=False)
    assert again.fingerprint == e.fingerprint
    np.testing.assert_array_equal(again.encode(texts), e.encode(texts))
    assert again.stats.embedded == 0 and len(batches) == asked + 2 + 1  # its probe only: the texts were cached
    assert not [p for p in tmp_path.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]
    assert KEY not in json.dumps(e.spec())


@pytest.mark.model
def test_a_sweep_compares_the_endpoint_with_the_local_model(
        server: tuple[str, list[int]], keyed: None, tiny: Dataset, tmp_path: Path) -> None:
    base_url, _ = server
    grid = [Variant.make("fixed", size=32), Variant.make("fixed", size=64)]
    result = sweep(tiny, grid, models=[None, f"openai:minilm@{base_url}"], store=tmp_path, ks=(1, 3), budgets=(),
                   progress=False)
    v = result.variants
    assert list(v["model"]) == ["all-MiniLM-L6-v2"] * 2 + [f"openai:minilm@{base_url}"] * 2
    s = result.summary.query("metric == 'recall'").pivot_table(index="k", columns="model", values="mean")
    np.testing.assert_allclose(s.iloc[:, 0], s.iloc[:, 1], atol=1e-6)  # the same model behind the endpoint
    rerun = sweep(tiny, grid, models=[f"openai:minilm@{base_url}"], store=tmp_path, ks=(1, 3), budgets=(),
                  progress=False)
    assert int(rerun.variants["texts_embedded"].sum()) == 0


@pytest.mark.model
def test_bad_endpoints_give_one_clear_error_each(server: tuple[str, list[int]], tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    base_url, _ = server
    monkeypatch.setenv("WRONG_KEY", "sk-wrong-key-value")
    with pytest.raises(EndpointError, match=r"answered HTTP 401") as e:
        EndpointEmbedder(f"openai:minilm@{base_url}#WRONG_KEY", cache_dir=tmp_path)
    assert "sk-wrong-key-value" not in str(e.value)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with pytest.raises(EndpointError, match=r"answered HTTP 404.*no model .*other"):
        EndpointEmbedder(f"openai:other@{base_url}", cache_dir=tmp_path)
    with pytest.raises(EndpointError, match=r"cannot connect .*\(1 try\)"):
        EndpointEmbedder("openai:minilm@http://127.0.0.1:9/v1", cache_dir=tmp_path, retries=0)
    with pytest.raises(ValueError, match=r"spelled 'openai:<model>@<base_url>'"):
        embedder_of("openai:minilm", tmp_path)
    with pytest.raises(ValueError, match=r"'NOT_SET_ANYWHERE' that holds its key is not set"):
        embedder_of(f"openai:minilm@{base_url}#NOT_SET_ANYWHERE", tmp_path)
