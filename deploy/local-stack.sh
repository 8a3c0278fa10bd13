#!/usr/bin/env bash
# A local multi-process dast stack without Docker, like production (docs/architecture.md "Scale-out"):
# one accounts service (where players sign in: docs/accounts.md), one lobby, GAME_REPLICAS
# game-service replicas, BOT_REPLICAS bot-service replicas, TOURNAMENT_REPLICAS
# tournament-service replicas and one stats service (its projection has one writer), each
# its own `dast serve --services NAME` process on loopback, over the machine's PostgreSQL and
# NATS (JetStream). The lobby and the bots reach the game replicas through one multi-address
# target balanced by gRPC itself (round_robin), as clients do.
#
#   deploy/local-stack.sh                  # lobby :50051, accounts :50052, games :50061-2,
#                                          # bots :50071-2, tournaments :50081-2, stats :50091
#   GAME_REPLICAS=3 deploy/local-stack.sh
#   .venv/bin/dast play --accounts-server 127.0.0.1:50052 \
#     --game-server ipv4:127.0.0.1:50061,127.0.0.1:50062
#   deploy/local-stack.sh --secrets        # make the secrets if missing, print their file
#
# Needs PostgreSQL and nats-server at DAST_DATABASE_URL / DAST_NATS_URL (the defaults match
# DEVELOPERS.md "Services the tests use"; `bash .ci/run` starts them). STACK_RUN=<name> keeps
# a run apart from others on the same servers: its own PostgreSQL schema and deployment name
# (DAST_DEPLOYMENT=stack_<name>: its own NATS streams, subjects and presence bucket;
# tests/e2e/test_multiprocess_stack.py does the same). Ctrl-C (or SIGTERM) stops them all.
#
# Secrets: DAST_SIGNING_KEY and the token keys (DAST_TOKEN_KEYS, the public ring every
# process verifies with) from the environment when set; else random ones, made on the first
# run into DAST_LOCAL_SECRETS (.dast/local-stack.env, mode 0600, git-ignored) and reused by
# every later run, so tokens and seals stay valid across restarts. The file also holds one
# Ed25519 token key per issuing service (DAST_TOKEN_SIGNING_KEYS_LOBBY, _BOT, _TOURNAMENT,
# _STATS, _ACCOUNTS, and _OPERATOR for `dast token`); each process is given only its own as
# DAST_TOKEN_SIGNING_KEYS, a game replica none (docs/security.md "Token keys"). The servers
# refuse any key published in the repository. A token for this stack:
#   (set -a; . .dast/local-stack.env; DAST_TOKEN_SIGNING_KEYS="$DAST_TOKEN_SIGNING_KEYS_OPERATOR" \
#    .venv/bin/dast token alice --role admin)
set -euo pipefail
cd "$(dirname "$0")/.."

secrets_only=false
case "${1:-}" in
  "") ;;
  --secrets) secrets_only=true ;;
  *) echo "usage: deploy/local-stack.sh [--secrets]" >&2; exit 2 ;;
esac

: "${DAST_DATABASE_URL:=postgresql+psycopg://postgres@127.0.0.1:5432/test}"
: "${DAST_NATS_URL:=nats://127.0.0.1:4222}"
: "${DAST_LOCAL_SECRETS:=.dast/local-stack.env}"
: "${GAME_REPLICAS:=2}"
: "${BOT_REPLICAS:=2}"
: "${TOURNAMENT_REPLICAS:=2}"
: "${LOBBY_PORT:=50051}"
: "${ACCOUNTS_PORT:=50052}"
: "${GAME_BASE_PORT:=50061}"
: "${BOT_BASE_PORT:=50071}"
: "${TOURNAMENT_BASE_PORT:=50081}"
: "${STATS_PORT:=50091}"
: "${DAST_LOG_LEVEL:=warning}"
PYTHON="${PYTHON:-.venv/bin/python}"

# Prints the values of DAST_LOCAL_SECRETS, one a line in the order of `names` below, making
# the file first when it is missing: random values go to a private temporary file (mkstemp:
# mode 0600) that is then linked into place, so two stacks starting at once agree on one
# file (the second link fails, and that run reads the first one's).
local_secrets() {
  "$PYTHON" - "$DAST_LOCAL_SECRETS" <<'EOF'
import base64
import os
import secrets
import sys
import tempfile

from services.platform.token_keys import generate_token_keys

path = sys.argv[1]
issuers = ("lobby", "bot", "tournament", "stats", "accounts", "operator")
names = ("DAST_SIGNING_KEY", "DAST_TOKEN_KEYS",
         *(f"DAST_TOKEN_SIGNING_KEYS_{issuer.upper()}" for issuer in issuers))
folder = os.path.dirname(path) or "."
if not os.path.exists(path):
    os.makedirs(folder, exist_ok=True)
    keys = generate_token_keys(issuers)
    made = (base64.b64encode(secrets.token_bytes(32)).decode(), keys.ring_document(),
            *(keys.only([issuer]).signing_document() for issuer in issuers))
    descriptor, draft = tempfile.mkstemp(dir=folder, prefix=".local-stack-")
    try:
        with os.fdopen(descriptor, "w") as file:
            file.write("# deploy/local-stack.sh's secrets, made on its first run: never commit them\n")
            # Single quotes: the JSON documents stay whole when a shell sources the file.
            file.writelines(f"{name}='{value}'\n" for name, value in zip(names, made))
        os.link(draft, path)
    except FileExistsError:
        pass
    finally:
        os.unlink(draft)
values = {}
with open(path) as file:
    for line in file:
        name, _, value = line.strip().partition("=")
        value = value.strip("'")
        if name in names and value:
            values[name] = value
missing = [name for name in names if name not in values]
if missing:
    sys.exit(f"{path} has no {' or '.join(missing)}: delete it, and the next run makes new ones")
print("\n".join(values[name] for name in names))
EOF
}

if [[ "$secrets_only" == true ]]; then
  local_secrets >/dev/null
  echo "$DAST_LOCAL_SECRETS"
  exit 0
fi
if [[ -n "${DAST_JWT_SECRET:-}" ]]; then
  echo "DAST_JWT_SECRET is no longer read: unset it (token keys replaced it; docs/deploy.md)" >&2
  exit 2
fi
made="$(local_secrets)"
# Every game replica seals finished logs with this Ed25519 seed (base64).
: "${DAST_SIGNING_KEY:=$(sed -n 1p <<<"$made")}"
# Every process verifies tokens with this ring of public keys.
: "${DAST_TOKEN_KEYS:=$(sed -n 2p <<<"$made")}"
# Each issuing service signs with its own key; `serve` gives each process only its own.
declare -A signing_keys=(
  [lobby]="$(sed -n 3p <<<"$made")" [bot]="$(sed -n 4p <<<"$made")"
  [tournament]="$(sed -n 5p <<<"$made")" [stats]="$(sed -n 6p <<<"$made")"
  [accounts]="$(sed -n 7p <<<"$made")"
)
unset made

if [[ -n "${STACK_RUN:-}" ]]; then
  [[ "$STACK_RUN" =~ ^[a-z0-9_]+$ ]] || { echo "STACK_RUN must match [a-z0-9_]+" >&2; exit 2; }
  "$PYTHON" - "$DAST_DATABASE_URL" "s_$STACK_RUN" <<'EOF'
import sys
from sqlalchemy import create_engine, text
engine = create_engine(sys.argv[1], isolation_level="AUTOCOMMIT")
with engine.connect() as db:
    db.execute(text(f'CREATE SCHEMA IF NOT EXISTS "{sys.argv[2]}"'))
engine.dispose()
EOF
  separator="?"; [[ "$DAST_DATABASE_URL" == *"?"* ]] && separator="&"
  DAST_DATABASE_URL="${DAST_DATABASE_URL}${separator}options=-csearch_path%3Ds_${STACK_RUN}"
  DAST_DEPLOYMENT="stack_${STACK_RUN}"
  export DAST_DEPLOYMENT
fi
export DAST_DATABASE_URL DAST_NATS_URL DAST_TOKEN_KEYS DAST_SIGNING_KEY DAST_LOG_LEVEL
unset DAST_TOKEN_SIGNING_KEYS  # never one key for every process

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
wait_port() {
  for _ in $(seq 1 100); do port_open "$1" && return 0; sleep 0.1; done
  echo "nothing listens on 127.0.0.1:$1 after 10 s" >&2; return 1
}
for port in 5432 4222; do
  port_open "$port" || { echo "nothing listens on 127.0.0.1:$port (run: bash .ci/run)" >&2; exit 1; }
done

pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; wait; }
trap cleanup EXIT INT TERM

serve() {  # serve NAME PORT: one `dast serve --services NAME` process in the background
  if [[ -n "${signing_keys[$1]:-}" ]]; then
    DAST_TOKEN_SIGNING_KEYS="${signing_keys[$1]}" DAST_SERVICES="$1" \
      DAST_LISTEN="127.0.0.1:$2" "$PYTHON" -m services.compose &
  else  # the game service issues no token: it holds no token key
    DAST_SERVICES="$1" DAST_LISTEN="127.0.0.1:$2" "$PYTHON" -m services.compose &
  fi
  pids+=("$!")
}

game_addresses=()
for i in $(seq 0 $((GAME_REPLICAS - 1))); do
  serve game "$((GAME_BASE_PORT + i))"
  # The first replica migrates the schema: let it finish before the next one starts.
  [[ "$i" == 0 ]] && wait_port "$GAME_BASE_PORT"
  game_addresses+=("127.0.0.1:$((GAME_BASE_PORT + i))")
done
DAST_GAME_TARGET="ipv4:$(IFS=,; echo "${game_addresses[*]}")"
export DAST_GAME_TARGET
serve lobby "$LOBBY_PORT"
for i in $(seq 0 $((BOT_REPLICAS - 1))); do
  serve bot "$((BOT_BASE_PORT + i))"
done
for i in $(seq 0 $((TOURNAMENT_REPLICAS - 1))); do
  serve tournament "$((TOURNAMENT_BASE_PORT + i))"
done
serve stats "$STATS_PORT"
serve accounts "$ACCOUNTS_PORT"
wait_port "$LOBBY_PORT"
wait_port "$ACCOUNTS_PORT"
echo "dast stack up: lobby 127.0.0.1:$LOBBY_PORT, accounts 127.0.0.1:$ACCOUNTS_PORT," \
     "game $DAST_GAME_TARGET," \
     "$BOT_REPLICAS bot replicas, $TOURNAMENT_REPLICAS tournament replicas" \
     "(:$TOURNAMENT_BASE_PORT…), stats 127.0.0.1:$STATS_PORT," \
     "deployment ${DAST_DEPLOYMENT:-dast}"
echo "  play: .venv/bin/dast play --accounts-server 127.0.0.1:$ACCOUNTS_PORT" \
     "--game-server $DAST_GAME_TARGET"
wait
