#!/usr/bin/env bash
# Issue 8's measurement through the verification runner (device tool, carry [".whl", ".carry/runner",
# ".carry/kernels"]): FlashInfer 0.5.3 (both use_tensor_cores settings) and the native kernel side by
# side on the same materialized inputs of all 48 h32/kv4 workloads, then 128 x 4,096 tokens, then a
# python:PATH implementation on the seed workload. Manifests, samples and tables come back as an archive.
set -u -o pipefail
OUT=${OUT:-/tmp/ki-out}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site FLASHINFER_WORKSPACE_BASE=/tmp/ki-flashinfer MAX_JOBS=16 PYTHONUNBUFFERED=1
export KI_SHARED=.carry/kernels/shared LD_LIBRARY_PATH=/usr/local/cuda/lib64
C=.carry/runner
W=$C/fit/flashinfer_trace/workloads/gqa_paged/gqa_paged_decode_h32_kv4_d128_ps1.jsonl
OP=gqa_paged_decode_h32_kv4_d128_ps1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm --format=csv | tee $OUT/smi.txt
date -u +%FT%TZ | tee -a $OUT/smi.txt
mkdir -p /tmp/ki
if [ -n "${SWEEP:-}" ]; then
  .carry/kernels/gqa_bench check --out $OUT --variants "$SWEEP" > $OUT/check.stdout 2>&1; echo "kernel check rc=$?"
  grep "check summary" $OUT/check.stdout; grep -c "| false |" $OUT/check.stdout
  .carry/kernels/gqa_bench time --out $OUT --samples 200 --variants "$SWEEP" --tpw "${TPW:-0}" > $OUT/time.stdout 2>&1; echo "kernel time rc=$?"
fi
timeout 420 $C/ki-runner run --operation $OP --workloads $W --implementation flashinfer,native \
  --catalog $C/catalog.jsonl.zst --out /tmp/ki/side-by-side > $OUT/side-by-side.log 2>&1
echo "side-by-side rc=$?"
timeout 120 $C/ki-runner run --operation $OP --axis batch_size=128 --axis num_pages=524288 --axis len_indptr=129 \
  --axis num_kv_indices=524288 --trials 1 --implementation flashinfer,native --out /tmp/ki/b128x4096 > $OUT/b128x4096.log 2>&1
echo "b128x4096 rc=$?"
timeout 120 $C/ki-runner run --operation $OP --workloads $W --workload ec96bc77-3fba-4ebe-9895-e4d9cba52c9c --trials 1 \
  --implementation python:bench/runner/python/torch_gqa_paged_decode.py --out /tmp/ki/python > $OUT/python.log 2>&1
echo "python rc=$?"
tar czf $OUT/results.tgz -C /tmp/ki . 2>/dev/null
tail -4 $OUT/side-by-side.log; tail -3 $OUT/b128x4096.log; tail -3 $OUT/python.log
