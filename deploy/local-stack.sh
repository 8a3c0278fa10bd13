#!/usr/bin/env bash
# A local multi-process dast stack without Docker: N game-service replicas sharing one
# PostgreSQL and one NATS (JetStream), like production (DESIGN.md "Scale-out").
#
#   deploy/local-stack.sh            # 2 replicas on 127.0.0.1:50051 and :50052
#   REPLICAS=3 deploy/local-stack.sh
#
# Needs PostgreSQL and nats-server reachable at DAST_DATABASE_URL / DAST_NATS_URL (the
# defaults match DEVELOPERS.md "Services the tests use"; `bash .ci/run` starts them).
# Ctrl-C stops every replica.
set -euo pipefail
cd "$(dirname "$0")/.."

: "${DAST_DATABASE_URL:=postgresql+psycopg://postgres@127.0.0.1:5432/test}"
: "${DAST_NATS_URL:=nats://127.0.0.1:4222}"
: "${DAST_JWT_SECRET:=local-stack-secret-change-me-0123456789abcdef}"
: "${REPLICAS:=2}"
: "${BASE_PORT:=50051}"
: "${BASE_METRICS_PORT:=9464}"
export DAST_DATABASE_URL DAST_NATS_URL DAST_JWT_SECRET

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for port in 5432 4222; do
  port_open "$port" || { echo "nothing listens on 127.0.0.1:$port (run: bash .ci/run)" >&2; exit 1; }
done

pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; wait; }
trap cleanup EXIT INT TERM

for i in $(seq 0 $((REPLICAS - 1))); do
  DAST_LISTEN="127.0.0.1:$((BASE_PORT + i))" DAST_METRICS_PORT="$((BASE_METRICS_PORT + i))" \
    .venv/bin/python -m services.game &
  pids+=("$!")
  sleep 1  # the first replica migrates the schema; let it finish before the next starts
done
echo "dast: $REPLICAS replicas up; token: DAST_JWT_SECRET=$DAST_JWT_SECRET .venv/bin/dast token alice"
wait
