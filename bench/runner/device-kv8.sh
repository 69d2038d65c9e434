#!/usr/bin/env bash
# The h32/kv8 definition's 48 workloads through the runner, FlashInfer (both settings) and native side
# by side, one trial each (device tool, carry [".whl", ".carry/runner"]).
set -u -o pipefail
OUT=${OUT:-/tmp/ki-out}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site FLASHINFER_WORKSPACE_BASE=/tmp/ki-flashinfer MAX_JOBS=16 PYTHONUNBUFFERED=1 LD_LIBRARY_PATH=/usr/local/cuda/lib64
C=.carry/runner
mkdir -p /tmp/ki
timeout 330 $C/ki-runner run --operation gqa_paged_decode_h32_kv8_d128_ps1 \
  --workloads $C/fit/flashinfer_trace/workloads/gqa_paged/gqa_paged_decode_h32_kv8_d128_ps1.jsonl \
  --trials 1 --implementation flashinfer,native --catalog $C/catalog.jsonl.zst --out /tmp/ki/kv8 > $OUT/kv8.log 2>&1
echo "kv8 rc=$?"
tar czf $OUT/results.tgz -C /tmp/ki . 2>/dev/null
tail -3 $OUT/kv8.log; sed -n '/## Summary/,$p' /tmp/ki/kv8/results.md
