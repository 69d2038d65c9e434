"""Independent kernel times of the PR-221 solutions `ki verify` ran (issue 31): each built solution
called on fresh inputs of each workload it ran, inside NVTX ranges `ki`, separated by a marker kernel;
run under ncu as corpus_ncu.py is. Attention page tables by the `even` rule (the lane's rule for
this family): equal lengths, shuffled distinct pages.

Usage: python3 pr221_ncu.py RUNS_JSONL BUILD_CACHE DEFINITIONS_DIR
"""

import glob
import importlib.machinery
import importlib.util
import json
import math
import os
import sys

import torch
import triton
import triton.language as tl

CALLS = 5
DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32, "int32": torch.int32}


@triton.jit
def ki_ncu_marker(ptr):
    tl.store(ptr, tl.load(ptr) + 1)


def make_inputs(definition, axes):
    sizes = {k: v["value"] for k, v in definition["axes"].items() if v.get("type") == "const"}
    sizes.update(axes)
    out = []
    batch = sizes.get("batch_size", 1)
    for name, spec in definition["inputs"].items():
        if spec.get("shape") is None:
            out.append(1.0 / math.sqrt(sizes.get("head_dim", 128)))
            continue
        shape = [sizes[a] for a in spec["shape"]]
        if name == "kv_indptr":
            n = sizes["num_kv_indices"]
            out.append(torch.tensor([i * n // batch for i in range(batch + 1)], dtype=torch.int32, device="cuda"))
        elif name == "kv_indices":
            out.append(torch.randperm(sizes["num_pages"], device="cuda")[: sizes["num_kv_indices"]].to(torch.int32))
        else:
            out.append(torch.randn(shape, device="cuda").to(DTYPES[spec["dtype"]]))
    return out


LOADED = {}


def load_solution(cache, digest):
    """The `run` entry of the solution whose build is in the lane's cache, or None when it was not built."""
    if digest not in LOADED:
        found = glob.glob(os.path.join(cache, "*", "build", f"ki_solution_{digest}.so"))
        if not found:
            return None
        loader = importlib.machinery.ExtensionFileLoader(f"ki_solution_{digest}", found[0])
        spec = importlib.util.spec_from_file_location(f"ki_solution_{digest}", found[0], loader=loader)
        module = importlib.util.module_from_spec(spec)
        loader.exec_module(module)
        LOADED[digest] = module.run
    return LOADED[digest]


def ran_solutions(runs, cache, definitions):
    """(run record, solution entry, definition) for each run of a built solution `ki verify` ran."""
    for line in open(runs):
        r = json.loads(line)
        if r["verdict"]["verdict"] == "not_run" or not r["implementationKey"].startswith("sha256:"):
            continue
        fn = load_solution(cache, r["implementationKey"][7:23])
        if fn is None:
            continue
        definition = json.load(open(glob.glob(os.path.join(definitions, "**", f"{r['definition']}.json"), recursive=True)[0]))
        yield r, fn, definition


def main():
    runs, cache, definitions = sys.argv[1:4]
    counter = torch.zeros(1, dtype=torch.int64, device="cuda")
    order = []
    for r, fn, definition in ran_solutions(runs, cache, definitions):
        for _ in range(2):
            fn(*make_inputs(definition, r["axes"]))
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_push("ki")
        ki_ncu_marker[(1,)](counter)
        torch.cuda.nvtx.range_pop()
        for _ in range(CALLS):
            args = make_inputs(definition, r["axes"])
            torch.cuda.synchronize()
            torch.cuda.nvtx.range_push("ki")
            fn(*args)
            torch.cuda.synchronize()
            torch.cuda.nvtx.range_pop()
        order.append(f"{r['implementation']}|{r['workload']}")
    torch.cuda.nvtx.range_push("ki")
    ki_ncu_marker[(1,)](counter)
    torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    print(json.dumps({"order": order, "calls": CALLS}))


if __name__ == "__main__":
    main()
