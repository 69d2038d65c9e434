"""KernelIndex runner worker: runs a Python implementation under kernelindex-rerun-v2.

Started by the Rust runner (`ki run`), which embeds this file and `ki_timing.py` beside it. It reads
one JSON job per line on stdin and answers one JSON line per job on stdout; everything else it or
the libraries print goes to stderr. The Rust side materializes inputs, compares outputs and writes
records: this worker only loads inputs (safetensors), calls the implementation, writes outputs
(safetensors) and timing samples back.

Timing is `ki_timing.py` (the protocol's one Python implementation), imported before any code under
test so that its torch entry points are bound first. Per trial, after the checked first call:
`latency_eager` samples (flush, events around one call), `latency_graph_replay` samples (a one-call
graph replayed after a flush) and the published per-call samples: N x (flush, call) in one graph
minus N flushes, / N, one sample per replay pair; a callable that cannot be captured is timed by
CUPTI instead (its kernels per call, summed, flushes excluded).

Job: {"implementation": "flashinfer" | "python:/path/to/file.py", "options": {...},
      "definition": {"name", "num_qo_heads", "num_kv_heads", "head_dim", "page_size"},
      "input_names": [...], "trials": [{"inputs": path, "outputs": path}], "warmups", "iterations",
      "calls_per_graph", "graph_pairs", "flush_bytes", "graph": bool}
Reply: {"ok": true, "trials": [{"eager_ns": [...], "graph_ns": [...] | null, "in_graph_ns": [...] | null,
        "cupti_ns": [...] | null, "graph_error": str | null}], "environment": {...}}
       or {"ok": false, "error": "..."}.
"""

import importlib.util
import json
import os
import sys
import traceback

PROTOCOL_OUT = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)  # library prints must not corrupt the reply stream
sys.stdout = sys.stderr

import torch  # noqa: E402

import ki_timing  # noqa: E402  (before any code under test: it binds the torch entry points it uses)
from safetensors.torch import load_file, save_file  # noqa: E402


def reply(obj):
    PROTOCOL_OUT.write(json.dumps(obj) + "\n")
    PROTOCOL_OUT.flush()


class FlashInferDecode:
    """FlashInfer's BatchDecodeWithPagedKVCacheWrapper (NHD layout), planned outside the timing."""

    def __init__(self, definition, inputs, options):
        import flashinfer

        self.use_tensor_cores = bool(options.get("use_tensor_cores", False))
        q = inputs["q"]
        batch = q.shape[0]
        page_size = definition["page_size"]
        indptr = inputs["kv_indptr"]
        indices = inputs["kv_indices"]
        last = inputs.get("kv_last_page_len")
        if last is None:
            # Page size 1: every last page holds its one token (empty sequences have no last page).
            last = torch.ones(batch, dtype=torch.int32, device=q.device)
        # FlashInfer requires a zeroed float workspace on first use.
        self.workspace = torch.zeros(256 * 1024 * 1024, dtype=torch.uint8, device=q.device)
        # use_cuda_graph=True keeps the index arrays in fixed buffers, so one call can be captured.
        self.wrapper = flashinfer.BatchDecodeWithPagedKVCacheWrapper(
            self.workspace,
            "NHD",
            use_cuda_graph=True,
            use_tensor_cores=self.use_tensor_cores,
            paged_kv_indptr_buffer=torch.empty_like(indptr),
            paged_kv_indices_buffer=torch.empty(max(indices.numel(), 1), dtype=torch.int32, device=q.device),
            paged_kv_last_page_len_buffer=torch.empty_like(last),
        )
        self.wrapper.plan(
            indptr,
            indices,
            last,
            definition["num_qo_heads"],
            definition["num_kv_heads"],
            definition["head_dim"],
            page_size,
            pos_encoding_mode="NONE",
            q_data_type=torch.bfloat16,
            kv_data_type=torch.bfloat16,
            sm_scale=float(inputs["sm_scale"].item()),
        )
        self.q = q
        self.kv = (inputs["k_cache"], inputs["v_cache"])

    def __call__(self):
        output, lse = self.wrapper.run(self.q, self.kv, return_lse=True)
        return {"output": output, "lse": lse}


class PythonFile:
    """A FlashInfer-Bench style solution file: `run(**inputs)` returning (output, lse) or a dict."""

    def __init__(self, path, definition, inputs, input_names):
        spec = importlib.util.spec_from_file_location("ki_solution", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        self.run = module.run
        self.args = {}
        for name in input_names:
            value = inputs[name]
            self.args[name] = float(value.item()) if value.dim() == 0 else value
        self.output_names = definition.get("output_names", ["output", "lse"])

    def __call__(self):
        result = self.run(**self.args)
        if isinstance(result, dict):
            return result
        if isinstance(result, torch.Tensor):
            result = (result,)
        return dict(zip(self.output_names, result))


def time_trial(call, flush, job):
    """One trial's samples under kernelindex-rerun-v2 (module docs)."""
    once = lambda _index: call()  # noqa: E731  (ki_timing hands each call its index)
    timing = {"eager_ns": None, "graph_ns": None, "in_graph_ns": None, "cupti_ns": None, "graph_error": None}
    timing["eager_ns"] = ki_timing.eager_samples(once, flush, job["warmups"], job["iterations"])
    if job.get("graph", True):
        try:
            replay, graph = ki_timing.graph_replay_samples(once, flush, job["iterations"], warmups=job["warmups"])
            del graph
            in_graph = ki_timing.InGraph(once, flush, job["calls_per_graph"])
            timing["in_graph_ns"] = in_graph.samples(job["graph_pairs"])
            timing["graph_ns"] = replay
            del in_graph
        except Exception as error:  # a callable that cannot be captured is timed by CUPTI
            timing["graph_error"] = f"{type(error).__name__}: {error}"
            timing["graph_ns"] = timing["in_graph_ns"] = None
            torch.cuda.synchronize()
    if timing["in_graph_ns"] is None:
        timing["cupti_ns"], _kernels = ki_timing.cupti_samples(once, flush, job["iterations"])
    return timing


def run_job(job):
    flush = ki_timing.L2Flush(job["flush_bytes"])
    results = []
    implementation = job["implementation"]
    for trial in job["trials"]:
        inputs = load_file(trial["inputs"], device="cuda")
        if implementation == "flashinfer":
            call = FlashInferDecode(job["definition"], inputs, job.get("options", {}))
        elif implementation.startswith("python:"):
            call = PythonFile(implementation[len("python:") :], job["definition"], inputs, job["input_names"])
        else:
            raise ValueError(f"unknown implementation {implementation!r}")
        # First call on fresh inputs: these outputs are the ones the Rust side checks.
        first = call()
        torch.cuda.synchronize()
        save_file({k: v.detach().contiguous().cpu() for k, v in first.items()}, trial["outputs"])
        results.append(time_trial(call, flush, job))
        del call, inputs, first
    return results


def environment():
    env = {"python": sys.version.split()[0], "torch": torch.__version__, "torch_cuda": torch.version.cuda}
    try:
        import flashinfer

        env["flashinfer"] = flashinfer.__version__
    except Exception as error:
        env["flashinfer_error"] = str(error)
    return env


def main():
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            job = json.loads(line)
            if job.get("op") == "hello":
                reply({"ok": True, "environment": environment()})
                continue
            reply({"ok": True, "trials": run_job(job)})
        except Exception as error:
            reply({"ok": False, "error": f"{type(error).__name__}: {error}", "traceback": traceback.format_exc()})


if __name__ == "__main__":
    main()
