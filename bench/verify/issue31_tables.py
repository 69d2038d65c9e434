"""Tables of one device call of issue 31 (a folder holding corpus-runs.jsonl, ncu-corpus.json,
pr221-runs.jsonl, ncu-pr221.json): the corpus beside ncu, the PR-221 solutions beside ncu.
Usage: python3 bench/verify/issue31_tables.py [FOLDER]   (default bench/verify/2026-12-05/call3-h100)"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
D = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "2026-12-05", "call3-h100")
CORPUS = os.path.join(HERE, "..", "..", "crates/runner/tests/fixtures/verify/corpus")


def label(r):
    return r["verdict"].get("status") or r["verdict"]["verdict"]


def why(r):
    v = r["verdict"]
    return (v.get("reason") or v.get("check") or "").replace("|", "/")[:110]


def beside(us, ns):
    """Two cells: the ncu figure in µs and our time over it."""
    if not ns:
        return "- | -"
    return f"{ns / 1e3:.2f} | " + (f"{us / (ns / 1e3):.3f}" if us else "-")


def main():
    expected = json.load(open(os.path.join(CORPUS, "expected.json")))
    ncu = json.load(open(os.path.join(D, "ncu-corpus.json")))
    runs = {}
    for line in open(os.path.join(D, "corpus-runs.jsonl")):
        r = json.loads(line)
        runs[r["implementation"]] = r
    print("| solution | language | expected | verdict | ours µs | method | ncu µs | ours ÷ ncu | ncu SM-active µs | ours ÷ SM-active | why |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, want in sorted(expected.items(), key=lambda kv: ("verdict" not in kv[1], kv[0])):
        key = name.replace("_", "-").replace("solution-hack", "rmsnorm-hack")
        r = next((v for k, v in runs.items() if k.rsplit("-", 1)[0] == key), None)
        doc_path = os.path.join(CORPUS, "solutions", f"{name}.json")
        lang = json.load(open(doc_path))["spec"]["language"] if os.path.exists(doc_path) else "python"
        us = r["latency"]["median"] / 1e3 if r and r.get("latency") else None
        n = ncu.get(name, {}).get("ns_per_call")
        a = ncu.get(name, {}).get("sm_active_ns_per_call")
        exp = "passed" if want.get("verdict") == "passed" else "refused: " + "/".join(want["refused"])
        print(
            f"| {name} | {lang} | {exp} | {label(r) if r else 'missing'} | {f'{us:.2f}' if us else '-'} | "
            f"{(r or {}).get('method') or '-'} | {beside(us, n)} | {beside(us, a)} | {why(r) if r else ''} |"
        )
    print()
    ncu2 = json.load(open(os.path.join(D, "ncu-pr221.json")))
    print("| solution | workload | axes | verdict | ours µs | method | ncu µs | ours ÷ ncu | ncu SM-active µs | ours ÷ SM-active | why |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for line in open(os.path.join(D, "pr221-runs.jsonl")):
        r = json.loads(line)
        us = r["latency"]["median"] / 1e3 if r.get("latency") else None
        k = ncu2.get(f"{r['implementation']}|{r['workload']}", {})
        n, a = k.get("ns_per_call"), k.get("sm_active_ns_per_call")
        print(
            f"| {r['implementation'][:48]} | {r['workload'][:8]} | {r['axes']} | {label(r)} | {f'{us:.2f}' if us else '-'} | "
            f"{r.get('method') or '-'} | {beside(us, n)} | {beside(us, a)} | {why(r)} |"
        )


if __name__ == "__main__":
    main()
