"""Inputs of one trial, generated on the GPU from the plan the Rust runner sends (`ki verify`).

Shared by the judge (which computes the reference from them) and the solution worker (which
calls the solution on them): both build bit-identical tensors from the same plan, so no input
ever crosses a process boundary.

The generator (documented, reproducible with the same torch build and device):
* `random` float tensors (float32, float16, bfloat16, float8_e4m3fn): `torch.randn(shape,
  dtype=float32, generator=g)` on the GPU, then cast to the dtype (round to nearest), where `g` is a
  CUDA `torch.Generator` (Philox 4x32-10) seeded with the tensor's own seed. The runner derives each
  tensor's seed as `ki_runner::materialize::tensor_seed(trial seed, tensor name)`.
* `random` integer tensors: `torch.randint(0, 128, shape, generator=g)` (as materialize.rs does).
* `scalar` inputs: the workload's value, passed to callables as a Python number.
* `file` tensors: the index tensors the runner synthesized by the family's documented rule
  (page tables, ragged index pointers, routing inputs), read from a small safetensors file.
"""

import torch
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


def generate(plan, device="cuda"):
    """Name -> tensor or Python scalar, in the definition's input order (plan["tensors"])."""
    files = {}
    out = {}
    for spec in plan["tensors"]:
        name, source = spec["name"], spec["source"]
        if source == "scalar":
            value = spec["value"]
            out[name] = int(value) if spec["dtype"].startswith(("int", "uint")) else float(value)
            continue
        dtype = DTYPES[spec["dtype"]]
        shape = [int(d) for d in spec["shape"]]
        if source == "random":
            g = torch.Generator(device=device)
            g.manual_seed(int(spec["seed"]))
            if dtype in FLOATS:
                t = torch.randn(shape, dtype=torch.float32, generator=g, device=device).to(dtype)
            elif dtype == torch.bool:
                t = torch.randint(0, 2, shape, generator=g, device=device).to(torch.bool)
            else:
                t = torch.randint(0, 128, shape, generator=g, device=device, dtype=torch.int64).to(dtype)
            out[name] = t
        elif source == "file":
            path = spec["path"]
            if path not in files:
                files[path] = load_file(path, device=device)
            t = files[path][spec["key"]]
            if t.dtype != dtype or list(t.shape) != shape:
                raise ValueError(f"input {name}: file tensor is {t.dtype} {list(t.shape)}, plan says {dtype} {shape}")
            out[name] = t
        else:
            raise ValueError(f"input {name}: unknown source {source!r}")
    return out
