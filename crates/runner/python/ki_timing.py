"""KernelIndex timing protocol `kernelindex-rerun-v2` for Python callables (docs/PROTOCOL-V2.md).

One module, used by the `ki verify` worker and by the `ki run` worker: it needs torch and Triton.
Every function times `call(i)`, a callable of one argument, the index of the call (0, 1, 2, ...),
so the caller can hand each call its own input allocation, and `prepare(i)`, when given, runs
before call i's flush, outside every timed span: the verify worker writes call i's inputs with new
values there and poisons its outputs.

* `L2Flush`: before every timed call a kernel writes more than twice the L2 size.
* `eager_samples` -> `latency_eager`: prepare, flush, start event, one call, end event.
* `graph_replay_samples` -> `latency_graph_replay`: a CUDA graph of one call, replayed after a
  prepare and a flush, between two events.
* `InGraph` -> `latency_in_graph`, the primary figure for capturable callables: a graph of N x
  (refill_i, flush, call i) and a graph of the N (refill_i, flush) alone, replayed in pairs; one
  sample per pair is (t(calls) - t(refills and flushes)) / N. Host launch overhead is not in it: a
  graph replay launches every kernel from the device's queue. `refill_i` rewrites call i's inputs
  from seeds the host writes before each replay, so no replay repeats a value.
* `cupti_samples` -> `latency_cupti`, the primary figure for callables that cannot be captured
  (and the check of the in-graph figure for those that can): per call, the union of the device
  intervals of every kernel, copy and memset that ran between two marker kernels around the call,
  on a quiet device: whatever launched them (runtime or driver API, Triton, an extension's own or
  the legacy stream). Flushes and refills run outside the markers. Work the call left unordered
  with the caller's stream (on a stream of its own, not waiting for it or not joined back) is
  refused, whatever its timing (`ki_windows.call_windows`).

The torch entry points used here are bound when this module is imported. A worker imports it
before any code under test, so a later monkey patch of `torch.cuda.Event.elapsed_time` (or of any
other of them) cannot reach these functions; `bound_functions()` lists them so a worker can check
that the public names still point at the same objects (an integrity check, not a defence by itself).

All samples are nanoseconds (floats).
"""

import time

import torch
import triton
import triton.language as tl

import ki_windows

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
_set_stream = torch.cuda.set_stream
_Stream = torch.cuda.Stream
_stream_context = torch.cuda.stream
_profile = torch.profiler.profile
_ProfilerActivity = torch.profiler.ProfilerActivity
_DeviceType = torch.autograd.DeviceType
_empty = torch.empty
_zeros = torch.zeros
_uint8 = torch.uint8
_perf_ns = time.perf_counter_ns
_sleep_cycles = torch.cuda._sleep


@triton.jit
def ki_window_marker(counter_ptr):
    """The marker kernel that opens and closes a call's window in a CUPTI record (its name is
    ki_windows.MARKER_NAME)."""
    tl.store(counter_ptr, tl.load(counter_ptr) + 1)


_MARKER_COUNTER = None


def _marker():
    global _MARKER_COUNTER
    if _MARKER_COUNTER is None:
        _MARKER_COUNTER = _zeros(1, dtype=torch.int64, device="cuda")
    ki_window_marker[(1,)](_MARKER_COUNTER)


_GATE_CYCLES_PER_NS = None


def _calibrate_gate():
    """The spin counts SM clock cycles: how many make a nanosecond here, measured once per process,
    before any profile (its kernels inside a call's window would be counted as the call's work)."""
    global _GATE_CYCLES_PER_NS
    if _GATE_CYCLES_PER_NS is None:
        _sleep_cycles(1000)
        start, end = _Event(enable_timing=True), _Event(enable_timing=True)
        _event_record(start)
        _sleep_cycles(2_000_000)
        _event_record(end)
        _event_synchronize(end)
        _GATE_CYCLES_PER_NS = 2_000_000 / max(_elapsed_ns(start, end), 1.0)


def _gate(ns):
    """Holds the current stream for about `ns` (torch.cuda._sleep's spin kernel, ki_windows.GATE_NAME)."""
    _calibrate_gate()
    _sleep_cycles(max(1, int(ns * _GATE_CYCLES_PER_NS)))


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
        ("torch.cuda.set_stream", _set_stream),
        ("torch.cuda.Stream", _Stream),
        ("torch.cuda.stream", _stream_context),
        ("torch.profiler.profile", _profile),
        ("torch.cuda._sleep", _sleep_cycles),
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


def _nothing(_index):
    return None


def launch_overhead_ns(repeats=200):
    """Host time of one asynchronous launch (the larger of a torch op's and a Triton kernel's)."""
    a = _zeros(1024, device="cuda")
    b = _empty(1024, device="cuda")
    _marker()
    b.copy_(a)
    _synchronize()
    figures = []
    for launch in (lambda: b.copy_(a), _marker):
        start = _perf_ns()
        for _ in range(repeats):
            launch()
        figures.append((_perf_ns() - start) / repeats)
        _synchronize()
    return max(figures)


def _sync_probe():
    _marker()
    _synchronize()


def eager_samples(call, flush, warmups, iterations, first_index=0, prepare=_nothing, after=_nothing, sync_probes=None):
    """`latency_eager`: per call, prepare and flush, then start event, `call(i)`, end event, one stream.

    The flush keeps the device busy while the host enqueues the call, so launch latency shorter
    than the flush is hidden; a launcher slower than that leaks host time into the sample (the
    in-graph and CUPTI figures do not). `after(i)` runs after the end event is enqueued.

    With a list as `sync_probes`, each iteration also appends, just before its call, the time
    between events of one marker kernel and a device synchronize: what a call that synchronizes
    before returning adds to its eager time (the host's wake-up, the end event enqueued only then),
    measured under the same host load as the call itself."""
    index = first_index
    for _ in range(warmups):
        prepare(index)
        flush()
        call(index)
        after(index)
        index += 1
    starts = [_Event(enable_timing=True) for _ in range(iterations)]
    ends = [_Event(enable_timing=True) for _ in range(iterations)]
    probes = []
    for k in range(iterations):
        if sync_probes is not None:
            probe = (_Event(enable_timing=True), _Event(enable_timing=True))
            _event_record(probe[0])
            _sync_probe()
            _event_record(probe[1])
            probes.append(probe)
        prepare(index)
        flush()
        _event_record(starts[k])
        call(index)
        _event_record(ends[k])
        after(index)
        index += 1
    _synchronize()
    if sync_probes is not None:
        sync_probes.extend(_elapsed_ns(s, e) for s, e in probes)
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
    caller = _current_stream()
    try:
        with _graph_context(graph):
            body()
    finally:
        # When ending the capture fails (a synchronous copy or a device synchronize invalidated
        # it), torch's graph context leaves its own capture stream current: every later call,
        # gate and marker must run on the caller's stream again, or honest work on the legacy
        # default stream looks unordered with it.
        _set_stream(caller)
    _synchronize()
    return graph


def graph_replay_samples(call, flush, iterations, index=0, warmups=3, prepare=_nothing):
    """`latency_graph_replay`: a graph of one `call(index)`, replayed after `prepare(index)` and a
    flush, between two events. Returns (samples, graph); the graph's outputs are those of its
    captured call."""
    _warm_on_side_stream(call, [index] * 2)
    graph = capture(lambda: call(index))
    for _ in range(warmups):
        prepare(index)
        flush()
        _graph_replay(graph)
    starts = [_Event(enable_timing=True) for _ in range(iterations)]
    ends = [_Event(enable_timing=True) for _ in range(iterations)]
    for k in range(iterations):
        prepare(index)
        flush()
        _event_record(starts[k])
        _graph_replay(graph)
        _event_record(ends[k])
    _synchronize()
    return [_elapsed_ns(s, e) for s, e in zip(starts, ends)], graph


class InGraph:
    """The two graphs of `latency_in_graph`: N x (refill(i), flush, call(i)) for i in 0..N-1, and
    N x (refill(i), flush).

    Built once (capture runs the callable's Python N times). `samples(replays, before, after)`
    replays them in pairs; `before(r)` runs before pair r's first event (new seeds, poisoned
    outputs), `after(r)` after its last event is enqueued (checks)."""

    def __init__(self, call, flush, calls_per_graph, refill=_nothing, before_capture=lambda: None):
        self.n = calls_per_graph
        _warm_on_side_stream(call, range(self.n))
        before_capture()

        def calls():
            for i in range(self.n):
                refill(i)
                flush()
                call(i)

        def flushes():
            for i in range(self.n):
                refill(i)
                flush()

        self.calls = capture(calls)
        self.flushes = capture(flushes)

    def replay_calls(self):
        _graph_replay(self.calls)
        _synchronize()

    def samples(self, replays, warmups=1, before=_nothing, after=_nothing):
        """Per-call samples: (calls replay - flushes replay) / N for each pair. An untimed replay of
        the flushes precedes each pair, so neither timed replay starts on a device that idled while
        `before` ran on the host, and the order within a pair alternates: the first replay after
        idle time ran slower, which made small kernels' figures negative (H100, 2026-12-06)."""
        for _ in range(warmups):
            _graph_replay(self.flushes)
            _graph_replay(self.calls)
        marks = [_Event(enable_timing=True) for _ in range(3 * replays)]
        for r in range(replays):
            before(r)
            _graph_replay(self.flushes)
            order = (self.flushes, self.calls) if r % 2 == 0 else (self.calls, self.flushes)
            _event_record(marks[3 * r])
            _graph_replay(order[0])
            _event_record(marks[3 * r + 1])
            _graph_replay(order[1])
            _event_record(marks[3 * r + 2])
            after(r)
        _synchronize()
        out = []
        for r in range(replays):
            first = _elapsed_ns(marks[3 * r], marks[3 * r + 1])
            second = _elapsed_ns(marks[3 * r + 1], marks[3 * r + 2])
            flushes, both = (first, second) if r % 2 == 0 else (second, first)
            out.append((both - flushes) / self.n)
        return out


def in_graph_samples(call, flush, calls_per_graph, replays):
    """`latency_in_graph` samples (see `InGraph`)."""
    return InGraph(call, flush, calls_per_graph).samples(replays)


def _device_activities(prof):
    """(name, start_ns, end_ns, stream) of every device activity (kernel, copy, memset) in a profile."""
    out = []
    for event in prof.profiler.kineto_results.events():
        if event.device_type() != _DeviceType.CUDA:
            continue
        start = int(event.start_ns())
        out.append((event.name(), start, start + int(event.duration_ns()), event.device_resource_id()))
    return out


def cupti_samples(call, flush, iterations, first_index=0, warmups=1, prepare=_nothing, after=_nothing, gate_ns=100_000):
    """`latency_cupti`: per call, the device time of everything it ran (see the module docs).

    Each call runs on a quiet device between an opening marker and a closing marker enqueued as soon
    as it returns; a gate of `gate_ns` (longer than the host takes to enqueue the call) holds the
    caller's stream after the opening marker, so work the call left on a stream of its own shows as
    running before the gate ends (it did not wait for the caller's stream) or after the closing
    marker starts (it was not joined back); a fence marker after a device synchronize ends the
    window. Returns (busy_ns per call, activities per call). Raises ki_windows.WindowError when the
    record cannot be cut into one window per call (a harness error, not the solution's), and
    ki_windows.UnorderedWork when a call's work was not ordered on the caller's stream."""
    index = first_index
    for _ in range(warmups):
        prepare(index)
        flush()
        call(index)
        after(index)
        index += 1
    _calibrate_gate()
    _synchronize()
    with _profile(activities=[_ProfilerActivity.CUDA]) as prof:
        for _ in range(iterations):
            prepare(index)
            flush()
            _synchronize()
            _marker()
            _gate(gate_ns)
            call(index)
            _marker()
            _synchronize()
            _marker()
            after(index)
            index += 1
        _synchronize()
    windows = ki_windows.call_windows(_device_activities(prof), iterations)
    return [float(busy) for busy, _, _ in windows], [count for _, count, _ in windows]
