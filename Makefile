# The two commands of the README:
#   make run    the main job on the offline default setup (creates/reuses .venv, installs, runs)
#   make test   the test suite (same set-up step)
VENV ?= .venv
PY := $(VENV)/bin/python
ARGS ?=

.PHONY: setup run test lint bench clean-cache

setup:
	@bash scripts/setup_env.sh

run: setup
	$(PY) -m atomicrag.run $(ARGS)

test: setup
	$(PY) -m pytest -q $(ARGS)

lint: setup
	$(VENV)/bin/ruff check atomicrag tests scripts

bench: setup
	$(PY) scripts/bench.py retrieval

clean-cache:
	rm -rf cache outputs multirun
