#!/usr/bin/env bash
# The final call for issue 14 (device tool, carry [".carry/kernel", ".whl"]). .carry/kernel holds
# new/ (v9.1: ki-runner and gqa_bench of commit ed95807) and prev/ (v9, commit 2c8c748), shared/ (the
# definitions and workload lists), fit/ (the workload lists the runner reads; blobs absent, so page
# tables are synthesized), capture/ (fixtures/real-decode-capture), catalog.jsonl.zst and fi-jit.tgz
# (FlashInfer's JIT cache from the 10:23 call). In one call:
#   1. the kernel check of v9.1 (every definition + head_dim 64, edge cases, every length rule, seven
#      schedules, three variants, the 48 h32/kv4 workloads under every rule through a graph);
#   2. v9 and v9.1 per call in one graph, interleaved twice, on the 48 workloads + 16 x 8,192 +
#      128 x 4,096 under every rule; v9.1 is kept unless it failed a check or is slower, else v9;
#   3. the runner (protocol kernelindex-rerun-v2) with the kept build, FlashInfer both ways and native
#      side by side: h32/kv4 realistic (3 trials), uniform, tail, lognormal (1 trial each), the real
#      capture (kv8, 3 trials), 128 x 4,096 uniform and 128 sequences of realistic lengths totalling
#      524,288 tokens (1 trial each), h32/kv8 realistic (1 trial).
# Results go to $OUT after every step, so a call stopped at its limit still brings back what ran.
set -u -o pipefail
OUT=${OUT:-/tmp/ki-out}
K=.carry/kernel
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site KI_FLASHINFER_WORKSPACE=/tmp/ki-flashinfer MAX_JOBS=16 PYTHONUNBUFFERED=1
export KI_SHARED=$K/shared LD_LIBRARY_PATH=/usr/local/cuda/lib64
tar xzf $K/fi-jit.tgz -C /tmp
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm --format=csv | tee $OUT/smi.txt
date -u +%FT%TZ | tee -a $OUT/smi.txt
mkdir -p /tmp/ki /tmp/logs
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
save() { tar czf $OUT/logs.tgz -C /tmp logs 2>/dev/null; tar czf $OUT/ki.tgz -C /tmp ki 2>/dev/null; }

stamp "check"
for i in 0 1 2 3 4 5; do
  $K/new/gqa_bench check --out /tmp/logs --variants auto,w8s3,w5s2 --part $i/6 > /tmp/logs/check$i.stdout 2>&1 &
done
wait
cat /tmp/logs/check?.stdout > /tmp/logs/check.stdout
checks=$(grep -c '^check |' /tmp/logs/check.stdout); failed=$(grep -c '| false |' /tmp/logs/check.stdout)
summaries=$(grep -c "check summary: all_correct=true" /tmp/logs/check.stdout)
echo "checks: $checks, failed: $failed, parts all correct: $summaries of 6"
grep '| false |' /tmp/logs/check.stdout | head -10

stamp "a/b"
for round in 1 2; do
  for v in prev new; do
    $K/$v/gqa_bench time --out /tmp/logs --samples 0 --pairs 10 --calls 10 --variants auto --tpw 0 > /tmp/logs/ab-$v-$round.stdout 2>&1
    echo "$v round $round rc=$?"; mv /tmp/logs/gqa_bench_time.log /tmp/logs/ab-$v-$round.log
  done
done
choice=$(CHECKS_OK=$([ "$failed" = 0 ] && [ "$summaries" = 6 ] && echo 1 || echo 0) python3 - <<'PY'
import math, os, sys
def load(path):
    d = {}
    for l in open(path):
        f = [x.strip() for x in l.split("|")]
        if len(f) > 11 and f[0] == "time" and f[1] != "id" and "skipped" not in l:
            d[(f[1], f[2])] = float(f[11])
    return d
g = lambda v: math.exp(sum(map(math.log, v)) / len(v))
runs = {(v, r): load(f"/tmp/logs/ab-{v}-{r}.log") for v in ("prev", "new") for r in (1, 2)}
keys = sorted(set(runs[("new", 1)]) & set(runs[("prev", 1)]))
best = {v: {k: min(runs[(v, 1)][k], runs[(v, 2)].get(k, float("inf"))) for k in keys} for v in ("prev", "new")}
with open("/tmp/logs/ab-summary.txt", "w") as out:
    for rule in ("uniform", "realistic", "lognormal", "tail"):
        ks = [k for k in keys if k[1] == rule]
        b16 = [k for k in ks if k[0].startswith("wl") and int(k[0][2:]) >= 32]
        print(rule, *(f"{v} {g([best[v][k] for k in ks]):.2f} (batch 16: {g([best[v][k] for k in b16]):.2f})" for v in ("prev", "new")), file=out)
    for k in keys:
        print(*k, *(f"{best[v][k]:.2f}" for v in ("prev", "new")), file=out)
    overall = {v: g(list(best[v].values())) for v in ("prev", "new")}
    keep = "new" if os.environ["CHECKS_OK"] == "1" and overall["new"] <= overall["prev"] * 1.005 else "prev"
    print(f"overall geomean prev {overall['prev']:.3f} new {overall['new']:.3f}; checks ok {os.environ['CHECKS_OK']}; kept {keep}", file=out)
print(keep)
PY
)
head -4 /tmp/logs/ab-summary.txt; tail -1 /tmp/logs/ab-summary.txt
echo "$choice" > /tmp/logs/choice.txt
R=$K/$choice/ki-runner
save

W4=$K/fit/flashinfer_trace/workloads/gqa_paged/gqa_paged_decode_h32_kv4_d128_ps1.jsonl
W8=$K/fit/flashinfer_trace/workloads/gqa_paged/gqa_paged_decode_h32_kv8_d128_ps1.jsonl
OP4=gqa_paged_decode_h32_kv4_d128_ps1
OP8=gqa_paged_decode_h32_kv8_d128_ps1
run() {  # name, timeout, runner arguments...
  local name=$1 limit=$2; shift 2
  stamp "runner $name"
  timeout $limit $R run "$@" --out /tmp/ki/$name > /tmp/logs/$name.log 2>&1; echo "$name rc=$?"
  tail -1 /tmp/logs/$name.log
  save
}
run realistic 200 --operation $OP4 --workloads $W4 --implementation flashinfer,native --trials 3 --lengths realistic --catalog $K/catalog.jsonl.zst
run uniform 90 --operation $OP4 --workloads $W4 --implementation flashinfer,native --trials 1 --lengths uniform --catalog $K/catalog.jsonl.zst
run tail 90 --operation $OP4 --workloads $W4 --implementation flashinfer,native --trials 1 --lengths tail --catalog $K/catalog.jsonl.zst
run lognormal 90 --operation $OP4 --workloads $W4 --implementation flashinfer,native --trials 1 --lengths lognormal --catalog $K/catalog.jsonl.zst
run capture 60 --operation $OP8 --workloads $K/capture/flashinfer_trace/workloads/gqa_paged/gqa_paged_decode_h32_kv8_d128_ps1.jsonl \
  --implementation flashinfer,native --trials 3
B128="--axis batch_size=128 --axis num_pages=524288 --axis len_indptr=129 --axis num_kv_indices=524288"
run b128x4096 60 --operation $OP4 $B128 --implementation flashinfer,native --trials 1 --lengths uniform
run b128-realistic 60 --operation $OP4 $B128 --implementation flashinfer,native --trials 1 --lengths realistic
run kv8-realistic 90 --operation $OP8 --workloads $W8 --implementation flashinfer,native --trials 1 --lengths realistic --catalog $K/catalog.jsonl.zst
stamp "done"
ls -la $OUT
python3 - <<'PY'
import math, re, os
g = lambda v: math.exp(sum(map(math.log, v)) / len(v)) if v else float("nan")
for name in ("realistic", "uniform", "tail", "lognormal", "capture", "b128x4096", "b128-realistic", "kv8-realistic"):
    path = f"/tmp/ki/{name}/results.md"
    if not os.path.exists(path):
        print(name, "missing"); continue
    rows = {}
    for line in open(path):
        if re.match(r"\| \d+ \|", line):
            f = [x.strip() for x in line.split("|")]
            rows.setdefault(f[2], {})[f[5]] = (float(f[6].rstrip("*")), f[11] == "yes", int(f[4]))
    ratios = [min(v["flashinfer-notc"][0], v["flashinfer-tc"][0]) / v["kernelindex-native"][0] for v in rows.values() if len(v) == 3]
    correct = all(c for v in rows.values() for (_, c, _) in v.values())
    extra = ""
    if name.startswith("b128"):
        n = list(rows.values())[0]["kernelindex-native"]
        extra = f" native {n[0]:.1f} us = {n[2] * 4 * 128 * 2 * 2 / (n[0] * 1e-6) / 1e12:.2f} TB/s"
    seed = rows.get("ec96bc77", {}).get("kernelindex-native")
    if seed:
        extra += f" seed {seed[0]:.2f} us"
    print(f"{name:15s} n={len(ratios):2d} geomean {g(ratios):.3f} min {min(ratios) if ratios else float('nan'):.3f} correct {correct}{extra}")
PY
