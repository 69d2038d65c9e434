#!/usr/bin/env bash
# v8, second experiment on the H200 (device tool, carry [".carry/kernels"]): schedules of long
# sequences (fixed units of 1,024-4,096 tokens or one CTA per sequence) at 4, 5 and 6 warps per CTA,
# and cluster part sizes for single sequences. Logs come back as one archive.
set -u -o pipefail
OUT=${OUT:-/tmp/ki-out}
export KI_SHARED=.carry/kernels/shared LD_LIBRARY_PATH=/usr/local/cuda/lib64
A=.carry/kernels/gqa_bench
W=/tmp/v8long
mkdir -p $W/long $W/clusters
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm --format=csv | tee $W/smi.txt
date -u +%FT%TZ | tee -a $W/smi.txt
$A time --out $W/long --samples 200 --variants w4s2,w5s2,w6s2 --only b128x4096,b16x8192,wl16,wl31,wl47,skew16 \
  --tpw 0,seq,1024,2048,4096 > $W/long/time.stdout 2>&1; echo "time long rc=$?"
$A time --out $W/clusters --samples 200 --variants w4s2 --only wl01,wl03,wl05,wl09,wl13,wl14,wl15 \
  --tpw seq,cluster:2/128,cluster:4/128,cluster:8/64,cluster:8/128,cluster:8/256 > $W/clusters/time.stdout 2>&1; echo "time clusters rc=$?"
tar czf $OUT/v8long.tgz -C $W .
