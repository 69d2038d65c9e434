"""KernelIndex runner worker: runs a Python implementation under kernelindex-rerun-v1.

Started by the Rust runner (`ki run`), which embeds this file. It reads one JSON job per line on
stdin and answers one JSON line per job on stdout; everything else it or the libraries print goes
to stderr. The Rust side materializes inputs, compares outputs and writes records: this worker only
loads inputs (safetensors), calls the implementation, writes outputs (safetensors) and timing
samples back.

Protocol for every timed iteration, identical to the Rust executor: a write of `flush_bytes`
(> 2x L2) to a scratch buffer, then a start event, one call, an end event, all on one stream; the
flush keeps the GPU busy while the host enqueues the call, so host launch latency is not counted.
`warmups` untimed iterations (with the flush) come first. Beside the eager samples, the same loop
replays a CUDA graph of one call.

Job: {"implementation": "flashinfer" | "python:/path/to/file.py", "options": {...},
      "definition": {"name", "num_qo_heads", "num_kv_heads", "head_dim", "page_size"},
      "input_names": [...], "trials": [{"inputs": path, "outputs": path}], "warmups", "iterations",
      "flush_bytes", "graph": bool}
Reply: {"ok": true, "trials": [{"eager_ns": [...], "graph_ns": [...] | null, "graph_error": str | null}],
        "environment": {...}} or {"ok": false, "error": "..."}.
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


def timed_loop(call, flush, warmups, iterations):
    for _ in range(warmups):
        flush()
        call()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(iterations)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(iterations)]
    for i in range(iterations):
        flush()
        starts[i].record()
        call()
        ends[i].record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) * 1e6 for s, e in zip(starts, ends)]


def run_job(job):
    device = torch.device("cuda")
    flush_buffer = torch.empty(job["flush_bytes"], dtype=torch.uint8, device=device)
    counter = [0]

    def flush():
        counter[0] = (counter[0] + 1) & 0xFF
        flush_buffer.fill_(counter[0])

    results = []
    implementation = job["implementation"]
    for trial in job["trials"]:
        inputs = load_file(trial["inputs"], device="cuda")
        if implementation == "flashinfer":
            call = FlashInferDecode(job["definition"], inputs, job.get("options", {}))
        elif implementation.startswith("python:"):
            call = PythonFile(implementation[len("python:"):], job["definition"], inputs, job["input_names"])
        else:
            raise ValueError(f"unknown implementation {implementation!r}")
        # First call on fresh inputs: these outputs are the ones the Rust side checks.
        first = call()
        torch.cuda.synchronize()
        save_file({k: v.detach().contiguous().cpu() for k, v in first.items()}, trial["outputs"])
        eager = timed_loop(call, flush, job["warmups"], job["iterations"])
        graph_ns, graph_error = None, None
        if job.get("graph", True):
            try:
                side = torch.cuda.Stream()
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    for _ in range(3):
                        call()
                torch.cuda.current_stream().wait_stream(side)
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    call()
                graph_ns = timed_loop(graph.replay, flush, job["warmups"], job["iterations"])
            except Exception as error:  # an implementation that cannot be captured still has eager figures
                graph_error = f"{type(error).__name__}: {error}"
        results.append({"eager_ns": eager, "graph_ns": graph_ns, "graph_error": graph_error})
        del call, inputs
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
