#!/usr/bin/env bash
# Scale figures of issue 15 on this machine, release build:
#   1. `ki catalog generate` of RUNS synthetic runs (time, size);
#   2. `ki catalog verify` of it (time, peak RSS);
#   3. `ki catalog import` into a fresh SQLite catalog and a fresh PostgreSQL schema (time, peak RSS);
#   4. `ki serve` resident memory after start, on that catalog and on the bundled one.
#
#   bench/scale/run.sh                 # RUNS=100000
#   RUNS=1000000 bench/scale/run.sh
#
# Needs /usr/bin/time (GNU time) and, for PostgreSQL, psql and the local server (trust, database test).
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${RUNS:-100000}
SEED=${SEED:-1}
PORT=${PORT:-18090}
if [ -z "${BIN:-}" ]; then
  cargo build --release -p ki --bin ki >&2
  BIN=${CARGO_TARGET_DIR:-target}/release/ki
fi
WORK=$(mktemp -d)
SCHEMA=ki_scale_bench_$$
trap 'kill $SERVER 2>/dev/null || true; rm -rf "$WORK"; psql -h 127.0.0.1 -U postgres -d test -qc "DROP SCHEMA IF EXISTS $SCHEMA CASCADE" >/dev/null 2>&1 || true' EXIT
SERVER=
measure() { # label, command...
  local label=$1; shift
  /usr/bin/time -f "%e %M" -o "$WORK/time" "$@" >"$WORK/out" 2>"$WORK/err" || { cat "$WORK/err" >&2; exit 1; }
  read -r seconds kib <"$WORK/time"
  printf '%-44s %8.1f s  peak RSS %6d MiB\n' "$label" "$seconds" $((kib / 1024))
}
serve_rss() { # label, database
  "$BIN" serve --database "$2" --addr "127.0.0.1:$PORT" --reload-every 0 2>"$WORK/serve.log" &
  SERVER=$!
  for _ in $(seq 1 3000); do curl -fsS "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1 && break; sleep 0.2; done
  curl -fsS "http://127.0.0.1:$PORT/healthz" >/dev/null
  printf '%-44s %8s    RSS %6d MiB\n' "$1" "" $(( $(awk '/VmRSS/ {print $2}' /proc/$SERVER/status) / 1024 ))
  kill $SERVER; wait $SERVER 2>/dev/null || true; SERVER=
}
echo "machine: $(nproc) cores, $(free -g | awk '/Mem/ {print $2}') GiB, load $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%FT%TZ); RUNS=$RUNS SEED=$SEED"
measure "generate $RUNS runs" "$BIN" catalog generate --runs "$RUNS" --seed "$SEED" --out "$WORK/synthetic.jsonl.zst"
tail -1 "$WORK/out"
echo "export: $(du -h "$WORK/synthetic.jsonl.zst" | cut -f1) compressed"
measure "verify" "$BIN" catalog verify "$WORK/synthetic.jsonl.zst"
grep -E "mismatches|record events" "$WORK/out"
measure "import into SQLite" "$BIN" catalog import "$WORK/synthetic.jsonl.zst" --database "sqlite://$WORK/synthetic.db"
if command -v psql >/dev/null; then
  psql -h 127.0.0.1 -U postgres -d test -qc "CREATE SCHEMA $SCHEMA"
  measure "import into PostgreSQL" "$BIN" catalog import "$WORK/synthetic.jsonl.zst" \
    --database "postgres://postgres@127.0.0.1:5432/test?options=-c%20search_path%3D$SCHEMA"
fi
serve_rss "ki serve, $RUNS synthetic runs (SQLite)" "sqlite://$WORK/synthetic.db"
serve_rss "ki serve, bundled catalog (8,145 runs)" "sqlite://$WORK/bundled.db"
