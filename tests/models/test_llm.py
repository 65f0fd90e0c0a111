"""The LLM layer with the real bundled SmolLM2 GGUF, in-process and behind a real OpenAI-compatible
server (`transformers serve`, started here on localhost over the same model), on tiny prompts."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import free_port

import workbench as wb
from workbench.core.errors import describe
from workbench.models.base import from_spec
from workbench.models.cache import JSONCache
from workbench.models.estimate import estimate_generation
from workbench.models.llm import LLM, LLMError, OutputError, Prompt, Stopped, llm_fingerprint, llm_of, parse_output

CAPITAL = Prompt("capital", 1, "What is the capital of {country}? Answer in one word.")
COUNTRIES = [{"country": c} for c in ("France", "Italy", "Japan")]
SECRET = "sk-test-9f3c1e7a-never-stored"


@pytest.fixture(scope="module")
def cache_dir(llm_cache: Callable[[str], Path]) -> Path:
    return llm_cache("llm-cache")


@pytest.fixture(scope="module")
def llm(cache_dir: Path) -> LLM:
    return LLM(cache_dir=cache_dir, progress=False)


def test_generations_are_greedy_cached_and_counted(llm_cache: Callable[[str], Path]) -> None:
    cache_dir = llm_cache("generations")  # its own: the module's cache holds what other tests generated
    llm = LLM(cache_dir=cache_dir, progress=False)
    out = llm.generate(CAPITAL, [*COUNTRIES, COUNTRIES[0]], max_tokens=12)
    assert "Paris" in out[0].text and "Rome" in out[1].text and "Tokyo" in out[2].text  # the model, not noise
    assert out[3] == out[0]  # a repeated item is generated once
    assert (llm.stats.generated, llm.stats.cached) == (3, 1)
    assert llm.stats.generated_tokens == sum(g.generated_tokens for g in out[:3]) > 0
    assert all(g.prompt_tokens > 10 and 0 < g.generated_tokens <= 12 and g.seconds > 0 for g in out)
    assert wb.LLM is LLM
    again = LLM(cache_dir=cache_dir, progress=False)  # a re-run: another process would see the same file
    second = again.generate(CAPITAL, COUNTRIES, max_tokens=12)
    assert again.stats.generated_tokens == 0 and again.stats.generated == 0 and again.stats.cached == 3
    assert [g.text for g in second] == [g.text for g in out[:3]] and all(g.cached for g in second)
    assert [g.generated_tokens for g in second] == [g.generated_tokens for g in out[:3]]  # the cost it had
    assert "_local" not in vars(again)  # a fully cached run never loads the model
    other = again.generate(CAPITAL, COUNTRIES[:1], max_tokens=13)  # another parameter is another generation
    assert again.stats.generated == 1 and other[0].generated_tokens <= 13


def test_the_gguf_is_converted_once_and_a_folder_loads_as_well(llm: LLM, cache_dir: Path) -> None:
    folder = llm.hf_folder
    assert folder.parent == cache_dir / "models" and (folder / "config.json").exists()
    assert (folder / "model.safetensors").exists() and (folder / "tokenizer.json").exists()
    assert LLM(cache_dir=cache_dir, progress=False).hf_folder == folder  # found, not converted again
    direct = LLM(folder, cache_dir=cache_dir, progress=False)  # a Hugging Face folder is a model too
    assert direct.fingerprint != llm.fingerprint and direct.name == folder.name
    assert direct.generate(CAPITAL, COUNTRIES[:1], max_tokens=12)[0].text == \
        llm.generate(CAPITAL, COUNTRIES[:1], max_tokens=12)[0].text
    rebuilt = from_spec(llm.spec())
    assert isinstance(rebuilt, LLM) and rebuilt.fingerprint == llm.fingerprint and llm.spec()["arguments"]["model"] \
        is None


def test_output_that_does_not_parse_is_one_error_and_stays_cached(llm: LLM, cache_dir: Path) -> None:
    yes_no = Prompt("yes-no", 1, "Is {city} in France? Answer yes or no.")
    llm.generate(CAPITAL, COUNTRIES[:2], max_tokens=12)  # the answers, generated unless cached before
    fresh = LLM(cache_dir=cache_dir, progress=False)
    with pytest.raises(OutputError) as e:  # the model writes words, not JSON
        fresh.generate(CAPITAL, COUNTRIES[:2], max_tokens=12, output="json")
    message = describe(e.value)
    assert "\n" not in message and "expected JSON" in message and "prompt 'capital' v1, item 1 of 2" in message
    assert fresh.stats.generated == 0  # served from the cache, and parsed again
    answers = llm.generate(yes_no, [{"city": "Paris"}], max_tokens=8, output=("yes", "no"))
    assert answers[0].value in ("yes", "no") and answers[0].text.strip().lower().startswith(answers[0].value)
    assert parse_output('Sure: ```json\n{"a": [1, 2]}\n```', "json") == {"a": [1, 2]}
    assert parse_output("No, it is not.", ("yes", "no")) == "no"
    for bad in ("Maybe.", "Yesterday"):  # none of the answers, a longer word
        with pytest.raises(OutputError, match="expected one of"):
            parse_output(bad, ("yes", "no"))


def test_stop_is_asked_between_items_and_what_finished_is_kept(cache_dir: Path) -> None:
    slow = LLM(cache_dir=cache_dir, batch_size=1, progress=False)
    prompt = Prompt("capital", 2, CAPITAL.template)  # a new version: nothing of it is cached
    asked = []
    with pytest.raises(Stopped, match="stopped after 1 of 3 generations"):
        slow.generate(prompt, COUNTRIES, max_tokens=6, stop=lambda: asked.append(1) or len(asked) > 1)
    assert slow.stats.generated == 1 and sum(slow.cached(prompt, COUNTRIES, 6)) == 1
    slow.generate(prompt, COUNTRIES, max_tokens=6)
    assert slow.stats.generated == 3  # the two left, not the one kept


def test_the_estimate_counts_what_is_left_and_measures_the_rate(cache_dir: Path) -> None:
    llm = LLM(cache_dir=cache_dir, batch_size=2, progress=False)
    prompt = Prompt("city", 1, "Name one famous street in {city}.")
    items = [{"city": c} for c in ("Paris", "Rome", "Berlin", "Madrid", "Lisbon", "Vienna")]
    llm.generate(prompt, items[:1], max_tokens=10)
    est = estimate_generation(llm, prompt, [*items, items[0]], max_tokens=10)
    # one cached, a repeat, five to make: two sampled (at most half; kept in the cache), three left
    assert (est.items, est.sampled, est.to_generate) == (7, 2, 3)
    assert llm.stats.generated == 3 and est.rate > 0 and 0 < est.tokens <= 3 * 10
    assert "3 of 7 generations to make" in est.line() and "measured on 1 of them" in est.line()
    llm.generate(prompt, items, max_tokens=10)
    assert llm.stats.generated == 6  # what the estimate said was left
    warm = estimate_generation(LLM(cache_dir=cache_dir, progress=False), prompt, items, max_tokens=10)
    assert warm.cached and "nothing to generate" in warm.line()


def test_bad_arguments_name_the_parameter(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="backend must be one of"):
        LLM(backend="llama", cache_dir=tmp_path)
    with pytest.raises(ValueError, match="needs model= .* and base_url="):
        LLM(backend="openai", cache_dir=tmp_path)
    with pytest.raises(ValueError, match="'WB_UNSET_KEY' is not set"):
        LLM("m", backend="openai", base_url="http://localhost:1/v1", api_key_env="WB_UNSET_KEY", cache_dir=tmp_path)
    with pytest.raises(ValueError, match="not a local transformers causal LM"):
        LLM("HuggingFaceTB/SmolLM2-135M-Instruct", cache_dir=tmp_path)
    with pytest.raises(ValueError, match="prompt 'capital' needs input 'country'"):
        CAPITAL.messages({"city": "Paris"})
    with pytest.raises(ValueError, match="output must be one of"):
        LLM(cache_dir=tmp_path).generate(CAPITAL, COUNTRIES, output="yaml")


def test_an_openai_endpoint_generates_caches_and_never_keeps_the_key(
        llm_server: tuple[str, str], llm: LLM, cache_dir: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    base_url, model = llm_server
    monkeypatch.setenv("WB_TEST_LLM_KEY", SECRET)
    caplog.set_level(logging.DEBUG)
    remote = LLM(model, backend="openai", base_url=base_url, api_key_env="WB_TEST_LLM_KEY", cache_dir=cache_dir,
                 progress=False)
    out = remote.generate(CAPITAL, COUNTRIES[:2], max_tokens=12)
    assert "Paris" in out[0].text and "Rome" in out[1].text
    assert remote.stats.generated == 2 and all(g.prompt_tokens > 10 and g.generated_tokens > 0 for g in out)
    assert remote.fingerprint.startswith("openai-") and remote.fingerprint != llm.fingerprint
    again = LLM(model, backend="openai", base_url=base_url, api_key_env="WB_TEST_LLM_KEY", cache_dir=cache_dir)
    assert [g.text for g in again.generate(CAPITAL, COUNTRIES[:2], max_tokens=12)] == [g.text for g in out]
    assert again.stats.generated_tokens == 0
    refused = LLM(model, backend="openai", base_url=f"http://127.0.0.1:{free_port()}/v1",
                  api_key_env="WB_TEST_LLM_KEY", retries=1, cache_dir=cache_dir)
    with pytest.raises(LLMError) as e:
        refused.generate(CAPITAL, COUNTRIES[:1], max_tokens=12)
    refused_message = describe(e.value)
    assert "cannot connect" in refused_message and "(2 tries)" in refused_message and "\n" not in refused_message
    assert "0 finished are cached" in refused_message
    seen = [repr(remote), json.dumps(remote.spec()), refused_message, caplog.text]
    seen += [p.read_bytes().decode("utf-8", "replace") for p in (cache_dir / "generations").iterdir()]
    assert not [s for s in seen if SECRET in s]
    assert remote.spec()["arguments"]["api_key_env"] == "WB_TEST_LLM_KEY"
    rows = JSONCache(remote.cache.path)
    assert len(rows) == 2


def test_a_model_spec_names_an_endpoint_and_its_key_variable_never_its_key(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    spec = "openai:qwen2.5:7b@http://127.0.0.1:9/v1"
    llm = llm_of(spec, tmp_path)
    assert (llm.backend, llm.name, llm.base_url, llm.api_key_env) == ("openai", "qwen2.5:7b", "http://127.0.0.1:9/v1",
                                                                       None)  # no key: a local server needs none
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    assert llm_of(spec, tmp_path).api_key_env == "OPENAI_API_KEY"
    monkeypatch.setenv("WB_OTHER", SECRET)
    other = llm_of(spec + "#WB_OTHER", tmp_path)
    assert other.api_key_env == "WB_OTHER" and llm_fingerprint(spec) == llm_fingerprint(spec + "#WB_OTHER")
    elsewhere = "openai:qwen2.5:7b@http://127.0.0.1:10/v1"
    assert llm_fingerprint(spec) != llm_fingerprint(elsewhere) != llm_fingerprint("llm")
    assert SECRET not in json.dumps(other.spec()) + repr(other) + llm_fingerprint(spec)
    monkeypatch.delenv("WB_OTHER")
    with pytest.raises(ValueError, match=rf"model '{spec}#WB_OTHER': the environment variable 'WB_OTHER' .* not set"):
        llm_of(spec + "#WB_OTHER", tmp_path)
    for bad in ("openai:qwen2.5", "openai:@http://x/v1", "openai:m@"):
        with pytest.raises(ValueError, match=rf"model '{bad}': an endpoint is spelled 'openai:<model>@<base_url>'"):
            llm_of(bad, tmp_path)


def test_an_endpoint_that_times_out_is_one_error(llm_server: tuple[str, str], cache_dir: Path) -> None:
    base_url, model = llm_server
    hasty = LLM(model, backend="openai", base_url=base_url, timeout=0.05, retries=0, cache_dir=cache_dir)
    prompt = Prompt("story", 1, "Write a long story about {country}.")
    with pytest.raises(LLMError) as e:
        hasty.generate(prompt, COUNTRIES[:1], max_tokens=200)
    message = describe(e.value)
    assert "no answer within timeout=0.05 s (1 try)" in message and "\n" not in message
    assert hasty.cached(prompt, COUNTRIES[:1], 200) == [False]  # nothing half-made is kept
