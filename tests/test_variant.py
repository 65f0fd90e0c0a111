"""Variant specs: canonical keys, labels, parsing, grids, contextual headers."""

from __future__ import annotations

import dataclasses

import pytest

from workbench.chunkers import STRATEGIES, ChunkEnv, get_strategy
from workbench.dataset import Dataset, Document
from workbench.variant import Variant, grid, parse_variant


def test_key_is_canonical_and_hashable() -> None:
    a = Variant.make("fixed", size=256)
    b = Variant.make("fixed", overlap=0, size=256, unit="tokens")  # defaults spelled out
    assert a == b and hash(a) == hash(b) and a.key == b.key
    assert len({a, b, Variant.make("fixed", size=128)}) == 2
    assert Variant.make("fixed", size=256, contextual_header=True).key != a.key
    assert Variant.make("fixed", size=256, late=True).key != a.key
    with pytest.raises(AttributeError):
        a.strategy = "recursive"  # type: ignore[misc]


def test_key_tracks_the_strategy_version(tiny: Dataset, monkeypatch: pytest.MonkeyPatch) -> None:
    """A variant keeps the version it was made with (its key never changes under it); made again
    after a bump it is a new variant, and the old one refuses to chunk with the new code."""
    v = Variant.make("fixed", size=256)
    old = v.key
    bumped = dataclasses.replace(get_strategy("fixed"), version=get_strategy("fixed").version + 1)
    monkeypatch.setitem(STRATEGIES, "fixed", bumped)
    assert v.key == old and Variant.make("fixed", size=256).key != old
    with pytest.raises(ValueError, match="was made for version"):
        v.chunk(tiny, ChunkEnv())


def test_labels_show_main_parameters_in_schema_order() -> None:
    assert Variant.make("fixed", size=256, overlap=32).label == "fixed(size=256, overlap=32)"
    assert Variant.make("fixed", size=64, unit="chars").label == "fixed(size=64, overlap=0, unit=chars)"
    assert parse_variant("semantic:breakpoint_percentile=90").label.startswith("semantic(breakpoint_percentile=90,")
    assert Variant.make("recursive", size=128, contextual_header=True).label.endswith("+header")


def test_parse_variant() -> None:
    v = parse_variant("fixed:size=128,overlap=16,unit=chars+header")
    assert v == Variant.make("fixed", size=128, overlap=16, unit="chars", contextual_header=True)
    assert parse_variant("sentence_window:window=2+late").late
    for bad, message in [
        ("fixed:size", "expected name=value"),
        ("fixed:size=128+bold", "unknown modifier"),
        ("nope:size=1", "unknown strategy 'nope'"),
        ("fixed:size=abc", "parameter 'size' must be int"),
        ("fixed:sise=12", "unknown parameter"),
        ("semantic:breakpoint_percentile=101", "must be in [0, 100]"),
        ("fixed:size=8,overlap=8", "parameter 'overlap' must be in [0, size)"),
        ("fixed:size=8+header+late", "cannot be combined"),
    ]:
        with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("(", r"\(").replace(")", r"\)")):
            parse_variant(bad)


def test_grid_skips_clashing_values_only() -> None:
    g = grid("fixed", size=[32, 64], overlap=[0, 32])
    assert [(v.kwargs["size"], v.kwargs["overlap"]) for v in g] == [(32, 0), (64, 0), (64, 32)]
    with pytest.raises(ValueError, match="parameter 'size'"):
        grid("fixed", size=[0, 64])  # invalid on its own: never skipped silently
    with pytest.raises(ValueError, match="every combination is invalid"):
        grid("fixed", size=[8], overlap=[8, 16])


def test_contextual_header_changes_only_what_is_embedded(tiny: Dataset) -> None:
    plain = Variant.make("markdown", size=40).chunk(tiny, ChunkEnv())
    headed = Variant.make("markdown", size=40, contextual_header=True).chunk(tiny, ChunkEnv())
    assert [c.span for c in plain] == [c.span for c in headed]
    refunds = next(c for c in headed if "Refunds are paid" in c.text)
    assert refunds.text == tiny.docs[refunds.doc_id].text[refunds.start:refunds.end]
    assert refunds.embed_text == f"Billing guide > Billing > Refunds\n\n{refunds.text}"
    space = next(c for c in headed if c.doc_id == "space.txt")
    assert space.embed_text.startswith("Voyager\n\n")  # no heading: the title alone


def test_parse_variant_takes_json_values_with_separators_inside() -> None:
    v = parse_variant('recursive:size=128,custom_separators=["\\n\\n", ", ", "a+b"]+header')
    assert v.kwargs["custom_separators"] == ("\n\n", ", ", "a+b") and v.contextual_header
    assert parse_variant('recursive:custom_separators=["\\"quoted, and escaped\\""],size=64').kwargs["size"] == 64


@pytest.mark.parametrize("variant", [
    Variant.make("fixed", size=256, overlap=32),
    Variant.make("recursive", size=128, custom_separators=["\n\n", ". ", "a,b+c"]),
    Variant.make("fixed", size=64, retriever="hybrid", rrf_k=30),
    Variant.make("fixed", retriever="bm25"),
    Variant.make("semantic", breakpoint_percentile=90, contextual_header=True),
    Variant.make("recursive", size=256, separators="markdown", late=True),
    Variant.make("sentence"),
])
def test_text_is_what_parse_variant_reads_back(variant: Variant) -> None:
    assert parse_variant(variant.text) == variant
    assert "tokenizer=" not in variant.text  # defaults left out: the form a person types


def test_a_contextual_header_names_a_title_equal_to_the_first_heading_once() -> None:
    doc = Document("install.md", "Install", "# Install\n\nPick one.\n\n## Linux\n\nRun the installer.\n")
    other = Document("guide.md", "Guide", "# Install\n\n## Linux\n\nRun the installer.\n")
    ds = Dataset("headers", (doc, other), ())
    chunks = Variant.make("markdown", size=8, contextual_header=True).chunk(ds, ChunkEnv())
    headers = [c.embed_text.removesuffix(c.text) for c in chunks if "installer" in c.text]
    assert headers == ["Install > Linux\n\n", "Guide > Install > Linux\n\n"]
