"""Tables of issue 32's coverage calls: per definition (baselines and PR-221 solutions by verdict), per
solution (our verdicts beside the PR's own A800 trace statuses) and every baseline that did not pass.
A run recorded by several calls counts once, the last call's verdict; `not_run` rows are left out.
With --families DEFINITIONS_DIR (flashinfer_trace/definitions), first a reproduction note per
operation family (issue 32, item 5): the input rule, the speed-of-light bound, and of the runs that
passed, the median share of the bound and how many ran within 2x of it (at least 50% of it).
Usage: python3 bench/verify/coverage_tables.py CALL_FOLDER... [--pr PR221_DIR] [--families DIR]
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
    return {
        name.replace("_", "-").replace(".", "-").lower(): collections.Counter(status for status, _ in traces)
        for name, traces in make_results.claims(pr_dir).items()
    }


# What crates/runner/src/families says of each op type: the rule that synthesizes the inputs a workload
# takes from blobs we do not have, and the least work one call must do (the bound divides it by the
# H200's datasheet peaks, 4.8 TB/s and 989 dense bf16 TFLOP/s, on every card).
FAMILIES = {
    "gemm": ("`random`: every input drawn (ki_inputs.py)", "2·M·N·K flops; A, B read and C written once"),
    "rmsnorm": ("`random`", "every input read once, every output written once"),
    "gqa_paged": (
        "`even`: sequence lengths split as evenly as possible, page ids distinct and shuffled",
        "Q and K/V read once, O and LSE written once (bf16); 4·heads·head_dim flops per query-key pair (causal in prefill)",
    ),
    "gqa_ragged": ("`even` (causal: each sequence's KV is its queries plus an even share)", "as gqa_paged"),
    "mla_paged": ("`even`", "as gqa_paged over the compressed KV and rope parts (head_dim_ckv + head_dim_kpe)"),
    "moe": (
        "`moe-normal-logits-zero-bias`: routing logits drawn like random inputs, routing bias zero",
        "hidden states (fp8) with their scales and the logits read once, the output written once; expert weights "
        "and flops not counted (a loose bound)",
    ),
}
OTHER_FAMILY = ("`random`", "every input read once, every output written once")


def op_types(definitions_dir):
    """definition name -> op_type, from the definitions' own JSON."""
    found = {}
    for root, _, files in os.walk(definitions_dir):
        for f in files:
            if f.endswith(".json"):
                d = json.load(open(os.path.join(root, f)))
                found[d["name"]] = d.get("op_type", os.path.basename(root))
    return found


def families(runs, definitions_dir):
    kinds = op_types(definitions_dir)
    by = collections.defaultdict(lambda: {"defs": set(), "runs": 0, "passed": [], "verdicts": collections.Counter()})
    for r in runs.values():
        f = by[kinds.get(r["definition"], "?")]
        f["defs"].add(r["definition"])
        f["runs"] += 1
        f["verdicts"][r["verdict"]["verdict"]] += 1
        if r["verdict"]["verdict"] == "passed" and r.get("speedOfLightPercent") is not None:
            f["passed"].append(r["speedOfLightPercent"])
    print("| family | definitions | runs | passed | input rule | speed-of-light bound | median % of bound (passed) | within 2x of it |")
    print("|---|---|---|---|---|---|---|---|")
    for kind, f in sorted(by.items()):
        rule, bound = FAMILIES.get(kind, OTHER_FAMILY)
        shares = sorted(f["passed"])
        median = f"{shares[len(shares) // 2]:.3g}%" if shares else "-"
        within = sum(1 for s in shares if s >= 50.0)
        share = f"{within}/{len(shares)} ({100 * within / len(shares):.0f}%)" if shares else "-"
        print(f"| {kind} | {len(f['defs'])} | {f['runs']} | {f['verdicts']['passed']} | {rule} | {bound} | {median} | {share} |")
    print()


def why(r):
    v = r["verdict"]
    return (v.get("reason") or v.get("first_lines") or v.get("check") or "").replace("|", "/")[:120]


def main():
    args = sys.argv[1:]
    pr_dir = None
    if "--pr" in args:
        i = args.index("--pr")
        pr_dir = args[i + 1]
        del args[i : i + 2]
    definitions_dir = None
    if "--families" in args:
        i = args.index("--families")
        definitions_dir = args[i + 1]
        del args[i : i + 2]
    runs = {}
    for folder in args:
        for line in lines(folder):
            r = json.loads(line)
            if r["verdict"]["verdict"] != "not_run":
                runs[(r["implementationKey"], r["workload"])] = r
    if definitions_dir:
        families(runs, definitions_dir)
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
    print(
        f"{len(runs)} runs: {sum(1 for r in runs.values() if r['implementationKey'].startswith('baseline:'))} of baselines, {len(by_sol)} solutions\n"
    )
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
