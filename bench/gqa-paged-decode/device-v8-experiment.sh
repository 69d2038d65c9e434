#!/usr/bin/env bash
# v8 experiments on the H200 (device tool, carry [".carry/kernels", ".carry/b"]): the GPU tests of the
# kernel and the runner, the kernel check of the shipped variant set and of 6 warps, timings of the
# shipped build (A) against 5 and 6 warps per CTA, cluster part sizes for single sequences, and a build
# whose K/V copies ask L2 for 256-byte prefetches (B: `.L2::256B` on cp.async).
set -u -o pipefail
OUT=${OUT:-/tmp/ki-out}
export KI_SHARED=.carry/kernels/shared LD_LIBRARY_PATH=/usr/local/cuda/lib64
A=.carry/kernels/gqa_bench
B=.carry/b/gqa_bench
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm --format=csv | tee $OUT/smi.txt
date -u +%FT%TZ | tee -a $OUT/smi.txt
.carry/b/kernels-gpu-tests --test-threads=1 matches_the_reference > $OUT/kernels-gpu-tests.log 2>&1; echo "kernels gpu tests rc=$?"
.carry/b/runner-gpu-tests --test-threads=1 > $OUT/runner-gpu-tests.log 2>&1; echo "runner gpu tests rc=$?"
mkdir -p $OUT/a $OUT/b $OUT/c
$A check --out $OUT/a --variants auto,w6s2 > $OUT/a/check.stdout 2>&1; echo "check rc=$?"; grep "check summary" $OUT/a/check.stdout
$A time --out $OUT/a --samples 200 --variants auto,w4s2,w5s2,w6s2 --tpw 0,seq > $OUT/a/time.stdout 2>&1; echo "time A rc=$?"
$A time --out $OUT/c --samples 200 --variants w4s2 --only wl01,wl03,wl05,wl09,wl13,wl14,wl15 \
  --tpw seq,cluster:2/128,cluster:4/128,cluster:8/64,cluster:8/128,cluster:8/256 > $OUT/c/time.stdout 2>&1; echo "time C rc=$?"
$B time --out $OUT/b --samples 200 --variants auto,w6s2 --tpw 0,seq > $OUT/b/time.stdout 2>&1; echo "time B rc=$?"
tail -3 $OUT/kernels-gpu-tests.log $OUT/runner-gpu-tests.log
