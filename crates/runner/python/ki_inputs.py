"""Inputs of `ki verify`, made on the GPU from seeds: shared by the judge and the solution worker.

Both processes build bit-identical tensors from the same plan and the same *call seed*, so no input
ever crosses a process boundary and the judge can recompute the reference of any call it is asked
to check.

* `random` tensors are written by one Triton kernel (`_fill`) from a seed it reads from device
  memory: floats are `tl.randn` (Philox 4x32-10) rounded to the tensor's dtype (float8 and float64
  through a float32 copy), integers `tl.randint & 127`, booleans its lowest bit. Because the seed is
  read on the device, a captured CUDA graph refills its inputs with new values on every replay after
  the host writes new seeds: the values a timed call sees did not exist before the call's turn.
* `scalar` inputs are the workload's value, passed to callables as a Python number.
* `file` tensors are the index tensors the runner synthesized by the family's documented rule (page
  tables, ragged index pointers, routing inputs): the workload's structure, the same for every call.

A call seed gives each random tensor of the plan its own seed (`tensor_seeds`, splitmix64 of the call
seed and the tensor's position), so two tensors of one call never share a stream.
"""

import torch
import triton
import triton.language as tl
from safetensors.torch import load_file

DTYPES = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float8_e4m3fn": torch.float8_e4m3fn,
    "int32": torch.int32,
    "int64": torch.int64,
    "uint8": torch.uint8,
    "bool": torch.bool,
    "float64": torch.float64,
}
FLOATS = (torch.float32, torch.float16, torch.bfloat16, torch.float8_e4m3fn, torch.float64)
# Stored by the kernel directly; the other floats go through a float32 copy.
DIRECT_FLOATS = (torch.float32, torch.float16, torch.bfloat16)

_M64 = (1 << 64) - 1
_M63 = (1 << 63) - 1
_BLOCK = 4096


def tensor_seeds(call_seed, count):
    """Seeds of a call's `count` random tensors (splitmix64; each below 2^63)."""
    seeds = []
    for index in range(count):
        z = (int(call_seed) + (index + 1) * 0x9E3779B97F4A7C15) & _M64
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
        seeds.append((z ^ (z >> 31)) & _M63)
    return seeds


@triton.jit
def _fill(out_ptr, seed_ptr, n, INTEGER: tl.constexpr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    seed = tl.load(seed_ptr)
    if INTEGER:
        value = tl.randint(seed, offsets) & 127
    else:
        value = tl.randn(seed, offsets)
    tl.store(out_ptr + offsets, value.to(out_ptr.dtype.element_ty), mask=mask)


def fill_(t, seed_slot):
    """Writes `t` from the int64 seed at `seed_slot` (a one-element device tensor view)."""
    n = t.numel()
    if n == 0:
        return
    grid = (triton.cdiv(n, _BLOCK),)
    if t.dtype in DIRECT_FLOATS:
        _fill[grid](t, seed_slot, n, INTEGER=False, BLOCK=_BLOCK)
    elif t.dtype in FLOATS:
        wide = torch.empty(t.shape, dtype=torch.float32, device=t.device)
        _fill[grid](wide, seed_slot, n, INTEGER=False, BLOCK=_BLOCK)
        t.copy_(wide)
    elif t.dtype == torch.bool:
        _fill[grid](t.view(torch.uint8), seed_slot, n, INTEGER=True, BLOCK=_BLOCK)
        t.view(torch.uint8).bitwise_and_(1)
    else:
        _fill[grid](t, seed_slot, n, INTEGER=True, BLOCK=_BLOCK)


class Slot:
    """One set of a plan's inputs, with the device seeds its random tensors are written from.

    `values` maps each input's name to its tensor or scalar in the definition's order; `seed_tensor`
    holds one int64 seed per random tensor. `refill()` rewrites every random tensor from
    `seed_tensor` (capturable: a graph that holds it writes new values whenever the seeds change);
    `set_seed(call_seed)` writes a call's seeds (on the current stream, outside any capture)."""

    def __init__(self, plan, device="cuda", files=None):
        files = {} if files is None else files
        self.values = {}
        self.random = []
        for spec in plan["tensors"]:
            name, source = spec["name"], spec["source"]
            if source == "scalar":
                value = spec["value"]
                self.values[name] = int(value) if spec["dtype"].startswith(("int", "uint")) else float(value)
                continue
            dtype = DTYPES[spec["dtype"]]
            shape = [int(d) for d in spec["shape"]]
            if source == "random":
                t = torch.empty(shape, dtype=dtype, device=device)
                self.random.append(t)
            elif source == "file":
                path = spec["path"]
                if path not in files:
                    files[path] = load_file(path, device=device)
                t = files[path][spec["key"]]
                if t.dtype != dtype or list(t.shape) != shape:
                    raise ValueError(f"input {name}: file tensor is {t.dtype} {list(t.shape)}, plan says {dtype} {shape}")
                t = t.clone()
            else:
                raise ValueError(f"input {name}: unknown source {source!r}")
            self.values[name] = t
        self.seed_tensor = torch.zeros(max(len(self.random), 1), dtype=torch.int64, device=device)
        self.seed = None

    def set_seed(self, call_seed):
        seeds = tensor_seeds(call_seed, len(self.random))
        if seeds:
            self.seed_tensor.copy_(torch.tensor(seeds, dtype=torch.int64), non_blocking=False)
        self.seed = int(call_seed)

    def refill(self):
        for index, t in enumerate(self.random):
            fill_(t, self.seed_tensor[index : index + 1])

    def fill(self, call_seed):
        self.set_seed(call_seed)
        self.refill()


def plan_nbytes(plan):
    """Device bytes of one slot of a plan's inputs (its tensors, scalars excluded)."""
    total = 0
    for spec in plan["tensors"]:
        if spec["source"] == "scalar":
            continue
        count = 1
        for d in spec["shape"]:
            count *= int(d)
        total += count * DTYPES[spec["dtype"]].itemsize
    return total


def generate(plan, call_seed=None, device="cuda"):
    """Name -> tensor or Python scalar for one call: the plan's own seed unless `call_seed` is given."""
    slot = Slot(plan, device)
    slot.fill(plan["seed"] if call_seed is None else call_seed)
    return slot.values
