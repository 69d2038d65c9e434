"""The judge of `ki verify`: one trusted process per definition. It never imports code under test.

It runs the definition's own PyTorch `reference` on the GPU for every (workload, trial) plan the
runner sends, keeps the reference outputs in its own memory, maps the exchange buffers the solution
workers export (ki_exchange) and compares what they copied there with the references, element by
element, under the runner's comparators (ki_compare).

Protocol: one JSON job per line on stdin, one JSON reply per line on stdout (library prints go to
stderr). Jobs: hello, definition, reference, open, close, compare, drop.
"""

import json
import os
import sys
import time
import traceback

PROTOCOL_OUT = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)
sys.stdout = sys.stderr

import torch  # noqa: E402
from safetensors.torch import save_file  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ki_exchange  # noqa: E402
from ki_compare import compare  # noqa: E402
import ki_inputs  # noqa: E402
import ki_routing  # noqa: E402

STATE = {"reference": None, "definition": None, "refs": {}, "plans": {}, "exchanges": {}}


class TransportError(Exception):
    """The exchange did not deliver what the worker wrote: the harness's failure, not the solution's."""


def reply(obj):
    PROTOCOL_OUT.write(json.dumps(obj) + "\n")
    PROTOCOL_OUT.flush()


def environment():
    props = torch.cuda.get_device_properties(0)
    env = {
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "device": props.name,
        "sm_count": props.multi_processor_count,
        "memory_bytes": props.total_memory,
        "l2_bytes": props.L2_cache_size,
        "capability": f"{props.major}.{props.minor}",
    }
    try:
        import flashinfer

        env["flashinfer"] = flashinfer.__version__
    except Exception as error:  # the baselines say so on their own
        env["flashinfer_error"] = str(error)[:200]
    return env


def load_definition(text):
    definition = json.loads(text)
    namespace = {}
    exec(compile(definition["reference"], f"<reference {definition['name']}>", "exec"), namespace)
    STATE["reference"] = namespace["run"]
    STATE["definition"] = definition
    STATE["refs"].clear()


def reference_outputs(plan, call_seed):
    """The definition's reference on the inputs of one call (the plan's structure, `call_seed`'s values)."""
    inputs = ki_inputs.generate(plan, call_seed)
    args = [inputs[t["name"]] for t in plan["tensors"]]
    result = STATE["reference"](*args)
    names = [o["name"] for o in plan["outputs"]]
    if isinstance(result, torch.Tensor):
        result = (result,)
    if isinstance(result, dict):
        outputs = {n: result[n] for n in names}
    else:
        outputs = dict(zip(names, result))
    return inputs, {n: outputs[n].contiguous() for n in names}


def run_reference(job):
    """The reference of a plan's own seed (every implementation's first call), kept; the plan is
    kept too, for the references of the calls made on new seeds (computed when asked)."""
    plan = job["plan"]
    key = (plan["workload"], plan["trial"])
    start = time.perf_counter()
    inputs, outputs = reference_outputs(plan, plan["seed"])
    names = list(outputs)
    torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    routing = ki_routing.counts(STATE["definition"], inputs)
    STATE["plans"][key] = plan
    STATE["refs"][key] = outputs
    shapes = {n: [list(outputs[n].shape), str(outputs[n].dtype).replace("torch.", "")] for n in names}
    if job.get("dump"):
        # The Rust CPU reference of gqa paged decode reads these and must agree.
        tensors = {k: v.contiguous().cpu() for k, v in inputs.items() if isinstance(v, torch.Tensor)}
        for k, v in inputs.items():
            if not isinstance(v, torch.Tensor):
                tensors[k] = torch.tensor(v, dtype=torch.float32)
        for n in names:
            tensors[f"reference.{n}"] = outputs[n].contiguous().cpu()
        save_file(tensors, job["dump"])
    del inputs
    release_cache()
    return {"seconds": seconds, "outputs": shapes, **({"routing": routing} if routing is not None else {})}


def release_cache():
    """Gives the memory torch caches for this process back to the driver: a reference's
    intermediates (moe dequantizes every expert's weights) would otherwise stay reserved here while
    a solution worker on the same GPU needs it (moe at seq_len 14,107 ran out of memory on an H200,
    2026-12-07)."""
    torch.cuda.empty_cache()


def run_compare(job):
    key = (job["workload"], job["trial"])
    plan = STATE["plans"][key]
    exchange = STATE["exchanges"][job["exchange"]]
    atol, rtol = float(job.get("atol", 1e-2)), float(job.get("rtol", 1e-2))
    calls = []
    for call in job["calls"]:
        seed = int(call["seed"])
        refs = STATE["refs"][key] if seed == int(plan["seed"]) else reference_outputs(plan, seed)[1]
        results = []
        for spec in call["outputs"]:
            name = spec["name"]
            ref = refs[name]
            dtype = ki_inputs.DTYPES[spec["dtype"]]
            if dtype != ref.dtype or list(spec["shape"]) != list(ref.shape):
                results.append(
                    {
                        "name": name,
                        "mismatch": f"{spec['dtype']} {spec['shape']}, the reference is {str(ref.dtype).replace('torch.', '')} {list(ref.shape)}",
                        "kind": "dtype" if dtype != ref.dtype else "shape",
                    }
                )
                continue
            start, nbytes = int(spec["offset"]), int(spec["nbytes"])
            if start < 0 or start + nbytes > exchange.nbytes or nbytes != ref.numel() * ref.element_size():
                raise ValueError(f"output {name}: bytes {start}..{start + nbytes} do not fit the exchange")
            region = exchange.tensor[start : start + nbytes]
            if "digest" not in spec or ki_exchange.digest(region) != int(spec["digest"]):
                raise TransportError(
                    f"output {name} ({call['label']}): the bytes mapped from the exchange are not the ones the worker copied there (digest differs)"
                )
            out = region.view(dtype).view(ref.shape)
            stats = compare(out, ref, atol, rtol)
            stats["name"] = name
            results.append(stats)
        calls.append({"label": call["label"], "outputs": results})
    torch.cuda.synchronize()
    release_cache()
    return {"calls": calls}


def main():
    torch.cuda.init()
    torch.empty(1, device="cuda")  # the context exists before the first job (judges start ahead)

    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            job = json.loads(line)
            op = job.get("op")
            if op == "hello":
                torch.cuda.init()
                reply({"ok": True, "environment": environment(), "pid": os.getpid()})
            elif op == "definition":
                load_definition(job["json"])
                reply({"ok": True})
            elif op == "reference":
                reply({"ok": True, **run_reference(job)})
            elif op == "open":
                old = STATE["exchanges"].pop(job["exchange"], None)
                if old is not None:
                    old.close()
                STATE["exchanges"][job["exchange"]] = ki_exchange.Imported(job["handle"], job["bytes"])
                reply({"ok": True})
            elif op == "close":
                old = STATE["exchanges"].pop(job["exchange"], None)
                if old is not None:
                    old.close()
                reply({"ok": True})
            elif op == "compare":
                reply({"ok": True, **run_compare(job)})
            elif op == "drop":
                STATE["refs"].clear()
                STATE["plans"].clear()
                torch.cuda.empty_cache()
                reply({"ok": True})
            else:
                reply({"ok": False, "error": f"unknown op {op!r}"})
        except Exception as error:
            reply({"ok": False, "error": f"{type(error).__name__}: {error}"[:4000], "traceback": traceback.format_exc()[-4000:]})


if __name__ == "__main__":
    main()
