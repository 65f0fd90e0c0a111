"""ONNX backends of the Embedder: vectors close to PyTorch's, their own fingerprints, one export
per machine in the model store (an older one in a cache folder still read), the torch-free path
equal to the sentence-transformers one and importing neither, late chunking through it, and
refused values that name their parameter."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import write_dataset

from workbench.chunkers import ChunkEnv, run_strategy
from workbench.cli import main
from workbench.dataset import Dataset
from workbench.models import onnx
from workbench.models.base import model_fingerprint
from workbench.models.choose import result_key
from workbench.models.embed import Embedder, default_model_path, resolve_backend
from workbench.models.late import late_vectors
from workbench.models.onnx import (
    MODELS_ENV,
    ONNX_FILE,
    PASS_TOKENS,
    SKIPPED_FUSIONS,
    JsonTokenizer,
    bf16_units,
    check_device,
    export_file,
    plan_passes,
    reproducible,
)

# texts of every length and kind: empty, blank, padded with spaces, unicode, beyond the 256-piece window
EDGE_TEXTS = ["", " ", ".", "  Refunds take five days.  ", "héllo wörld — 東京 ✓ 🙂 ﬁ", "\n\nx\t",
              "word " * 400, "Ünïcödé " * 150 + "end", "a-b_c/d " * 90]

# Dynamic int8 rounds every weight and activation: on these 50 texts all-MiniLM-L6-v2 keeps a
# mean cosine of 0.993 to the float vectors and 0.99 on every 256-token chunk, but 0.978 on
# near-empty texts that real chunkers do emit (a lone "." of 3 tokens: mean pooling has almost
# nothing to average the rounding out over). Hence 0.97 for the worst text and 0.99 for the
# mean; bench/backends.md measures what int8 does to recall@5.
INT8_MIN_COSINE = 0.97
# bfloat16 keeps 8 bits of each matrix product's inputs and adds up in float32: on these 50 texts
# all-MiniLM-L6-v2 kept a cosine above 0.9999 to the float vectors on every text (a hundred times
# nearer than int8), and its token embeddings above 0.999 on every token.
BF16_MIN_COSINE = 0.9999
BF16_MIN_TOKEN_COSINE = 0.999



@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache folder for the module: each backend exports (and quantizes) once."""
    return tmp_path_factory.mktemp("backends")


@pytest.fixture(scope="module")
def texts(chroma_small: Dataset, embedder: Embedder) -> list[str]:
    """50 real texts from the 3 documents: 30 fixed 256-token chunks and 20 sentence-sized ones."""
    env = ChunkEnv(model_tokenizer=embedder.tokenizer)
    docs = chroma_small.documents
    chunks = [c.text for doc in docs for c in run_strategy("fixed", {"size": 256}, doc, env)[:10]]
    sentences = [c.text for doc in docs for c in run_strategy("sentence", {"size": 32}, doc, env)[10:17]]
    return chunks + sentences[:20]


@pytest.fixture(scope="module")
def reference(texts: list[str], embedder: Embedder) -> np.ndarray:
    return embedder.encode(texts)


def cosines(texts: list[str], reference: np.ndarray, embedder: Embedder) -> np.ndarray:
    return np.sum(embedder.encode(texts) * reference, axis=1)


def test_onnx_vectors_match_torch(texts: list[str], reference: np.ndarray, cache: Path) -> None:
    assert len(texts) == 50
    cos = cosines(texts, reference, Embedder(cache_dir=cache, backend="onnx", progress=False))
    assert cos.min() >= 0.99, f"lowest cosine {cos.min():.4f}"


def test_texts_tokenized_a_slice_at_a_time_give_the_same_vectors_bit_for_bit(
        texts: list[str], cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """OnnxEncoder.encode tokenizes TOKENIZE_SLICE texts at a time (a whole call's Encodings were most of a
    big folder's peak memory): slices of 7 texts, edge texts among them, give the vectors of one slice."""
    encoder = Embedder(cache_dir=cache, backend="onnx", progress=False).onnx_encoder
    given = [*texts[:20], *EDGE_TEXTS, *texts[20:30]]
    whole = encoder.encode(given, 8)
    monkeypatch.setattr(onnx, "TOKENIZE_SLICE", 7)
    np.testing.assert_array_equal(encoder.encode(given, 8), whole)


def test_int8_vectors_stay_close_to_torch(texts: list[str], reference: np.ndarray, cache: Path) -> None:
    cos = cosines(texts, reference, Embedder(cache_dir=cache, backend="onnx-int8", progress=False))
    print(f"onnx-int8 cosine to torch: min {cos.min():.4f}, mean {cos.mean():.4f}")
    assert cos.min() >= INT8_MIN_COSINE, f"lowest cosine {cos.min():.4f}"
    assert cos.mean() >= 0.99
    assert cos.max() < 0.99999  # quantized for real, not the float model again


def test_openvino_bf16_vectors_stay_close_to_torch(texts: list[str], reference: np.ndarray, cache: Path,
                                                   embedder: Embedder) -> None:
    """On a CPU with bfloat16 units: vectors and token embeddings near torch's, and not the float model's
    bits; on any other, a refusal that names the backend and what is missing."""
    bf16 = Embedder(cache_dir=cache, backend="openvino-bf16", progress=False)
    if not bf16_units():
        with pytest.raises(ValueError, match="'openvino-bf16' needs a CPU with bfloat16 units"):
            bf16.encode(texts)
        return
    vecs = bf16.encode(texts)
    cos = np.sum(vecs * reference, axis=1)
    print(f"openvino-bf16 cosine to torch: min {cos.min():.6f}, mean {cos.mean():.6f}")
    assert cos.min() >= BF16_MIN_COSINE, f"lowest cosine {cos.min():.6f}"
    assert np.abs(vecs - reference).max() > 1e-5  # bfloat16 for real: the float model is within 1e-6
    text = " ".join(texts[:12])  # several windows
    (_, ours), (_, torchs) = next(bf16.token_embeddings({"d": text})), next(embedder.token_embeddings({"d": text}))
    token_cos = np.sum(ours.vecs * torchs.vecs, axis=1) / (
        np.linalg.norm(ours.vecs, axis=1) * np.linalg.norm(torchs.vecs, axis=1))
    assert len(bf16.token_windows(len(ours.ids))) > 1 and token_cos.min() >= BF16_MIN_TOKEN_COSINE


@pytest.mark.model
@pytest.mark.parametrize(("patch", "message"), [
    ("capabilities", "needs a CPU with bfloat16 units .* OpenVINO finds none on this one"),
    ("precision", "OpenVINO compiled the model for f32, not bf16, on this CPU"),
])
def test_openvino_bf16_refuses_to_run_in_float32_under_its_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                patch: str, message: str) -> None:
    """A CPU without bfloat16 units, as OpenVINO would see it: no BF16 capability, or a model it compiles
    for float32 though bf16 was asked for (what it does on such a CPU). Either is refused by name, with
    the backends that do run there, rather than float32 vectors cached as bfloat16 ones."""
    import openvino

    class Without(openvino.Core):
        def get_property(self, *args: Any) -> Any:
            got = super().get_property(*args)
            return [c for c in got if c != "BF16"] if patch == "capabilities" and args[1:] == (
                "OPTIMIZATION_CAPABILITIES",) else got

        def compile_model(self, model: Any, device: str, config: dict) -> Any:
            given = config | ({"INFERENCE_PRECISION_HINT": "f32"} if patch == "precision" else {})
            return super().compile_model(model, device, given)

    monkeypatch.setattr(openvino, "Core", Without)
    with pytest.raises(ValueError, match=message) as refused:
        # an empty cache folder: the text must be embedded, not read
        Embedder(cache_dir=tmp_path, backend="openvino-bf16", progress=False).encode(["Refunds take five days."])
    assert "backend='onnx'" in str(refused.value)


def test_openvino_bf16_is_refused_on_a_gpu() -> None:
    with pytest.raises(ValueError, match="backend='openvino-bf16' runs on a CPU, got device='cuda'"):
        check_device("openvino-bf16", "cuda")
    check_device("openvino-bf16", "cpu")


def test_fingerprint_names_the_backend_not_the_device(cache: Path, embedder: Embedder) -> None:
    plain = model_fingerprint(default_model_path())
    assert embedder.fingerprint == plain  # torch's is unchanged: existing caches stay valid
    prints = {b: Embedder(cache_dir=cache, backend=b, progress=False).fingerprint
              for b in ("onnx", "onnx-int8", "openvino-bf16")}
    # int8's revision 2 (BACKEND_REVISIONS): its sessions skip a fusion, which moved its vectors
    assert prints == {"onnx": f"{plain}-onnx", "onnx-int8": f"{plain}-onnx-int8-r2",
                      "openvino-bf16": f"{plain}-openvino-bf16"}
    # OpenVINO compiles the float export as it is: one file on disk for both
    assert export_file(plain, "openvino-bf16") == export_file(plain, "onnx") != export_file(plain, "onnx-int8")
    assert Embedder(cache_dir=cache, backend="torch", device="auto", progress=False).fingerprint == plain
    onnx = Embedder(cache_dir=cache, backend="onnx", progress=False)
    assert onnx.cache.path.name == f"{plain}-onnx.sqlite"


@pytest.mark.model
def test_a_backend_s_sessions_skip_the_fusions_that_slow_it(cache: Path) -> None:
    """SKIPPED_FUSIONS: an int8 embedder runs its export without SkipLayerNormFusion (its hidden
    states are those of a session without it, not those of one with every fusion); without it the
    float export gives the same bits, so onnx keeps its revision 1."""
    import onnxruntime as ort

    assert SKIPPED_FUSIONS == {"onnx-int8": ["SkipLayerNormFusion"]}
    ids = np.random.default_rng(0).integers(1000, 20000, size=(2, 120))
    mask = np.ones_like(ids)

    def hidden(file: Path, skipped: list[str]) -> np.ndarray:
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        session = ort.InferenceSession(str(file), options, providers=["CPUExecutionProvider"],
                                       disabled_optimizers=skipped)
        given = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        return session.run(None, {i.name: given[i.name] for i in session.get_inputs()})[0]

    int8 = Embedder(cache_dir=cache, backend="onnx-int8", progress=False, threads=1)
    runs = int8.onnx_encoder.hidden(ids, mask)
    file = export_file(int8.model_fingerprint, "onnx-int8")
    assert np.array_equal(runs, hidden(file, ["SkipLayerNormFusion"]))
    assert not np.array_equal(runs, hidden(file, []))
    fp32 = Embedder(cache_dir=cache, backend="onnx", progress=False, threads=1)
    fp32.onnx_encoder  # noqa: B018 (exports the float model)
    file = export_file(fp32.model_fingerprint, "onnx")
    assert np.array_equal(hidden(file, ["SkipLayerNormFusion"]), hidden(file, []))


@pytest.mark.model
def test_exported_model_is_reused(cache: Path, model_store: Path) -> None:
    first = Embedder(cache_dir=cache, backend="onnx-int8", progress=False)
    first.model  # noqa: B018 (exports and quantizes unless an earlier test did)
    files = exports(model_store, first.model_fingerprint)  # the session's store: other tests export other models
    assert [f.parent.name for f in files] == [first.model_fingerprint + "-onnx", first.model_fingerprint + "-onnx-int8"]
    assert not (cache / "models").exists()  # a model artifact, kept once per machine, not per cache folder
    stamps = [f.stat().st_mtime_ns for f in files]
    again = Embedder(cache_dir=tmp_cache(cache, "other"), backend="onnx-int8", progress=False)
    assert np.allclose(again.encode(["Refunds take five days."], desc="x"),
                       first.encode(["Refunds take five days."]), atol=1e-6)
    assert [f.stat().st_mtime_ns for f in exports(model_store, first.model_fingerprint)] == stamps
    assert not [p for p in model_store.iterdir() if p.name.startswith(".")]  # no temporary folder left


def exports(store: Path, model_fingerprint: str) -> list[Path]:
    return sorted(f for f in store.rglob(ONNX_FILE) if f.parent.name.startswith(f"{model_fingerprint}-"))


def tmp_cache(cache: Path, name: str) -> Path:
    return cache.parent / f"{cache.name}-{name}"


@pytest.mark.model
def test_an_export_in_the_cache_folder_is_still_read(cache: Path, model_store: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    Embedder(cache_dir=cache, backend="onnx", progress=False).onnx_encoder  # noqa: B018 (exports to the store)
    name = Path(f"{model_fingerprint(default_model_path())}-onnx") / ONNX_FILE
    old = tmp_path / "old-cache"
    (old / "models" / name).parent.mkdir(parents=True)
    shutil.copy(model_store / name, old / "models" / name)
    monkeypatch.setenv(MODELS_ENV, str(tmp_path / "empty-store"))
    legacy = Embedder(cache_dir=old, backend="onnx", progress=False)
    assert legacy.onnx_encoder.runner.session._model_path == str(old / "models" / name)
    assert legacy.encode(["Refunds take five days."]).shape == (1, 384)
    assert not (tmp_path / "empty-store").exists()  # nothing exported again


def test_the_torch_free_path_gives_the_sentence_transformers_vectors(texts: list[str], cache: Path) -> None:
    onnx = Embedder(cache_dir=cache, backend="onnx", progress=False)
    assert onnx.onnx_encoder is not None and onnx.dim == 384
    every = texts + EDGE_TEXTS
    assert max(len(onnx.tokenizer(t)["input_ids"]) for t in every) > 400  # truncated to the window
    ours = onnx.vectors(every)
    # the same export inside sentence-transformers: its tokenizer, truncation, padding, pooling, normalisation
    theirs = onnx.model.encode(every, batch_size=onnx.batch_size, normalize_embeddings=True, show_progress_bar=False)
    assert np.abs(ours - theirs).max() < 1e-5
    assert np.abs(onnx.vectors(every[::-1])[::-1] - ours).max() < 1e-5  # other batches, other padding: same


def test_the_json_tokenizer_equals_transformers(texts: list[str], embedder: Embedder) -> None:
    ours = JsonTokenizer(embedder.path)
    every = texts + EDGE_TEXTS
    for special in (True, False):
        kwargs = {"add_special_tokens": special, "return_offsets_mapping": True, "return_special_tokens_mask": True}
        a, b = ours(every, **kwargs), embedder.tokenizer(every, verbose=False, **kwargs)
        assert a["input_ids"] == b["input_ids"] and a["special_tokens_mask"] == b["special_tokens_mask"]
        assert a["offset_mapping"] == [[tuple(o) for o in row] for row in b["offset_mapping"]]
        one = ours(every[4], **kwargs)
        assert one["input_ids"] == b["input_ids"][4]
    assert ours.pad_token_id == embedder.tokenizer.pad_token_id



def test_an_onnx_embedder_tokenizes_without_starting_its_session(texts: list[str], cache: Path) -> None:
    """What only counts or cuts word pieces (a preview whose questions are cached, a chunker's
    model tokenizer) reads tokenizer.json and starts no ONNX session."""
    onnx = Embedder(cache_dir=cache, backend="onnx", progress=False)
    ids = onnx.tokenizer(texts, verbose=False)["input_ids"]
    assert "onnx_encoder" not in vars(onnx)
    assert ids == onnx.onnx_encoder.tokenizer(texts)["input_ids"]

@pytest.mark.parametrize("backend", ["onnx", "onnx-int8"])
def test_passes_run_side_by_side_give_the_vectors_of_one_pass_at_a_time(texts: list[str], tiny: Dataset,
                                                                        cache: Path, backend: str) -> None:
    """Two one-thread passes at once, of PASS_TOKENS word pieces each, against one two-thread
    session taking `batch_size` texts a pass (what the encoder did before): the same vectors, and
    the same token embeddings. int8 scales its activations per pass, so only one text a pass
    (the preview's token pass) is exact there."""
    batch = 32 if backend == "onnx" else 1
    sides = [Embedder(cache_dir=cache, backend=backend, progress=False, threads=threads, batch_size=batch)
             for threads in (2, 1)]
    side_by_side, one_at_a_time = (e.onnx_encoder for e in sides)
    assert side_by_side.workers == 2 and one_at_a_time.workers == 1
    if backend == "onnx":
        every = texts + EDGE_TEXTS
        widths = sorted(min(len(x), sides[0].max_tokens) for x in sides[0].tokenizer(every)["input_ids"])
        assert len(side_by_side.passes(widths, batch)) > len(one_at_a_time.passes(widths, batch))  # smaller passes
        assert np.abs(sides[0].vectors(every) - sides[1].vectors(every)).max() < 1e-5
    text = " ".join(d.text for d in tiny.documents) * 3  # several windows
    (_, a), (_, b) = (next(e.token_embeddings({"d": text})) for e in sides)
    assert len(sides[0].token_windows(len(a.ids))) > 2
    assert np.abs(a.vecs - b.vecs).max() < 1e-5


def test_plan_passes_bounds_rows_and_padded_word_pieces() -> None:
    widths = sorted([3, 7, 7, 20, 64, 64, 65, 128, 200, 256, 256, 256])
    for batch, budget in ((32, PASS_TOKENS), (4, PASS_TOKENS), (2, None), (32, 64)):
        passes = plan_passes(widths, batch, budget)
        assert [i for r in passes for i in r] == list(range(len(widths)))  # every text once, in order
        for r in passes:
            assert 1 <= len(r) <= batch
            assert len(r) == 1 or budget is None or len(r) * widths[r[-1]] <= budget
        # as few passes as the bounds allow: a pass ends only when the next text would break one
        for r, nxt in zip(passes, passes[1:], strict=False):
            assert len(r) == batch or (budget is not None and (len(r) + 1) * widths[nxt[0]] > budget)
    assert plan_passes([], 32, PASS_TOKENS) == []


@pytest.mark.model
def test_token_embeddings_come_through_the_torch_free_path(tiny: Dataset, cache: Path) -> None:
    onnx = Embedder(cache_dir=cache, backend="onnx", progress=False)
    inside = Embedder(cache_dir=cache, backend="onnx", progress=False)
    inside.__dict__["onnx_encoder"] = None  # the same export run inside sentence-transformers, as before
    text = " ".join(d.text for d in tiny.documents) * 3  # several windows
    _, ours = next(onnx.token_embeddings({"d": text}))
    _, theirs = next(inside.token_embeddings({"d": text}))
    assert len(onnx.token_windows(len(ours.ids))) > 1
    assert ours.ids == theirs.ids and (ours.starts == theirs.starts).all() and (ours.ends == theirs.ends).all()
    assert np.abs(ours.vecs - theirs.vecs).max() < 1e-5


@pytest.mark.model
def test_a_stack_it_does_not_reproduce_keeps_sentence_transformers(tmp_path: Path, cache: Path) -> None:
    folder = shutil.copytree(default_model_path(), tmp_path / "cls-model")
    config = json.loads((folder / "1_Pooling" / "config.json").read_text())
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(
        config | {"pooling_mode_mean_tokens": False, "pooling_mode_cls_token": True}))
    assert reproducible(default_model_path()) and not reproducible(folder)
    cls = Embedder(folder, cache_dir=cache, backend="onnx", progress=False)
    assert cls.onnx_encoder is None
    vec = cls.encode(["Refunds take five days."])
    ids = cls.tokenizer("Refunds take five days.", return_tensors="pt")
    import torch

    with torch.inference_mode():
        first = cls.model[0](dict(ids))["token_embeddings"][0, 0]
    assert np.allclose(vec[0], (first / first.norm()).numpy(), atol=1e-5)  # its CLS pooling, not a mean


@pytest.mark.model
def test_a_sweep_with_an_exported_model_imports_no_torch(tiny: Dataset, cache: Path, tmp_path: Path) -> None:
    Embedder(cache_dir=cache, backend="onnx", progress=False).onnx_encoder  # noqa: B018 (exported)
    data = write_dataset(tiny, tmp_path / "data")
    code = ("import json, sys\nfrom workbench.cli import main\n"
            f"main(['sweep', '--data', {str(data)!r}, '--out', {str(tmp_path / 'out')!r}, '--cache', "
            f"{str(tmp_path / 'fresh')!r}, '-v', 'fixed:size=24', '-v', 'semantic:min_size=20,max_size=80', "
            "'--backend', 'onnx', '--no-report', '--quiet'])\n"
            "print(json.dumps([m for m in ('torch', 'transformers', 'sentence_transformers') if m in sys.modules]))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(run.stdout.strip().splitlines()[-1]) == []
    assert (tmp_path / "fresh" / "embeddings").exists()  # it did embed


def test_late_chunking_runs_on_onnx(tiny: Dataset, cache: Path, embedder: Embedder) -> None:
    onnx = Embedder(cache_dir=cache, backend="onnx", progress=False)
    doc = tiny.documents[1]
    chunks = run_strategy("sentence", {"size": 24}, doc, ChunkEnv(model_tokenizer=embedder.tokenizer))
    docs = {doc.doc_id: doc}
    _, ours = next(onnx.token_embeddings({"d": doc.text}))
    _, torchs = next(embedder.token_embeddings({"d": doc.text}))
    assert 0 < np.abs(ours.vecs - torchs.vecs).max() < 1e-4  # onnxruntime's own float noise: the swapped module ran
    cos = np.sum(late_vectors(docs, chunks, onnx) * late_vectors(docs, chunks, embedder), axis=1)
    assert len(chunks) > 2 and cos.min() >= 0.99


@pytest.mark.model
@pytest.mark.parametrize(("backend", "suffix"), [("onnx-int8", "onnx-int8-r2"), ("openvino-bf16", "openvino-bf16")])
def test_cli_sweeps_with_a_backend(tiny: Dataset, cache: Path, tmp_path: Path, backend: str, suffix: str) -> None:
    out = tmp_path / "out"
    args = ["sweep", "--data", str(write_dataset(tiny, tmp_path / "data")), "--out", str(out), "--cache",
            str(cache), "-v", "fixed:size=24", "--ks", "1", "--backend", backend, "--device", "auto",
            "--no-report", "--quiet"]
    if backend == "openvino-bf16" and not bf16_units():
        with pytest.raises(SystemExit, match="needs a CPU with bfloat16 units"):
            main(args)
        return
    main(args)
    fingerprint = json.loads((out / "config.json").read_text())["model_fingerprint"]
    assert fingerprint == f"{model_fingerprint(default_model_path())}-{suffix}"
    assert (cache / "embeddings" / f"{fingerprint}.sqlite").exists()


def test_auto_keeps_a_torch_cache_and_takes_onnx_for_a_new_one(tmp_path: Path, embedder: Embedder) -> None:
    new = Embedder(cache_dir=tmp_path / "new", progress=False)
    assert (new.backend, new.fingerprint) == ("onnx", f"{new.model_fingerprint}-onnx")
    assert Embedder(cache_dir=None, progress=False).backend == "onnx"
    old = tmp_path / "old"
    Embedder(cache_dir=old, backend="torch", progress=False).encode(["Refunds take five days."])
    kept = Embedder(cache_dir=old, progress=False)
    assert (kept.backend, kept.fingerprint) == ("torch", embedder.fingerprint)
    assert kept.encode(["Refunds take five days."]).shape == (1, 384) and kept.stats.cached == 1  # read, not redone
    assert Embedder(cache_dir=old, backend="onnx", progress=False).backend == "onnx"  # an explicit choice stands
    assert resolve_backend("auto", tmp_path / "new", new.model_fingerprint, "cuda") == "torch"
    Embedder(cache_dir=tmp_path / "tried", backend="torch", progress=False)  # made its file, embedded nothing
    assert Embedder(cache_dir=tmp_path / "tried", progress=False).backend == "onnx"


@pytest.mark.model
def test_cli_reports_the_resolved_backend(tiny: Dataset, tmp_path: Path) -> None:
    out = tmp_path / "out"
    main(["sweep", "--data", str(write_dataset(tiny, tmp_path / "data")), "--out", str(out), "--cache",
          str(tmp_path / "cache"), "-v", "fixed:size=24", "--ks", "1", "--no-report", "--quiet"])
    config = json.loads((out / "config.json").read_text())
    plain = model_fingerprint(default_model_path())
    assert (config["backend"], config["model_fingerprint"]) == ("onnx", f"{plain}-onnx")


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"backend": "tensorrt"}, "backend must be one of"),
    ({"device": "gpu"}, "device must be one of"),
])
def test_bad_values_name_their_parameter(kwargs: dict, message: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=message):
        Embedder(**{"cache_dir": tmp_path, **kwargs})


@pytest.mark.model
def test_cuda_is_refused_without_a_gpu(tmp_path: Path) -> None:
    import torch

    if torch.cuda.is_available():
        assert Embedder(cache_dir=tmp_path, device="auto").device == "cuda"
    else:
        with pytest.raises(ValueError, match="device='cuda' but torch sees no CUDA GPU"):
            Embedder(cache_dir=tmp_path, device="cuda")
        assert Embedder(cache_dir=tmp_path, device="auto").device == "cpu"


def test_the_bundled_model_keeps_plain_result_keys_on_torch_and_onnx_not_int8(tmp_path: Path) -> None:
    """torch and onnx give the same vectors to float noise, so a default run's rows keep the variant
    keys whichever "auto" chose; int8 moves the scores, so its rows are hashed like another model's."""
    keys = {b: result_key("abc", Embedder(cache_dir=tmp_path, backend=b, progress=False))
            for b in ("torch", "onnx", "onnx-int8", "openvino-bf16")}
    assert keys["torch"] == keys["onnx"] == "abc"
    for moved in ("onnx-int8", "openvino-bf16"):
        assert keys[moved].startswith("abc@") and len(keys[moved]) == len("abc@") + 8
    assert keys["onnx-int8"] != keys["openvino-bf16"]
