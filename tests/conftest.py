"""Shared fixtures: a tiny real corpus and one Embedder (the real bundled model) per session."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import fakemodel
import pytest

from workbench.dataset import Dataset, Document, Question, Span
from workbench.ingest import load_dataset
from workbench.models.embed import Embedder, default_model_path
from workbench.models.onnx import MODELS_ENV
from workbench.run import registries

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "datasets"
pytest_plugins = ["tiers"]  # the slow markers and the fast tier's guard (docs/testing.md)

BILLING = """# Billing

Invoices are sent on the first day of each month. You can download every invoice as a PDF.

## Refunds

Refunds are paid back to the original card within five working days. A refund can be requested
in the first thirty days after a purchase.

## Taxes

Prices include VAT for customers in the European Union. Business customers can add a VAT number.
"""

SPACE = """The Voyager probes were launched in 1977. Voyager 1 crossed the heliopause in 2012 and
entered interstellar space. Both probes carry a golden record with sounds and images of Earth.

Their power comes from radioisotope generators, whose output falls by about four watts a year.
Engineers switch off instruments one by one to keep the probes alive. Café owners in Zürich
named a coffee after Voyager; 中文 visitors call it 旅行者号.
"""


def write_dataset(ds: Dataset, folder: Path) -> Path:
    """`ds` as a user's dataset folder: corpus.jsonl and questions.jsonl."""
    folder.mkdir()
    with (folder / "corpus.jsonl").open("w", encoding="utf-8") as f:
        for d in ds.documents:
            f.write(json.dumps({"doc_id": d.doc_id, "title": d.title, "text": d.text}) + "\n")
    with (folder / "questions.jsonl").open("w", encoding="utf-8") as f:
        for q in ds.questions:
            answers = [{"doc_id": a.doc_id, "start": a.start, "end": a.end} for a in q.answers]
            f.write(json.dumps({"qid": q.qid, "question": q.question, "answers": answers}) + "\n")
    return folder


def model_stack_parameters(files: tuple[Path, Path], out: Path) -> str:
    data, cache = files
    return (f"DATA = {str(data)!r}\nDOCS = None\nCACHE = {str(cache)!r}\nOUT = {str(out)!r}\nK = 3\nKS = (1, 3)\n"
            "MAX_TOKENS = 12")


def shared_folder() -> Path:
    """A temporary folder the user `nobody` may enter: under root the bundled PostgreSQL (the pgvector
    stage's server, workbench/retrieval/postgres.py) runs as nobody, and pytest's own temporary folders
    are private. The caller removes it."""
    folder = Path(tempfile.mkdtemp(prefix="workbench-pg-"))
    folder.chmod(0o755)
    return folder


def span_of(doc: Document, quote: str) -> Span:
    start = doc.text.index(quote)
    return Span(doc.doc_id, start, start + len(quote))


@pytest.fixture(scope="session")
def tiny() -> Dataset:
    billing = Document("billing.md", "Billing guide", BILLING)
    space = Document("space.txt", "Voyager", SPACE)
    qs = (
        Question("q-refund", "How long does a refund take?",
                 (span_of(billing, "Refunds are paid back to the original card within five working days."),)),
        Question("q-vat", "Do prices include VAT?",
                 (span_of(billing, "Prices include VAT for customers in the European Union."),)),
        Question("q-launch", "When were the Voyager probes launched, and what do they carry?",
                 (span_of(space, "The Voyager probes were launched in 1977."),
                  span_of(space, "Both probes carry a golden record with sounds and images of Earth."))),
        Question("q-power", "Why are instruments switched off?",
                 (span_of(space, "Engineers switch off instruments one by one to keep the probes alive."),)),
    )
    return Dataset("tiny", (billing, space), qs)


@pytest.fixture(scope="session")
def long_log() -> Dataset:
    """One document of about 3,000 tokens: chunks of 300 tokens exceed the model's 256 word pieces."""
    log = Document("log.txt", "Log", " ".join(f"Station{i} logs reading{i * 7} at dusk." for i in range(400)))
    return Dataset("log", (log,), (Question("q", "What does Station12 log?", (span_of(log, "Station12 logs"),)),))


@pytest.fixture(scope="session")
def llm_models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled GGUF converted once per session (tens of seconds each time): `llm_cache` links it."""
    from workbench.models.llm import LLM

    home = tmp_path_factory.mktemp("llm-models")
    LLM(cache_dir=home, progress=False).hf_folder
    return home / "models"


@pytest.fixture(scope="session")
def llm_cache(llm_models: Path, tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """A new LLM cache folder (no generation in it) whose `models/` is the session's conversion."""
    def make(name: str) -> Path:
        folder = tmp_path_factory.mktemp(name)
        (folder / "models").symlink_to(llm_models, target_is_directory=True)
        return folder
    return make


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def llm_server(llm_models: Path) -> Iterator[tuple[str, str]]:
    """(base_url, model name) of a real OpenAI-compatible server, `transformers serve` on localhost
    over the session's conversion of the bundled model, offline; one per session (it takes a while to start)."""
    import httpx

    from workbench.models.llm import LLM

    folder, port = LLM(cache_dir=llm_models.parent, progress=False).hf_folder, free_port()
    cli = Path(sys.executable).with_name("transformers")
    env = os.environ | {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    proc = subprocess.Popen([str(cli), "serve", str(folder), "--host", "127.0.0.1", "--port", str(port),
                             "--device", "cpu", "--default-seed", "0"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"transformers serve did not start: {proc.stderr.read()[-2000:]}")
            time.sleep(1)
        yield f"http://127.0.0.1:{port}/v1", str(folder)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="session")
def mlflow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real MLflow tracking server on localhost (SQLite behind it, artifacts served by it), stopped after."""
    import requests

    folder, port = tmp_path_factory.mktemp("mlflow-server"), free_port()
    cli = Path(sys.executable).with_name("mlflow")
    proc = subprocess.Popen([str(cli), "server", "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
                             "--backend-store-uri", f"sqlite:///{folder / 'mlflow.db'}",
                             "--artifacts-destination", str(folder / "artifacts")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)  # its uvicorn and job workers in a group of their own
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if requests.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except requests.RequestException:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"mlflow server did not start: {proc.stderr.read()[-2000:]}")
            time.sleep(0.5)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # the server and the processes it started, none other
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


@pytest.fixture(scope="session")
def model_stack_files(tiny: Dataset, llm_cache: Callable[[str], Path], tmp_path_factory: pytest.TempPathFactory
                      ) -> tuple[Path, Path]:
    """The tiny corpus as a dataset folder and one cache folder for the model-stack notebook's runs
    (headless in test_notebook, in JupyterLab in test_browser_lab): whichever runs second generates nothing."""
    return write_dataset(tiny, tmp_path_factory.mktemp("model-stack") / "data"), llm_cache("model-stack-cache")


@pytest.fixture(scope="session", autouse=True)
def model_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The session's own model store (ONNX exports), not the user's: exported once per session."""
    store = tmp_path_factory.mktemp("model-store")
    before = os.environ.get(MODELS_ENV)
    os.environ[MODELS_ENV] = str(store)
    yield store
    if before is None:
        del os.environ[MODELS_ENV]
    else:
        os.environ[MODELS_ENV] = before


@pytest.fixture(scope="session")
def embedder(tmp_path_factory: pytest.TempPathFactory) -> Embedder:
    """The bundled model on torch: the reference the ONNX backends are checked against."""
    return Embedder(cache_dir=tmp_path_factory.mktemp("embed-cache"), progress=False, backend="torch")


@pytest.fixture(scope="session")
def fake_embedder(tmp_path_factory: pytest.TempPathFactory) -> Embedder:
    """tests/fakemodel.py's encoder as a workbench model, for the tests about logic rather than the model."""
    return fakemodel.embedder(tmp_path_factory.mktemp("fake-cache"))


def save_cross_encoder(folder: Path, seed: int) -> Path:
    """A 2-layer BERT cross-encoder (one relevance logit, random weights) with MiniLM's word pieces,
    saved as a sentence-transformers CrossEncoder folder: no cross-encoder ships its weights on
    PyPI and nothing may download, so the reranker tests build their own (its scores mean nothing)."""
    import torch
    from sentence_transformers import CrossEncoder
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    tokenizer = AutoTokenizer.from_pretrained(str(default_model_path()), local_files_only=True)
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=128, num_labels=1)
    BertForSequenceClassification(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    CrossEncoder(str(folder), local_files_only=True).save(str(folder))
    return folder


@pytest.fixture(scope="session")
def cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_cross_encoder(tmp_path_factory.mktemp("ce") / "tiny-ce", seed=0)


@pytest.fixture(scope="session")
def chroma_small() -> Dataset:
    return load_dataset(REPO / "data" / "chroma_small")


@pytest.fixture(autouse=True)
def restore_registries() -> Iterator[None]:
    """What a test registers (or unregisters) is undone after it, so none leaks into another:
    chunking strategies (with which may be replaced), retrieval stages and document readers."""
    saved = registries.snapshot()
    yield
    registries.restore(saved)
