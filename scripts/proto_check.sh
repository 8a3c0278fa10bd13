#!/usr/bin/env bash
# `make proto-check`: buf lint over protos/ (buf.yaml), then buf breaking against the
# previous commit. The breaking check needs a previous commit that already had buf.yaml:
# the commit adding it fixed the wire format, and every commit after it must keep it
# compatible. Without one (a first commit, a shallow clone, the commit adding buf.yaml)
# the check is skipped with a message.
set -euo pipefail
cd "$(dirname "$0")/.."
buf=${BUF:-tools/buf/node_modules/.bin/buf}

"$buf" lint
echo "buf lint: clean"

if ! git rev-parse --verify --quiet 'HEAD~1^{commit}' >/dev/null 2>&1; then
  echo "buf breaking: skipped (no previous commit to compare with)"
  exit 0
fi
if ! git cat-file -e 'HEAD~1:buf.yaml' 2>/dev/null; then
  echo "buf breaking: skipped (the previous commit predates buf.yaml)"
  exit 0
fi
# The previous commit's whole workspace (its buf.yaml at the root: both modules), so the
# files on each side are compared module by module.
"$buf" breaking --against '.git#ref=HEAD~1'
echo "buf breaking: compatible with HEAD~1"
