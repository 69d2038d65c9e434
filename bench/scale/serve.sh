#!/usr/bin/env bash
# Issue 15's serving figures on one catalog, release build, wrk on loopback:
#   1. `ki serve` resident memory (VmRSS) once it answers, and 3 s later;
#   2. a run page (p50, p99, req/s at 8 and at 32 connections), POST /api/v1/resolve/kernel for that
#      run's workload (p50 at 32 and at 4 connections), GET /api/v1/search for the run's
#      operation (p99 at 16), and a hundred operations' searches in turn (p99 at 16; each one's
#      first asking timed alone before);
#   3. with WRITES=N: the run page again (WRITE_LOAD connections, 8 unless set) while `ki admin retract` lands one write a second on
#      other runs (N writes), every answer checked (non-2xx or socket errors fail the script);
#      then resident memory once the reloads have settled (and, before the writes, after the load).
#
#   DATABASE=sqlite:///path/catalog.db bench/scale/serve.sh            # a catalog, as it is
#   bench/scale/serve.sh                                               # the bundled catalog, fresh
#   WRITES=20 DATABASE=... bench/scale/serve.sh                        # writes during the load
#
# The writes retract runs: run it on a scratch copy of a catalog. Needs wrk, curl, python3.
set -euo pipefail
cd "$(dirname "$0")/../.."
DURATION=${DURATION:-15s}
PORT=${PORT:-18095}
WRITES=${WRITES:-0}
WRITE_LOAD=${WRITE_LOAD:-8} # connections of the run-page load the writes land in
BIN=${BIN:-${CARGO_TARGET_DIR:-target}/release/ki}
command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install -y wrk)" >&2; exit 2; }
WORK=$(mktemp -d)
SERVER=
trap 'kill $SERVER 2>/dev/null || true; rm -rf "$WORK"' EXIT
DATABASE=${DATABASE:-sqlite://$WORK/kernelindex.db}
BASE="http://127.0.0.1:$PORT"
rss() { awk '/VmRSS/ {printf "%.0f MB (%d kB)", $2 * 1.024 / 1000, $2}' "/proc/$SERVER/status"; }

started=$(date +%s.%N)
"$BIN" serve --database "$DATABASE" --state "$WORK/state" --addr "127.0.0.1:$PORT" --reload-every 1 \
  2>"$WORK/serve.log" &
SERVER=$!
for _ in $(seq 1 3000); do
  curl -fsS "$BASE/healthz" >/dev/null 2>&1 && break
  kill -0 $SERVER 2>/dev/null || { cat "$WORK/serve.log" >&2; exit 1; }
  sleep 0.2
done
curl -fsS "$BASE/healthz" >/dev/null
echo "machine: $(nproc) cores, $(free -g | awk '/Mem/ {print $2}') GiB, load $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%FT%TZ)"
echo "$(grep -o '[0-9]* benchmark runs ranked' "$WORK/serve.log"); answering after $(python3 -c "import time;print(round(time.time()-$started,1))") s"
echo "resident at /healthz: $(rss)"
sleep 3
echo "resident 3 s later:   $(rss)"

# A run of the busiest operation, its workload's resolve request and a search for its operation.
curl -fsS "$BASE/api/v1/runs?limit=50" >"$WORK/runs.json"
RUN=$(python3 -c 'import json,sys;print(json.load(open(sys.argv[1]))["runs"][0]["id"])' "$WORK/runs.json")
curl -fsS "$BASE/api/v1/runs/$RUN" >"$WORK/run.json"
python3 - "$WORK/run.json" "$WORK" <<'EOF'
import json, sys, urllib.parse
run = json.load(open(sys.argv[1]))
operation = run["operation"]["label"]
def number(text):
    try:
        return int(text)
    except ValueError:
        return float(text)
axes = {a["label"]: number(a["value"]) for a in run["workload"]["axes"]}
body = json.dumps({"operation": operation, "axes": axes})
open(sys.argv[2] + "/resolve.lua", "w").write(
    'wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\nwrk.body = %s\n' % json.dumps(body))
open(sys.argv[2] + "/search", "w").write(urllib.parse.quote(operation.replace("_", " ").replace("-", " ")))
EOF
# A hundred searches, one per operation (its name's words), asked in turn: the first round finds
# each word in the catalog's search index, the later ones reuse what this model found.
curl -fsS "$BASE/api/v1/operations" >"$WORK/operations.json"
python3 - "$WORK/operations.json" "$WORK" <<'EOF'
import json, sys, urllib.parse
listed = json.load(open(sys.argv[1]))
items = listed["operations"] if isinstance(listed, dict) else listed
paths = ["/api/v1/search?q=" + urllib.parse.quote(item["slug"].replace("_", " ").replace("-", " ")) for item in items[:100]]
open(sys.argv[2] + "/searches", "w").write("\n".join(paths) + "\n")
open(sys.argv[2] + "/searches.lua", "w").write(
    "paths = {%s}\ni = 0\nrequest = function()\n  i = i + 1\n  return wrk.format(\"GET\", paths[(i %% #paths) + 1])\nend\n"
    % ", ".join(json.dumps(p) for p in paths))
EOF
figures() { # label, wrk arguments...: p50 p99 req/s; fails on any error answer
  local label=$1 out; shift
  out=$(wrk -t2 -d"$DURATION" --latency "$@")
  if grep -qE "Non-2xx|Socket errors" <<<"$out"; then echo "$label: errors: $out" >&2; exit 1; fi
  printf '| %s | %s | %s | %s |\n' "$label" "$(awk '$1=="50%"{print $2}' <<<"$out")" \
    "$(awk '$1=="99%"{print $2}' <<<"$out")" "$(awk '$1=="Requests/sec:"{print $2}' <<<"$out")"
}
# Each of the hundred searches once, as the first to ask it (its words' first look-up).
first=$(while read -r path; do curl -fsS -o /dev/null -w '%{time_total}\n' "$BASE$path"; done <"$WORK/searches" | sort -n)
echo "first asking of $(grep -c . <<<"$first") searches: median $(awk '{a[NR]=$1} END {printf "%.1f ms", 1000*a[int((NR+1)/2)]}' <<<"$first"), slowest $(tail -1 <<<"$first" | awk '{printf "%.1f ms", 1000*$1}')"
wrk -t1 -c4 -d2s "$BASE/runs/$RUN" >/dev/null
echo
echo "| request | p50 | p99 | req/s |"
echo "| --- | --- | --- | --- |"
figures "run page /runs/$RUN, c8" -c8 "$BASE/runs/$RUN"
figures "run page /runs/$RUN, c32" -c32 "$BASE/runs/$RUN"
figures "resolve its workload, c32" -c32 -s "$WORK/resolve.lua" "$BASE/api/v1/resolve/kernel"
figures "search \`$(python3 -c 'import sys,urllib.parse;print(urllib.parse.unquote(sys.argv[1]))' "$(cat "$WORK/search")")\`, c16" \
  -c16 "$BASE/api/v1/search?q=$(cat "$WORK/search")"
figures "search, $(grep -c . "$WORK/searches") operations' names in turn, c16" -c16 -s "$WORK/searches.lua" "$BASE"
figures "resolve its workload, c4" -c4 -s "$WORK/resolve.lua" "$BASE/api/v1/resolve/kernel"
echo "resident after the load: $(rss)"

if [ "$WRITES" -gt 0 ]; then
  python3 -c 'import json,sys;[print(r["id"]) for r in json.load(open(sys.argv[1]))["runs"][1:1 + int(sys.argv[2])]]' \
    "$WORK/runs.json" "$WRITES" >"$WORK/targets"
  (
    while read -r target; do
      "$BIN" admin retract "$target" --reason "bench/scale/serve.sh: a write during the load" --actor bench \
        --database "$DATABASE" >>"$WORK/writes.log" 2>&1
      sleep 1
    done <"$WORK/targets"
  ) &
  WRITER=$!
  figures "run page during $WRITES writes (1/s), c$WRITE_LOAD" -c"$WRITE_LOAD" -d"$((WRITES + 5))s" "$BASE/runs/$RUN"
  wait $WRITER || { echo "a write failed:" >&2; cat "$WORK/writes.log" >&2; exit 1; }
  for _ in $(seq 1 600); do # until the last write is served
    last=$(tail -1 "$WORK/targets")
    curl -fsS "$BASE/api/v1/runs/$last" | grep -q '"kind":"retracted"' && break
    sleep 1
  done
  # Counted once the last write is served: a reload takes longer than the load lasts.
  echo "writes: $(grep -c . "$WORK/targets") retractions; reloads: $(grep -c 'reloaded' "$WORK/serve.log" || true)"
  sleep 3
  echo "resident after the writes: $(rss)"
fi
