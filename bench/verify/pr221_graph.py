"""A second independent time of the PR-221 solutions `ki verify` ran (issue 31), for kernels of a few
microseconds where ncu's gpu__time_duration carries a per-kernel floor: each built solution captured
in one CUDA graph of SETS x REPS back-to-back calls over SETS fresh input sets (distinct buffers, so
no call sees the buffers of the call before it), replayed, timed by CUDA events, divided by the
number of calls. A solution that cannot be captured (it synchronizes or copies to the host) is
listed as such. Each run is timed in a process of its own, since a solution's own error handler may
end the process (PR-221's gqa r4 exits on a CUDA error raised by capture). Inputs as pr221_ncu.py
makes them.

Usage: python3 pr221_graph.py RUNS_JSONL BUILD_CACHE DEFINITIONS_DIR  (prints one JSON object)
"""

import json
import statistics
import subprocess
import sys

import torch

from pr221_ncu import make_inputs, ran_solutions

SETS = 20
REPS = 10
REPLAYS = 7


def graph_time_us(fn, definition, axes):
    sets = [make_inputs(definition, axes) for _ in range(SETS)]
    for args in sets:
        fn(*args)
    torch.cuda.synchronize()
    stream = torch.cuda.Stream()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        for _ in range(REPS):
            for args in sets:
                fn(*args)
    graph.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(REPLAYS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3 / (SETS * REPS))
    return statistics.median(times)


def time_one(runs, cache, definitions, wanted):
    """Prints the figure of the run `wanted` (implementation|workload) as one JSON value."""
    for r, fn, definition in ran_solutions(runs, cache, definitions):
        if f"{r['implementation']}|{r['workload']}" != wanted:
            continue
        try:
            print(json.dumps({"us_per_call": graph_time_us(fn, definition, r["axes"])}))
        except Exception as error:  # not capturable: a host sync or copy inside the call
            print(json.dumps({"not_capturable": str(error).splitlines()[0][:160]}))
        return


def main():
    runs, cache, definitions = sys.argv[1:4]
    if len(sys.argv) > 5 and sys.argv[4] == "--one":
        return time_one(runs, cache, definitions, sys.argv[5])
    out = {}
    for line in open(runs):
        r = json.loads(line)
        if r["verdict"]["verdict"] == "not_run" or not r["implementationKey"].startswith("sha256:"):
            continue
        key = f"{r['implementation']}|{r['workload']}"
        child = subprocess.run([sys.executable, __file__, runs, cache, definitions, "--one", key], capture_output=True, text=True)
        lines = child.stdout.strip().splitlines()
        if child.returncode == 0 and lines:
            out[key] = json.loads(lines[-1])
        else:
            last = (child.stdout + child.stderr).strip().splitlines()[-1:] or [""]
            out[key] = {"not_capturable": f"the process ended with {child.returncode}: {last[0][:160]}"}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
