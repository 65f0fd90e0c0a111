"""A cache written before the package was re-laid into families is reused as it is.

tests/data/cache_eca49dc/ holds what commit eca49dc wrote for 7 variants of the SQuAD excerpt
(vectors, index entries, the BM25 index, scores) and its result tables (see tests/data/README.md).
Today's code must name the same entries (same variant keys, corpus and model fingerprints), so
nothing is chunked, embedded or built again, and must score them to the same numbers. Variants of a
component re-versioned since (BUMPED) are named anew and their entries built again, from the cached
vectors when their texts are the same.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from workbench.evaluation import stats
from workbench.ingest import load_dataset
from workbench.models.embed import Embedder
from workbench.run.session import sweep
from workbench.variant import Variant, parse_variant

OLD = Path(__file__).parent / "data" / "cache_eca49dc"
DATA = Path(__file__).parent / "data" / "squad_v11_dev"
# re-versioned since eca49dc: parent_child v2 and HEADER_VERSION 2 (headings without "{ #anchor }" attributes,
# a header's title not repeated), neither of which changes a chunk or an embedded text of this corpus
BUMPED = ("parent_child", "recursive:size=96+header")


def test_keys_of_todays_specs_are_unchanged() -> None:
    assert Variant.make("fixed", size=256).key == "6678acd8ce7d3106"
    assert Variant.make("fixed", size=256, retriever="bm25").key == "4ed0573cf1945c34"
    # re-keyed when +context named its LLM `model` (LLM_SPEC), as every other stage does, instead of llm=None
    # (then 968e000e50fd153c): its entries and scores are new, its generations (same prompts) are reused
    assert Variant.make("fixed", size=64, contextual=True).key == "744746e4662fb6af"
    for text, key in json.loads((OLD / "keys.json").read_text()).items():
        assert (parse_variant(text).key == key) == (text not in BUMPED), text


@pytest.mark.model
def test_a_cache_written_before_the_layout_change_is_reused(tmp_path: Path) -> None:
    cache = shutil.copytree(OLD / "cache", tmp_path / "cache")
    shutil.rmtree(cache / "scores")  # scored again from the old indexes by today's retrieval and metrics
    entries = sorted(p.name for p in (cache / "index").iterdir())
    texts = list(json.loads((OLD / "keys.json").read_text()))
    embedder = Embedder(cache_dir=cache, progress=False)
    result = sweep(load_dataset(DATA), [parse_variant(t) for t in texts], ks=(1, 5), embedder=embedder, store=cache,
                   progress=False)
    # every vector from the old cache
    assert result.provenance.computed.texts_embedded == 0 and embedder.stats.embedded == 0
    built = result.variants.set_index("key")["built"]
    bumped = {json.loads((OLD / "keys.json").read_text())[t]: parse_variant(t).key for t in BUMPED}
    assert set(built.index[built]) == set(bumped.values())  # every other entry and the BM25 index loaded
    assert len(list((cache / "index").iterdir())) == len(entries) + len(bumped)
    old = pd.read_csv(OLD / "result" / "summary.csv").replace({"key": bumped})
    cols = ["key", "metric", "k", "budget"]
    both = old.merge(result.summary, on=cols, suffixes=("_old", "_new"), how="outer", indicator=True)
    assert (both["_merge"] == "both").all() and len(both) == len(old)
    assert both["mean_new"].to_numpy() == pytest.approx(both["mean_old"].to_numpy(), abs=1e-12, nan_ok=True)
    # since eca49dc a score whose every value is 0 or 1 gets Wilson's interval (stats.summarize); the others as then
    whole = (both["mean_old"].isin([0.0, 1.0]) & (both["ci_low_old"] == both["ci_high_old"])
             & ~both["metric"].str.startswith("context_tokens"))
    wilsons = [stats.wilson(round(m * n), int(n)) for m, n in zip(both.loc[whole, "mean_old"], both.loc[whole, "n_old"],
                                                                    strict=True)]
    assert whole.any() and [tuple(b) for b in both.loc[whole, ["ci_low_new", "ci_high_new"]].to_numpy()] == wilsons
    for stat in ("ci_low", "ci_high"):
        assert both.loc[~whole, f"{stat}_new"].to_numpy() == pytest.approx(both.loc[~whole, f"{stat}_old"].to_numpy(),
                                                                           abs=1e-12, nan_ok=True)
