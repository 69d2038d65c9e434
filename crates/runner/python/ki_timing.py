"""KernelIndex timing protocol `kernelindex-rerun-v2` for Python callables (PROTOCOL-V2.md).

One module, used by the `ki verify` worker and shareable with any other runner worker: it needs
only torch. Every function times `call(i)`, a callable of one argument, the index of the call
(0, 1, 2, ...), so the caller can hand each call its own input allocation (rotating copies) and
an answer cached by pointer buys nothing.

* `L2Flush`: before every timed call a kernel writes more than twice the L2 size.
* `eager_samples` -> `latency_eager` (v1's figure): flush, start event, one call, end event.
* `graph_replay_samples` -> `latency_graph_replay`: a CUDA graph of one call, replayed after a
  flush, between two events.
* `in_graph_samples` -> `latency_in_graph`, the primary figure for capturable callables: a graph of
  N x (flush, call) and a graph of the N flushes alone, replayed in pairs; one sample per pair is
  (t(calls) - t(flushes)) / N. Host launch overhead is not in it: a graph replay launches every
  kernel from the device's queue.
* `cupti_samples` -> `latency_cupti`, the primary figure for callables that cannot be captured:
  the device time of the kernels one call launches (CUPTI through torch.profiler), summed per
  call, flush kernels excluded (they run outside the profiled range of the call).

The torch entry points used here are bound when this module is imported. A worker imports it
before any code under test, so a later monkey patch of `torch.cuda.Event.elapsed_time` (or of any
other of them) cannot reach these functions; `bound_functions()` lists them so a worker can check
that the public names still point at the same objects (an integrity check, not a defence by itself).

All samples are nanoseconds (floats).
"""

import torch

# Bound at import, before any code under test runs (see the module docs).
_Event = torch.cuda.Event
_event_record = torch.cuda.Event.record
_event_elapsed_ms = torch.cuda.Event.elapsed_time
_event_synchronize = torch.cuda.Event.synchronize
_CUDAGraph = torch.cuda.CUDAGraph
_graph_replay = torch.cuda.CUDAGraph.replay
_graph_context = torch.cuda.graph
_synchronize = torch.cuda.synchronize
_current_stream = torch.cuda.current_stream
_Stream = torch.cuda.Stream
_stream_context = torch.cuda.stream
_profile = torch.profiler.profile
_ProfilerActivity = torch.profiler.ProfilerActivity
_record_function = torch.profiler.record_function
_DeviceType = torch.autograd.DeviceType
_empty = torch.empty
_uint8 = torch.uint8

CUPTI_RANGE_PREFIX = "ki_timed_call_"


def bound_functions():
    """(public path, object) for every torch entry point this module bound at import."""
    return [
        ("torch.cuda.Event", _Event),
        ("torch.cuda.Event.record", _event_record),
        ("torch.cuda.Event.elapsed_time", _event_elapsed_ms),
        ("torch.cuda.Event.synchronize", _event_synchronize),
        ("torch.cuda.CUDAGraph", _CUDAGraph),
        ("torch.cuda.CUDAGraph.replay", _graph_replay),
        ("torch.cuda.graph", _graph_context),
        ("torch.cuda.synchronize", _synchronize),
        ("torch.cuda.current_stream", _current_stream),
        ("torch.cuda.Stream", _Stream),
        ("torch.cuda.stream", _stream_context),
        ("torch.profiler.profile", _profile),
        ("torch.profiler.record_function", _record_function),
    ]


def flush_bytes_for(device=None, factor=2):
    """Bytes a flush writes: more than `factor` x the device's L2, rounded up to a MiB."""
    l2 = torch.cuda.get_device_properties(device).L2_cache_size
    minimum = factor * l2 + 1
    mib = 1 << 20
    return (minimum + mib - 1) // mib * mib


class L2Flush:
    """Writes every byte of a buffer larger than 2x L2; the value changes with each call."""

    def __init__(self, nbytes, device="cuda"):
        self.buffer = _empty(nbytes, dtype=_uint8, device=device)
        self.salt = 0

    def __call__(self):
        self.salt = (self.salt + 1) & 0xFF
        self.buffer.fill_(self.salt)


def _elapsed_ns(start, end):
    return float(_event_elapsed_ms(start, end)) * 1e6


def eager_samples(call, flush, warmups, iterations, first_index=0):
    """`latency_eager`: per call, flush then start event, `call(i)`, end event, one stream.

    The flush keeps the device busy while the host enqueues the call, so launch latency shorter
    than the flush is hidden; a launcher slower than that leaks host time into the sample (the
    in-graph and CUPTI figures do not)."""
    index = first_index
    for _ in range(warmups):
        flush()
        call(index)
        index += 1
    starts = [_Event(enable_timing=True) for _ in range(iterations)]
    ends = [_Event(enable_timing=True) for _ in range(iterations)]
    for k in range(iterations):
        flush()
        _event_record(starts[k])
        call(index)
        _event_record(ends[k])
        index += 1
    _synchronize()
    return [_elapsed_ns(s, e) for s, e in zip(starts, ends)]


def _warm_on_side_stream(call, indices):
    side = _Stream()
    side.wait_stream(_current_stream())
    with _stream_context(side):
        for i in indices:
            call(i)
    _current_stream().wait_stream(side)
    _synchronize()


def capture(body):
    """A CUDA graph of whatever `body()` enqueues; raises if the work cannot be captured."""
    graph = _CUDAGraph()
    with _graph_context(graph):
        body()
    _synchronize()
    return graph


def graph_replay_samples(call, flush, iterations, index=0, warmups=3):
    """`latency_graph_replay`: a graph of one `call(index)`, replayed after a flush between two
    events. Returns (samples, graph); the graph's outputs are those of its captured call."""
    _warm_on_side_stream(call, [index] * 2)
    graph = capture(lambda: call(index))
    for _ in range(warmups):
        flush()
        _graph_replay(graph)
    starts = [_Event(enable_timing=True) for _ in range(iterations)]
    ends = [_Event(enable_timing=True) for _ in range(iterations)]
    for k in range(iterations):
        flush()
        _event_record(starts[k])
        _graph_replay(graph)
        _event_record(ends[k])
    _synchronize()
    return [_elapsed_ns(s, e) for s, e in zip(starts, ends)], graph


class InGraph:
    """The two graphs of `latency_in_graph`: N x (flush, call(i)) for i in 0..N-1, and N flushes.

    Built once (capture runs the callable's Python N times); `samples(replays)` replays them in
    pairs. Between replays the caller may poison outputs and check them after `replay_calls()`."""

    def __init__(self, call, flush, calls_per_graph):
        self.n = calls_per_graph
        _warm_on_side_stream(call, range(self.n))

        def calls():
            for i in range(self.n):
                flush()
                call(i)

        def flushes():
            for _ in range(self.n):
                flush()

        self.calls = capture(calls)
        self.flushes = capture(flushes)

    def replay_calls(self):
        _graph_replay(self.calls)
        _synchronize()

    def samples(self, replays, warmups=1):
        for _ in range(warmups):
            _graph_replay(self.flushes)
            _graph_replay(self.calls)
        marks = [_Event(enable_timing=True) for _ in range(3 * replays)]
        for r in range(replays):
            _event_record(marks[3 * r])
            _graph_replay(self.flushes)
            _event_record(marks[3 * r + 1])
            _graph_replay(self.calls)
            _event_record(marks[3 * r + 2])
        _synchronize()
        out = []
        for r in range(replays):
            flushes = _elapsed_ns(marks[3 * r], marks[3 * r + 1])
            both = _elapsed_ns(marks[3 * r + 1], marks[3 * r + 2])
            out.append((both - flushes) / self.n)
        return out


def in_graph_samples(call, flush, calls_per_graph, replays):
    """`latency_in_graph` samples (see `InGraph`)."""
    return InGraph(call, flush, calls_per_graph).samples(replays)


def cupti_samples(call, flush, iterations, first_index=0, warmups=1):
    """`latency_cupti`: per call, the summed device time of the kernels it launched (CUPTI via
    torch.profiler). Each call runs inside its own profiler range; the flush runs outside it, so
    its kernels are not counted. Returns (samples, kernels_per_call)."""
    index = first_index
    for _ in range(warmups):
        flush()
        call(index)
        index += 1
    _synchronize()
    names = []
    with _profile(activities=[_ProfilerActivity.CUDA, _ProfilerActivity.CPU]) as prof:
        for k in range(iterations):
            flush()
            name = f"{CUPTI_RANGE_PREFIX}{k}"
            names.append(name)
            with _record_function(name):
                call(index)
            index += 1
        _synchronize()
    totals = {name: 0.0 for name in names}
    counts = {name: 0 for name in names}
    for event in prof.events():
        # The range's CPU-side event carries the kernels launched inside it (and its child ops');
        # the GPU-side annotation of the same name would count the span a second time.
        if event.name in totals and event.device_type == _DeviceType.CPU:
            totals[event.name] += float(getattr(event, "device_time_total", 0.0)) * 1e3
            counts[event.name] += len(getattr(event, "kernels", []) or [])
    return [totals[n] for n in names], [counts[n] for n in names]
