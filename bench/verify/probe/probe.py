"""Device probe (issue 31): the APIs the new timing and input rules rely on, on the H200."""
import json
import os
import time

import torch
import triton
import triton.language as tl
from torch.profiler import ProfilerActivity, profile

out = {"torch": torch.__version__, "triton": triton.__version__}


@triton.jit
def _fill(out_ptr, seed_ptr, n, KIND: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    seed = tl.load(seed_ptr)
    if KIND == 0:
        v = tl.randn(seed, offs)
        tl.store(out_ptr + offs, v.to(out_ptr.dtype.element_ty), mask=mask)
    else:
        r = tl.randint(seed, offs) & 127
        tl.store(out_ptr + offs, r.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def ki_window_marker(ptr):
    tl.store(ptr, tl.load(ptr) + 1)


def fill(t, seed_t, kind):
    n = t.numel()
    _fill[(triton.cdiv(n, 4096),)](t, seed_t, n, KIND=kind, BLOCK=4096)


seed = torch.tensor([123456789012345], dtype=torch.int64, device="cuda")
res = {}
for dt in (torch.float32, torch.bfloat16, torch.float16, torch.float8_e4m3fn, torch.int32, torch.int64, torch.uint8):
    t = torch.empty(1 << 20, dtype=dt, device="cuda")
    kind = 0 if dt.is_floating_point else 1
    try:
        fill(t, seed, kind)
        a = t.clone()
        fill(t, seed, kind)
        same = bool(torch.equal(a.view(torch.uint8), t.view(torch.uint8)))
        seed2 = seed + 1
        fill(t, seed2, kind)
        differ = float((a.view(torch.uint8) != t.view(torch.uint8)).float().mean())
        f = a.float()
        res[str(dt)] = dict(ok=True, deterministic=same, differ_frac=differ, mean=float(f.mean()), std=float(f.std()))
    except Exception as e:
        res[str(dt)] = dict(ok=False, error=f"{type(e).__name__}: {e}"[:300])
out["fill"] = res

# Graph capture with the seed read from device memory; new seed per replay.
x = torch.empty(1 << 22, dtype=torch.bfloat16, device="cuda")
y = torch.empty_like(x)
fill(x, seed, 0)
torch.cuda.synchronize()
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    fill(x, seed, 0)
    y.copy_(x)
torch.cuda.current_stream().wait_stream(s)
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    fill(x, seed, 0)
    y.mul_(0).add_(x)
vals = []
for r in range(3):
    seed.fill_(1000 + r)
    g.replay()
    torch.cuda.synchronize()
    vals.append(float(y.float().sum()))
ref = torch.empty_like(x)
seed.fill_(1002)
fill(ref, seed, 0)
out["graph_seed"] = dict(sums=vals, last_equals_eager=bool(torch.equal(ref, y)))

# Launch overheads (host time per launch, no sync) and kineto raw events.
a = torch.randn(1024, device="cuda")
b = torch.empty_like(a)
mark = torch.zeros(1, dtype=torch.int64, device="cuda")
ki_window_marker[(1,)](mark)
torch.cuda.synchronize()
def host_us(fn, n=200):
    fn()
    torch.cuda.synchronize()
    t = time.perf_counter_ns()
    for _ in range(n):
        fn()
    dt = (time.perf_counter_ns() - t) / n / 1e3
    torch.cuda.synchronize()
    return dt
out["launch_us"] = dict(torch_copy=host_us(lambda: b.copy_(a)), triton_marker=host_us(lambda: ki_window_marker[(1,)](mark)),
                        triton_fill=host_us(lambda: fill(b, seed, 0)))

try:
    import cupy
    k = cupy.RawKernel(r'''extern "C" __global__ void legacy_scale(float* x, int n){int i=blockIdx.x*blockDim.x+threadIdx.x; if(i<n) x[i]*=1.0001f;}''', "legacy_scale")
    big = torch.randn(1 << 26, device="cuda")
    cp_big = cupy.asarray(big)
    def cupy_legacy():
        with cupy.cuda.Stream.null:
            k(((1 << 26) // 256,), (256,), (cp_big, cupy.int32(1 << 26)))
    has_cupy = True
except Exception as e:
    out["cupy_error"] = str(e)[:300]
    has_cupy = False

flushbuf = torch.empty(2 * torch.cuda.get_device_properties(0).L2_cache_size + (1 << 20), dtype=torch.uint8, device="cuda")
side = torch.cuda.Stream()
def call():
    b.copy_(a)
    fill(b, seed, 0)
    if has_cupy:
        cupy_legacy()
    with torch.cuda.stream(side):
        b.add_(1)
torch.cuda.synchronize()
call()
torch.cuda.synchronize()
with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
    for i in range(3):
        flushbuf.fill_(i)
        torch.cuda.synchronize()
        ki_window_marker[(1,)](mark)
        call()
        torch.cuda.synchronize()
        ki_window_marker[(1,)](mark)
    torch.cuda.synchronize()
kr = prof.profiler.kineto_results
evs = kr.events()
e0 = evs[0]
out["kineto_event_methods"] = [m for m in dir(e0) if not m.startswith("_")]
dev = []
for e in evs:
    if e.device_type() == torch.autograd.DeviceType.CUDA:
        d = {"name": e.name()[:60]}
        for m in ("start_ns", "end_ns", "duration_ns", "device_resource_id", "correlation_id", "is_async"):
            try:
                d[m] = getattr(e, m)()
            except Exception as ex:
                d[m] = f"ERR {ex}"[:40]
        dev.append(d)
out["kineto_device_events"] = dev[:60]
out["function_events_cuda"] = [(fe.name[:50], fe.time_range.start, fe.time_range.end) for fe in prof.events()
                               if fe.device_type == torch.autograd.DeviceType.CUDA][:40]
json.dump(out, open(os.path.join(os.environ.get("OUT", "/tmp"), "probe.json"), "w"), indent=1, default=str)
print(json.dumps({k: out[k] for k in ("torch", "triton", "fill", "graph_seed", "launch_us")}, default=str))
for d in dev[:40]:
    print(d)
