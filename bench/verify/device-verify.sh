#!/usr/bin/env bash
# `ki verify` on the GPU machine (through the device tool, from the repository root there, carrying
# `.whl` and `.carry/verify`; see README.md for how the carried folder is made).
#   MODE=shake: the bad inputs, the negative controls, one pr221 solution per family and the baselines
#               of those definitions on two workloads each, two trials.
#   MODE=full:  every pr221 solution of the families with workloads, the fixtures, and the baselines of
#               all their definitions on every workload, three trials.
set -u -o pipefail
OUT=${OUT:-/tmp/ki-out}
MODE=${MODE:-shake}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site KI_FLASHINFER_WORKSPACE=/tmp/ki-flashinfer
C=.carry/verify
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm --format=csv | tee $OUT/smi.txt
nvcc --version | tail -2 | tee -a $OUT/smi.txt
date -u +%FT%TZ | tee -a $OUT/smi.txt
FIX=$C/fixtures/solutions
if [ "$MODE" = mini ]; then
  SOLS="$FIX/*.json $(grep 'rmsnorm_h4096_cuda_optimized_r1_c0_high' $C/shake-solutions.txt)"
  ARGS="--limit 2 --trials 2 --timeout 12 --deadline ${DEADLINE:-70} --jobs 12"
elif [ "$MODE" = shake ]; then
  SOLS="$FIX/*.json $(cat $C/shake-solutions.txt)"
  ARGS="--limit 2 --trials 2 --timeout 25 --deadline ${DEADLINE:-230} --jobs 12"
else
  SOLS="$FIX/*.json $(cat $C/pr221-solutions.txt)"
  ARGS="--trials 2 --limit 6 --solution-workloads 2 --timeout 10 --deadline ${DEADLINE:-225} --jobs 15"
fi
start=$(date +%s)
$C/ki-runner verify $SOLS --definition $C/flashinfer_trace --baseline --catalog $C/catalog.jsonl.zst \
  --build-cache /tmp/ki-builds --out /tmp/v $ARGS 2>&1 | tee $OUT/verify.log | grep -v "^  " | tail -60
echo "verify rc=$? after $(( $(date +%s) - start )) s"
tar czf $OUT/verify.tgz -C /tmp v
ls -la $OUT
python3 - <<'PY'
import json, collections
c = collections.Counter()
for line in open("/tmp/v/runs.jsonl"):
    r = json.loads(line)
    c[(r["implementation"].startswith("baseline") or "flashinfer" in r["implementation"] or "torch" in r["implementation"] or "reference" in r["implementation"], r["verdict"]["verdict"])] += 1
for k, v in sorted(c.items()): print(k, v)
PY
