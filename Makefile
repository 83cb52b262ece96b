# cube-lab: `make lab` sets everything up and starts JupyterLab; `make test` runs every check.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
JLPM := $(BIN)/jlpm
STAMP := $(VENV)/.cube-lab-installed
TEST_STAMP := $(VENV)/.cube-lab-test-installed
UI_STAMP := ui-tests/node_modules/.cube-lab-installed
# An editable install writes install.json through the `labextension develop` link into
# cube_lab/labextension; the next install or wheel would then add it twice.
STRAY := rm -f cube_lab/labextension/install.json
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD := 1
export MLFLOW_DISABLE_TELEMETRY := true
export PATH := $(abspath $(VENV))/bin:$(PATH)

.PHONY: lab test check install install-test install-lab lint pytest pytest-fast jest ui-test galata hub-ui \
	wheel benchmark clean chromium postgres hub test-setup

# -- setup -------------------------------------------------------------------------

$(PY):
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

# Build tools first, then cube-lab itself without build isolation (no second
# JupyterLab download); the lab extension is built by hatch-jupyter-builder.
$(STAMP): $(PY) pyproject.toml package.json
	$(PY) -m pip install -q wheel "hatchling>=1.5" "hatch-jupyter-builder>=0.5" \
		"hatch-nodejs-version>=0.3.2" editables "jupyterlab>=4.2,<5"
	$(STRAY)
	$(PY) -m pip install -q -e . --no-build-isolation
	$(BIN)/jupyter labextension develop --overwrite . >/dev/null
	$(BIN)/jupyter kernelspec install kernels/cube-lab --sys-prefix --name cube-lab >/dev/null
	@touch $(STAMP)

# Test tools (pytest, torch CPU, scikit-learn, ...): only `make test` needs them.
$(TEST_STAMP): $(STAMP)
	$(STRAY)
	$(PY) -m pip install -q -e ".[test]" --no-build-isolation
	@touch $(TEST_STAMP)

# `make lab` also installs PyTorch (CPU build, the Training form's default framework) and
# JupyterLab's Chinese language pack (.[zh]).
LAB_STAMP := $(VENV)/.cube-lab-lab-installed
$(LAB_STAMP): $(STAMP)
	$(STRAY)
	$(PY) -m pip install -q -e ".[torch,zh]" --no-build-isolation
	@touch $(LAB_STAMP)

install: $(STAMP)

install-lab: $(LAB_STAMP)

install-test: $(TEST_STAMP)

# -- the main job: JupyterLab with cube-lab on the embedded default -----------------

# The lab is rooted in a folder of its own (git-ignored), not in this checkout; the
# starter notebook is copied there once and never overwritten.
LAB_ROOT ?= workspace
lab: $(LAB_STAMP)
	@mkdir -p $(LAB_ROOT)
	@for nb in starter/*.ipynb; do [ -e "$(LAB_ROOT)/$${nb#starter/}" ] || cp "$$nb" $(LAB_ROOT)/; done
	@[ -e "$(LAB_ROOT)/examples" ] || cp -r examples "$(LAB_ROOT)/examples"
	@# in the lab root: a terminal opens there, and the tour's relative paths are the workspace's
	cd $(LAB_ROOT) && $(abspath $(BIN))/jupyter lab --ip 127.0.0.1 --no-browser $(ROOT_FLAG) \
	  --ServerApp.root_dir=.

# -- checks ------------------------------------------------------------------------------
# `make test` runs every check; `make check` is the inner loop (lint, the fast tier, jest).
# scripts/checks.py runs the stages below, the independent ones side by side, and prints how
# long each took. The tiers (hub, cluster, ml, slow, browser; `fast` is none of them) are put
# on each test by tests/tiers.py from what it uses: `make pytest PYTEST_ARGS="-m cluster"`.

# pytest-xdist workers: the tests wait on servers and subprocesses as much as they compute, so
# one more worker than cores keeps both cores busy (measured: benchmarks/RESULTS.md, "make test").
PYTEST_WORKERS ?= 3
PYTEST_ARGS ?=
PYTEST := $(BIN)/pytest -q -n $(PYTEST_WORKERS) --dist loadgroup

test: $(PY)
	$(PY) scripts/checks.py test

check: $(PY)
	$(PY) scripts/checks.py check

# everything the stages need, installed once before they start side by side
test-setup: install-test postgres chromium $(UI_STAMP) hub/node_modules/.bin/configurable-http-proxy

lint: install-test
	$(BIN)/ruff check cube_lab tests benchmarks scripts
	$(BIN)/ruff format --check cube_lab tests benchmarks scripts
	$(BIN)/lint-imports --no-cache
	$(PY) scripts/import_graph.py --check
	$(JLPM) lint:check

pytest: install-test postgres hub/node_modules/.bin/configurable-http-proxy
	$(PYTEST) $(PYTEST_ARGS)

# the fast tier only (no hub, cluster, ml, slow or browser test): the inner loop
pytest-fast: install-test
	$(PYTEST) -m fast $(PYTEST_ARGS)

jest: install-test
	$(JLPM) test --maxWorkers=2

# System packages the tests drive for real: Chromium (UI tests), PostgreSQL (store tests).
APT_INSTALL = SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	$$SUDO apt-get update -q && $$SUDO apt-get install -y -q

chromium:
	@command -v chromium >/dev/null || { $(APT_INSTALL) chromium; }

postgres:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { $(APT_INSTALL) postgresql; }

$(UI_STAMP): ui-tests/package.json $(TEST_STAMP)
	cd ui-tests && ../$(JLPM) install
	@touch $(UI_STAMP)

ui-test: galata hub-ui

# Galata: JupyterLab with cube-lab in Chromium (ui-tests/tests/*.spec.ts but the hub's), in
# GALATA_SHARDS shards side by side, each against a JupyterLab of its own on a port free now
# (a fixed 8888 can be held by a server some other program left behind). The logs of shards
# that passed come first, then those that failed, so the end of the output says what failed.
GALATA_SHARDS ?= 2
# the lab extension as the sources are now: the set-up's editable install built it (about 40 s
# of CPU); built again only when a source is newer than that build, or there is none
LABEXT := cube_lab/labextension/package.json
galata: install-test chromium $(UI_STAMP)
	@if [ ! -e $(LABEXT) ] || [ -n "$$(find src style schema package.json tsconfig.json \
	  -newer $(LABEXT) -print -quit)" ]; then $(JLPM) build; else echo "lab extension: up to date"; fi
	@cd ui-tests && rm -f test-results-shard-*.log && \
	ports="$$(../$(PY) -c 'from cube_lab.hub.devhub import free_ports; print(*free_ports($(GALATA_SHARDS)))')"; \
	pids=""; i=0; for port in $$ports; do i=$$((i + 1)); \
	  CUBE_LAB_UI_PORT=$$port ../$(JLPM) playwright test --shard=$$i/$(GALATA_SHARDS) \
	    > test-results-shard-$$i.log 2>&1 & pids="$$pids $$!"; done; \
	failed=""; i=0; for pid in $$pids; do i=$$((i + 1)); \
	  if wait $$pid; then echo "----- galata shard $$i/$(GALATA_SHARDS): passed -----"; \
	    cat test-results-shard-$$i.log; else failed="$$failed $$i"; fi; done; \
	for i in $$failed; do echo "----- galata shard $$i/$(GALATA_SHARDS): FAILED -----"; \
	  cat test-results-shard-$$i.log; done; \
	[ -z "$$failed" ]

# the hub's pages in Chromium against a throwaway hub (ui-tests/tests/hub-*.spec.ts)
hub-ui: install-test chromium $(UI_STAMP) hub/node_modules/.bin/configurable-http-proxy
	cd ui-tests && ../$(JLPM) playwright test -c playwright.hub.config.js

# The wheel must carry the built lab extension, so `pip install` needs no Node.
wheel: install-test
	rm -rf dist && $(STRAY)
	$(PY) -m build --wheel --no-isolation >/dev/null
	$(PY) -m zipfile -l dist/cube_lab-*.whl | grep -q "labextensions/cube-lab/static/style.js"
	$(PY) -m zipfile -l dist/cube_lab-*.whl | grep -q "jupyter_server_config.d/cube_lab.json"
	$(PY) -m zipfile -l dist/cube_lab-*.whl | grep -q "kernels/cube-lab/kernel.json"
	$(PY) -m zipfile -l dist/cube_lab-*.whl | grep -q "share/cube-lab/templates/train-sklearn"
	@echo "wheel OK: $$(ls dist/*.whl)"

# -- the multi-user hub (README "Multi-user hub"): JupyterHub + configurable-http-proxy ----
HUB_STAMP := $(VENV)/.cube-lab-hub-installed
HUB_PROXY := hub/node_modules/.bin/configurable-http-proxy

$(HUB_STAMP): $(STAMP)
	$(STRAY)
	$(PY) -m pip install -q -e ".[hub,zh]" --no-build-isolation
	@touch $(HUB_STAMP)

$(HUB_PROXY): hub/package.json hub/package-lock.json
	cd hub && npm ci --no-audit --no-fund
	@touch $(HUB_PROXY)

# Settings: hub/cube_hub.yaml ($$CUBE_HUB_SETTINGS for another file). The first start prints
# the admin's one-time password.
hub: $(HUB_STAMP) $(HUB_PROXY)
	$(BIN)/jupyterhub -f hub/jupyterhub_config.py

benchmark: install-test
	$(PY) benchmarks/registry_list.py

clean:
	rm -rf $(VENV) node_modules ui-tests/node_modules lib cube_lab/labextension dist
