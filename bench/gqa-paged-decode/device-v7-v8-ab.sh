#!/usr/bin/env bash
# Same machine, same cases: the v7 kernel (commit 33e2ed5, carried as .carry/v7/gqa_bench) and v8
# (.carry/kernels/gqa_bench), whole sequences at 4 warps, interleaved twice, to tell a code
# regression on short sequences from a slower machine. Device tool, carry [".carry/kernels", ".carry/v7"].
set -u -o pipefail
OUT=${OUT:-/tmp/ki-out}
export KI_SHARED=.carry/kernels/shared LD_LIBRARY_PATH=/usr/local/cuda/lib64
W=/tmp/ab
ONLY=wl00,wl02,wl08,wl12,wl15,wl32,wl34,wl40,wl16
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $W.smi; date -u +%FT%TZ | tee -a $W.smi
for round in 1 2; do
  for v in v7 v8; do
    bin=.carry/kernels/gqa_bench; [ $v = v7 ] && bin=.carry/v7/gqa_bench
    mkdir -p $W/$v-$round
    $bin time --out $W/$v-$round --samples 200 --variants w4s2 --only $ONLY --tpw seq,fill:1024 > $W/$v-$round/stdout 2>&1; echo "$v round $round rc=$?"
  done
done
cp $W.smi $W/smi.txt; tar czf $OUT/ab.tgz -C $W .
