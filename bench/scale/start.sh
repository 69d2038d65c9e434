#!/bin/bash
# Seconds until `ki serve` listens on a SQLite catalog, then its VmRSS 3 s later and VmHWM.
# usage: start.sh BIN DB PORT
bin=$1; db=$2; port=$3
log=/tmp/serve-$port.log
start=$(date +%s.%N)
$bin serve --database sqlite://$db --addr 127.0.0.1:$port > $log 2>&1 &
pid=$!
until grep -q listening $log; do sleep 0.2; kill -0 $pid 2>/dev/null || { cat $log; exit 1; }; done
ready=$(date +%s.%N)
sleep 3
echo "$db: answering after $(echo "$ready - $start" | bc) s; $(grep -E 'VmRSS|VmHWM' /proc/$pid/status | tr -s ' \n' ' ')"
kill $pid; wait $pid 2>/dev/null
