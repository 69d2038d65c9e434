"""RESULTS.md of a `ki verify` session: baselines per family, the pr221 verdicts beside their own A800
claims, the negative controls, the bad inputs, and the summary line.

Usage: python3 make_results.py RUN_DIR PR221_DIR SMI_FILE DEVICE_COMMAND > RESULTS.md
RUN_DIR is the session's --out folder (runs.jsonl, session.json); PR221_DIR the flashinfer-bench PR 221
results folder (its traces are the claims). Every figure is computed here from those files.
"""

import glob
import json
import math
import os
import sys
from collections import defaultdict


def geomean(values):
    values = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def family(definition):
    for prefix in (
        "gemm",
        "fused_add_rmsnorm",
        "rmsnorm",
        "gqa_paged_decode",
        "gqa_paged_prefill",
        "gqa_ragged",
        "mla_paged_decode",
        "mla_paged_prefill",
        "moe",
    ):
        if definition.startswith(prefix):
            return prefix
    return definition


def claims(pr_dir):
    """solution name -> list of (status, latency_ms) from the PR's own traces."""
    out = defaultdict(list)
    for path in glob.glob(os.path.join(pr_dir, "**", "traces", "**", "*.jsonl"), recursive=True):
        for line in open(path):
            if not line.strip():
                continue
            t = json.loads(line)
            ev = t.get("evaluation") or {}
            lat = (ev.get("performance") or {}).get("latency_ms")
            out[t["solution"]].append((ev.get("status"), lat))
    return out


def solution_names(pr_dir):
    """source file name -> (solution name, definition, author) for every pr221 solution."""
    out = {}
    for path in glob.glob(os.path.join(pr_dir, "**", "*.json"), recursive=True):
        try:
            d = json.load(open(path))
        except Exception:
            continue
        if isinstance(d, dict) and "spec" in d and "sources" in d:
            out.setdefault(d["name"], (d["definition"], d.get("author", "")))
    return out


def main():
    run_dir, pr_dir, smi, command = sys.argv[1:5]
    runs = [json.loads(line) for line in open(os.path.join(run_dir, "runs.jsonl")) if line.strip()]
    session = json.load(open(os.path.join(run_dir, "session.json")))
    machine = session["machine"]
    names = solution_names(pr_dir)
    claimed = claims(pr_dir)
    print("# `ki verify` on the H200: baselines, the flashinfer-bench PR 221 corpus, negative controls, bad inputs\n")
    print(
        f"- Session: {session['startedAt']} (UTC, when the records were written), {session['seconds']:.0f} s of `ki verify`; "
        f"seed {session['seed']} (published after the run); {session['trials']} trials per workload."
    )
    print(
        f"- GPU: {machine['device']} ({machine['smCount']} SMs, {machine['memoryBytes'] >> 30} GiB), driver {machine.get('driver')}, "
        f"CUDA {machine.get('cuda')}, nvcc {machine.get('nvcc')}, torch {machine.get('torch')}, FlashInfer {machine.get('flashinfer')}, "
        f"{machine.get('operatingSystem')}."
    )
    print(f"- nvidia-smi at the start: `{open(smi).read().strip().splitlines()[1] if os.path.exists(smi) else '?'}`")
    print(f"- Device command (device tool `run`, carry `.whl`, `.carry/verify`): `{command}`; inside it:\n  `{session['command']}`")
    print(f"- Protocol: {session['protocolDescription']}\n")

    base = [r for r in runs if r["implementationKey"].startswith("baseline:")]
    print("## Baselines of every definition with workloads\n")
    print(
        "Latency: median µs of the primary per-call figure (`latency_in_graph` where the callable can be captured in a CUDA graph, "
        "else `latency_cupti`), [bootstrap 95% interval]; SOL % = the speed-of-light bound at the H200 datasheet peaks ÷ median. "
        "Every output of every checked call compared with the definition's reference on the GPU (flashinfer_bench_eval, atol = rtol = 1e-2); "
        "for gqa paged decode the Rust CPU reference recomputed every trial as well.\n"
    )
    by_family = defaultdict(list)
    for r in base:
        by_family[family(r["definition"])].append(r)
    for fam in sorted(by_family):
        rows = by_family[fam]
        label = rows[0]["implementation"]
        print(f"### {fam} — baseline `{label}`\n")
        print("| definition | workload | axes | verdict | latency µs | 95% interval | method | eager µs | SOL % | CPU reference |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        skipped = [r for r in rows if r["verdict"]["verdict"] == "not_run"]
        rows = [r for r in rows if r["verdict"]["verdict"] != "not_run"]
        for r in rows:
            lat = r.get("latency")
            axes = ", ".join(f"{k}={v}" for k, v in r["axes"].items())
            print(
                f"| {r['definition']} | {r['workload'][:8]} | {axes} | {r['verdict']['verdict']} | "
                f"{lat['median'] / 1e3:.2f} | [{lat['ci95Low'] / 1e3:.2f}, {lat['ci95High'] / 1e3:.2f}] | {r.get('method') or '-'} | "
                f"{(r.get('eager') or {}).get('median', 0) / 1e3:.2f} | {r.get('speedOfLightPercent') or 0:.1f} | {r.get('referenceAgreement') or '-'} |"
                if lat
                else f"| {r['definition']} | {r['workload'][:8]} | {axes} | {r['verdict']['verdict']} | - | - | - | - | - | {(r['verdict'].get('reason') or r['verdict'].get('first_lines') or '')[:160].replace('|', '/')} |"
            )
        if skipped:
            print(
                f"\nNot measured in this session ({len(skipped)} planned runs of {len({r['definition'] for r in skipped})} definitions): "
                f"{skipped[0]['verdict'].get('reason', '')}."
            )
        print()

    # Baseline medians per (definition, workload) for the ratios.
    baseline_of = {(r["definition"], r["workload"]): r["latency"]["median"] for r in base if r.get("latency") and r["verdict"]["verdict"] == "passed"}
    sol_runs = defaultdict(list)
    for r in runs:
        if not r["implementationKey"].startswith("baseline:"):
            sol_runs[r["implementationKey"]].append(r)

    def title_of(rs):
        return rs[0]["implementation"]

    def slug(text):
        s = "".join(c if c.isalnum() or c in ".-" else "-" for c in text.lower())
        return s.strip("-")[:120]

    slugs = {slug(n): n for n in names}
    pr_keys, fixture_keys = [], []
    for key, rs in sol_runs.items():
        name = rs[0]["implementation"]
        (fixture_keys if name.startswith(("rmsnorm-hack", "bad-", "honest-")) else pr_keys).append(key)

    print("## The flashinfer-bench PR 221 corpus (every solution of the families with workloads)\n")
    print(
        "Ours: the verdicts over the definition's workloads (passed / all; the first failure's reason), and for a solution that passed "
        "on every workload its geometric-mean H200 latency and the geometric mean of (baseline ÷ solution) over the workloads. "
        "Theirs: the PR's own A800 traces where it published any (status counts and geometric-mean latency); most solutions have none.\n"
    )
    print(
        "| solution | definition | our verdict | passed / workloads | our H200 latency µs (geomean) | baseline ÷ solution | their A800 claim | first failure |"
    )
    print("|---|---|---|---|---|---|---|---|")
    pr_run = pr_passed = 0
    for key in sorted(pr_keys, key=lambda k: (sol_runs[k][0]["definition"], title_of(sol_runs[k]))):
        rs = sol_runs[key]
        recorded = [r for r in rs if r["verdict"]["verdict"] != "not_run"]
        passed = [r for r in recorded if r["verdict"]["verdict"] == "passed"]
        pr_run += 1 if recorded else 0
        statuses = defaultdict(int)
        for r in recorded:
            statuses[r["verdict"]["verdict"]] += 1
        verdict = "passed" if recorded and len(passed) == len(rs) else ", ".join(f"{k} {v}" for k, v in sorted(statuses.items())) or "not run"
        if recorded and len(passed) == len(rs):
            pr_passed += 1
        lat = geomean([r["latency"]["median"] for r in passed])
        ratios = [
            baseline_of[(r["definition"], r["workload"])] / r["latency"]["median"] for r in passed if (r["definition"], r["workload"]) in baseline_of
        ]
        ratio = geomean(ratios)
        short = rs[0]["implementation"]
        solution = slugs.get(short.rsplit("-", 1)[0], short)
        claim = claimed.get(solution)
        if claim:
            counts = defaultdict(int)
            for s, _ in claim:
                counts[s] += 1
            lats = [lat for s, lat in claim if s == "PASSED" and lat]
            claim_text = ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) + (f"; {geomean(lats) * 1e3:.2f} µs" if lats else "")
        else:
            claim_text = "no trace in the PR"
        first = next((r for r in rs if r["verdict"]["verdict"] not in ("passed",)), None)
        reason = ""
        if first:
            v = first["verdict"]
            reason = (v.get("reason") or v.get("first_lines") or "")[:180].replace("|", "/")
        print(
            f"| {solution} | {rs[0]['definition']} | {verdict} | {len(passed)} / {len(rs)} | {lat / 1e3:.2f} |"
            if lat
            else f"| {solution} | {rs[0]['definition']} | {verdict} | {len(passed)} / {len(rs)} | - |",
            end="",
        )
        print(f" {ratio:.2f}× |" if ratio else " - |", f"{claim_text} | {reason} |")
    print()

    print("## Negative controls and bad inputs\n")
    print("| solution | verdict | check / reason |\n|---|---|---|")
    refused_controls = 0
    for key in sorted(fixture_keys, key=lambda k: title_of(sol_runs[k])):
        rs = sol_runs[key]
        first = next((r for r in rs if r["verdict"]["verdict"] != "passed"), rs[0])
        v = first["verdict"]
        if "hack" in title_of(rs) and v["verdict"] == "suspected_reward_hack":
            refused_controls += 1
        print(f"| {title_of(rs)} | {v['verdict']} | {v.get('check', '')} {(v.get('reason') or v.get('first_lines') or '')[:240].replace('|', '/')} |")
    for e in session.get("refusedAtIntake", []):
        print(
            f"| {os.path.basename(e['file'])} | refused at intake (nothing written) | `{e['pointer'] or '/'}`: {e['reason'][:200].replace('|', '/')} |"
        )
    print()
    measured = [r for r in base if r["verdict"]["verdict"] != "not_run"]
    definitions = sorted({r["definition"] for r in measured})
    correct = sum(1 for r in measured if r["verdict"]["verdict"] == "passed")
    print(
        f"Planned and not measured (the session's deadline): {len(base) - len(measured)} of {len(base)} baseline runs, "
        f"{sum(1 for k in pr_keys if all(r['verdict']['verdict'] == 'not_run' for r in sol_runs[k]))} of {len(pr_keys)} PR 221 solutions.\n"
    )
    print(
        "Counting: `definitions` = definitions whose baseline ran in this session; `baselines_correct` = baseline runs (definition × workload) passed / recorded; "
        "`pr221_run` = PR 221 solutions (unique sources) run; `pr221_passed` = those that passed on every workload; "
        "`negative_controls_refused` = the four SOL-ExecBench controls refused as suspected reward hacks.\n"
    )
    print(
        f"summary: definitions={len(definitions)} baselines_correct={correct}/{len(measured)} pr221_run={pr_run} "
        f"pr221_passed={pr_passed} negative_controls_refused={refused_controls}/4"
    )


if __name__ == "__main__":
    main()
