#!/usr/bin/env bash
# Issue 36, finding 4: a run with 2,000 attestations under wrk, against a run with none, on a
# fresh SQLite catalog made from the bundled snapshot. BIN is the `ki` to measure (a release
# build); run it once per build, on an idle machine, to compare builds side by side.
#   BIN=target/release/ki PORT=8111 bash bench/security/attestations.sh
set -euo pipefail
BIN=${BIN:-target/release/ki}
PORT=${PORT:-8111}
COUNT=${COUNT:-2000}
DURATION=${DURATION:-15s}
DIR=$(mktemp -d)
trap 'kill $SERVER 2>/dev/null || true; rm -rf "$DIR"' EXIT
BASE="http://127.0.0.1:$PORT"

"$BIN" serve --database "sqlite://$DIR/catalog.db" --addr "127.0.0.1:$PORT" --reload-every 0 >"$DIR/serve.log" 2>&1 &
SERVER=$!
for _ in $(seq 1 600); do
  curl -fsS "$BASE/healthz" >/dev/null 2>&1 && break
  sleep 0.5
done
KEY=$("$BIN" admin key create --database "sqlite://$DIR/catalog.db" --label bench --scope attest --quota $((COUNT + 10)) 2>/dev/null |
  grep -o 'ki_[A-Za-z0-9_-]*' | head -1)

# Two runs of the bundled catalog: the first gets COUNT attestations, the second none.
read -r BUSY QUIET < <(curl -fsS "$BASE/api/v1/runs?limit=2" |
  python3 -c 'import json,sys; d=json.load(sys.stdin); items=d.get("items") or d.get("runs"); print(items[0]["id"], items[1]["id"])')

python3 - "$BASE" "$KEY" "$BUSY" "$COUNT" <<'EOF'
import http.client, json, sys, urllib.parse
base, key, run, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
host = urllib.parse.urlsplit(base).netloc
connection = http.client.HTTPConnection(host, timeout=10)
for i in range(count):
    body = json.dumps({"kind": "reproduced", "observedNs": 1000 + i, "note": f"bench attestation {i}"})
    connection.request("POST", f"/api/v1/runs/{run}/attestations", body,
                       {"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    answer = connection.getresponse()
    answer.read()
    if answer.status != 201:
        sys.exit(f"attestation {i}: HTTP {answer.status}")
EOF

echo "# $(date -u +%FT%TZ) $BIN, nproc $(nproc), load $(cut -d' ' -f1-3 /proc/loadavg), $COUNT attestations on run $BUSY"
for target in "/runs/$BUSY" "/api/v1/runs/$BUSY" "/runs/$QUIET" "/api/v1/runs/$QUIET"; do
  bytes=$(curl -fsS "$BASE$target" | wc -c)
  wrk -t2 -c32 -d"$DURATION" --latency "$BASE$target" >"$DIR/wrk.txt"
  rps=$(awk '/Requests\/sec/ {print $2}' "$DIR/wrk.txt")
  p50=$(awk '$1 == "50%" {print $2}' "$DIR/wrk.txt")
  p99=$(awk '$1 == "99%" {print $2}' "$DIR/wrk.txt")
  errors=$(awk '/Non-2xx|Socket errors/' "$DIR/wrk.txt" | tr '\n' ' ')
  echo "$target bytes=$bytes req/s=$rps p50=$p50 p99=$p99 ${errors:-no errors}"
done
