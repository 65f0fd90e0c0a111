"""+context (contextual retrieval) with the real bundled SmolLM2 on the tiny corpus (4 chunks, short
contexts: generation is slow on shared cores), and the spelling of the variant, which needs no model."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

import workbench as wb
from workbench.chunkers import ChunkEnv
from workbench.core.params import IncompatibleParams
from workbench.dataset import Dataset
from workbench.models.context import contextualize
from workbench.models.embed import Embedder
from workbench.models.llm import LLM, Stopped
from workbench.report.tables import variants_text
from workbench.retrieval.bm25 import LexicalIndex
from workbench.retrieval.index import IndexStore, embed_texts
from workbench.variant import Variant, parse_variant

VARIANT = "fixed:size=64,unit=tokens+context:max_tokens=12+hybrid"
SECRET = "sk-test-5d1e-never-stored"


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("context-cache")


@pytest.fixture(scope="module")
def built(tiny: Dataset, embedder: Embedder, cache: Path) -> tuple[IndexStore, wb.SweepResult]:
    store = IndexStore(cache)
    return store, wb.sweep(tiny, [parse_variant(VARIANT)], store=store, embedder=embedder, progress=False)


def test_the_context_is_embedded_and_in_bm25_and_the_span_is_returned(
        built: tuple[IndexStore, wb.SweepResult], tiny: Dataset, embedder: Embedder) -> None:
    store, result = built
    variant = parse_variant(VARIANT)
    index = store.get(variant, tiny, embedder)
    chunks = index.chunks
    assert len(chunks) >= 3 and all(c.context for c in chunks)
    for c in chunks:
        assert c.text == tiny.docs[c.doc_id].text[c.start : c.end]  # the returned text stays the span
        assert c.embed_text == f"{c.context}\n\n{c.text}"
    # BM25 reads the texts with their contexts: its scores are those of an index over them, not over the spans
    query = chunks[0].context
    with_context = LexicalIndex.build(embed_texts(chunks)).scores(query)
    assert index.lexical.scores(query).tolist() == with_context.tolist()
    assert with_context.tolist() != LexicalIndex.build([c.text for c in chunks]).scores(query).tolist()
    hits = wb.rankings(tiny, variant, k=3, embedder=embedder, store=store)
    assert {h.span for hs in hits for h in hs} <= {c.span for c in chunks}
    row = result.variants.iloc[0]
    assert row["index_tokens_generated"] == store.llm(variant).stats.generated_tokens > 0
    assert row["index_llm_seconds"] > 0 and "index_llm_fallbacks" not in result.variants  # a chunker's count only
    # the report shows the model cost beside the context cost
    columns = list(variants_text(result, 3).columns)
    at = columns.index("context tokens@3")
    assert columns[at + 1 : at + 4] == ["index_tokens_generated", "index_llm_seconds", "seconds"]


def test_a_rerun_generates_nothing_and_reports_what_the_contexts_cost(
        built: tuple[IndexStore, wb.SweepResult], tiny: Dataset, embedder: Embedder, cache: Path) -> None:
    store, result = built
    variant = parse_variant(VARIANT)
    first = [c.context for c in store.get(variant, tiny, embedder).chunks]
    shutil.rmtree(store.path(variant, tiny, embedder))  # the index is built again, its contexts read from the cache
    again = IndexStore(cache)
    index = again.get(variant, tiny, embedder)
    llm = again.llm(variant)
    assert [c.context for c in index.chunks] == first
    assert llm.stats.generated_tokens == 0 and llm.stats.cached == len(first)
    assert index.cost["index_tokens_generated"] == result.variants.iloc[0]["index_tokens_generated"]


def test_prefix_reuse_writes_the_same_contexts_as_reading_every_prompt_whole(
        built: tuple[IndexStore, wb.SweepResult], tiny: Dataset, embedder: Embedder) -> None:
    store, _ = built
    variant = parse_variant(VARIANT)
    chunks = store.get(variant, tiny, embedder).chunks
    plain = LLM(cache_dir=None, progress=False)  # nothing cached: every context generated again, whole prompts
    plain.__dict__["_local"] = store.llm(variant)._local  # the model loaded once
    out, _ = contextualize(tiny.docs, chunks, plain, doc_tokens=2048, max_tokens=12, reuse=False)
    assert plain.stats.generated == len(chunks)
    assert [c.context for c in out] == [c.context for c in chunks]


def test_another_llm_names_other_entries_and_a_bad_one_is_refused_before_any_work(
        built: tuple[IndexStore, wb.SweepResult], tiny: Dataset, embedder: Embedder, tmp_path: Path) -> None:
    store, _ = built
    folder = store.llm(parse_variant(VARIANT)).hf_folder  # the GGUF converted: the same model, other files
    other = Variant.make("fixed", size=64, unit="tokens", contextual={"model": str(folder), "max_tokens": 12})
    assert store.path(other, tiny, embedder) != store.path(parse_variant(VARIANT), tiny, embedder)
    bad = Variant.make("fixed", contextual={"model": str(tmp_path / "no-such-model")})
    with pytest.raises(ValueError, match=r"\+context parameter 'model'.*no-such-model"):
        wb.sweep(tiny, [bad], store=IndexStore(tmp_path / "store"), embedder=embedder, progress=False)
    assert not (tmp_path / "store" / "index").exists()
    with pytest.raises(ValueError, match="preview cannot score"):
        wb.sweep(tiny, [parse_variant(VARIANT)], store=IndexStore(tmp_path / "store"), embedder=embedder,
                 progress=False, preview=True)


def test_the_variant_spells_and_keys_its_context() -> None:
    v = parse_variant("fixed:size=64+header+context:doc_tokens=512")
    assert v.contextual and v.contextual_header and dict(v.context)["doc_tokens"] == 512
    assert parse_variant(v.text) == v and Variant.from_spec(v.spec()) == v
    assert v.label == "fixed(size=64, overlap=0)+header+context(doc_tokens=512)"
    assert Variant.make("fixed", size=64, contextual=True).text == "fixed:size=64+context"
    plain = Variant.make("fixed", size=64)
    assert "context" not in plain.spec() and plain.key != Variant.make("fixed", size=64, contextual=True).key
    assert Variant.make("fixed", contextual={"max_tokens": 20}).key != Variant.make("fixed", contextual=True).key
    with pytest.raises(IncompatibleParams, match=r"\+context and \+late"):
        parse_variant("fixed+late+context")
    with pytest.raises(ValueError, match=r"unknown parameter\(s\) \['window'\]"):
        parse_variant("fixed+context:window=3")
    with pytest.raises(ValueError, match="'doc_tokens' must be in"):
        Variant.make("fixed", contextual={"doc_tokens": 8})
    with pytest.raises(ValueError, match="parameter 'model' must name an LLM"):
        Variant.make("fixed", contextual={"model": ""})
    with pytest.raises(ValueError, match=r"unknown parameter\(s\) \['llm'\]"):  # one spelling: model, as elsewhere
        parse_variant("fixed+context:llm=m.gguf")
    with pytest.raises(ValueError, match="take no parameter"):
        parse_variant("fixed+header:x=1")


def test_a_stop_between_generations_keeps_them_and_the_next_sweep_generates_only_the_rest(
        tiny: Dataset, embedder: Embedder, llm_cache: Callable[[str], Path]) -> None:
    store = IndexStore(llm_cache("context-stop"))
    variant = Variant.make("fixed", size=48, contextual={"max_tokens": 2})  # 5 chunks: a batch per document
    total = len(Variant.make("fixed", size=48).chunk(tiny, ChunkEnv()))
    llm = store.llm(variant)
    asked: list[int] = []

    def stop() -> bool:  # false before the first batch, true before the second
        asked.append(len(asked))
        return len(asked) > 1

    with pytest.raises(Stopped, match=r"stopped after \d+ of \d+ generations \(those are cached\)") as e:
        wb.sweep(tiny, [variant], ks=(1,), store=store, embedder=embedder, progress=False, stop=stop)
    done, of = map(int, re.search(r"after (\d+) of (\d+)", str(e.value)).groups())
    assert 0 < done < of == total and len(asked) == 2
    assert llm.stats.generated == done and "while sweeping variant" in e.value.__notes__[0]
    assert not (store.path(variant, tiny, embedder) / "meta.json").exists()  # a stopped build saves no entry
    result = wb.sweep(tiny, [variant], ks=(1,), store=store, embedder=embedder, progress=False, stop=lambda: False)
    assert llm.stats.generated == total and result.keys == [variant.key]  # the rest only, each context once


def test_an_endpoint_writes_the_contexts_and_a_rerun_generates_nothing(
        llm_server: tuple[str, str], tiny: Dataset, embedder: Embedder, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """+context:model=openai:<model>@<base_url> through a real local server, on one document."""
    base_url, model = llm_server
    monkeypatch.setenv("WB_TEST_ENDPOINT_KEY", SECRET)
    one = tiny.select(["space.txt"])
    variant = Variant.make("fixed", size=64, unit="tokens",
                           contextual={"model": f"openai:{model}@{base_url}#WB_TEST_ENDPOINT_KEY", "max_tokens": 12})
    store = IndexStore(tmp_path)
    result = wb.sweep(one, [variant], store=store, embedder=embedder, progress=False)
    llm = store.llm(variant)
    chunks = store.get(variant, one, embedder).chunks
    assert (llm.backend, llm.api_key_env) == ("openai", "WB_TEST_ENDPOINT_KEY") and all(c.context for c in chunks)
    assert llm.stats.generated == len(chunks) >= 2
    assert result.variants.iloc[0]["index_tokens_generated"] == llm.stats.generated_tokens > 0
    shutil.rmtree(store.path(variant, one, embedder))
    again = IndexStore(tmp_path)
    assert [c.context for c in again.get(variant, one, embedder).chunks] == [c.context for c in chunks]
    assert again.llm(variant).stats.generated == 0 and again.llm(variant).stats.cached == len(chunks)
    written = [p.read_bytes().decode("utf-8", "replace") for p in tmp_path.rglob("*") if p.is_file()]
    assert written and not [w for w in written if SECRET in w] and SECRET not in repr(result.provenance.config())
