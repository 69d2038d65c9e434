#!/usr/bin/env bash
# Issue 32, one GPU call of the coverage run: the baselines of every definition with workloads and the
# 72 PR-221 solutions of those definitions, on every workload, three trials, through `ki-runner
# verify`. Resumable: every .carry/verify/coverage/<call>/runs.jsonl (earlier calls' results, brought
# back into bench/verify/coverage/<call>/ and copied there with their session.json, which names the
# card) of this machine's card is passed as --skip-recorded, so a call does only
# what no earlier call recorded; --deadline stops starting work in time for the records to be
# written inside the call. `--catalog` of every bundled row file in data/ (the public snapshot and our
# published runs) makes the records name their operations, workloads and implementations, so that
# they can be bundled beside them (publish.py). Carry .carry/verify and .whl. Env: DEADLINE (s, default 430);
# BASELINES_ONLY=1 leaves the PR-221 solutions out (their builds otherwise come first and can take a short call);
# with it, ONLY=<definition>[,…] runs those definitions' baselines alone.
set -u -o pipefail
OUT=${OUT:-/tmp/ki-out}
C=.carry/verify
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site KI_FLASHINFER_WORKSPACE=/tmp/ki-flashinfer PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee $OUT/smi.txt
# A warm machine keeps the last calls' folders: each is kept as /tmp/cov-done-N and skipped too,
# so that back-to-back calls need no copy here in between.
if [ -d /tmp/cov ]; then mv /tmp/cov /tmp/cov-done-$(ls -d /tmp/cov-done-* 2>/dev/null | wc -l); fi
# Both cards' series may be carried: only the folders whose session.json names this machine's card
# are passed (the runner refuses runs of another card), so a call continues whichever series its card has.
CARD=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
SKIP=()
for f in $C/coverage/*/runs.jsonl /tmp/cov-done-*/runs.jsonl; do
  [ -e "$f" ] || continue
  card=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["machine"]["device"])' "$(dirname "$f")/session.json" 2>/dev/null)
  if [ "$card" = "$CARD" ]; then SKIP+=(--skip-recorded "$f"); else echo "not this card's series ($card): $f"; fi
done
echo "earlier calls: ${#SKIP[@]} flags"
start=$(date +%s)
CATALOGS=()
for f in data/catalog-*.jsonl.zst data/kernelindex-*.jsonl.zst; do
  case $f in *.contents.jsonl.zst) ;; *) CATALOGS+=(--catalog "$f") ;; esac
done
SOLUTIONS=($C/pr221-all/*.json)
ONLY_FLAGS=()
[ "${BASELINES_ONLY:-0}" = 1 ] && SOLUTIONS=() && [ -n "${ONLY:-}" ] && ONLY_FLAGS=(--only "$ONLY")
timeout $(( ${DEADLINE:-430} + 130 )) $C/ki-runner verify "${SOLUTIONS[@]}" --definition $C/flashinfer_trace --baseline "${CATALOGS[@]}" \
  --trials 3 --timeout 60 --jobs 12 --deadline "${DEADLINE:-430}" --build-cache /tmp/ki-builds \
  "${SKIP[@]}" "${ONLY_FLAGS[@]}" --out /tmp/cov > $OUT/verify.log 2>&1
echo "ki-runner verify rc=$? in $(( $(date +%s) - start )) s"
for f in runs.jsonl catalog-rows.jsonl results.md session.json; do cp /tmp/cov/$f $OUT/ 2>/dev/null; done
tar czf $OUT/records.tgz -C /tmp/cov manifests samples artifacts logs 2>/dev/null
python3 - <<'PY'
import collections, json
rows = [json.loads(l) for l in open("/tmp/cov/runs.jsonl")]
by = collections.Counter((r["definition"], r["verdict"]["verdict"]) for r in rows)
for (d, v), n in sorted(by.items()):
    print(f"{d:60} {v:24} {n}")
PY
tail -5 $OUT/verify.log
