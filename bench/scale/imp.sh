#!/bin/bash
# One timed import of the generated 1M file into a fresh SQLite file, with the importer's
# timing lines (KI_IMPORT_TIMING), its size, page size and journal.
# usage: imp.sh LABEL BIN [NAME=VALUE...]   (SCALE: folder of gen-1m.jsonl.zst, /work/scale)
scale=${SCALE:-/work/scale}
label=$1; bin=$2; shift 2
db=$scale/imp-$label.db
rm -f $db $db-wal $db-shm $db-journal
echo "=== $label $* $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)"
env KI_IMPORT_TIMING=1 "$@" /usr/bin/time -f "%e s %M KiB %U user %S sys" $bin catalog import $scale/gen-1m.jsonl.zst --database sqlite://$db 2>&1 | grep -v "^ *[a-z_]* *[0-9]* *[0-9]*$"
ls -la $db*
sqlite3 $db "PRAGMA page_size; PRAGMA journal_mode; SELECT count(*) FROM benchmark_runs"
