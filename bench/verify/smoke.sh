#!/usr/bin/env bash
# The verification lane's GPU smoke (issue 31): run it on the device after every change to the
# runner's Python or timing, before anything else. One honest solution per language (python, triton,
# cuda launching on the legacy default stream) and five cheats (rmsnorm_h4096 batch 14509, gemm M 2053), through
# `ki-runner verify` (the code of `ki verify`); each must get its expected verdict and, for the honest
# ones, a median per-call time inside its window (bench/verify/smoke-expected.json). Prints a table
# and `smoke=ok` or `smoke=FAILED`; exit 0 only when every row holds.
# Device tool: run `bash bench/verify/smoke.sh` with carry [".carry/verify"] (ki-runner built with
# `cargo build --release -p ki-runner`, stripped into .carry/verify/ki-runner).
set -u -o pipefail
OUT=${OUT:-/tmp/ki-out}
C=.carry/verify
CORPUS=crates/runner/tests/fixtures/verify/corpus
start=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/smoke-smi.txt
SOLS=""
for s in honest_torch_rmsnorm_eager honest_triton_rmsnorm honest_cuda_rmsnorm_legacy cheat_cpu_compute cheat_triton_half_grid \
    cheat_capture_skip cheat_cuda_capture_skip cheat_triton_side_stream; do
  SOLS="$SOLS $CORPUS/solutions/$s.json"
done
$C/ki-runner verify $SOLS --definition $CORPUS/flashinfer_trace --trials 2 --timeout 60 --jobs 4 \
  --build-cache /tmp/ki-smoke-builds --out /tmp/smoke > $OUT/smoke.log 2>&1
echo "ki-runner verify rc=$? in $(( $(date +%s) - start )) s"
python3 - "$OUT" <<'PY'
import json, sys
expected = json.load(open("bench/verify/smoke-expected.json"))
runs = {}
for line in open("/tmp/smoke/runs.jsonl"):
    r = json.loads(line)
    runs[r["implementation"]] = r
ok = True
rows = []
for name, want in expected.items():
    label = next((k for k in runs if k.startswith(name.replace("_", "-"))), None)
    r = runs.get(label)
    verdict = "missing" if r is None else (r["verdict"].get("status") or r["verdict"]["verdict"])
    us = r["latency"]["median"] / 1e3 if r and r.get("latency") else None
    good = verdict in want["verdicts"]
    if good and "us" in want:
        good = us is not None and want["us"][0] <= us <= want["us"][1]
    ok &= good
    reason = "" if r is None else (r["verdict"].get("reason") or r["verdict"].get("check") or "")[:90]
    rows.append(f"| {name} | {verdict} | {'-' if us is None else f'{us:.2f}'} | {r.get('method') if r else '-'} | {want} | {'ok' if good else 'FAILED'} | {reason} |")
print("| solution | verdict | µs | method | expected | | reason |\n|---|---|---|---|---|---|---|")
print("\n".join(rows))
print("smoke=ok" if ok else "smoke=FAILED")
open(sys.argv[1] + "/smoke-table.md", "w").write("\n".join(rows) + ("\nsmoke=ok\n" if ok else "\nsmoke=FAILED\n"))
sys.exit(0 if ok else 1)
PY
