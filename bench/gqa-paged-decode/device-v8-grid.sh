#!/usr/bin/env bash
# v8 with parts as the grid's slowest dimension and the long-unit rule of NOTES.md "Next" (device
# tool, carry [".whl", ".carry/runner", ".carry/kernels", ".carry/prev"]): the previous build
# (commit f8c938a, .carry/prev/gqa_bench) and this one interleaved on one machine, then the kernel
# check, the runner side by side with FlashInfer (48 h32/kv4 workloads, 128 x 4,096) and the kv8
# workloads. Everything comes back as one archive.
set -u -o pipefail
FINAL=/tmp/final
mkdir -p $FINAL/ab
export KI_SHARED=.carry/kernels/shared LD_LIBRARY_PATH=/usr/local/cuda/lib64
for round in 1 2; do
  for v in prev new; do
    bin=.carry/kernels/gqa_bench; [ $v = prev ] && bin=.carry/prev/gqa_bench
    mkdir -p $FINAL/ab/$v-$round
    $bin time --out $FINAL/ab/$v-$round --samples 200 --only wl00,wl15,wl32,wl34,wl36,wl38,wl40,b16x8192,b128x4096 \
      > $FINAL/ab/$v-$round/stdout 2>&1; echo "$v round $round rc=$?"
  done
done
OUT=$FINAL SWEEP="auto" TPW="0" bash bench/runner/device-side-by-side.sh
OUT=$FINAL bash bench/runner/device-kv8.sh
tar czf $OUT/final.tgz -C $FINAL .
