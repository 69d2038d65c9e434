#!/usr/bin/env bash
# Device call 1 of session 2026-12-04 (issue 31): API probe, then the landed lane (crash fixed) on
# the two PR-221 r4 solutions and the FlashInfer decode/prefill baselines, to see what times out.
set -u -o pipefail
OUT=${OUT:-/tmp/ki-out}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site KI_FLASHINFER_WORKSPACE=/tmp/ki-flashinfer PYTHONUNBUFFERED=1
C=.carry/verify
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee $OUT/smi.txt
timeout 120 python3 bench/verify/probe/probe.py 2>&1 | tee $OUT/probe.log | tail -45
start=$(date +%s)
timeout 300 $C/ki-runner verify $C/pr221/*.json --definition $C/flashinfer_trace --baseline \
  --only gqa_paged_decode_h32_kv4_d128_ps1,gqa_paged_prefill_causal_h32_kv4_d128_ps1,rmsnorm_h4096 \
  --limit 2 --trials 1 --timeout 40 --deadline 200 --jobs 8 --out /tmp/v1 > $OUT/verify1.log 2>&1
echo "verify rc=$? after $(( $(date +%s) - start )) s"
grep -v "^  \[" $OUT/verify1.log | tail -30
grep "^  \[" $OUT/verify1.log | cut -c1-220
tar czf $OUT/v1.tgz -C /tmp v1 ki-flashinfer 2>/dev/null; ls -la $OUT
