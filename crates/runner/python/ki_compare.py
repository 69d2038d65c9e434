"""Element-wise comparison of one output with its reference, under the runner's comparators (the rules
of crates/runner/src/compare.rs): `flashinfer_bench_eval` (an element fails when abs_err > atol and
rel_err > rtol, rel_err = abs_err / (|ref| + 1e-8)), `sol_execbench_eval` (passes when
|out - ref| <= atol + rtol |ref|), relative L2; a NaN or infinity fails unless the reference holds
the same infinity there.

The judge shares its GPU with the solution worker, which may hold most of it: the comparison works
through the outputs in chunks, so what it allocates is bounded (about 30 bytes an element of a
chunk) whatever the output's size (moe at seq_len 14,107, 101M elements, ran out of memory
comparing whole on an H100, 2026-12-07).
"""

import math

import torch

CHUNK_ELEMENTS = 1 << 24


def compare(out, ref, atol, rtol, chunk=CHUNK_ELEMENTS):
    """The statistics of compare.rs::OutputComparison for `out` against `ref` (same shape)."""
    o_all = out.reshape(-1)
    r_all = ref.reshape(-1)
    n = o_all.numel()
    non_finite = fib = sol = 0
    diff2 = norm2 = 0.0
    max_abs = max_rel = 0.0
    for start in range(0, n, chunk):
        o = o_all[start : start + chunk].to(torch.float32)
        r = r_all[start : start + chunk].to(torch.float32)
        finite = torch.isfinite(o) & torch.isfinite(r)
        same_inf = torch.isinf(o) & (o == r)
        diff = torch.where(finite, (o - r).abs(), torch.zeros_like(o))
        rel = diff / (r.abs() + 1e-8)
        fib += int(torch.where(finite, ~((diff > atol) & (rel > rtol)), same_inf).sum().item())
        sol += int(torch.where(finite, diff <= atol + rtol * r.abs(), same_inf).sum().item())
        non_finite += int((~finite & ~same_inf).sum().item())
        diff2 += float((diff * diff).sum(dtype=torch.float64).item())
        norm2 += float(torch.where(finite, r * r, torch.zeros_like(r)).sum(dtype=torch.float64).item())
        max_abs = max(max_abs, float(diff.max().item()))
        max_rel = max(max_rel, float(torch.where(finite, rel, torch.zeros_like(rel)).max().item()))
        del o, r, finite, same_inf, diff, rel
    if diff2 == 0.0:
        l2 = 0.0
    elif norm2 == 0.0:
        l2 = math.inf
    else:
        l2 = math.sqrt(diff2 / norm2)
    return {
        "elements": n,
        "maxAbsError": max_abs,
        "maxRelError": max_rel,
        "relativeL2Error": l2,
        "matchedRatio": fib / n if n else 1.0,
        "flashinferBenchPass": fib == n,
        "solExecbenchMatchedRatio": sol / n if n else 1.0,
        "solExecbenchPass": sol == n,
        "nonFiniteMismatches": non_finite,
    }
