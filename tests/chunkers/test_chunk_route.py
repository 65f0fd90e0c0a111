"""route: each document to the member strategy of its kind, as one keyed variant; and strategies that
chunk a kind of document they do not understand say so (markdown on source code, code on prose)."""

from __future__ import annotations

import pandas as pd
import pytest
from chunkcheck import assert_chunk_contract
from conftest import REPO

import workbench as wb
from workbench.chunkers import ChunkEnv, run_strategy
from workbench.dataset import Dataset, Document
from workbench.results.verdict import fallback_warning
from workbench.variant import Variant

PY = "# Settings\n# --------\nTIMEOUT = 30\n\n\n# Helpers\ndef retry(n):\n    return n * 2\n"
RST = "Usage\n=====\n\nCall ``retry`` with a count.\n\nLimits\n------\n\nThe timeout is thirty seconds.\n"
MD = "# Guide\n\nIntro text.\n\n## Setup\n\nInstall it.\n"
DOCS = (Document("src/app.py", "app", PY, kind="code", language="python"),
        Document("docs/usage.rst", "usage", RST, kind="rst"),
        Document("README.md", "readme", MD, kind="markdown"))
ENV = ChunkEnv()


def test_each_document_goes_to_the_member_of_its_kind_and_rules_come_first() -> None:
    routed = Variant.make("route", code="code(size=32, header=False)", text="markdown:size=32",
                          rules=[["ext:.rst", "sentence(size=8)"]])
    for doc in DOCS:
        chunks = run_strategy("route", routed.kwargs, doc, ENV)
        member = {"src/app.py": ("code", {"size": 32, "header": False}), "docs/usage.rst": ("sentence", {"size": 8}),
                  "README.md": ("markdown", {"size": 32})}[doc.doc_id]
        assert chunks == run_strategy(*member, doc, ENV), doc.doc_id
        assert_chunk_contract(doc, chunks, 32, 0, "tokens", "cl100k_base", ENV)
    folder = Variant.make("route", rules=[["folder:docs", "fixed(size=4)"]])
    assert run_strategy("route", folder.kwargs, DOCS[1], ENV) == run_strategy("fixed", {"size": 4}, DOCS[1], ENV)
    assert run_strategy("route", folder.kwargs, DOCS[2], ENV) == run_strategy("recursive", {}, DOCS[2], ENV)


def test_a_route_is_keyed_by_what_its_members_are_not_how_they_are_written() -> None:
    a = wb.parse_variant("route:code=code(size=128),text=markdown(size=512)+hybrid")
    b = Variant.make("route", code="code:size=128", text="markdown(size=512, overlap=0)", retriever="hybrid")
    assert a == b and a.key == b.key and wb.parse_variant(a.text) == a
    assert a.label == "route(code=code(size=128), text=markdown(size=512, overlap=0))+hybrid"
    assert a.key != wb.parse_variant("route:code=code(size=128),text=markdown(size=256)+hybrid").key
    assert a.chunking_key != Variant.make("route", code="code(size=128)", text="markdown(size=512)",
                                          rules=[["kind:pdf", "page"]]).chunking_key


def test_a_member_re_versioned_names_new_chunks() -> None:
    """The route's own version stays, but its key holds its members' versions (Strategy.identity)."""
    wb.register_function("mine", lambda text: [text], version=1)
    before = Variant.make("route", text="mine").key
    wb.register_function("mine", lambda text: text.split("\n\n"), version=2)
    assert Variant.make("route", text="mine").key != before


@pytest.mark.parametrize(("spec", "message"), [
    ("route:code=propositions", "parameter 'code': member 'propositions': an LLM strategy cannot be a member"),
    ("route:text=route", "member 'route': a route cannot be a member"),
    ("route:text=nope(size=1)", "unknown strategy 'nope'"),
    ("route:text=fixed(size=0)", "parameter 'text': fixed: parameter 'size' must be in [1, inf], got 0"),
    ('route:text="fixed(size=8)+header"', "no +modifier or retriever (those are the route's)"),
    ('route:rules=[["owner:me", "fixed"]]', "selector 'owner:me': expected one of"),
    ('route:rules=[["ext:.md"]]', "a rule is [selector, member]"),
])
def test_a_bad_member_or_rule_is_refused_naming_the_parameter(spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("(", r"\(").replace(")", r"\)")
                       .replace("+", r"\+")):
        wb.parse_variant(spec)


def test_markdown_reads_no_heading_in_source_code_and_says_so() -> None:
    """The trial's finding: `# comment` lines at column 0 became six chunks' heading paths."""
    chunks = run_strategy("markdown", {"size": 16}, DOCS[0], ENV)
    assert all(c.heading == "" for c in chunks) and len(chunks) > 1
    assert_chunk_contract(DOCS[0], chunks, 16, 0, "tokens", "cl100k_base", ENV)
    assert {c.heading for c in run_strategy("markdown", {"size": 16}, DOCS[2], ENV)} == {"Guide", "Guide > Setup"}
    dataset = Dataset("mixed", DOCS, ())
    assert Variant.make("markdown").fallbacks(dataset) == {
        "src/app.py": "source code (python): no headings read, split along lines"}
    assert set(Variant.make("code").fallbacks(dataset)) == {"docs/usage.rst", "README.md"}
    assert Variant.make("fixed").fallbacks(dataset) == {}
    routed = Variant.make("route", code="code", text="markdown")
    assert routed.fallbacks(dataset) == {}  # each kind to the strategy that reads it
    assert set(Variant.make("route", code="markdown", text="markdown").fallbacks(dataset)) == {"src/app.py"}


def test_the_fallback_warning_names_the_variants_their_documents_and_what_to_do() -> None:
    variants = pd.DataFrame({"key": ["a", "b"], "variant": ["markdown(size=512)", "fixed(size=256)"],
                             "fallback_documents": [24, 0],
                             "fallback_examples": ["src/a.py, src/b.py, src/c.py (source code (python): no headings "
                                                   "read, split along lines)", ""]})
    warning = fallback_warning(variants, 99)
    assert warning == ("Warning: 1 of 2 variants chunk some documents other than their strategy is meant to "
                       "(markdown(size=512): 24 of 99, e.g. src/a.py, src/b.py, src/c.py (source code (python): no "
                       "headings read, split along lines)); give each kind of document its own strategy with route "
                       "(route:code=code(size=256),text=markdown(size=256)).")
    assert fallback_warning(variants.assign(fallback_documents=0), 99) is None
    assert fallback_warning(variants.drop(columns=["fallback_documents"]), 99) is None  # an older result


def test_a_route_on_a_real_folder_keeps_every_chunk_an_exact_span() -> None:
    ds = wb.load_dataset(REPO / "tests" / "data" / "itsdangerous")
    v = Variant.make("route", code="code(size=200, tokenizer=model)", text="markdown(size=200, tokenizer=model)")
    from workbench.models.embed import Embedder

    env = ChunkEnv(model_tokenizer=Embedder(progress=False, backend="onnx").tokenizer)
    chunks = v.chunk(ds, env)
    assert all(c.text == ds.docs[c.doc_id].text[c.start:c.end] for c in chunks)
    kinds = {ds.docs[c.doc_id].kind for c in chunks}
    assert {"code", "rst"} <= kinds and v.fallbacks(ds) == {}
