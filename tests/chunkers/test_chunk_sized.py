"""What every chunker sized in tokens or characters shares: exact offsets on non-ASCII text in
every unit (including the embedding model's own tokenizer) and the same parameter errors."""

from __future__ import annotations

import fakemodel
import pytest
from chunkcheck import ENV, MIXED, UNITS, assert_chunk_contract

from workbench.chunkers import ChunkEnv, run_strategy
from workbench.dataset import Document
from workbench.variant import Variant

SIZED = ["fixed", "recursive", "markdown", "sentence"]
OVERLAPS_IN_UNITS = ["fixed", "recursive", "markdown"]  # sentence overlaps whole sentences


@pytest.mark.parametrize("name", OVERLAPS_IN_UNITS)
@pytest.mark.parametrize(("unit", "tokenizer"), UNITS)
def test_exact_offsets_on_non_ascii(name: str, unit: str, tokenizer: str) -> None:
    doc = Document("d", "t", f"{MIXED}\n\n{MIXED}")
    chunks = run_strategy(name, dict(size=6, overlap=2, unit=unit, tokenizer=tokenizer), doc, ENV)
    assert len(chunks) > 3
    assert_chunk_contract(doc, chunks, 6, 2, unit, tokenizer, ENV)


@pytest.mark.parametrize("name", OVERLAPS_IN_UNITS)
def test_exact_offsets_with_the_model_tokenizer(name: str) -> None:
    env = ChunkEnv(model_tokenizer=fakemodel.model_tokenizer())  # the bundled model's word pieces
    doc = Document("d", "t", MIXED)
    chunks = run_strategy(name, dict(size=6, overlap=3, tokenizer="model"), doc, env)
    assert len(chunks) > 2
    assert_chunk_contract(doc, chunks, 6, 3, "tokens", "model", env)


@pytest.mark.parametrize("name", SIZED)
@pytest.mark.parametrize(
    ("params", "message"),
    [
        (dict(size=0), "parameter 'size' must be in [1, inf], got 0"),
        (dict(overlap=-1), "parameter 'overlap' must be in [0, inf], got -1"),
        (dict(unit="words"), "parameter 'unit' must be one of ['tokens', 'chars'], got 'words'"),
        (dict(tokenizer="gpt2"), "parameter 'tokenizer' must be one of"),
        (dict(size=256.5), "parameter 'size' must be int, got 256.5"),
        (dict(sise=4), "unknown parameter(s) ['sise']"),
    ],
)
def test_invalid_parameters_name_the_parameter_and_range(name: str, params: dict, message: str) -> None:
    with pytest.raises(ValueError) as err:
        Variant.make(name, **params)
    assert message in str(err.value) and str(err.value).startswith(name)


@pytest.mark.parametrize("name", OVERLAPS_IN_UNITS)
@pytest.mark.parametrize("overlap", [4, 9])
def test_overlap_must_stay_below_size(name: str, overlap: int) -> None:
    with pytest.raises(ValueError, match=r"parameter 'overlap' must be in \[0, size\) = \[0, 4\)"):
        Variant.make(name, size=4, overlap=overlap)
