# j-cli developer entry points. Each target creates .venv on demand.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
# Tests mostly wait on kernels, servers and hosts, so more workers than cores pay;
# each worker has its own shared Jupyter Server (tests/conftest.py).
PYTEST_WORKERS ?= 4
PYTEST_PARALLEL := -n $(PYTEST_WORKERS) --dist worksteal
# The fast tier mostly computes: each worker collects the whole suite again (about 7 CPU-s),
# so two workers finish it sooner than four here (125 s against 147 s, 210 CPU-s against 259).
QUICK_WORKERS ?= 2
# pytest keeps its rewritten test modules as bytecode in each test folder's __pycache__; with
# bytecode writing off (as some environments set it) every worker would redo that
# at each run.
PYTEST := env -u PYTHONDONTWRITEBYTECODE $(BIN)/pytest
SOURCES := $(shell find jcli_sidecar client -name node_modules -prune -o \( -name '*.py' -o -name '*.c' -o -name '*.js' -o -name '*.ts' -o -name '*.mjs' \) -print 2>/dev/null)

.PHONY: demo test quick lint node-test bench fixtures docs install clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# uv installs the dependencies and the pinned venvs: it resolves the same versions as pip
# in a few seconds where pip takes most of a minute per venv, each time. It also brings the
# venv's own pip and setuptools up to date (pip builds the package itself, below).
$(BIN)/uv: | $(BIN)/python
	$(BIN)/pip install -q uv
	$(BIN)/uv pip install -q --python $(BIN)/python --upgrade pip setuptools

# Dependencies change rarely: install them once per pyproject.toml change.
$(VENV)/.deps: pyproject.toml | $(BIN)/uv
	$(BIN)/uv pip install -q --python $(BIN)/python '.[test,svg,charts]'
	touch $@

# The package itself is reinstalled (not editable) whenever a source changes,
# so tests and benchmarks run exactly what a user installs. The build dir goes
# first: setuptools never prunes it, so a moved or deleted module would linger.
$(VENV)/.installed: $(VENV)/.deps $(SOURCES)
	rm -rf build
	$(BIN)/pip install -q --no-deps --no-build-isolation --force-reinstall .
	touch $@

install: $(VENV)/.installed

demo: $(VENV)/.installed
	$(BIN)/python examples/demo.py

# What the suite needs besides the venv, each checked against its own lock or pin file so
# that a second run costs nothing: the real agent hosts with JupyterHub's proxy
# (tests/hostbins.py), the gateway and JupyterHub venvs (tests/gateways.py), the plugins'
# npm packages. They need only the bare venv, so they are built side by side with the
# dependencies and lint (two cores: uv, npm and lint each mostly use one), and a first install
# is never counted against a test's timeout.
PINNED_VENVS := eg kg hub
TEST_PREP := $(VENV)/.installed lint hosts $(addprefix pinned-venv-,$(PINNED_VENVS)) plugin-packages
.PHONY: test-prep hosts plugin-packages $(addprefix pinned-venv-,$(PINNED_VENVS))

test-prep: $(TEST_PREP)

hosts: | $(BIN)/python
	$(BIN)/python tests/hostbins.py

$(addprefix pinned-venv-,$(PINNED_VENVS)): pinned-venv-%: | $(BIN)/uv
	$(BIN)/python tests/gateways.py $*

plugin-packages: client/plugins/opencode/node_modules/.installed client/plugins/dsh/node_modules/.installed

# The slowest tests are listed at the end, to keep the suite's wall time in view. The JS suites
# run after pytest, not beside it: on two cores the two side by side cost more CPU than in turn.
test:
	$(MAKE) --no-print-directory --output-sync=target -j 4 test-prep
	$(PYTEST) $(PYTEST_PARALLEL) --durations=15
	$(MAKE) --no-print-directory node-test

# The fast tier, for between two edits: every test that needs no Jupyter Server,
# kernel, gateway or agent host (tests/conftest.py marks those from the fixtures
# they use) and is not marked slow.
quick: $(VENV)/.installed
	$(BIN)/ruff check .
	$(PYTEST) -n $(QUICK_WORKERS) --dist worksteal --quick

# Lint and format check (ruff) over all Python, the type checker over the core, and the
# import contracts (import-linter, pyproject.toml) over the sources of both packages.
lint: $(VENV)/.deps
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	PYTHONPATH=$(CURDIR):$(CURDIR)/client $(BIN)/lint-imports --no-cache

# The JS plugins' tests (node:test) run against the real j-cli and the real
# host packages, installed here from the pinned package-lock.json files. The
# DSH plugin is type-checked with tsc against the transcribed host types first,
# then loaded by the real DSH runtime (tests/hosts/dsh, installed like every
# host by tests/hostbins.py). The other real hosts (OpenCode, Codex, Claude
# Code, the MCP Inspector) and DSH's model turns run inside pytest.
NODE_ENV_FOR_TESTS := JCLI_BIN=$(CURDIR)/$(BIN)/j-cli JCLI_PYTHON=$(CURDIR)/$(BIN)/python
# The plugins' npm dependencies are installed once per lock file change, like the venv's.
client/plugins/%/node_modules/.installed: client/plugins/%/package-lock.json
	cd client/plugins/$* && npm ci --no-audit --no-fund --silent
	touch $@

# The three suites are independent (each makes its own temporary dirs): they run
# side by side, each one's output printed whole when it ends.
NODE_SUITES := node-test-opencode node-test-dsh node-test-dsh-host
.PHONY: $(NODE_SUITES)
node-test: $(VENV)/.installed plugin-packages hosts
	$(MAKE) --no-print-directory --output-sync=target -j 3 $(NODE_SUITES)

node-test-opencode:
	$(NODE_ENV_FOR_TESTS) node --test client/plugins/opencode/jcli.test.mjs

node-test-dsh:
	cd client/plugins/dsh && npx tsc -p tsconfig.json
	cd client/plugins/dsh && $(NODE_ENV_FOR_TESTS) node --import tsx --test jcli.test.mjs

node-test-dsh-host:
	cd tests/hosts/dsh && $(NODE_ENV_FOR_TESTS) node --import tsx --test dsh-real-host.test.mjs

bench: $(VENV)/.installed
	$(BIN)/python bench/read_latency.py
	$(BIN)/python bench/chart_read.py
	$(BIN)/python bench/index_walk.py
	$(BIN)/python bench/exec_latency.py
	$(BIN)/python bench/notebook_rerun.py
	$(BIN)/python bench/stale_rerun.py
	$(BIN)/python bench/live_room.py
	$(BIN)/python bench/clean_latency.py
	$(BIN)/python bench/mcp_latency.py
	$(BIN)/python bench/mcp_latency.py --realistic 25 --calls 20
	$(BIN)/python bench/mcp_latency.py --realistic 400 --calls 3
	$(BIN)/python bench/hook_latency.py
	$(BIN)/python bench/plugin_latency.py
	$(BIN)/python bench/server_start.py

fixtures: $(VENV)/.installed
	$(BIN)/python tests/fixtures/make_protocol_fixtures.py

# The reference pages in docs/reference/ are written from the code that owns each fact
# (the click app's --help, the error classes, the settings table), and the op tables of
# docs/protocol.md and docs/sidecar.md from the op declarations; so are the generated lines
# in the plugins and docs/hosts.md (from the host table and the guard registry).
# tests/docs/test_reference_docs.py, tests/sidecar/test_op_table.py and tests/hosts/test_setup_hosts.py fail
# when the committed pages are stale. The typed stubs of the core's faces (jcli_sidecar/*/__init__.pyi,
# which mypy reads) are written from each face's table too; tests/packaging/test_imports.py fails when one is stale.
docs: $(VENV)/.installed
	$(BIN)/python -m jcli.reference_docs docs/reference
	$(BIN)/python -m jcli.op_docs docs
	$(BIN)/python -m jcli.setup.generated .
	$(BIN)/python -m jcli.face_stubs jcli_sidecar

clean:
	rm -rf $(VENV) build *.egg-info
