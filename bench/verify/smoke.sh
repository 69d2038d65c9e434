#!/usr/bin/env bash
# The verification lane's GPU smoke (issue 31): run it on the device after every change to the
# runner's Python or timing, before anything else. One honest solution per launcher (python, triton,
# cuda on the legacy default stream, cuda with a synchronous host copy and a device synchronize as
# PR-221's gqa r4) and five cheats (rmsnorm_h4096, batch 14509), through `ki-runner verify` (the code
# of `ki verify`). Each must get its expected verdict (bench/verify/smoke-expected.json); each honest
# one a median per-call time within 15% of its ncu kernel duration measured in the same call on the
# same GPU (bench/verify/corpus_ncu.py), so the check holds on any card. Prints a table and
# `smoke=ok` or `smoke=FAILED`; exit 0 only when every row holds.
# Device tool: run `bash bench/verify/smoke.sh` with carry [".carry/verify"] (ki-runner built with
# `cargo build --release -p ki-runner`, stripped into .carry/verify/ki-runner).
set -u -o pipefail
OUT=${OUT:-/tmp/ki-out}
C=.carry/verify
CORPUS=crates/runner/tests/fixtures/verify/corpus
BUILDS=${BUILDS:-/tmp/ki-smoke-builds}  # the build cache (device-issue31.sh shares its own)
start=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/smoke-smi.txt
SOLS=""
for s in $(python3 -c 'import json; print(" ".join(json.load(open("bench/verify/smoke-expected.json"))))'); do
  SOLS="$SOLS $CORPUS/solutions/$s.json"
done
$C/ki-runner verify $SOLS --definition $CORPUS/flashinfer_trace --trials 2 --timeout 60 --jobs 5 \
  --build-cache $BUILDS --out /tmp/smoke > $OUT/smoke.log 2>&1
echo "ki-runner verify rc=$? in $(( $(date +%s) - start )) s"
timeout 60 ncu --clock-control none --nvtx --nvtx-include ki/ --metrics gpu__time_duration.sum --csv \
  --log-file $OUT/smoke-ncu.csv python3 bench/verify/corpus_ncu.py $CORPUS $BUILDS /tmp/smoke/runs.jsonl \
  > $OUT/smoke-ncu-order.txt 2> $OUT/smoke-ncu.err
python3 bench/verify/ncu_table.py $OUT/smoke-ncu-order.txt $OUT/smoke-ncu.csv > $OUT/smoke-ncu.json
echo "smoke with ncu in $(( $(date +%s) - start )) s"
# The runner's Python tests, here with torch and a GPU (CI skips those that need them).
timeout 120 python3 -m unittest discover -v -s crates/runner/python/tests > $OUT/smoke-pytests.txt 2>&1
PYTESTS=$?
python3 - "$OUT" "$PYTESTS" <<'PY'
import json, sys
expected = json.load(open("bench/verify/smoke-expected.json"))
ncu = json.load(open(sys.argv[1] + "/smoke-ncu.json"))
runs = {}
for line in open("/tmp/smoke/runs.jsonl"):
    r = json.loads(line)
    runs[r["implementation"].rsplit("-", 1)[0]] = r
ok = True
rows = []
for name, want in expected.items():
    r = runs.get(name.replace("_", "-"))
    verdict = "missing" if r is None else (r["verdict"].get("status") or r["verdict"]["verdict"])
    us = r["latency"]["median"] / 1e3 if r and r.get("latency") else None
    good = verdict in want["verdicts"]
    ncu_us = ncu[name]["ns_per_call"] / 1e3 if name in ncu else None
    if good and want.get("timed"):
        good = us is not None and ncu_us is not None and abs(us / ncu_us - 1) <= 0.15
    ok &= good
    reason = "" if r is None else (r["verdict"].get("reason") or r["verdict"].get("check") or "")[:90]
    ratio = f"{us / ncu_us:.3f}" if us and ncu_us else "-"
    rows.append(f"| {name} | {verdict} | {'-' if us is None else f'{us:.2f}'} | {'-' if ncu_us is None else f'{ncu_us:.2f}'} | "
                f"{ratio} | {r.get('method') if r else '-'} | {'/'.join(want['verdicts'])} | {'ok' if good else 'FAILED'} | {reason} |")
tests = open(sys.argv[1] + "/smoke-pytests.txt").read()
ran = [line for line in tests.splitlines() if line.endswith(("... ok", "... skipped", "... FAIL", "... ERROR")) or " ... skipped " in line]
skipped = sum(" ... skipped" in line for line in ran)
tests_ok = sys.argv[2] == "0" and skipped == 0
ok &= tests_ok
rows.append(f"| runner Python tests | {len(ran) - skipped} ran, {skipped} skipped | - | - | - | - | all ran and passed | {'ok' if tests_ok else 'FAILED'} | "
            f"{tests.strip().splitlines()[-1][:90] if tests.strip() else 'no output'} |")
head = "| solution | verdict | µs | ncu µs | ratio | method | expected | | reason |\n|---|---|---|---|---|---|---|---|---|"
print(head)
print("\n".join(rows))
print("smoke=ok" if ok else "smoke=FAILED")
open(sys.argv[1] + "/smoke-table.md", "w").write(head + "\n" + "\n".join(rows) + ("\nsmoke=ok\n" if ok else "\nsmoke=FAILED\n"))
sys.exit(0 if ok else 1)
PY
