"""Using the workbench leaves the process environment alone and never touches the network: the
model loads from local files only, tiktoken and NLTK read llama-index-core's bundled data."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tiktoken
from tiktoken_ext import openai_public

from workbench.core.offline import bundled_tiktoken
from workbench.core.tokens import TIKTOKEN_ENCODINGS, TiktokenTokenizer, tiktoken_encoding
from workbench.models.embed import Embedder

# what `import workbench` used to set, and what a user's own code may rely on being theirs
OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "TOKENIZERS_PARALLELISM", "TIKTOKEN_CACHE_DIR",
                     "NLTK_DATA")
TEXT = "Dr. Smith paid 3.14 dollars. He left early! 中文句子。Bye."

USER = textwrap.dedent(
    """
    import json, os, socket, sys

    def no_network(sock, address):
        raise OSError(f"network access attempted: {address}")

    connect = socket.socket.connect
    socket.socket.connect = lambda s, a: connect(s, a) if s.family == socket.AF_UNIX else no_network(s, a)
    # the libraries first: importing sentence-transformers sets KMP_DUPLICATE_LIB_OK, KMP_INIT_AT_FORK
    # (through scikit-learn) and TORCHINDUCTOR_CACHE_DIR itself, for any user who imports it
    import langchain_text_splitters, llama_index.core, nltk, sentence_transformers, tiktoken  # noqa: F401
    before = dict(os.environ)

    import workbench as wb
    from workbench.chunkers import ChunkEnv, run_strategy
    from workbench.chunkers.sentence import sentence_spans
    from workbench.dataset import Document
    from workbench.core.tokens import TiktokenTokenizer

    text = sys.argv[1]
    vector = wb.Embedder(cache_dir=None, progress=False).encode([text])[0]
    doc = Document("d", "D", text)
    out = {
        "vector": vector.tolist(),
        "tokens": {name: TiktokenTokenizer(name).count(text) for name in ("cl100k_base", "o200k_base")},
        "sentences": [text[a:b] for a, b in sentence_spans(text)],
        "langchain": [c.text for c in run_strategy("langchain_recursive", {"chunk_size": 8}, doc, ChunkEnv())],
        "llamaindex": [c.text for c in run_strategy("llamaindex_sentence", {"chunk_size": 8}, doc, ChunkEnv())],
        "changed": sorted(k for k in before.keys() | os.environ.keys() if before.get(k) != os.environ.get(k)),
    }
    print(json.dumps(out))
    """
)


def test_using_the_workbench_leaves_the_environment_alone(embedder: Embedder) -> None:
    """In a fresh process with none of the offline variables set and the network refused: import,
    embed, count tokens in both encodings, split sentences, run both production splitters."""
    env = {k: v for k, v in os.environ.items() if k not in OFFLINE_VARIABLES}
    run = subprocess.run([sys.executable, "-c", USER, TEXT], env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.splitlines()[-1])  # after anything the libraries print
    assert out["changed"] == []
    # the default backend (onnx for a new cache) against the torch fixture: equal to float noise
    np.testing.assert_allclose(np.array(out["vector"], dtype=np.float32), embedder.encode([TEXT])[0], atol=1e-5)
    assert out["tokens"] == {name: TiktokenTokenizer(name).count(TEXT) for name in TIKTOKEN_ENCODINGS}
    # punkt's trained English model (abbreviations, decimals), not the untrained fallback
    assert out["sentences"] == ["Dr. Smith paid 3.14 dollars.", "He left early!", "中文句子。", "Bye."]
    assert len(out["langchain"]) > 1 and len(out["llamaindex"]) > 1


@pytest.mark.parametrize("name", TIKTOKEN_ENCODINGS)
def test_bundled_encodings_are_tiktokens_own(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """tiktoken's own encoding, built the way its docs offer offline (a cache folder in
    TIKTOKEN_CACHE_DIR, here the bundled one), equals ours read straight from the file."""
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(bundled_tiktoken()))
    theirs = tiktoken.Encoding(**openai_public.ENCODING_CONSTRUCTORS[name]())
    ours = tiktoken_encoding(name)
    assert ours is tiktoken_encoding(name)  # read once per process
    assert (ours.name, ours._pat_str, ours._special_tokens, ours.n_vocab) == (
        theirs.name, theirs._pat_str, theirs._special_tokens, theirs.n_vocab)
    assert ours._mergeable_ranks == theirs._mergeable_ranks
    assert ours.encode(TEXT) == theirs.encode(TEXT)


# prints pyarrow's default pool after `import workbench`
POOL = "import workbench, pyarrow; print(pyarrow.default_memory_pool().backend_name)"


@pytest.mark.parametrize("named", [None, "mimalloc"])
def test_the_workbench_allocates_arrow_strings_from_the_system_pool_unless_told(named: str | None) -> None:
    """`import workbench` moves pyarrow's default pool to the system allocator (pandas' str columns
    were 10x slower to build from mimalloc in a preview grid); a pool named in
    ARROW_DEFAULT_MEMORY_POOL stays the user's."""
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    if named:
        env["ARROW_DEFAULT_MEMORY_POOL"] = named
    run = subprocess.run([sys.executable, "-c", POOL], env=env, capture_output=True, text=True, check=True)
    assert run.stdout.split()[-1] == (named or "system")
