#!/usr/bin/env bash
# Schemathesis (every check, every phase: examples, coverage, fuzzing, stateful) against a
# `ki serve` on the bundled catalog, for DURATION seconds (default 300).
#
#   python3 -m venv /tmp/st && /tmp/st/bin/pip install schemathesis
#   cargo build -p ki && bash bench/api/run.sh
#
# Writes the run's JUnit report beside the log under OUT (default bench/api/out).
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-target/debug/ki}
ST=${ST:-$(command -v st || echo /tmp/st/bin/st)}
DURATION=${DURATION:-300}
PORT=${PORT:-18080}
OUT=${OUT:-bench/api/out}
mkdir -p "$OUT"
work=$(mktemp -d)
"$BIN" serve --database "sqlite://$work/kernelindex.db" --addr "127.0.0.1:$PORT" >"$OUT/serve.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 1 600); do
  curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break
  sleep 1
done
# A key of both write scopes, so that the writes (attestations, submissions) are tested past the
# key check: every body the schema allows is accepted, every other refused.
key=$("$BIN" admin key create --database "sqlite://$work/kernelindex.db" --label schemathesis \
  --scope attest --scope submit --quota 1000000 2>/dev/null | grep -o 'ki_[A-Za-z0-9_-]*' | head -1)
status=0
"$ST" --config-file bench/api/schemathesis.toml run "http://127.0.0.1:$PORT/api/v1/openapi.json" \
  --checks all \
  --header "Authorization: Bearer $key" \
  --phases examples,coverage,fuzzing,stateful \
  --max-time "$DURATION" \
  --workers 2 \
  --report junit --report-dir "$OUT" \
  >"$OUT/schemathesis.log" 2>&1 || status=$?
tail -40 "$OUT/schemathesis.log"
exit "$status"
