"""Independent kernel times of the honest corpus (issue 31): each honest solution called on fresh
inputs of its corpus workload inside NVTX ranges `ki`, to be run under
`ncu --nvtx --nvtx-include ki/ --metrics gpu__time_duration.sum --csv`. Between solutions a marker
kernel (`ki_ncu_marker`, also inside a range) separates them in ncu's record.

Usage: python3 corpus_ncu.py CORPUS_DIR BUILD_CACHE RUNS_JSONL   (prints the order of solutions)
CUDA solutions are loaded from the `ki verify` build cache (module ki_solution_<digest16>).
"""

import glob
import importlib.machinery
import importlib.util
import json
import os
import sys

import torch
import triton
import triton.language as tl

CALLS = 5


@triton.jit
def ki_ncu_marker(ptr):
    tl.store(ptr, tl.load(ptr) + 1)


def inputs(definition):
    if definition == "rmsnorm_h4096":
        return [torch.randn(14509, 4096, device="cuda").to(torch.bfloat16), torch.randn(4096, device="cuda").to(torch.bfloat16)]
    return [torch.randn(2053, 4096, device="cuda").to(torch.float16), torch.randn(4096, 4096, device="cuda").to(torch.float16)]


def main():
    corpus, cache, runs = sys.argv[1:4]
    expected = json.load(open(os.path.join(corpus, "expected.json")))
    keys = {}
    for line in open(runs):
        r = json.loads(line)
        keys[r["implementation"]] = r["implementationKey"]
    counter = torch.zeros(1, dtype=torch.int64, device="cuda")
    order = []
    for name in sorted(n for n, e in expected.items() if e.get("verdict") == "passed"):
        doc = json.load(open(os.path.join(corpus, "solutions", f"{name}.json")))
        label = next((k for k in keys if k.rsplit("-", 1)[0] == name.replace("_", "-")), None)
        if label is None:
            continue  # not among the runs (the smoke runs a few)
        if doc["spec"]["language"] == "cuda":
            digest = keys.get(label, "")[7:23]
            found = glob.glob(os.path.join(cache, "*", "build", f"ki_solution_{digest}.so")) if digest else []
            if not found:
                print(f"{name}: no build found", file=sys.stderr)
                continue
            loader = importlib.machinery.ExtensionFileLoader(f"ki_solution_{digest}", found[0])
            spec = importlib.util.spec_from_file_location(f"ki_solution_{digest}", found[0], loader=loader)
            module = importlib.util.module_from_spec(spec)
            loader.exec_module(module)
        else:
            path = f"/tmp/corpus_{name}.py"
            open(path, "w").write(doc["sources"][0]["content"])
            spec = importlib.util.spec_from_file_location(f"corpus_{name}", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        fn = module.run
        dps = doc["spec"].get("destination_passing_style", False)
        args = inputs(doc["definition"])
        extra = [torch.empty(14509, 4096, dtype=torch.bfloat16, device="cuda")] if dps else []
        for _ in range(2):
            fn(*args, *extra)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_push("ki")
        ki_ncu_marker[(1,)](counter)
        torch.cuda.nvtx.range_pop()
        for _ in range(CALLS):
            args = inputs(doc["definition"])
            torch.cuda.synchronize()
            torch.cuda.nvtx.range_push("ki")
            fn(*args, *extra)
            torch.cuda.synchronize()
            torch.cuda.nvtx.range_pop()
        order.append(name)
    torch.cuda.nvtx.range_push("ki")
    ki_ncu_marker[(1,)](counter)
    torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    print(json.dumps({"order": order, "calls": CALLS}))


if __name__ == "__main__":
    main()
