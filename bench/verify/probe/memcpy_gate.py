"""Probe (issue 31, 2026-12-05): where CUPTI places a synchronous cudaMemcpy on the legacy default
stream relative to the gate kernel that holds that same stream (PR-221's gqa r4 was refused because
its `cudaMemcpy(DtoH)` "started while the caller's stream was held"), and the per-kernel floor of
CUPTI's and ncu's kernel durations (a one-element kernel), which matters beside 2-3 µs kernels.

Usage: python3 memcpy_gate.py            (CUPTI tables)
       ncu ... python3 memcpy_gate.py ncu (one-element kernels inside NVTX range ki/)
"""

import statistics
import sys

import cupy
import numpy as np
import torch

sys.path.insert(0, "crates/runner/python")
import ki_timing  # noqa: E402

dev = torch.arange(1 << 20, dtype=torch.int32, device="cuda")
one = torch.zeros(1, dtype=torch.float32, device="cuda")
host = np.zeros(1 << 20, dtype=np.int32)
pinned = torch.empty(1 << 20, dtype=torch.int32).pin_memory()
D2H = cupy.cuda.runtime.memcpyDeviceToHost


def memcpy_pageable_16():
    cupy.cuda.runtime.memcpy(host.ctypes.data, dev.data_ptr(), 16, D2H)


def memcpy_pageable_4m():
    cupy.cuda.runtime.memcpy(host.ctypes.data, dev.data_ptr(), 4 << 20, D2H)


def memcpy_pinned_16():
    cupy.cuda.runtime.memcpy(pinned.data_ptr(), dev.data_ptr(), 16, D2H)


def kernel_then_memcpy():
    dev.add_(1)
    memcpy_pageable_16()


def kernel_on_legacy():
    dev.add_(1)


def resource(event):
    for attr in ("device_resource_id", "device_index"):
        try:
            return f"{attr}={getattr(event, attr)()}"
        except Exception:
            pass
    return "?"


def gate_probe(name, call, gate_ns=200_000, calls=5):
    torch.cuda.synchronize()
    call()
    torch.cuda.synchronize()
    with ki_timing._profile(activities=[ki_timing._ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            torch.cuda.synchronize()
            ki_timing._marker()
            ki_timing._gate(gate_ns)
            call()
            ki_timing._marker()
            torch.cuda.synchronize()
            ki_timing._marker()
        torch.cuda.synchronize()
    events = [e for e in prof.profiler.kineto_results.events() if e.device_type() == ki_timing._DeviceType.CUDA]
    events.sort(key=lambda e: e.start_ns())
    gates = [e for e in events if "spin_kernel" in e.name()]
    print(f"\n### {name}: current stream {torch.cuda.current_stream().cuda_stream}")
    print("| call | activity | resource | start - gate end (ns) | duration (ns) |\n|---|---|---|---|---|")
    for k, g in enumerate(gates):
        gate_end = g.start_ns() + g.duration_ns()
        nxt = gates[k + 1].start_ns() if k + 1 < len(gates) else float("inf")
        for e in events:
            if g.start_ns() <= e.start_ns() < nxt and "marker" not in e.name():
                print(f"| {k} | {e.name()[:48]} | {resource(e)} | {e.start_ns() - gate_end} | {e.duration_ns()} |")


def floor_probe(calls=200):
    torch.cuda.synchronize()
    with ki_timing._profile(activities=[ki_timing._ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            one.add_(1)
            torch.cuda.synchronize()
    d = [
        e.duration_ns() for e in prof.profiler.kineto_results.events() if e.device_type() == ki_timing._DeviceType.CUDA and "elementwise" in e.name()
    ]
    print(f"\none-element add_ kernel, CUPTI duration: median {statistics.median(d)} ns over {len(d)} (min {min(d)}, max {max(d)})")


if len(sys.argv) > 1 and sys.argv[1] == "ncu":
    one.add_(1)
    torch.cuda.synchronize()
    for _ in range(20):
        torch.cuda.nvtx.range_push("ki")
        one.add_(1)
        torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
else:
    for name, call in [
        ("kernel on the legacy stream", kernel_on_legacy),
        ("cudaMemcpy DtoH pageable 16 B", memcpy_pageable_16),
        ("cudaMemcpy DtoH pageable 4 MiB", memcpy_pageable_4m),
        ("cudaMemcpy DtoH pinned 16 B", memcpy_pinned_16),
        ("kernel then cudaMemcpy DtoH pageable 16 B", kernel_then_memcpy),
    ]:
        gate_probe(name, call)
    floor_probe()
