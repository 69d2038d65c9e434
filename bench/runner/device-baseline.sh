#!/usr/bin/env bash
# The FlashInfer baseline on the GPU machine (run from the repository root there, through the device
# tool, with .whl and .carry/runner carried). Installs the FlashInfer wheels, checks the worker and
# JIT on two workloads, then runs all 48 h32/kv4 workloads with both use_tensor_cores settings and
# a short native-kernel check; results come back as one archive under $OUT.
set -u -o pipefail
OUT=${OUT:-/tmp/ki-out}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site FLASHINFER_WORKSPACE_BASE=/tmp/ki-flashinfer MAX_JOBS=16 PYTHONUNBUFFERED=1
C=.carry/runner
W=$C/fit/flashinfer_trace/workloads/gqa_paged/gqa_paged_decode_h32_kv4_d128_ps1.jsonl
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm --format=csv | tee $OUT/smi.txt
mkdir -p /tmp/ki
BUDGET=${BUDGET:-540}
start=$(date +%s)
left() { echo $(( BUDGET - ($(date +%s) - start) )); }
# 1. probe: two workloads, one trial (also compiles FlashInfer's JIT modules once)
timeout $(left) $C/ki-runner run --operation gqa_paged_decode_h32_kv4_d128_ps1 --workloads $W --limit 2 --trials 1 \
  --implementation flashinfer --catalog $C/catalog.jsonl.zst --out /tmp/ki/probe 2>&1 | tee $OUT/probe.log
probe=$?
echo "probe rc=$probe after $(( $(date +%s) - start )) s"
# 2. the baseline: every workload, 3 trials, both settings
if [ $probe -eq 0 ] || [ $probe -eq 2 ]; then
  timeout $(( $(left) - 60 )) $C/ki-runner run --operation gqa_paged_decode_h32_kv4_d128_ps1 --workloads $W \
    --implementation flashinfer --catalog $C/catalog.jsonl.zst --out /tmp/ki/baseline 2>&1 | tee $OUT/baseline.log
  echo "baseline rc=$? after $(( $(date +%s) - start )) s"
fi
# 3. the native adapter on three workloads (the kernels crate's kernel, one trial)
timeout 50 $C/ki-runner run --operation gqa_paged_decode_h32_kv4_d128_ps1 --workloads $W --limit 3 --trials 1 \
  --implementation native --catalog $C/catalog.jsonl.zst --out /tmp/ki/native 2>&1 | tail -8 | tee $OUT/native.log
tar czf $OUT/results.tgz -C /tmp/ki . 2>/dev/null
grep -h "^|" /tmp/ki/baseline/results.md 2>/dev/null | tail -8
