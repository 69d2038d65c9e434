#!/usr/bin/env bash
# v9.1 against v9 on one machine (device tool, carry [".carry/kernel", ".whl"]; .carry/kernel/prev/gqa_bench
# is v9's build, commit 2c8c748): the kernel check of v9.1 (every definition, edge cases, every length
# rule, seven schedules), then both builds' per-call times in one graph, interleaved, on the 48 h32/kv4
# workloads + 16 x 8,192 + 128 x 4,096 under every rule, and the variants of 128 x 4,096.
set -u -o pipefail
OUT=${OUT:-/tmp/ki-out}
K=.carry/kernel
export KI_SHARED=$K/shared LD_LIBRARY_PATH=/usr/local/cuda/lib64
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm --format=csv | tee $OUT/smi.txt
date -u +%FT%TZ | tee -a $OUT/smi.txt
mkdir -p /tmp/logs
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
stamp "check"
for i in 0 1 2 3 4 5; do
  $K/gqa_bench check --out /tmp/logs --variants auto --part $i/6 > /tmp/logs/check$i.stdout 2>&1 &
done
wait
cat /tmp/logs/check?.stdout > /tmp/logs/check.stdout
grep "check summary" /tmp/logs/check.stdout; echo "checks: $(grep -c '^check |' /tmp/logs/check.stdout), failed: $(grep -c '| false |' /tmp/logs/check.stdout)"
grep '| false |' /tmp/logs/check.stdout | head -20; grep -i "error" /tmp/logs/check.stdout | head -5
stamp "a/b"
for round in 1 2; do
  for v in prev new; do
    bin=$K/gqa_bench; [ $v = prev ] && bin=$K/prev/gqa_bench
    $bin time --out /tmp/logs --samples 0 --pairs 10 --calls 10 --variants auto --tpw 0 > /tmp/logs/ab-$v-$round.stdout 2>&1
    echo "$v round $round rc=$?"; mv /tmp/logs/gqa_bench_time.log /tmp/logs/ab-$v-$round.log
  done
done
stamp "b128"
$K/gqa_bench time --out /tmp/logs --samples 0 --pairs 10 --calls 10 --variants w4s2,w5s2,w6s2 --tpw 0,bal:4096,bal:5296,bal:7944 \
  --only b128x4096 > /tmp/logs/b128.stdout 2>&1; echo "b128 rc=$?"; mv /tmp/logs/gqa_bench_time.log /tmp/logs/b128.log
stamp "done"
tar czf $OUT/logs.tgz -C /tmp logs
python3 - <<'PY'
import collections, math
def load(path):
    d = {}
    for l in open(path):
        f = [x.strip() for x in l.split("|")]
        if len(f) > 11 and f[0] == "time" and f[1] != "id" and "skipped" not in l:
            d[(f[1], f[2])] = float(f[11])
    return d
g = lambda v: math.exp(sum(map(math.log, v)) / len(v))
runs = {(v, r): load(f"/tmp/logs/ab-{v}-{r}.log") for v in ("prev", "new") for r in (1, 2)}
keys = sorted(runs[("new", 1)])
for rule in ("uniform", "realistic", "lognormal", "tail"):
    ks = [k for k in keys if k[1] == rule]
    line = [f"{rule:9s}"]
    for v in ("prev", "new"):
        line.append(f"{v} {g([min(runs[(v,1)][k], runs[(v,2)][k]) for k in ks]):6.2f}")
    b16 = [k for k in ks if k[0].startswith("wl") and int(k[0][2:]) >= 32]
    for v in ("prev", "new"):
        line.append(f"b16 {v} {g([min(runs[(v,1)][k], runs[(v,2)][k]) for k in b16]):6.2f}")
    print("  ".join(line))
for k in [("wl32", r) for r in ("uniform", "realistic", "lognormal", "tail")] + [("b128x4096", r) for r in ("uniform", "realistic")]:
    print(k, [round(runs[(v, r)].get(k, float("nan")), 2) for v in ("prev", "new") for r in (1, 2)])
PY
grep "b128x4096" /tmp/logs/b128.log | awk -F'|' '{print $3, $9, $10, $11, $12, $16}'
