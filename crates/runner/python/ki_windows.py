"""Pure bookkeeping of the timing protocol (no torch, no GPU): unit-tested on CI.

* `call_windows`: the device activities of a CUPTI session cut into one window per timed call, the
  windows delimited by our marker kernels; a call's device time is the union of the intervals of
  every kernel, copy and memset inside its window, whichever stream or API launched them.
* `SeedLedger`: the call seeds a worker used, so the runner can see that no timed call was given
  values a solution had seen before and which calls were checked against the reference.
"""

MARKER_NAME = "ki_window_marker"


class WindowError(Exception):
    """The activity record cannot be cut into the expected windows (a harness error)."""


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


def call_windows(activities, calls, marker=MARKER_NAME):
    """Per call: (busy_ns, activity_count, span_ns) from (name, start_ns, end_ns) device activities.

    The record holds, per call, a marker, the call's work, a marker (with device-wide
    synchronizations between them, so nothing straddles a marker). Anything else (flushes, input
    refills) lies outside the windows and is not counted."""
    ordered = sorted(activities, key=lambda a: (a[1], a[2]))
    marks = [a for a in ordered if marker in a[0]]
    if len(marks) != 2 * calls:
        raise WindowError(f"{len(marks)} marker kernels in the record, {2 * calls} expected (for {calls} calls)")
    out = []
    for k in range(calls):
        opened, closed = marks[2 * k][2], marks[2 * k + 1][1]
        if closed < opened:
            raise WindowError(f"call {k}: its closing marker starts before its opening marker ends")
        inside = [(max(s, opened), min(e, closed)) for name, s, e in ordered
                  if marker not in name and e > opened and s < closed]
        straddling = [a for a in ordered if marker not in a[0] and (a[1] < opened < a[2] or a[1] < closed < a[2])]
        if straddling:
            raise WindowError(f"call {k}: {straddling[0][0][:80]} straddles a window's edge")
        busy = union_ns(inside)
        span = (max(e for _, e in inside) - min(s for s, _ in inside)) if inside else 0
        out.append((busy, len(inside), span))
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
