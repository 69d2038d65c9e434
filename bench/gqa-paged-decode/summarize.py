#!/usr/bin/env python3
"""Summarizes a gqa_bench time log: per variant and unit size, the geometric mean of graph
medians over the 48 workloads (wl00..wl47), the seed (wl32), 16x8192 and 128x4096 (TB/s);
then, per variant, the best unit size per workload. Usage: summarize.py gqa_bench_time.log"""
import math, sys
from collections import defaultdict
rows = defaultdict(dict)  # (variant, tpw) -> id -> (graph_us, tbps)
col = None  # column positions, from the header line (later logs have a `plan` column)
for line in open(sys.argv[1]):
    f = [x.strip() for x in line.split("|")]
    if len(f) < 13 or f[0] != "time":
        continue
    if f[1] == "id":
        col = {name: i for i, name in enumerate(f)}
        continue
    rows[(f[col["variant"]], f[col["tpw"]])][f[1]] = (float(f[col["graph_med_us"]]), float(f[col["TB/s_graph"]]))
def geo(vals):
    return math.exp(sum(math.log(v) for v in vals) / len(vals))
print("variant | tpw | geomean48_us | seed_us | b16x8192_us | b128x4096_TB/s | b1_geo | b64_geo | b16_geo")
for (v, t), d in sorted(rows.items()):
    wl = [d[k][0] for k in sorted(d) if k.startswith("wl")]
    if len(wl) != 48:
        continue
    g = lambda r: geo([d[f"wl{i:02}"][0] for i in r])
    print(f"{v} | {t} | {geo(wl):.2f} | {d['wl32'][0]:.2f} | {d.get('b16x8192', (0,0))[0]:.2f} | {d.get('b128x4096', (0,0))[1]:.2f} | {g(range(0,16)):.2f} | {g(range(16,32)):.2f} | {g(range(32,48)):.2f}")
best = defaultdict(dict)
for (v, t), d in rows.items():
    for k, (us, _) in d.items():
        if k not in best[v] or us < best[v][k][0]:
            best[v][k] = (us, t)
for v, d in sorted(best.items()):
    wl = [d[f"wl{i:02}"][0] for i in range(48) if f"wl{i:02}" in d]
    if len(wl) == 48:
        print(f"{v} best-of-tpw: geomean {geo(wl):.2f} seed {d['wl32'][0]:.2f} (tpw {d['wl32'][1]})")
