#!/usr/bin/env bash
# v9 (the balanced plan) and protocol v2, first device call (device tool, carry [".carry/kernel", ".whl"];
# .carry/kernel holds ki-runner, gqa_bench, shared/ (the definitions and workload lists), fit/ (the
# workload lists the runner reads, blobs absent: page tables synthesized), capture/ (the real batch of
# fixtures/real-decode-capture) and catalog.jsonl.zst). In one call:
#   1. the kernel check: every definition (+ head_dim 64), edge cases and batches under every length
#      rule, seven schedules, and the 48 h32/kv4 workloads under every rule through a graph;
#   2. a sweep: per-call time in one graph of the automatic variant under chunks 128..2048 tokens,
#      whole sequences and the automatic chunk, and of each variant with its automatic chunk, on the
#      48 h32/kv4 workloads + 16 x 8,192 + 128 x 4,096 under every rule; kv8's workloads, uniform;
#   3. the runner (protocol v2), FlashInfer both ways and native side by side: the 48 workloads with
#      realistic lengths (one trial) and the real capture (kv8, three trials);
#   4. FlashInfer's JIT cache comes back for the next call.
set -u -o pipefail
OUT=${OUT:-/tmp/ki-out}
K=.carry/kernel
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site KI_FLASHINFER_WORKSPACE=/tmp/ki-flashinfer MAX_JOBS=16 PYTHONUNBUFFERED=1
export KI_SHARED=$K/shared LD_LIBRARY_PATH=/usr/local/cuda/lib64
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm --format=csv | tee $OUT/smi.txt
date -u +%FT%TZ | tee -a $OUT/smi.txt
mkdir -p /tmp/ki /tmp/logs
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }

stamp "check"
# Six processes side by side: the compiles and CPU references are the cost, not the GPU.
for i in 0 1 2 3 4 5; do
  $K/gqa_bench check --out /tmp/logs --variants auto,w8s3,w5s2 --part $i/6 > /tmp/logs/check$i.stdout 2>&1 &
done
wait
cat /tmp/logs/check?.stdout > /tmp/logs/check.stdout
grep "check summary" /tmp/logs/check.stdout; echo "checks: $(grep -c '^check |' /tmp/logs/check.stdout), failed: $(grep -c '| false |' /tmp/logs/check.stdout)"
grep '| false |' /tmp/logs/check.stdout | head -20; grep -i "error" /tmp/logs/check.stdout | head -5

stamp "sweep"
$K/gqa_bench time --out /tmp/logs --samples 0 --pairs 10 --calls 10 --variants auto \
  --tpw 0,whole,bal:128,bal:256,bal:512,bal:1024,bal:2048 > /tmp/logs/sweep-chunks.stdout 2>&1; echo "sweep chunks rc=$?"
mv /tmp/logs/gqa_bench_time.log /tmp/logs/sweep-chunks.log
$K/gqa_bench time --out /tmp/logs --samples 0 --pairs 10 --calls 10 --variants w4s2,w8s3,w5s2 --tpw 0 \
  > /tmp/logs/sweep-variants.stdout 2>&1; echo "sweep variants rc=$?"
mv /tmp/logs/gqa_bench_time.log /tmp/logs/sweep-variants.log
$K/gqa_bench time --out /tmp/logs --samples 100 --pairs 20 --calls 20 --variants auto --tpw 0 --rules uniform \
  --only wl00,wl15,wl32,b128x4096 > /tmp/logs/sweep-replay.stdout 2>&1; echo "sweep replay rc=$?"
mv /tmp/logs/gqa_bench_time.log /tmp/logs/sweep-replay.log
$K/gqa_bench time --out /tmp/logs --samples 0 --pairs 10 --calls 10 --variants auto --tpw 0,whole,bal:512 \
  --rules uniform,realistic --definition gqa_paged_decode_h32_kv8_d128_ps1 > /tmp/logs/sweep-kv8.stdout 2>&1; echo "sweep kv8 rc=$?"
mv /tmp/logs/gqa_bench_time.log /tmp/logs/sweep-kv8.log

stamp "runner realistic"
timeout 300 $K/ki-runner run --operation gqa_paged_decode_h32_kv4_d128_ps1 \
  --workloads $K/fit/flashinfer_trace/workloads/gqa_paged/gqa_paged_decode_h32_kv4_d128_ps1.jsonl \
  --implementation flashinfer,native --trials 1 --lengths realistic --out /tmp/ki/realistic > /tmp/logs/realistic.log 2>&1
echo "realistic rc=$?"
stamp "runner capture"
timeout 120 $K/ki-runner run --operation gqa_paged_decode_h32_kv8_d128_ps1 \
  --workloads $K/capture/flashinfer_trace/workloads/gqa_paged/gqa_paged_decode_h32_kv8_d128_ps1.jsonl \
  --implementation flashinfer,native --trials 3 --out /tmp/ki/capture > /tmp/logs/capture.log 2>&1
echo "capture rc=$?"
stamp "done"

tar czf $OUT/logs.tgz -C /tmp logs ki 2>/dev/null
tar czf $OUT/fi-jit.tgz -C /tmp ki-flashinfer 2>/dev/null
ls -la $OUT
tail -3 /tmp/logs/realistic.log; tail -3 /tmp/logs/capture.log
sed -n '/## Summary/,$p' /tmp/ki/realistic/results.md /tmp/ki/capture/results.md
python3 - <<'PY'
import re, collections, math
# Per rule: geomean of the automatic plan's in-graph time, and of the best chunk per case.
rows = [l.split("|") for l in open("/tmp/logs/sweep-chunks.log") if l.startswith("time |") and "skipped" not in l and "ingraph_us" not in l]
auto, best = collections.defaultdict(list), collections.defaultdict(list)
cases = collections.defaultdict(dict)
for r in rows:
    case, rule, tpw, t = r[1].strip(), r[2].strip(), r[8].strip(), float(r[11])
    cases[(case, rule)][tpw] = t
for (case, rule), d in cases.items():
    if "0" in d:
        auto[rule].append(d["0"]); best[rule].append(min(d.values()))
g = lambda v: math.exp(sum(map(math.log, v)) / len(v)) if v else float("nan")
for rule in auto:
    print(f"{rule:10s} auto {g(auto[rule]):7.2f} us  best-of-chunks {g(best[rule]):7.2f} us  ({len(auto[rule])} cases)")
PY
