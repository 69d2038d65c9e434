"""Pure bookkeeping of the timing protocol (no torch, no GPU): unit-tested on CI.

* `call_windows`: the device activities of a CUPTI session cut into one window per timed call, the
  windows delimited by our marker kernels; a call's device time is the union of the intervals of
  every kernel, copy and memset inside its window, whichever stream or API launched them, and work
  the call left unordered with the caller's stream is named (`UnorderedWork`).
* `SeedLedger`: the call seeds a worker used, so the runner can see that no timed call was given
  values a solution had seen before and which calls were checked against the reference.
"""

MARKER_NAME = "ki_window_marker"
# The gate: torch.cuda._sleep's kernel, which holds the caller's stream while the host enqueues a
# call, so work ordered after the caller's stream cannot start before the call has returned.
GATE_NAME = "spin_kernel"


class WindowError(Exception):
    """The activity record cannot be cut into the expected windows (a harness error)."""


class UnorderedWork(Exception):
    """A call ran device work that is not ordered between the caller's stream before and after it
    (the solution's fault: its outputs race with whatever the caller does next)."""


def union_ns(intervals):
    """Total length of the union of half-open [start, end) intervals."""
    total = 0
    current_start = current_end = None
    for start, end in sorted(intervals):
        if end <= start:
            continue
        if current_end is None or start > current_end:
            if current_end is not None:
                total += current_end - current_start
            current_start, current_end = start, end
        elif end > current_end:
            current_end = end
    if current_end is not None:
        total += current_end - current_start
    return total


def _same_stream(activity, gate):
    return len(activity) > 3 and len(gate) > 3 and activity[3] == gate[3]


def _streams(activity, gate):
    """Where an activity ran beside the gate's (the caller's) stream, when the record says."""
    if len(activity) > 3 and len(gate) > 3:
        return f" (on stream {activity[3]}; the caller's is stream {gate[3]})"
    return ""


def call_windows(activities, calls, marker=MARKER_NAME, gate=GATE_NAME):
    """Per call: (busy_ns, activity_count, span_ns) from (name, start_ns, end_ns[, stream])
    device activities.

    The record holds, per call, on the caller's stream: an opening marker, the gate, the call's
    work, a closing marker enqueued as soon as the call returned, then (after a device-wide
    synchronize) a fence marker. The call's work is everything from the opening marker to the
    fence but the gate and the markers; anything else (flushes, input refills, checks) lies outside
    and is not counted.

    Raises UnorderedWork when the call's work is not ordered on the caller's stream: an activity on
    another stream that started while the gate held the caller's stream (launched on a stream that
    does not wait for the caller's), or one still running when the closing marker started (left on
    another stream, never joined back)."""
    ordered = sorted(activities, key=lambda a: (a[1], a[2]))
    marks = [a for a in ordered if marker in a[0]]
    if len(marks) != 3 * calls:
        raise WindowError(f"{len(marks)} marker kernels in the record, {3 * calls} expected (for {calls} calls)")
    others = [a for a in ordered if marker not in a[0]]
    out = []
    for k in range(calls):
        opening, closing, fence = marks[3 * k], marks[3 * k + 1], marks[3 * k + 2]
        if not opening[2] <= closing[1] <= fence[1]:
            raise WindowError(f"call {k}: its markers are out of order")
        straddling = [a for a in others if a[1] < opening[1] < a[2] or a[1] < fence[1] < a[2]]
        if straddling:
            raise WindowError(f"call {k}: {straddling[0][0][:80]} straddles a window's edge")
        inside = [a for a in others if opening[1] <= a[1] < fence[1]]
        gates = [a for a in inside if gate in a[0]]
        if not gates:
            raise WindowError(f"call {k}: no gate kernel between its markers")
        held_until = gates[0][2]
        if closing[1] < held_until:
            raise WindowError(f"call {k}: its closing marker starts before the gate ends")
        work = [a for a in inside if a is not gates[0]]
        # Work on the caller's own stream is ordered with it by definition, even when it starts
        # before the gate's end is recorded: a programmatic dependent launch (FlashInfer's kernels
        # on Hopper) may begin as the gate's block exits. Only work on other streams must wait.
        early = [a for a in work if a[1] < held_until and not _same_stream(a, gates[0])]
        if early:
            raise UnorderedWork(
                f"call {k}: {early[0][0][:80]} started {(held_until - early[0][1]) / 1e3:.1f} µs before the "
                f"gate ended, while the caller's stream was held before the call{_streams(early[0], gates[0])} "
                "(device work on a stream that does not wait for the caller's stream)"
            )
        late = [a for a in work if a[2] > closing[1]]
        if late:
            raise UnorderedWork(
                f"call {k}: {late[0][0][:80]} was still running {(late[0][2] - closing[1]) / 1e3:.1f} µs after "
                f"the caller's stream went on past the call{_streams(late[0], gates[0])} (device work left "
                "on another stream, never joined back to the caller's)"
            )
        busy = union_ns([(a[1], a[2]) for a in work])
        span = (max(a[2] for a in work) - min(a[1] for a in work)) if work else 0
        out.append((busy, len(work), span))
    return out


class SeedLedger:
    """Every call seed a worker used in one workload request, by phase; seeds never repeat."""

    def __init__(self):
        self.used = set()
        self.timed = []
        self.checked = []

    def use(self, seed, timed):
        if seed in self.used:
            raise ValueError(f"call seed {seed} was used twice")
        self.used.add(seed)
        if timed:
            self.timed.append(seed)

    def check(self, seed):
        self.checked.append(seed)

    def report(self):
        return {"timed": list(self.timed), "checked": list(self.checked), "used": len(self.used)}
