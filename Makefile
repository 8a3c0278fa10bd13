# dast — developer entry points. `make test` and `make run` work from a fresh clone.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: venv test test-slow lint typecheck pytest run stack proto proto-check reliability bench bench-peers clean test-verify-js

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

# checkov (the policy scan of the Kubernetes manifests, tests/deploy/test_checkov.py) in a
# virtualenv of its own, from tools/checkov/requirements.txt (reinstalled when that changes):
# its pins would downgrade packages of the project's .venv.
CHECKOV_VENV := tools/checkov/.venv
CHECKOV_STAMP := $(CHECKOV_VENV)/.installed
$(CHECKOV_VENV)/bin/python:
	$(PYTHON) -m venv $(CHECKOV_VENV)

$(CHECKOV_STAMP): tools/checkov/requirements.txt | $(CHECKOV_VENV)/bin/python
	$(CHECKOV_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(CHECKOV_VENV)/bin/python -m pip install --quiet -r tools/checkov/requirements.txt
	touch $(CHECKOV_STAMP)

.PHONY: checkov
checkov: $(CHECKOV_STAMP)

pytest: $(STAMP) $(CHECKOV_STAMP)
	$(BIN)/pytest $(PYTEST_ARGS)

test: lint typecheck proto-check ts-client pytest test-verify-js

# The long property runs left out of `make test` (marked slow, e.g. 30,000 rounds of the
# Hokm search core against the engine).
test-slow: $(STAMP)
	DAST_SLOW_TESTS=1 $(BIN)/pytest -m slow $(PYTEST_ARGS)

run: $(STAMP)
	$(BIN)/dast serve --services all,console

# The operator console's pages photographed by its browser test into docs/images/console-*.png
# (headless Chromium over a stack playing matches; docs/console.md shows them).
.PHONY: console-screenshots
console-screenshots: $(STAMP)
	DAST_CONSOLE_SCREENSHOTS=docs/images $(BIN)/pytest -q -p no:logging \
		tests/services/console/test_console_browser.py

# Lobby, 2 game replicas and 2 bot replicas as separate processes over the machine's
# PostgreSQL and NATS (deploy/local-stack.sh says how to play against it).
stack: $(STAMP)
	bash deploy/local-stack.sh

# Regenerate the Python code of protos/dast/v1 (committed; a test fails when stale).
proto: $(STAMP)
	$(BIN)/python scripts/gen_protos.py

# buf lint and buf breaking (against the previous commit) over protos/, with the buf CLI
# of tools/buf/package-lock.json (npm; reinstalled when the lock changes).
BUF_DIR := tools/buf
BUF_STAMP := $(BUF_DIR)/node_modules/.installed
$(BUF_STAMP): $(BUF_DIR)/package.json $(BUF_DIR)/package-lock.json
	cd $(BUF_DIR) && npm ci --no-audit --no-fund --loglevel=error
	touch $(BUF_STAMP)

proto-check: $(BUF_STAMP)
	bash scripts/proto_check.sh

# The JavaScript verifier and the replay page (clients/verify-js, clients/replay-page): each
# `npm ci` from its own lock (reinstalled when the lock changes), then their Node tests; the
# page's test drives the machine's Chromium headless (docs/verification.md).
VERIFY_JS_STAMP := clients/verify-js/node_modules/.installed
$(VERIFY_JS_STAMP): clients/verify-js/package.json clients/verify-js/package-lock.json
	cd clients/verify-js && npm ci --no-audit --no-fund --loglevel=error
	mkdir -p clients/verify-js/node_modules && touch $(VERIFY_JS_STAMP)

REPLAY_PAGE_STAMP := clients/replay-page/node_modules/.installed
$(REPLAY_PAGE_STAMP): clients/replay-page/package.json clients/replay-page/package-lock.json
	cd clients/replay-page && npm ci --no-audit --no-fund --loglevel=error
	touch $(REPLAY_PAGE_STAMP)

test-verify-js: $(VERIFY_JS_STAMP) $(REPLAY_PAGE_STAMP)
	cd clients/verify-js && npm test --silent
	cd clients/replay-page && npm test --silent

# The TypeScript client (clients/ts): `npm ci` from its lock (again when the lock changes),
# its code generated from the protos by `npm run generate` (again when a proto changes; never
# committed), then `tsc` typechecks it and builds dist/, its unit tests run (node --test), and
# tests/e2e/test_ts_client.py runs dist/ under Node against a real `dast serve`.
TS_CLIENT := clients/ts
TS_CLIENT_STAMP := $(TS_CLIENT)/node_modules/.installed
TS_CLIENT_GEN_STAMP := $(TS_CLIENT)/src/gen/.generated
$(TS_CLIENT_STAMP): $(TS_CLIENT)/package.json $(TS_CLIENT)/package-lock.json
	cd $(TS_CLIENT) && npm ci --no-audit --no-fund --loglevel=error
	touch $(TS_CLIENT_STAMP)

$(TS_CLIENT_GEN_STAMP): $(TS_CLIENT_STAMP) $(TS_CLIENT)/buf.gen.yaml buf.yaml \
		$(shell find protos third_party -name '*.proto' 2>/dev/null)
	cd $(TS_CLIENT) && npm run --silent generate
	touch $(TS_CLIENT_GEN_STAMP)

.PHONY: ts-client
ts-client: $(TS_CLIENT_GEN_STAMP)
	cd $(TS_CLIENT) && npm run --silent build && npm test --silent

# The long reliability run: the whole system as separate processes, loaded, attacked and
# broken for ten minutes; writes docs/reliability.md (`make test` runs the short one).
reliability: $(STAMP)
	$(BIN)/python -m tests.reliability --duration 600 --report docs/reliability.md

# The figures of docs/benchmarks.md (each script prints one JSON object).
bench: $(STAMP)
	$(BIN)/python bench/hokm_engine.py --json
	$(BIN)/python bench/hand_engine.py --json
	$(BIN)/python bench/tournament_engine.py --json
	$(BIN)/python bench/game_service.py --json
	$(BIN)/python bench/game_service_cpu.py --json
	$(BIN)/python bench/bot_tables.py --json
	$(BIN)/python bench/bots.py --json
	$(BIN)/python bench/scale.py --json
	$(BIN)/python bench/stats.py --json
	$(BIN)/python bench/limits.py --json
	$(BIN)/python bench/refusals.py --json
	$(BIN)/python bench/console.py --json
	$(BIN)/python bench/request_path.py --json --quick

# The engines against their peers (RLCard's game layers) in one interleaved run; the
# peers come from the `bench` extra, installed here only.
BENCH_STAMP := $(VENV)/.installed-bench
$(BENCH_STAMP): pyproject.toml $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[test,bench]"
	touch $(BENCH_STAMP)

bench-peers: $(BENCH_STAMP)
	$(BIN)/python bench/engines.py --json

# Tournaments on the multi-process stack over the local PostgreSQL and NATS (long: minutes):
# tables per minute on 1 and 2 game replicas, a 1,024-player tournament, the next round's
# latency (bench/tournament.py; figures in docs/benchmarks.md).
.PHONY: bench-tournament tournament-1024
bench-tournament: $(STAMP)
	$(BIN)/python bench/tournament.py --json

# The 1,024-player Hokm tournament with a game, a bot and a tournament replica SIGKILLed and
# restarted mid-round; fails unless it finishes with standings equal to the games' logs.
tournament-1024: $(STAMP)
	$(BIN)/python bench/tournament.py --json --skip-rate --players 1024 --chaos

clean:
	rm -rf $(VENV) $(CHECKOV_VENV) .mypy_cache .pytest_cache .ruff_cache .hypothesis
