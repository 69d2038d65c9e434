#!/usr/bin/env bash
# v8 as shipped, on the H200 (device tool, carry [".whl", ".carry/runner", ".carry/kernels", ".carry/b",
# ".carry/v7"]): the GPU tests of the kernel and the runner, the v7/v8 comparison on one machine
# (device-v7-v8-ab.sh), then bench/runner/device-side-by-side.sh (kernel check
# and timing of the automatic variant set, the runner side by side with FlashInfer on the 48 h32/kv4
# workloads and 128 x 4,096 tokens), then bench/runner/device-kv8.sh. Everything comes back as one archive.
set -u -o pipefail
FINAL=/tmp/final
mkdir -p $FINAL
.carry/b/kernels-gpu-tests --test-threads=1 matches_the_reference > $FINAL/kernels-gpu-tests.log 2>&1; echo "kernels gpu tests rc=$?"
.carry/b/runner-gpu-tests --test-threads=1 > $FINAL/runner-gpu-tests.log 2>&1; echo "runner gpu tests rc=$?"
OUT=$FINAL bash bench/gqa-paged-decode/device-v7-v8-ab.sh
OUT=$FINAL SWEEP="auto" TPW="0,seq" bash bench/runner/device-side-by-side.sh
OUT=$FINAL bash bench/runner/device-kv8.sh
tar czf $OUT/final.tgz -C $FINAL .
