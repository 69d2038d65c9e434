#!/usr/bin/env bash
# Device call of issue 31: the smoke, the corpus, the two PR-221 r4 solutions and the FlashInfer
# decode baseline through `ki-runner verify`, then ncu kernel durations of the honest corpus and of
# the PR-221 solutions on the same workloads, the per-kernel floor of both figures
# (probe/memcpy_gate.py: a one-element kernel), and the native kernel's PyTorch launcher test.
# Carry .carry/verify and .whl.
set -u -o pipefail
OUT=${OUT:-/tmp/ki-out}
T0=$(date +%s)
# Seconds a stage may take: its own limit, or what is left of the call's CALL_BUDGET (default 560 s
# of its 10 minutes, a margin left for the logs), whichever is smaller; a stage with under 20 s left
# is skipped (timeout 1).
budget() { local left=$(( ${CALL_BUDGET:-560} - ($(date +%s) - T0) )); (( left < 20 )) && left=1; echo $(( $1 < left ? $1 : left )); }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site KI_FLASHINFER_WORKSPACE=/tmp/ki-flashinfer PYTHONUNBUFFERED=1
C=.carry/verify
CORPUS=crates/runner/tests/fixtures/verify/corpus
mkdir -p $OUT/x; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee $OUT/x/smi.txt
BUILDS=/tmp/ki-builds timeout $(budget 200) bash bench/verify/smoke.sh | tail -12
t=$(date +%s)
timeout $(budget 260) $C/ki-runner verify $CORPUS/solutions/*.json crates/runner/tests/fixtures/verify/solutions/solution_hack_*.json \
  --definition $CORPUS/flashinfer_trace --trials 2 --timeout 60 --jobs 8 --build-cache /tmp/ki-builds --out /tmp/corpus > $OUT/x/corpus.log 2>&1
echo "corpus rc=$? in $(( $(date +%s) - t )) s"
cp /tmp/corpus/runs.jsonl $OUT/corpus-runs.jsonl  # kept at once: a call cut short still returns it
t=$(date +%s)
timeout $(budget 150) $C/ki-runner verify $C/pr221/*.json --definition $C/flashinfer_trace --baseline --only gqa_paged_decode_h32_kv4_d128_ps1 \
  --limit 3 --trials 2 --timeout 60 --jobs 8 --build-cache /tmp/ki-builds --out /tmp/pr221 > $OUT/x/pr221.log 2>&1
echo "pr221 rc=$? in $(( $(date +%s) - t )) s"
cp /tmp/pr221/runs.jsonl $OUT/pr221-runs.jsonl
NCU="ncu --clock-control none --nvtx --nvtx-include ki/ --metrics gpu__time_duration.sum,sm__cycles_active.max,sm__cycles_elapsed.avg.per_second,gpc__cycles_elapsed.max,gpc__cycles_elapsed.avg.per_second --csv"
timeout $(budget 90) $NCU --log-file $OUT/x/ncu-corpus.csv python3 bench/verify/corpus_ncu.py $CORPUS /tmp/ki-builds /tmp/corpus/runs.jsonl > $OUT/x/ncu-corpus-order.txt 2>$OUT/x/ncu-corpus.err
timeout $(budget 90) $NCU --log-file $OUT/x/ncu-pr221.csv python3 bench/verify/pr221_ncu.py /tmp/pr221/runs.jsonl /tmp/ki-builds $C/flashinfer_trace > $OUT/x/ncu-pr221-order.txt 2>$OUT/x/ncu-pr221.err
timeout $(budget 60) python3 bench/verify/pr221_graph.py /tmp/pr221/runs.jsonl /tmp/ki-builds $C/flashinfer_trace > $OUT/pr221-graph.json 2> $OUT/x/pr221-graph.err; tail -c 300 $OUT/x/pr221-graph.err
python3 bench/verify/ncu_table.py $OUT/x/ncu-corpus-order.txt $OUT/x/ncu-corpus.csv > $OUT/ncu-corpus.json; tail -c 600 $OUT/x/ncu-corpus.err
python3 bench/verify/ncu_table.py $OUT/x/ncu-pr221-order.txt $OUT/x/ncu-pr221.csv > $OUT/ncu-pr221.json; tail -c 600 $OUT/x/ncu-pr221.err
timeout $(budget 40) python3 bench/verify/probe/memcpy_gate.py > $OUT/memcpy-gate.md 2>&1
timeout $(budget 40) $NCU --log-file $OUT/x/ncu-floor.csv python3 bench/verify/probe/memcpy_gate.py ncu > /dev/null 2>&1
python3 -c "
import statistics, sys
sys.path.insert(0, 'bench/verify')
from ncu_table import kernels
k = [m for _, m in kernels('$OUT/x/ncu-floor.csv')]
d = [m['gpu__time_duration.sum'] for m in k]
c = [m['sm__cycles_active.max'] / m['sm__cycles_elapsed.avg.per_second'] * 1e9 for m in k]
print(f'one-element add_ kernel, ncu gpu__time_duration: median {statistics.median(d):.0f} ns over {len(d)} (min {min(d):.0f}, max {max(d):.0f})')
print(f'one-element add_ kernel, ncu sm__cycles_active.max / SM clock: median {statistics.median(c):.0f} ns over {len(c)} (min {min(c):.0f}, max {max(c):.0f})')
g = [m['gpc__cycles_elapsed.max'] / m['gpc__cycles_elapsed.avg.per_second'] * 1e9 for m in k if m.get('gpc__cycles_elapsed.avg.per_second')]
g and print(f'one-element add_ kernel, ncu gpc__cycles_elapsed.max / GPC clock: median {statistics.median(g):.0f} ns over {len(g)} (min {min(g):.0f}, max {max(g):.0f})')
" | tee -a $OUT/memcpy-gate.md
timeout $(budget 40) python3 -m unittest discover -s crates/kernels/python/tests > $OUT/kernels-launcher-test.txt 2>&1
echo "native launcher test rc=$?"; tail -4 $OUT/kernels-launcher-test.txt
cp $OUT/smoke*.* $OUT/x/ 2>/dev/null; rm -f $OUT/smoke.log $OUT/smoke-smi.txt $OUT/smoke-ncu*
tar czf $OUT/logs.tgz -C /tmp corpus/logs pr221/logs corpus/samples pr221/samples corpus/session.json pr221/session.json smoke/runs.jsonl smoke/logs smoke/samples -C $OUT x 2>/dev/null; rm -rf $OUT/x
python3 - <<'PY'
import json
for f in ("/tmp/corpus/runs.jsonl", "/tmp/pr221/runs.jsonl"):
    for line in open(f):
        r = json.loads(line); v = r["verdict"]
        lat = r.get("latency") or {}
        print(f"{r['implementation'][:44]:44} {r['workload'][:8]} {(v.get('status') or v['verdict'])[:22]:22} {lat.get('median', 0)/1e3:9.2f} {str(r.get('method'))[:16]:16} {(v.get('reason') or v.get('check') or '')[:70]}")
PY
cat $OUT/ncu-corpus.json $OUT/ncu-pr221.json $OUT/pr221-graph.json | head -60
