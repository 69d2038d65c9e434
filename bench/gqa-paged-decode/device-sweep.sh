#!/usr/bin/env bash
# Device-tool script (carry [".carry/kernels"]): correctness of each variant on every definition,
# then a timing sweep of variants × unit sizes over the 48 h32/kv4 workloads + 16×8192 + 128×4096.
#   VARIANTS="w4s3,hw4s3" TPW="0,16,64" bash bench/gqa-paged-decode/device-sweep.sh
set -u -o pipefail
OUT=${OUT:-/tmp/ki-out}
export KI_SHARED=.carry/kernels/shared LD_LIBRARY_PATH=/usr/local/cuda/lib64
B=.carry/kernels/gqa_bench
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv,noheader | tee $OUT/gpu.txt
date -u +%FT%TZ | tee -a $OUT/gpu.txt
$B check --out $OUT --variants "${CHECK_VARIANTS:-$VARIANTS}" > $OUT/check.stdout 2>&1; echo "check rc=$?"
grep -c "| true |" $OUT/check.stdout; grep "| false |" $OUT/check.stdout | head; grep "check summary" $OUT/check.stdout
$B time --out $OUT --samples ${SAMPLES:-200} --variants "$VARIANTS" --tpw "$TPW" > $OUT/time.stdout 2>&1; echo "time rc=$?"
tail -3 $OUT/time.stdout
