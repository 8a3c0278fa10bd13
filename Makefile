# dast — developer entry points. `make test` and `make run` work from a fresh clone.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: venv test test-slow lint typecheck pytest run stack proto bench bench-peers clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# Reinstall whenever pyproject.toml changes (the stamp is older than it).
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test]"
	touch $(STAMP)

venv: $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check .

typecheck: $(STAMP)
	$(BIN)/mypy

pytest: $(STAMP)
	$(BIN)/pytest $(PYTEST_ARGS)

test: lint typecheck pytest

# The long property runs left out of `make test` (marked slow, e.g. 30,000 rounds of the
# Hokm search core against the engine).
test-slow: $(STAMP)
	DAST_SLOW_TESTS=1 $(BIN)/pytest -m slow $(PYTEST_ARGS)

run: $(STAMP)
	$(BIN)/dast serve

# Lobby, 2 game replicas and 2 bot replicas as separate processes over the machine's
# PostgreSQL and NATS (deploy/local-stack.sh says how to play against it).
stack: $(STAMP)
	bash deploy/local-stack.sh

# Regenerate the Python code of protos/dast/v1 (committed; a test fails when stale).
proto: $(STAMP)
	$(BIN)/python scripts/gen_protos.py

# The figures of docs/benchmarks.md (each script prints one JSON object).
bench: $(STAMP)
	$(BIN)/python bench/hokm_engine.py --json
	$(BIN)/python bench/hand_engine.py --json
	$(BIN)/python bench/game_service.py --json
	$(BIN)/python bench/bot_tables.py --json
	$(BIN)/python bench/bots.py --json
	$(BIN)/python bench/scale.py --json

# The engines against their peers (RLCard's game layers) in one interleaved run; the
# peers come from the `bench` extra, installed here only.
BENCH_STAMP := $(VENV)/.installed-bench
$(BENCH_STAMP): pyproject.toml $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[test,bench]"
	touch $(BENCH_STAMP)

bench-peers: $(BENCH_STAMP)
	$(BIN)/python bench/engines.py --json

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache .hypothesis
