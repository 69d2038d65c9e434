"""The expected answers of the relevance test (crates/server/tests/server/relevance.rs), read from the
bundled rows with no KernelIndex code: zstd + json over the row files of data/ (those the catalog
bundles), by the rule bench/web/relevance.md states.

- operation: among the operations the query's words name (given here by hand, as a predicate on the
  operation row) that have a run passing the query's filters (GPU, model tag, project), the one with
  the most runs (every run row of its workloads, any status);
- groups: the eligible runs (status passed, a primary value, not retracted, not superseded) of that
  operation whose workload has the query's axes (constant axes included), on the query's GPU, kept
  by the trust filter, grouped by comparison key; ordered: a verified run first (re-run by
  KernelIndex), then the most runs, then GPU, then key;
- leader: the first group's fastest verified run, else its fastest; runs tied with it (equal value,
  or overlapping confidence intervals outside source-native groups) are listed with `|`.

Usage: python3 bench/web/relevance_expect.py   (prints one line per query: query, operation, GPU, leader)
"""

import collections
import json
import pathlib
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[2]
FILES = [
    "data/catalog-2026-08-16-0022af0b.jsonl.zst",
    "data/kernelindex-verified-h200-2026-11-30.jsonl.zst",
    "data/kernelindex-verify-h200-2026-12-01.jsonl.zst",
    "data/kernelindex-verify-h100-2026-12-07.jsonl.zst",
    "data/kernelindex-verify-h200-2026-12-07.jsonl.zst",
]


def read(path):
    text = subprocess.run(["zstd", "-dc", str(ROOT / path)], capture_output=True, check=True).stdout.decode()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def load():
    tables = collections.defaultdict(dict)
    for f in FILES:
        for line in read(f):
            row = line["row"]
            if "id" in row:
                tables[line["table"]].setdefault(row["id"], row)
    return tables


T = load()
OPS = T["operations"]
WORKLOADS = T["workloads"]
IMPLS = T["implementations"]
PROJECTS = T["projects"]
RUNS = list(T["benchmark_runs"].values())
SUPERSEDED = {r["supersedesId"] for r in RUNS if r.get("supersedesId")}
OP_OF_RUN = {r["id"]: WORKLOADS[r["workloadId"]]["operationId"] for r in RUNS}
RUNS_OF_OP = collections.defaultdict(list)
for r in RUNS:
    RUNS_OF_OP[OP_OF_RUN[r["id"]]].append(r)


def project_name(run):
    impl = IMPLS.get(run["implementationId"], {})
    return (PROJECTS.get(impl.get("projectId"), {}) or {}).get("name", "")


def axes_of(workload, op):
    axes = dict(workload["manifest"]["spec"].get("axes", {}))
    for name, axis in op["manifest"]["spec"].get("axes", {}).items():
        if axis.get("role") == "constant" and "value" in axis:
            axes.setdefault(name, axis["value"])
    return axes


def eligible(run):
    return run["status"] == "passed" and run.get("primaryValue") is not None and not run.get("retractedAt") and run["id"] not in SUPERSEDED


def verified(run):
    return bool(run.get("reproducedByKernelindex"))


def slugify(text):
    return "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-")


def answer(names, gpu=None, axes=None, model=None, project=None, trust=None):
    axes = axes or {}

    def passes(run):
        return (gpu is None or run["hardwareModel"] == gpu) and (project is None or project.lower() in project_name(run).lower())

    candidates = []
    for op in OPS.values():
        if not names(op):
            continue
        if model and not any(slugify(model) in slugify(t[6:]) for t in op.get("tags") or [] if t.startswith("model:")):
            continue
        if not any(passes(r) for r in RUNS_OF_OP[op["id"]]):
            continue
        if axes and not any(all(axes_of(WORKLOADS[r["workloadId"]], op).get(k) == v for k, v in axes.items()) for r in RUNS_OF_OP[op["id"]]):
            continue
        candidates.append(op)
    if not candidates:
        return ("", "", "")
    op = max(candidates, key=lambda o: (len(RUNS_OF_OP[o["id"]]), [-ord(c) for c in o["name"]]))
    groups = collections.defaultdict(list)
    for r in RUNS_OF_OP[op["id"]]:
        if not (eligible(r) and passes(r)):
            continue
        if trust == "verified" and not verified(r):
            continue
        if any(axes_of(WORKLOADS[r["workloadId"]], op).get(k) != v for k, v in axes.items()):
            continue
        groups[r["comparisonKey"]].append(r)
    if not groups:
        return (op["name"], "", "")
    key = min(groups, key=lambda k: (not any(verified(r) for r in groups[k]), -len(groups[k]), groups[k][0]["hardwareModel"], k))
    group = groups[key]
    pool = [r for r in group if verified(r)] or group
    best = min(pool, key=lambda r: r["primaryValue"])
    native = best.get("sourceNative")

    def tied(r):
        if r["primaryValue"] == best["primaryValue"]:
            return True
        if native or None in (r.get("uncertaintyLow"), best.get("uncertaintyLow")):
            return False
        return r["uncertaintyLow"] <= best["uncertaintyHigh"] and best["uncertaintyLow"] <= r["uncertaintyHigh"]

    leaders = sorted({IMPLS[r["implementationId"]]["slug"] for r in pool if tied(r)})
    return (op["name"], best["hardwareModel"], "|".join(leaders))


def named(*words):
    """Operations whose name, slug, family or tags hold one of the words."""

    def test(op):
        text = " ".join([op["name"], op["slug"], op.get("family") or ""] + list(op.get("tags") or [])).lower()
        return any(w in text for w in words)

    return test


def everything(op):
    return True


H200, H100 = "NVIDIA H200", "NVIDIA H100"
GEMM = named("gemm", "matmul")
RMSNORM = named("rmsnorm", "rms_norm")
# The queries whose expected answers the 2026-12-07 H100 publication moved, with what the words name.
QUERIES = [
    ("llama 3.1 8b", dict(names=everything, model="llama-3.1-8b")),
    ("Llama-3.1-8B-Instruct", dict(names=everything, model="llama-3.1-8b")),
    ("llama 3.1 8b gemm h200", dict(names=GEMM, model="llama-3.1-8b", gpu=H200)),
    ("llama 3.1 8b rmsnorm", dict(names=RMSNORM, model="llama-3.1-8b")),
    ("qwen3 30b a3b rmsnorm", dict(names=RMSNORM, model="qwen3-30b-a3b")),
    ("rmsnorm hidden 4096", dict(names=RMSNORM, axes={"hidden_size": 4096})),
    ("rmsnorm hidden_size=4096 trust:verified", dict(names=RMSNORM, axes={"hidden_size": 4096}, trust="verified")),
    ("fused add rmsnorm hidden 4096", dict(names=named("fused_add_rmsnorm"), axes={"hidden_size": 4096})),
    ("gemm h200", dict(names=GEMM, gpu=H200)),
    ("gemm h200 pytorch", dict(names=GEMM, gpu=H200, project="pytorch")),
    ("gemm h200 verified", dict(names=GEMM, gpu=H200, trust="verified")),
    ("matmul h100", dict(names=GEMM, gpu=H100)),
    ("rmsnorm h200", dict(names=RMSNORM, gpu=H200)),
    ("torch matmul h200", dict(names=GEMM, gpu=H200, project="pytorch")),
]

if __name__ == "__main__":
    for query, spec in QUERIES:
        print(query, "->", " · ".join(answer(**spec)))
