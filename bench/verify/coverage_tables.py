"""Tables of issue 32's coverage calls: per definition (baselines and PR-221 solutions by verdict), per
solution (our verdicts beside the PR's own A800 trace statuses) and every baseline that did not pass.
A run recorded by several calls counts once, the last call's verdict; `not_run` rows are left out.
Usage: python3 bench/verify/coverage_tables.py CALL_FOLDER... [--pr PR221_DIR]
(each folder holds runs.jsonl or runs.jsonl.zst as device-coverage.sh wrote it)."""

import collections
import json
import os
import subprocess
import sys

import make_results


def lines(folder):
    plain = os.path.join(folder, "runs.jsonl")
    if os.path.exists(plain):
        return open(plain).read().splitlines()
    return subprocess.run(["zstd", "-dc", plain + ".zst"], check=True, capture_output=True, text=True).stdout.splitlines()


def claims(pr_dir):
    """slug of a PR solution name -> Counter of its trace statuses (make_results.claims, counted)."""
    return {name.replace("_", "-").replace(".", "-").lower(): collections.Counter(status for status, _ in traces)
            for name, traces in make_results.claims(pr_dir).items()}


def why(r):
    v = r["verdict"]
    return (v.get("reason") or v.get("first_lines") or v.get("check") or "").replace("|", "/")[:120]


def main():
    args = sys.argv[1:]
    pr_dir = None
    if "--pr" in args:
        i = args.index("--pr")
        pr_dir = args[i + 1]
        del args[i:i + 2]
    runs = {}
    for folder in args:
        for line in lines(folder):
            r = json.loads(line)
            if r["verdict"]["verdict"] != "not_run":
                runs[(r["implementationKey"], r["workload"])] = r
    by_def = collections.defaultdict(lambda: (collections.Counter(), collections.Counter(), set()))
    by_sol = collections.defaultdict(collections.Counter)
    first_failure = {}
    for r in runs.values():
        base, sols, names = by_def[r["definition"]]
        v = r["verdict"]["verdict"]
        if r["implementationKey"].startswith("baseline:"):
            base[v] += 1
        else:
            sols[v] += 1
            names.add(r["implementation"])
            by_sol[(r["definition"], r["implementation"])][v] += 1
            if v != "passed":
                first_failure.setdefault(r["implementation"], why(r))
    fmt = lambda c: ", ".join(f"{k} {n}" for k, n in sorted(c.items())) or "-"  # noqa: E731
    print(f"{len(runs)} runs: {sum(1 for r in runs.values() if r['implementationKey'].startswith('baseline:'))} of baselines, "
          f"{len(by_sol)} solutions\n")
    print("| definition | baseline runs | solutions | solution runs |")
    print("|---|---|---|---|")
    for d, (base, sols, names) in sorted(by_def.items()):
        print(f"| {d} | {fmt(base)} | {len(names)} | {fmt(sols)} |")
    theirs = claims(pr_dir) if pr_dir else {}
    print("\n| solution | our verdicts | their A800 traces | first failure |")
    print("|---|---|---|---|")
    for (_definition, name), c in sorted(by_sol.items()):
        slug = name.rsplit("-", 1)[0].replace(".", "-")
        claim = next((fmt(v) for k, v in theirs.items() if k == slug), "no trace in the PR")
        print(f"| {name[:70]} | {fmt(c)} | {claim} | {first_failure.get(name, '')} |")
    print("\n| baseline | axes | verdict | why |")
    print("|---|---|---|---|")
    for r in sorted(runs.values(), key=lambda r: (r["definition"], str(r["axes"]))):
        if r["implementationKey"].startswith("baseline:") and r["verdict"]["verdict"] != "passed":
            print(f"| {r['definition']} | {r['axes']} | {r['verdict']['verdict']} | {why(r)} |")


if __name__ == "__main__":
    main()
