#!/usr/bin/env bash
# Issue 16's H200 must-show: two worker processes drain >= 20 verification jobs from one
# PostgreSQL while one of them is killed (SIGKILL) mid-job; every job ends exactly once, the
# killed worker's job is taken over after its lease expires, and the export verifies
# (`ki catalog verify`, ledger included). Prints a short table last; logs go to $OUT.
#
# The device machine has no PostgreSQL and no internet, so PostgreSQL 15's server (initdb,
# postgres, pg_ctl, its modules and share files) travels from this Debian 12 machine with the
# shared libraries it needs beyond glibc and libstdc++ (ICU 72, libxml2, OpenSSL, LDAP, ...),
# run from a private prefix with LD_LIBRARY_PATH. Two steps:
#
#   1. Here (Debian 12 with postgresql-15 installed), from the repository root:
#        bash bench/verify/queue-drain.sh pack [CARRY_DIR]
#      builds `ki` (release, stripped) unless KI_BIN names one, and writes CARRY_DIR
#      (default /work/main/.carry/queue) with queue-drain.tar.xz (about 30 MiB; the tree plus
#      the carry must stay under 64 MiB).
#   2. On the device, through the run tool with carry [".carry/queue"], from the repo root:
#        bash bench/verify/queue-drain.sh run .carry/queue
#
# Settings (environment): JOBS (default 20), EXECUTOR (default `runner`: each job a child
# `ki run` of the native kernel on the GPU, the two workers taking turns on it through a lock;
# `fixture` is the queue's test executor, which re-issues catalog runs and measures nothing,
# for trying the script without a GPU), WORKER_ARGS (more worker flags), LEASE_SECONDS
# (default 10), DEADLINE_SECONDS (default 480: the longest the workers are waited for), FIXTURE_DELAY_MS (default 3000: a fixture job's duration, so that the kill
# lands mid-job), PGPORT (default 55432), OUT (the run tool's output folder;
# 8 files: queue-drain.md, worker-a.jsonl, worker-b.jsonl, status.json, victim-job.json,
# verify-after.txt, catalog-after.jsonl.zst, logs.tar.gz).
# Runs as root (PostgreSQL then runs as `nobody` through setpriv) or as any user.
set -euo pipefail

mode=${1:-}
PG_VERSION=15

pack() {
    local carry=${1:-/work/main/.carry/queue}
    local stage
    stage=$(mktemp -d)
    trap 'rm -rf "$stage"' RETURN
    local prefix=$stage/pg
    local bindir=/usr/lib/postgresql/$PG_VERSION/bin libdir=/usr/lib/postgresql/$PG_VERSION/lib
    local sharedir=/usr/share/postgresql/$PG_VERSION
    [ -x "$bindir/postgres" ] || { echo "pack: PostgreSQL $PG_VERSION is not installed here ($bindir/postgres)" >&2; exit 1; }
    # The Debian layout is kept under the prefix: PostgreSQL finds its share and lib folders
    # relative to its binary, as configured (bin/../../../../share/postgresql/15).
    mkdir -p "$prefix$bindir" "$prefix$libdir" "$prefix$sharedir" "$stage/syslib" "$stage/bin"
    cp -L "$bindir/postgres" "$bindir/initdb" "$bindir/pg_ctl" "$prefix$bindir/"
    # Server modules initdb and a plain server load (plpgsql, snowball dictionaries, encoding
    # conversions); not the LLVM JIT (jit is off) nor its bitcode.
    find "$libdir" -maxdepth 1 -name '*.so' ! -name 'llvmjit*' -exec cp -L {} "$prefix$libdir/" \;
    (cd "$sharedir" && tar cf - --exclude=./man --exclude=./contrib .) | (cd "$prefix$sharedir" && tar xf -)
    # Shared libraries beyond glibc and the C++ runtime (the device's newer ones serve those).
    local lib
    for lib in $(ldd "$bindir/postgres" "$bindir/initdb" "$bindir/pg_ctl" "$prefix$libdir"/*.so 2>/dev/null |
        awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u); do
        case $(basename "$lib") in
            libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|libresolv.so.*|ld-linux*|libstdc++.so.*|libgcc_s.so.*) ;;
            *) cp -L "$lib" "$stage/syslib/" ;;
        esac
    done
    # KI_BIN=none packs PostgreSQL alone (to try the run step here with KI=target/debug/ki).
    local ki_bin=${KI_BIN:-}
    if [ -z "$ki_bin" ]; then
        cargo build --release -p ki
        ki_bin=target/release/ki
    fi
    if [ "$ki_bin" != none ]; then
        cp "$ki_bin" "$stage/bin/ki"
        strip "$stage/bin/ki" 2>/dev/null || true
    fi
    mkdir -p "$carry"
    tar -C "$stage" -cf - pg syslib bin | xz -T2 -9 > "$carry/queue-drain.tar.xz"
    ls -la "$carry/queue-drain.tar.xz"
    echo "pack: $(du -sh "$carry" | cut -f1) in $carry (PostgreSQL $("$bindir/postgres" -V | awk '{print $3}'))"
}

stop_all() {
    [ -n "${data:-}" ] && "${as[@]}" "${pgenv[@]}" "$bin/pg_ctl" -D "$data" -m fast stop > /dev/null 2>&1 || true
    kill -9 ${victim_pid:-} ${other_pid:-} 2>/dev/null || true
    [ -n "${work:-}" ] && rm -rf "$work"
}

run() {
    local carry=${1:?usage: queue-drain.sh run CARRY_DIR}
    local out=${OUT:-$PWD/queue-drain-out}
    mkdir -p "$out"
    local jobs=${JOBS:-20} executor=${EXECUTOR:-runner} lease=${LEASE_SECONDS:-10} port=${PGPORT:-55432}
    local started=$SECONDS
    # Globals, not locals: the exit trap (stop PostgreSQL, end the workers) needs them.
    work=$(mktemp -d /tmp/queue-drain.XXXXXX)
    chmod 755 "$work"
    xz -dc "$carry/queue-drain.tar.xz" | tar -C "$work" -xf -
    chmod -R a+rX "$work"
    bin=$work/pg/usr/lib/postgresql/$PG_VERSION/bin
    local ki=${KI:-$work/bin/ki}
    data=$work/pgdata
    # PostgreSQL refuses to run as root: as root, it runs as nobody (owning only $work).
    as=()
    if [ "$(id -u)" = 0 ]; then
        mkdir -p "$data" && chown nobody "$data" "$work" && chmod 700 "$data"
        as=(setpriv --reuid="$(id -u nobody)" --regid="$(id -g nobody)" --clear-groups)
    fi
    pgenv=(env LD_LIBRARY_PATH="$work/syslib" TZ=GMT LC_ALL=C)
    "${as[@]}" "${pgenv[@]}" "$bin/initdb" -D "$data" -U postgres --auth=trust --encoding=UTF8 --locale=C \
        --no-instructions > "$out/initdb.log" 2>&1 || { cat "$out/initdb.log"; exit 1; }
    cat >> "$data/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$work'
jit = off
timezone = 'GMT'
log_timezone = 'GMT'
max_connections = 100
EOF
    trap stop_all EXIT
    "${as[@]}" "${pgenv[@]}" "$bin/pg_ctl" -D "$data" -l "$work/postgres.log" -w -t 60 start > /dev/null ||
        { cat "$work/postgres.log" >&2; exit 1; }
    local url="postgres://postgres@127.0.0.1:$port/postgres"
    local pg_version
    pg_version=$("${pgenv[@]}" "$bin/postgres" -V)

    # The catalog: the bundled H200 runs (data/, our own), then the jobs: each group's #1
    # Verified run, re-verified because it is older than a few seconds.
    "$ki" catalog import data/kernelindex-verified-h200-2026-11-30.jsonl.zst --database "$url" > "$out/import.log" 2>&1
    "$ki" catalog export --database "$url" --out "$work/before.jsonl.zst" > "$out/export-before.txt"
    "$ki" catalog verify "$work/before.jsonl.zst" > "$out/verify-before.txt"
    "$ki" verify reverify --database "$url" --older-than-days 0.00001 --runners-up 0 --limit "$jobs" \
        --json > "$out/enqueued.json"

    local gpu driver
    gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || true)
    driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1 || true)
    local worker=(verify --worker --database "$url" --executor "$executor" --until drained --json
        --lease-seconds "$lease" --poll-seconds 1 --retry-seconds 5)
    if [ "$executor" = fixture ]; then
        worker+=(--gpu "${gpu:-NVIDIA H200}" --architecture sm_90 --driver "${driver:-580.159.04}" --cuda 13.0
            --fixture-delay-ms "${FIXTURE_DELAY_MS:-3000}")
    else
        # The children find the driver's libcuda and the toolkit's NVRTC here.
        export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
        worker+=(--scratch "$work/jobs")
        mkdir -p "$work/jobs"
    fi
    # shellcheck disable=SC2206
    worker+=(${WORKER_ARGS:-})
    "$ki" "${worker[@]}" --host worker-a > "$out/worker-a.jsonl" 2> "$out/worker-a.err" &
    victim_pid=$!
    "$ki" "${worker[@]}" --host worker-b > "$out/worker-b.jsonl" 2> "$out/worker-b.err" &
    other_pid=$!

    # Kill worker A in the middle of its second job (of its first, if 15 s pass first).
    local deadline=$((SECONDS + ${DEADLINE_SECONDS:-480})) victim_job="" state claims
    while [ $SECONDS -lt $deadline ]; do
        # "<claims> <the job it holds, when it is mid-job>"
        state=$(python3 - "$out/worker-a.jsonl" <<'PY'
import json, sys
events = [json.loads(line) for line in open(sys.argv[1]) if line.startswith("{")]
claims = [e for e in events if e.get("event") == "claimed"]
print(len(claims), events[-1]["jobId"] if events and events[-1].get("event") == "claimed" else "")
PY
)
        read -r claims victim_job <<< "$state"
        if [ -n "$victim_job" ] && { [ "$claims" -ge 2 ] || [ $((SECONDS - started)) -ge 15 ]; }; then break; fi
        victim_job=""
        kill -0 $victim_pid 2>/dev/null || { echo "worker A ended before it could be killed" >&2; break; }
        sleep 0.2
    done
    kill -9 $victim_pid 2>/dev/null || true
    wait $victim_pid 2>/dev/null || true
    local killed_at=$((SECONDS - started))
    # Worker B drains the rest, including A's job once its lease has run out.
    while kill -0 $other_pid 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 1; done
    kill -0 $other_pid 2>/dev/null && { echo "worker B did not drain the queue in time" >&2; kill -9 $other_pid; }
    wait $other_pid || true

    "$ki" verify status --database "$url" --json --limit 10000 > "$out/status.json"
    cp "$work/postgres.log" "$out/postgres.log"
    [ -n "$victim_job" ] && "$ki" verify status --database "$url" --json "$victim_job" > "$out/victim-job.json"
    "$ki" catalog export --database "$url" --out "$out/catalog-after.jsonl.zst" > "$out/export-after.txt"
    "$ki" catalog verify "$out/catalog-after.jsonl.zst" > "$out/verify-after.txt" || true
    local wall=$((SECONDS - started))

    python3 - "$out" "$jobs" "$victim_job" "$killed_at" "$wall" "$executor" "$pg_version" <<'PY' | tee "$out/queue-drain.md"
import json, re, sys
out, wanted, victim, killed_at, wall, executor, pg = sys.argv[1:8]
status = json.load(open(f"{out}/status.json"))
jobs = [job for state in status["jobs"].values() for job in state]
events = {name: [json.loads(l) for l in open(f"{out}/worker-{name}.jsonl") if l.startswith("{")] for name in "ab"}
completed = {name: [e for e in events[name] if e.get("event") == "completed"] for name in "ab"}
done = [job for job in jobs if job["state"] == "done"]
runs = [run for job in done for run in (job.get("published") or {}).get("runIds", [])]
def table(path):
    return dict(re.findall(r"^(\w+)\s+(\d+)$", open(path).read(), re.M))
def verified(path):
    text = open(path).read()
    ledger = re.search(r"record events.*", text)
    mismatches = re.search(r"(\d+) mismatches", text)
    return ledger.group(0) if ledger else "?", mismatches.group(1) if mismatches else "?"
before, after = table(f"{out}/export-before.txt"), table(f"{out}/export-after.txt")
ledger, mismatches = verified(f"{out}/verify-after.txt")
victim_detail = json.load(open(f"{out}/victim-job.json")) if victim else None
completions = [e["jobId"] for name in "ab" for e in completed[name]]
once = len(completions) == len(set(completions)) == len(done)
new_runs = int(after.get("benchmark_runs", 0)) - int(before.get("benchmark_runs", 0))
rows = [
    ("executor; PostgreSQL", f"{executor}; {pg}"),
    ("jobs enqueued (wanted)", f"{len(jobs)} ({wanted})"),
    ("done / parked / pending / running", " / ".join(str(sum(j['state'] == s for j in jobs)) for s in ("done", "parked", "pending", "running"))),
    ("completions: worker A (killed at %ss) / worker B" % killed_at, f"{len(completed['a'])} / {len(completed['b'])}"),
    ("each job completed exactly once", "yes" if once else "NO"),
    ("attempts, all jobs", str(sum(j["attempts"] for j in jobs))),
    ("killed worker's job", "-" if not victim_detail else f"{victim[:8]}: " + ", ".join(f"#{a['attempt']} {a.get('outcome')}" for a in victim_detail["attempts"])),
    ("runs published (distinct) / new benchmark_runs rows", f"{len(runs)} ({len(set(runs))}) / {new_runs}"),
    ("record_events before -> after", f"{before.get('record_events', '?')} -> {after.get('record_events', '?')}"),
    ("ki catalog verify of the export", f"{mismatches} mismatches; {ledger}"),
    ("wall (PostgreSQL start to verified export)", f"{wall} s"),
]
print("| queue drain | |\n|---|---|")
for name, value in rows:
    print(f"| {name} | {value} |")
exactly_once = once and len(runs) == len(set(runs)) == new_runs and mismatches == "0"
print(f"summary: jobs={len(jobs)} done={len(done)} exactly_once={'yes' if exactly_once else 'NO'} verify_mismatches={mismatches}")
PY
    # At most 8 files come back from the device: the table, the two workers' events, the
    # queue's final state, the killed worker's job, the verify report and the export; the
    # rest in one archive.
    local rest=(initdb.log postgres.log import.log enqueued.json export-before.txt export-after.txt verify-before.txt
        worker-a.err worker-b.err)
    (cd "$out" && tar czf logs.tar.gz "${rest[@]}" && rm -f "${rest[@]}")
}

case $mode in
    pack) shift; pack "$@" ;;
    run) shift; run "$@" ;;
    *) echo "usage: $0 pack [CARRY_DIR] | run CARRY_DIR (see the header)" >&2; exit 2 ;;
esac
