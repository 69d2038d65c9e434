#!/usr/bin/env bash
# Serves a fresh SQLite catalog with BIN (default target/debug/ki) under a descriptor limit
# that gives the connection cap of the issue's report (400 descriptors: cap 144), then runs
# flood.py's three scenarios from one flooding peer and from three.
set -euo pipefail
BIN=${BIN:-target/debug/ki}
PORT=${PORT:-8099}
DIR=$(mktemp -d)
trap 'kill $SERVER 2>/dev/null || true; rm -rf "$DIR"' EXIT
(ulimit -n 400; exec "$BIN" serve --database "sqlite://$DIR/catalog.db" --addr "127.0.0.1:$PORT") >"$DIR/serve.log" 2>&1 &
SERVER=$!
for _ in $(seq 1 600); do
  curl -fsS "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1 && break
  sleep 0.5
done
echo "# $(date -u +%FT%TZ) $BIN, nproc $(nproc), load $(cut -d' ' -f1-3 /proc/loadavg)"
python3 "$(dirname "$0")/flood.py" --addr "127.0.0.1:$PORT" --peers 1 "$@"
python3 "$(dirname "$0")/flood.py" --addr "127.0.0.1:$PORT" --peers 3 "$@"
