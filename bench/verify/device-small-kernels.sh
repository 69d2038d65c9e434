#!/usr/bin/env bash
# Device call after the in-graph noise fix (2026-12-06): the smoke, then the baselines whose small
# kernels the coverage run (bench/verify/coverage/2026-12-06-call{2,3}-h100/, in git history at commit
# bef9f60) could not time in a graph: gemm_n2048_k4096 and gemm_n256_k7168 (small M), rmsnorm_h128,
# four workloads each; then
# qwen3.5's rmsnorm_h4096 r10 (it exits the process when cudaDeviceSynchronize fails under capture:
# the runner must run it again without the graph method, timed by CUPTI).
# Carry .carry/verify and .whl. Env: BUDGET (s the whole call may take, default 260).
set -u -o pipefail
OUT=${OUT:-/tmp/ki-out}
T0=$(date +%s)
BUDGET=${BUDGET:-260}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site KI_FLASHINFER_WORKSPACE=/tmp/ki-flashinfer PYTHONUNBUFFERED=1
C=.carry/verify
timeout 160 bash bench/verify/smoke.sh | tail -12
left=$(( BUDGET - ($(date +%s) - T0) - 15 ))
timeout $left $C/ki-runner verify --definition $C/flashinfer_trace --baseline --only gemm_n2048_k4096,gemm_n256_k7168,rmsnorm_h128 \
  --limit 4 --trials 3 --timeout 60 --jobs 6 --deadline $(( left - 20 )) --build-cache /tmp/ki-builds --out /tmp/small > $OUT/small.log 2>&1
echo "small kernels rc=$? in $(( $(date +%s) - T0 )) s"
cp /tmp/small/runs.jsonl $OUT/small-runs.jsonl
left=$(( BUDGET - ($(date +%s) - T0) - 10 ))
timeout $left $C/ki-runner verify $C/pr221-all/fib_qwen_all_defs_20260317_142645__Qwen3.5-27B_rmsnorm_h4096_cuda_optimized_r10_c0.json \
  --definition $C/flashinfer_trace --solution-workloads 3 --trials 2 --timeout 60 --deadline $(( left - 20 )) \
  --build-cache /tmp/ki-builds --out /tmp/capture-exit > $OUT/capture-exit.log 2>&1
echo "capture-exit rc=$?"; cat /tmp/capture-exit/runs.jsonl >> /tmp/small/runs.jsonl
python3 - <<'PY'
import json
for line in open("/tmp/small/runs.jsonl"):
    r = json.loads(line); v = r["verdict"]; lat = r.get("latency") or {}
    print(f"{r['definition'][:20]:20} {str(r['axes'])[:22]:22} {v['verdict'][:14]:14} {str(r.get('method'))[:16]:16} "
          f"{lat.get('median', 0) / 1e3:8.2f} [{lat.get('p10', 0) / 1e3:7.2f}, {lat.get('p90', 0) / 1e3:7.2f}] {(v.get('reason') or '')[:90]}")
PY
