#!/usr/bin/env python3
"""Seeds the corpora of export_lines, resolve_query and search_query from the repository's data:
one file per export table (its first three lines of the bundled public export), one run with its
operation, workload, implementation and measurements (plain and zstd), resolve form inputs and
API requests for real operations, and a few search queries. Run from fuzz/ (needs zstd)."""
import collections
import json
import pathlib
import subprocess

EXPORT = "../data/catalog-2026-08-16-0022af0b.jsonl.zst"
text = subprocess.run(["zstd", "-dc", EXPORT], capture_output=True, check=True).stdout.decode()
by_table = collections.defaultdict(list)
for line in text.splitlines():
    by_table[json.loads(line)["table"]].append(line)


def write(target, name, content):
    folder = pathlib.Path("corpus") / target
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(content)
    return folder / name


for table, lines in by_table.items():
    write("export_lines", f"{table}.jsonl", "\n".join(lines[:3]) + "\n")
run = json.loads(by_table["benchmark_runs"][0])["row"]
rows_by_id = {json.loads(line)["row"].get("id"): line for lines in by_table.values() for line in lines}
implementation, workload = rows_by_id[run["implementationId"]], rows_by_id[run["workloadId"]]
operations = {json.loads(line)["row"]["operationId"] for line in (implementation, workload)}
snapshot = [rows_by_id[op] for op in sorted(operations)] + [workload, implementation, by_table["benchmark_runs"][0]]
snapshot += [line for line in by_table["measurements"] if json.loads(line)["row"]["runId"] == run["id"]]
plain = write("export_lines", "run-with-parents.jsonl", "\n".join(snapshot) + "\n")
subprocess.run(["zstd", "-q", "-f", "-19", str(plain), "-o", f"{plain}.zst"], check=True)

resolve = [
    "gqa_paged_decode_h32_kv4_d128_ps1\nbatch_size=16, num_pages=1070, len_indptr=17, num_kv_indices=1020\nbfloat16\nNVIDIA B200",
    "gqa_paged_decode_h32_kv4_d128_ps1\nbatch_size=1;num_pages=8 len_indptr=2 num_kv_indices=7\n\n",
    "rmsnorm\nbatch_size=7 hidden_size=4096\nbfloat16, float32\nNVIDIA H100",
    "x\nratio=0.5 name=x big=1e400 neg=-3\n",
    json.dumps({"operation": "gqa_paged_decode_h32_kv4_d128_ps1", "hardware": "NVIDIA B200",
                "axes": {"batch_size": 16, "num_pages": 1070, "len_indptr": 17, "num_kv_indices": 1020}}),
    json.dumps({"operation": "gqa_paged_decode_h32_kv8_d128_ps1", "axes": {"batch_size": 64},
                "dtypes": ["bfloat16"], "framework": "pytorch"}),
]
resolve += [json.loads(line)["row"]["slug"] + "\nbatch_size=1\n" for line in by_table["operations"][:5]]
for index, seed in enumerate(resolve):
    write("resolve_query", f"seed{index}", seed)
for index, seed in enumerate(["gqa paged", "GQA Decode h32", "NVIDIA H200", "flashinfer", "  rms\tnorm \n",
                              "İstanbul Σίσυφος ß"]):
    write("search_query", f"seed{index}", seed)
