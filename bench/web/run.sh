#!/usr/bin/env bash
# Load benchmark of `ki serve` on loopback with the full catalog (the shared export in a
# fresh SQLite catalog): the run dossier page and POST /api/v1/resolve/kernel.
# Targets (issue 5): p99 < 10 ms and >= 2,000 requests/s each.
#
#   bench/web/run.sh            # builds ki --release, runs both, prints wrk's figures
#   DURATION=30s CONNECTIONS=64 bench/web/run.sh
#
# Needs wrk (apt-get install -y wrk).
set -euo pipefail
cd "$(dirname "$0")/../.."
DURATION=${DURATION:-15s}
CONNECTIONS=${CONNECTIONS:-32}
THREADS=${THREADS:-2}
PORT=${PORT:-18080}
RUN=${RUN:-01a00b1d-572d-7e7b-a36c-fbdbf71869ae}
command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install -y wrk)" >&2; exit 2; }

cargo build --release -p ki --bin ki >&2
BIN=${CARGO_TARGET_DIR:-target}/release/ki
WORK=$(mktemp -d)
trap 'kill $SERVER 2>/dev/null || true; rm -rf "$WORK"' EXIT
"$BIN" serve --database "sqlite://$WORK/kernelindex.db" --state "$WORK/state" --addr "127.0.0.1:$PORT" 2>"$WORK/serve.log" &
SERVER=$!
for _ in $(seq 1 600); do
  curl -fsS "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1 && break
  sleep 0.2
done
curl -fsS "http://127.0.0.1:$PORT/healthz" >/dev/null
echo "catalog: $(grep -o '[0-9]* catalog rows' "$WORK/serve.log")"
echo "machine: $(nproc) cores; wrk -t$THREADS -c$CONNECTIONS -d$DURATION"

# Warm up, then measure.
wrk -t1 -c4 -d2s "http://127.0.0.1:$PORT/runs/$RUN" >/dev/null
echo "== GET /runs/$RUN"
wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" --latency "http://127.0.0.1:$PORT/runs/$RUN"
echo "== POST /api/v1/resolve/kernel"
wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" --latency -s bench/web/resolve.lua "http://127.0.0.1:$PORT/api/v1/resolve/kernel"
