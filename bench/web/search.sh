#!/usr/bin/env bash
# Search latency of `ki serve` on loopback (issue 18: p99 <= 25 ms), on the bundled catalog in
# a fresh SQLite file (or DATABASE, e.g. a fresh PostgreSQL schema): GET /api/v1/search for the
# issue's example queries and a typo, under wrk at 4 and 16 connections. Prints one Markdown
# row per query.
#
#   BIN=/path/to/release/ki bench/web/search.sh     # DURATION=10s by default
#   DATABASE='postgres://postgres@127.0.0.1:5432/test?options=-c%20search_path%3Dbench' bench/web/search.sh
#
# Needs wrk (apt-get install -y wrk) and curl.
set -euo pipefail
cd "$(dirname "$0")/../.."
DURATION=${DURATION:-10s}
PORT=${PORT:-18081}
BIN=${BIN:-${CARGO_TARGET_DIR:-target}/release/ki}
command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install -y wrk)" >&2; exit 2; }
WORK=$(mktemp -d)
trap 'kill $SERVER 2>/dev/null || true; rm -rf "$WORK"' EXIT
"$BIN" serve --database "${DATABASE:-sqlite://$WORK/kernelindex.db}" --state "$WORK/state" --addr "127.0.0.1:$PORT" 2>"$WORK/serve.log" &
SERVER=$!
for _ in $(seq 1 900); do
  curl -fsS "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1 && break
  sleep 0.2
done
curl -fsS "http://127.0.0.1:$PORT/healthz" >/dev/null
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); wrk -t2 -d$DURATION"
echo
echo "| query | c16 p50 | c16 p99 | c16 req/s | c4 p50 | c4 p99 | c4 req/s |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
figures() { # p50 p99 req/s of one wrk run
  local out
  out=$(wrk -t2 -c"$1" -d"$DURATION" --latency "$2")
  grep -q "Non-2xx" <<<"$out" && { echo "non-2xx answers: $out" >&2; exit 1; }
  printf '%s | %s | %s' "$(awk '$1=="50%"{print $2}' <<<"$out")" "$(awk '$1=="99%"{print $2}' <<<"$out")" \
    "$(awk '$1=="Requests/sec:"{print $2}' <<<"$out")"
}
for query in "gqa decode gpu:h200 batch_size=16" "rmsnorm hidden_size=4096 trust:verified" \
  "gemm n=4096 k=4096 gpu:b200" "gqa paged decode" "rmsnrom" \
  "gqa paged decode h200 batch_size=16" "rmsnorm h200" "attention decode h100" "llama 3.1 8b" \
  "rmsnorm hidden 4096" "flashinfer h200"; do
  url="http://127.0.0.1:$PORT/api/v1/search?q=$(python3 -c 'import sys,urllib.parse;print(urllib.parse.quote(sys.argv[1]))' "$query")"
  curl -fsS "$url" >/dev/null
  wrk -t1 -c4 -d2s "$url" >/dev/null
  echo "| \`$query\` | $(figures 16 "$url") | $(figures 4 "$url") |"
done
