"""Per-call kernel time of each solution from ncu's CSV (see corpus_ncu.py, pr221_ncu.py): the sum
of `gpu__time_duration` over the kernels of a call and, where ncu also collected
`sm__cycles_active.max` and `sm__cycles_elapsed.avg.per_second` (the SM clock), the longest time any
SM held a warp (`sm_active_ns_per_call`): ncu's duration carries a per-kernel floor of about 1.6 µs
(memcpy_gate.py), the SM-active figure (a lower bound of the kernel's run: no launch, no drain)
does not, which matters beside 2-3 µs kernels; and, where ncu collected `gpc__cycles_elapsed.max` and
its clock, the longest a GPC counted during the kernel (`gpc_elapsed_ns_per_call`), a third view of the
same run."""

import csv
import json
import sys

SCALE = {
    "nsecond": 1.0,
    "ns": 1.0,
    "usecond": 1e3,
    "us": 1e3,
    "msecond": 1e6,
    "ms": 1e6,
    "second": 1e9,
    "s": 1e9,
    "cycle": 1.0,
    "cycle/second": 1.0,
    "cycle/nsecond": 1e9,
    "cycle/usecond": 1e6,
    "cycle/msecond": 1e3,
    "Ghz": 1e9,
    "Mhz": 1e6,
    "Khz": 1e3,
    "hz": 1.0,
}


def kernels(csv_path):
    """[(kernel name, {metric: value in ns, cycles or cycles per second})] in launch order."""
    by_id = {}
    for r in csv.DictReader(line for line in open(csv_path) if line.startswith('"')):
        entry = by_id.setdefault(r["ID"], (r["Kernel Name"], {}))
        unit = r.get("Metric Unit", "")
        entry[1][r["Metric Name"]] = float(r["Metric Value"].replace(",", "")) * SCALE.get(unit, 1.0)
    return [by_id[k] for k in sorted(by_id, key=int)]


def main():
    order = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
    groups, current = [], None
    for name, metrics in kernels(sys.argv[2]):
        if "ki_ncu_marker" in name:
            if current is not None:
                groups.append(current)
            current = []
        elif current is not None:
            current.append(metrics)
    out = {}
    for name, group in zip(order["order"], groups):
        calls = order["calls"]
        row = {"ns_per_call": sum(m["gpu__time_duration.sum"] for m in group) / calls, "kernels": len(group) / calls}
        if group and all("sm__cycles_active.max" in m and m.get("sm__cycles_elapsed.avg.per_second") for m in group):
            row["sm_active_ns_per_call"] = sum(m["sm__cycles_active.max"] / m["sm__cycles_elapsed.avg.per_second"] * 1e9 for m in group) / calls
        if group and all("gpc__cycles_elapsed.max" in m and m.get("gpc__cycles_elapsed.avg.per_second") for m in group):
            row["gpc_elapsed_ns_per_call"] = sum(m["gpc__cycles_elapsed.max"] / m["gpc__cycles_elapsed.avg.per_second"] * 1e9 for m in group) / calls
        out[name] = row
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
