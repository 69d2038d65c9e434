#!/usr/bin/env bash
# Issue 35's check on issue 15's serving figures: two builds of `ki` side by side on one 1M-run
# catalog, in one run of this script. Each round runs `WRITES=20 serve.sh` once per build, in turn
# (BEFORE, AFTER, BEFORE, AFTER, ...), each on a fresh copy of the catalog (the writes retract runs),
# and the last lines compare the medians over the rounds: resident memory after the 20 writes, run
# page p99 (c8), resolve p50 (c4), search p99 (c16, the run's operation).
#
#   BEFORE=/tmp/ki-before AFTER=target/release/ki CATALOG=/work/scale/1m.db ROUNDS=2 \
#     bench/scale/serve-compare.sh | tee bench/scale/serve-compare-$(date +%F).txt
#
# The catalog: `ki catalog generate --runs 1000000 --seed 1 --out gen-1m.jsonl.zst` and
# `ki catalog import gen-1m.jsonl.zst --database sqlite://1m.db`. Needs wrk, curl, python3.
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${BEFORE:?the build to compare against}" "${AFTER:?the build under test}" "${CATALOG:?a SQLite catalog file}"
ROUNDS=${ROUNDS:-2}
WORK=$(mktemp -d -p "$(dirname "$CATALOG")")
trap 'rm -rf "$WORK"' EXIT
echo "before: $BEFORE ($(stat -c %y "$BEFORE" | cut -d. -f1)); after: $AFTER ($(stat -c %y "$AFTER" | cut -d. -f1))"
echo "catalog: $CATALOG ($(du -h "$CATALOG" | cut -f1)); rounds: $ROUNDS"
for round in $(seq 1 "$ROUNDS"); do
  for build in before after; do
    bin=$BEFORE
    [ $build = after ] && bin=$AFTER
    cp "$CATALOG" "$WORK/catalog.db"
    echo "=== round $round, $build"
    WRITES=20 BIN=$bin DATABASE="sqlite://$WORK/catalog.db" bench/scale/serve.sh | tee "$WORK/$build-$round.txt"
    rm -f "$WORK/catalog.db"*
  done
done
python3 - "$WORK" "$ROUNDS" <<'PY'
import re, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])

def ms(text):
    number, unit = re.fullmatch(r"([\d.]+)(us|ms|s)", text).groups()
    return float(number) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[unit]

def figures(path):
    text = open(path).read()
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 4 and cells[1].endswith("s") and cells[0] != "request":
            rows[cells[0]] = cells
    find = lambda prefix: next(v for k, v in rows.items() if k.startswith(prefix))
    resident = int(re.search(r"resident after the writes: .*\((\d+) kB\)", text).group(1))
    return {
        "resident after 20 writes (kB)": resident,
        "run page p99, c8 (ms)": ms(next(v for k, v in rows.items() if k.startswith("run page /runs/") and k.endswith("c8"))[2]),
        "resolve p50, c4 (ms)": ms(find("resolve its workload, c4")[1]),
        "search p99, c16 (ms)": ms(next(v for k, v in rows.items() if k.startswith("search `"))[2]),
    }

runs = {b: [figures(f"{work}/{b}-{r}.txt") for r in range(1, rounds + 1)] for b in ("before", "after")}
print("\n| figure | before (median) | after (median) | after / before |\n|---|---|---|---|")
worst = 0.0
for key in runs["before"][0]:
    b = statistics.median(r[key] for r in runs["before"])
    a = statistics.median(r[key] for r in runs["after"])
    worst = max(worst, a / b)
    print(f"| {key} | {b:g} | {a:g} | {a / b:.3f} |")
print(f"\nworst ratio {worst:.3f}: {'none worse by more than 10%' if worst <= 1.10 else 'WORSE by more than 10%'}")
PY
