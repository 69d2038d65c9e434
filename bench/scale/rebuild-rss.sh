#!/bin/bash
# RSS of `ki serve` 3 s after start, then after three retractions (one a second) once their reloads
# have settled (no rebuild thread for 4 s), sampled 3, 10 and 30 s later.
# usage: rebuild-rss.sh BIN DB [PORT]   (DB: a scratch copy; its -wal and -shm are removed first)
bin=$1; db=$2; port=${3:-18301}
rm -f $db-wal $db-shm
$bin serve --database sqlite://$db --addr 127.0.0.1:$port --reload-every 1 > /tmp/rr-$port.log 2>&1 &
pid=$!
until grep -q listening /tmp/rr-$port.log; do sleep 0.5; done
rss() { grep -E "VmRSS|RssAnon|RssFile|RssShmem" /proc/$pid/status | tr -s " \n\t" " "; }
sleep 3; echo "start+3s $(rss)"
ids=$(curl -fsS "http://127.0.0.1:$port/api/v1/runs?limit=5" | python3 -c 'import json,sys;[print(r["id"]) for r in json.load(sys.stdin)["runs"][1:4]]')
for id in $ids; do $bin admin retract $id --reason "rss probe" --actor bench --database sqlite://$db >/dev/null; sleep 1; done
last=$(echo "$ids" | tail -1)
until curl -fsS "http://127.0.0.1:$port/api/v1/runs/$last" | grep -q '"kind":"retracted"'; do sleep 1; done
quiet=0
while [ $quiet -lt 4 ]; do
  if grep -qs ki-rebuild /proc/$pid/task/*/comm; then quiet=0; else quiet=$((quiet + 1)); fi
  sleep 1
done
echo "reloads: $(grep -c reloaded /tmp/rr-$port.log)"
for t in 3 10 30; do sleep $((t - ${prev:-0})); prev=$t; echo "served+${t}s $(rss)"; done
kill $pid; wait $pid 2>/dev/null
