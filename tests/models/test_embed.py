"""Embedding with the real bundled model, and its persistent content-addressed cache."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO

from workbench.chunkers import ChunkEnv, run_strategy
from workbench.ingest import load_dataset
from workbench.models.base import from_spec, model_fingerprint
from workbench.models.cache import VectorCache, text_key
from workbench.models.embed import Embedder, default_model_path


@pytest.mark.model
def test_encode_is_normalised_and_cached(tmp_path: Path) -> None:
    cache_dir = tmp_path  # its own: the counts below are this test's alone
    e = Embedder(cache_dir=cache_dir, progress=False)
    texts = ["Refunds take five days.", "Le café est chaud.", "中文句子。", "Refunds take five days."]
    v = e.encode(texts)
    assert v.shape == (4, 384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert (e.stats.embedded, e.stats.cached) == (3, 1)  # the duplicate is computed once
    assert np.array_equal(v[0], v[3])
    # semantics, not noise: the two English paraphrases are closer than unrelated text
    w = e.encode(["A refund needs five days.", "The weather on Mars"])
    assert float(w[0] @ v[0]) > float(w[1] @ v[0]) + 0.3

    again = Embedder(cache_dir=cache_dir, progress=False)  # a new process would see the same file
    v2 = again.encode(texts)
    assert again.stats.embedded == 0 and again.stats.cached == 4
    assert np.array_equal(v, v2)
    assert "model" not in again.__dict__  # fully cached: the model was never loaded


@pytest.mark.model
def test_cached_vectors_equal_fresh_ones(tmp_path: Path) -> None:
    Embedder(cache_dir=tmp_path, progress=False).encode(["Le café est chaud."])  # into the cache
    reader = Embedder(cache_dir=tmp_path, progress=False)
    cached = reader.encode(["Le café est chaud."])
    fresh = Embedder(cache_dir=None, progress=False).encode(["Le café est chaud."])
    assert reader.stats.cached == 1 and np.allclose(fresh, cached, atol=1e-6)


def test_model_fingerprint_tracks_files(tmp_path: Path) -> None:
    src = default_model_path()
    copy = tmp_path / "model"
    shutil.copytree(src, copy)
    assert model_fingerprint(copy) == model_fingerprint(src)
    cfg = json.loads((copy / "config.json").read_text())
    cfg["layer_norm_eps"] = 1e-6
    (copy / "config.json").write_text(json.dumps(cfg))
    assert model_fingerprint(copy) != model_fingerprint(src)
    # a changed model gets its own cache file: it can never read the old model's vectors
    a = Embedder(src, cache_dir=tmp_path / "c")
    b = Embedder(copy, cache_dir=tmp_path / "c")
    assert a.cache is not None and b.cache is not None and a.cache.path != b.cache.path


def test_default_fingerprint_never_moves() -> None:
    """It names every user's vector cache, index and score entries: a refactor that moved it would
    silently orphan them all. The default backend, "auto", is onnx where no torch vectors are
    cached (issue 21): torch's fingerprint is the one every existing cache holds."""
    assert Embedder(cache_dir=None, backend="torch").fingerprint == "aad501698b1a7a90"
    assert Embedder(cache_dir=None).fingerprint == "aad501698b1a7a90-onnx"


@pytest.mark.model
def test_a_vector_cache_written_at_eca49dc_is_read(tmp_path: Path) -> None:
    """The SQLite file a sweep wrote before the model layer moved: same file name, table and keys."""
    old = REPO / "tests" / "data" / "cache_eca49dc" / "cache" / "embeddings" / "aad501698b1a7a90.sqlite"
    (tmp_path / "embeddings").mkdir()
    shutil.copy(old, tmp_path / "embeddings" / old.name)  # opening a WAL database writes beside it
    doc = load_dataset(REPO / "tests" / "data" / "squad_v11_dev").documents[0]
    texts = [c.text for c in run_strategy("fixed", {"size": 64}, doc, ChunkEnv())]
    reader = Embedder(cache_dir=tmp_path, progress=False)
    vecs = reader.encode(texts)
    assert (reader.stats.embedded, reader.stats.cached) == (0, len(texts)) and len(texts) > 5
    assert np.allclose(vecs, Embedder(cache_dir=None, progress=False).encode(texts), atol=1e-6)


@pytest.mark.model
def test_hub_names_are_refused_unless_downloaded_before(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import huggingface_hub.constants

    hub = tmp_path / "hub"
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(hub))  # an empty Hugging Face cache
    name = "sentence-transformers/all-MiniLM-L6-v2"
    with pytest.raises(ValueError, match=r"not a local sentence-transformers folder .* nor a hub name in the "
                                         r"Hugging Face cache; nothing is downloaded here.*hf download"):
        Embedder(name, cache_dir=tmp_path)
    revision = "0" * 40  # what `hf download` leaves: the snapshot of a commit, and refs/main naming it
    repo = hub / "models--sentence-transformers--all-MiniLM-L6-v2"
    shutil.copytree(default_model_path(), repo / "snapshots" / revision)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(revision)
    cached, bundled = Embedder(name, cache_dir=None, progress=False), Embedder(cache_dir=None, progress=False)
    assert cached.name == name and cached.path == repo / "snapshots" / revision
    assert cached.model_fingerprint == bundled.model_fingerprint  # fingerprinted as the files it found
    text = ["a refund takes five days"]
    np.testing.assert_array_equal(cached.encode(text), bundled.encode(text))
    with pytest.raises(ValueError, match="batch_size"):
        Embedder(cache_dir=tmp_path, batch_size=0)


REBUILD = textwrap.dedent(
    """
    import json, sys, numpy as np
    from workbench.models.base import from_spec
    model = from_spec(json.loads(sys.argv[1]))
    np.save(sys.argv[2], model.encode(["Refunds take five days."]))
    print(type(model).__name__, model.fingerprint, model.batch_size, model.cache.path)
    """
)


@pytest.mark.model
def test_spec_rebuilds_the_embedder_in_another_process(tmp_path: Path) -> None:
    e = Embedder(cache_dir=tmp_path, batch_size=8, progress=False, backend="torch")
    spec = e.spec()
    assert spec["arguments"]["backend"] == "torch"  # the resolved backend: a worker's own cache cannot change it
    assert json.loads(json.dumps(spec)) == spec  # plain JSON: what a Ray task or a CLI argument carries
    assert spec["arguments"]["model"] is None  # the bundled model, wherever that process has it installed
    run = subprocess.run([sys.executable, "-c", REBUILD, json.dumps(spec), str(tmp_path / "v.npy")],
                         check=True, capture_output=True, text=True)
    assert run.stdout.split() == ["Embedder", "aad501698b1a7a90", "8", str(e.cache.path)]
    fresh = Embedder(cache_dir=None, progress=False, backend="torch").encode(["Refunds take five days."])
    assert np.array_equal(np.load(tmp_path / "v.npy"), fresh)


def test_from_spec_refuses_other_files_and_other_classes(tmp_path: Path) -> None:
    copy = tmp_path / "model"
    shutil.copytree(default_model_path(), copy)
    spec = Embedder(copy, cache_dir=None).spec()
    assert spec["arguments"]["model"] == str(copy) and from_spec(spec).fingerprint == spec["fingerprint"]
    cfg = json.loads((copy / "config.json").read_text())
    (copy / "config.json").write_text(json.dumps(cfg | {"layer_norm_eps": 1e-6}))  # the worker's files differ
    with pytest.raises(ValueError, match="model files differ in this process"):
        from_spec(spec)
    with pytest.raises(ValueError, match="must name a Model class of workbench.models"):
        from_spec({**spec, "type": "subprocess.Popen"})


WRITER = textwrap.dedent(
    """
    import sys, numpy as np
    from pathlib import Path
    from workbench.models.cache import VectorCache, text_key
    cache = VectorCache(Path(sys.argv[1]))
    for batch in range(10_000):
        items = {text_key(f"t{batch}-{i}"): np.full(8, batch * 1000 + i, np.float32) for i in range(200)}
        cache.put_many(items)
        print(batch, flush=True)
    """
)


def test_killed_writer_leaves_a_consistent_cache(tmp_path: Path) -> None:
    path = tmp_path / "vec.sqlite"
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    for _ in range(5):  # let a few batches commit, then kill it mid-write
        proc.stdout.readline()
    time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    cache = VectorCache(path)
    assert cache._db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    n = len(cache)
    assert n >= 5 * 200 and n % 200 == 0  # whole batches only
    last = n // 200 - 1
    keys = [text_key(f"t{last}-{i}") for i in range(200)]
    got = cache.get_many(keys)
    assert [float(got[k][0]) for k in keys] == [last * 1000 + i for i in range(200)]


def test_caches_opened_at_once_on_a_new_file_all_open(tmp_path: Path) -> None:
    """Connections switching a new file to WAL together: SQLite fails one of them at once ("database
    is locked", without waiting its busy timeout), which two sweeps starting on one empty cache
    met in CI. 100 rounds of 6 at once failed in about 1 round of 20 before the retry."""
    for round_ in range(100):
        path = tmp_path / f"{round_}.sqlite"
        start, errors = threading.Barrier(6), []

        def open_it() -> None:
            start.wait()
            try:
                VectorCache(path).put_many({text_key("t"): np.ones(2, dtype=np.float32)})
            except Exception as e:  # collected for the assert below
                errors.append(e)

        threads = [threading.Thread(target=open_it) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors[0]
        assert len(VectorCache(path)) == 1


def test_the_window_is_read_without_loading_the_tokenizer(tmp_path: Path) -> None:
    """A warm sweep records the window; reading it from tokenizer.json's template loads nothing,
    and equals what the loaded tokenizer frames a text with."""
    fresh = Embedder(cache_dir=tmp_path)
    window = fresh.window_tokens
    assert "tokenizer" not in fresh.__dict__  # the cached_property never ran
    prefix, suffix = fresh._frame
    assert window == fresh.max_tokens - len(prefix) - len(suffix) == 254


@pytest.mark.model
def test_the_torch_tokenizer_is_shared_read_only_across_threads() -> None:
    """A preview's token pass (on another thread) and its chunkers call one transformers tokenizer;
    transformers would reset the truncation and padding its tokenizer.json sets on a first call, a
    write racing the other thread's reads. The embedder resets them as it loads it, so no call
    writes, and the counts and offsets are those of an untruncated text."""
    tokenizer = Embedder(cache_dir=None, backend="torch", progress=False).tokenizer
    assert tokenizer.backend_tokenizer.truncation is None and tokenizer.backend_tokenizer.padding is None
    phrase = "refunds take five days "
    pieces = len(tokenizer(phrase, add_special_tokens=False, verbose=False)["input_ids"])
    long = tokenizer(phrase * 100, add_special_tokens=False, verbose=False)["input_ids"]
    assert len(long) == 100 * pieces > 128  # over tokenizer.json's max_length, not cut
