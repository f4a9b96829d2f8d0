# sopgraph: `make demo` runs the default job, `make test` runs every test. Both set up from scratch.
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
export LANGGRAPH_CLI_NO_ANALYTICS=1
export LANGGRAPH_NO_VERSION_CHECK=true

.PHONY: install system-deps demo test lint format clean studio

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

# Debian packages: Graphviz draws PNGs; PostgreSQL backs the durable-server tests.
system-deps:
	@command -v dot >/dev/null || { $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q graphviz; }
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q postgresql; }

STUDIO_PORT ?= $(shell $(PY) -c 'from sopgraph.pg import free_port; print(free_port())' 2>/dev/null)
# LangGraph Studio's dev server, offline, on loopback.
studio: install
	$(VENV)/bin/langgraph dev --host 127.0.0.1 --port $(STUDIO_PORT) --no-browser --allow-blocking

demo: install
	$(VENV)/bin/sopgraph demo

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: install
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

test: install system-deps lint
	$(VENV)/bin/pytest

clean:
	rm -rf $(VENV) .sopgraph .pytest_cache
