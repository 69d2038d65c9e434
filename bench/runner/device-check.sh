#!/usr/bin/env bash
# GPU checks of the runner on the H200 (device tool, carrying .whl and .carry/runner): the GPU test
# binary of crates/runner/tests/runner/gpu.rs, and `run --inputs --outputs` for FlashInfer and native on the
# seed workload's inputs.
set -u -o pipefail
OUT=${OUT:-/tmp/ki-out}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site FLASHINFER_WORKSPACE_BASE=/tmp/ki-flashinfer MAX_JOBS=16 PYTHONUNBUFFERED=1
C=.carry/runner
W=$C/fit/flashinfer_trace/workloads/gqa_paged/gqa_paged_decode_h32_kv4_d128_ps1.jsonl
$C/gpu-tests gpu:: --test-threads=1 2>&1 | tee $OUT/gpu-tests.log
$C/ki-runner reference gqa_paged_decode_h32_kv4_d128_ps1 --workloads $W --workload ec96bc77-3fba-4ebe-9895-e4d9cba52c9c --seed 7 --save-inputs /tmp/in.safetensors --out /tmp/ref.safetensors
for impl in flashinfer-tc native; do
  echo "== run --inputs --outputs $impl"
  timeout 200 $C/ki-runner run --operation gqa_paged_decode_h32_kv4_d128_ps1 --implementation $impl --inputs /tmp/in.safetensors --outputs /tmp/out-$impl.safetensors 2>&1 | tail -4 | tee -a $OUT/once.log
  ls -la /tmp/out-$impl.safetensors
done
