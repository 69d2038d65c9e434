"""Per-call kernel time of each honest corpus solution from ncu's CSV (see corpus_ncu.py)."""

import csv
import json
import sys


def main():
    order = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
    rows = [r for r in csv.DictReader(line for line in open(sys.argv[2]) if line.startswith('"'))]
    durations = [(r["Kernel Name"], float(r["Metric Value"].replace(",", "")), r.get("Metric Unit", "")) for r in rows
                 if r.get("Metric Name") == "gpu__time_duration.sum"]
    scale = {"nsecond": 1.0, "ns": 1.0, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6, "second": 1e9, "s": 1e9}
    groups, current = [], None
    for name, value, unit in durations:
        if "ki_ncu_marker" in name:
            if current is not None:
                groups.append(current)
            current = []
        elif current is not None:
            current.append(value * scale.get(unit, 1.0))
    out = {}
    for name, kernels in zip(order["order"], groups):
        out[name] = {"ns_per_call": sum(kernels) / order["calls"], "kernels": len(kernels) / order["calls"]}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
