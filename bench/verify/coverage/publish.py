"""Issue 32: the coverage calls' records as one publication, for data/.

Reads each call folder named (oldest first: `catalog-rows.jsonl.zst`, `records.tgz`; calls of one
tree, run with `--catalog` so that their rows name the bundled snapshot's operations and workloads),
keeps for each implementation x workload the newest call's run, and writes into OUT:
- `catalog-rows.jsonl`: the kept runs, their measurements, and every other row once (a row of the
  same table and id must be identical across calls, or nothing is written);
- `contents.jsonl.zst`: one {"digest", "path", "content"} line per raw-samples file and source
  bundle the kept rows name (the format of data/artifacts-*.jsonl.zst), each sha256 checked.
Then `zstd -19 OUT/catalog-rows.jsonl` and the contents go into data/ (data/README.md).

Rows already bundled (each `--bundled FILE`, a data/*.jsonl.zst) must stay one row per id: an
implementation whose row here differs from the bundled row of its id (the runner's description names
the local file a solution was read from) has its runs held back, listed in `OUT/held-back.json`; so
does a run that failed because the card ran out of memory under the harness (a harness fault), and every
run of a causal prefill workload with fewer KV tokens than queries: no split of such a workload lets every
query see a key, and the harness's split (before the runner refused such workloads) left sequences with
queries and no KV, answered only by the reference's convention (lse -inf), which FlashInfer does not share.

Usage: python3 publish.py OUT [--bundled FILE]... CALL_FOLDER...
"""

import hashlib
import json
import os
import sys
import subprocess
import tarfile


def read_rows(path):
    # Through stdin: zstd ignores a file given by a symbolic link (the calls' rows link to fixtures/).
    with open(path, "rb") as f:
        text = subprocess.run(["zstd", "-dc"], stdin=f, capture_output=True, check=True).stdout.decode()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def is_out_of_memory(run):
    reason = run["manifest"]["run"]["metadata"].get("description") or ""
    return "CUDA_ERROR_OUT_OF_MEMORY" in reason or "CUDA out of memory" in reason


def kv_short_of_queries(workload):
    axes = workload["manifest"]["spec"]["axes"]
    queries, kv = axes.get("total_q"), axes.get("num_kv_indices", axes.get("total_kv"))
    return queries is not None and kv is not None and kv < queries


def main():
    out, args = sys.argv[1], sys.argv[2:]
    bundled, calls = {}, []
    while args:
        if args[0] == "--bundled":
            for line in read_rows(args[1]):
                if "id" in line["row"]:
                    bundled[(line["table"], line["row"]["id"])] = line["row"]
            args = args[2:]
        else:
            calls.append(args.pop(0))
    others = {}  # (table, id) -> row
    runs = {}  # (implementationId, workloadId) -> (call, run)
    measurements = {}  # runId -> [rows]
    records = {}  # call -> records.tgz
    if not calls:
        sys.exit(__doc__.strip().splitlines()[-1])
    for folder in calls:
        call = os.path.basename(folder.rstrip("/"))
        for needed in ("catalog-rows.jsonl.zst", "records.tgz"):
            if not os.path.exists(os.path.join(folder, needed)):
                sys.exit(
                    f"{folder}: no {needed}, so not a coverage call's folder as publish.py reads it "
                    "(a published call's records.tgz is in git history: bench/verify/coverage/README.md)"
                )
        records[call] = tarfile.open(os.path.join(folder, "records.tgz"))
        for line in read_rows(os.path.join(folder, "catalog-rows.jsonl.zst")):
            table, row = line["table"], line["row"]
            if table == "benchmark_runs":
                runs[(row["implementationId"], row["workloadId"])] = (call, row)
            elif table == "measurements":
                measurements.setdefault(row["runId"], []).append(row)
            else:
                known = others.setdefault((table, row["id"]), (call, row))[1]
                if known != row:
                    sys.exit(f"{call}: {table} row {row['id']} differs from an earlier call's")
    differing = {key[1] for key, (_, row) in others.items() if key in bundled and bundled[key] != row}
    held_back = [
        {"run": row["id"], "implementation": row["implementationId"], "reason": "its implementation row differs from the bundled one"}
        for _, row in runs.values()
        if row["implementationId"] in differing
    ]
    runs = {k: cr for k, cr in runs.items() if cr[1]["implementationId"] not in differing}
    # A run that ran out of device memory failed through the harness (the worker's input slots and the
    # judge share the card), not through the implementation: a harness fault is never published as
    # the implementation's failure.
    # (A runtime error, or since the typed-protocol runner a harness error: incomplete evidence.)
    out_of_memory = {k for k, (_, row) in runs.items() if row["status"] in ("runtime_error", "incomplete_evidence") and is_out_of_memory(row)}
    held_back += [
        {
            "run": runs[k][1]["id"],
            "implementation": runs[k][1]["implementationId"],
            "reason": "the card ran out of memory under the harness (a harness fault)",
        }
        for k in sorted(out_of_memory)
    ]
    runs = {k: cr for k, cr in runs.items() if k not in out_of_memory}
    workloads = {id: row for (table, id), row in bundled.items() if table == "workloads"}
    workloads.update({id: row for (table, id), (_, row) in others.items() if table == "workloads"})
    degenerate = {k for k, (_, row) in runs.items() if kv_short_of_queries(workloads[row["workloadId"]])}
    held_back += [
        {
            "run": runs[k][1]["id"],
            "implementation": runs[k][1]["implementationId"],
            "reason": "a causal prefill workload with fewer KV tokens than queries: the harness gave some sequences "
            "queries and no KV, where only the reference's convention answers (a harness fault)",
        }
        for k in sorted(degenerate)
    ]
    runs = {k: cr for k, cr in runs.items() if k not in degenerate}
    used = {cr[1]["implementationId"] for cr in runs.values()}
    others = {k: v for k, v in others.items() if not (k[0] == "implementations" and k[1] in differing and k[1] not in used)}
    kept = sorted(runs.values(), key=lambda cr: (cr[1]["observedAt"], cr[1]["id"]))
    # A passed run names its samples under timing, a failed one under evidence (as the catalog reads them).
    named = [
        (call, raw["uri"], raw["digest"])
        for call, run in kept
        for part in ("timing", "evidence")
        if (raw := (run["manifest"]["run"]["spec"].get(part) or {}).get("rawSamples"))
    ]
    named += [(call, row["uri"], row["contentDigest"]) for (table, _), (call, row) in sorted(others.items()) if table == "artifacts"]
    contents, seen = [], set()
    for call, uri, digest in named:
        if digest in seen:
            continue
        seen.add(digest)
        content = records[call].extractfile(uri).read()
        if "sha256:" + hashlib.sha256(content).hexdigest() != digest:
            sys.exit(f"{call}: {uri} does not have its digest")
        contents.append({"digest": digest, "path": f"bench/verify/coverage/{call}/records.tgz:{uri}", "content": content.decode()})
    order = ["sources", "projects", "operations", "workloads", "artifacts", "implementations"]
    placed = {t for t, _ in others} - set(order)
    if placed:
        sys.exit(f"tables this script does not place: {sorted(placed)}")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "catalog-rows.jsonl"), "w") as f:

        def write(table, row):
            f.write(json.dumps({"table": table, "row": row}, separators=(",", ":")) + "\n")

        for table in order:
            for (t, _), (_, row) in sorted(others.items()):
                if t == table:
                    write(t, row)
        for _, run in kept:
            write("benchmark_runs", run)
        for _, run in kept:
            for m in measurements.get(run["id"], []):
                write("measurements", m)
    with open(os.path.join(out, "held-back.json"), "w") as f:
        json.dump(held_back, f, indent=1)
    lines = "".join(json.dumps(c, separators=(",", ":")) + "\n" for c in contents).encode()
    with open(os.path.join(out, "contents.jsonl.zst"), "wb") as f:
        subprocess.run(["zstd", "-19", "-q", "-c"], input=lines, stdout=f, check=True)
    statuses = {}
    for _, run in kept:
        statuses[run["status"]] = statuses.get(run["status"], 0) + 1
    print(f"runs {len(kept)} {statuses}; held back {len(held_back)}; contents {len(contents)} ({len(lines)} bytes)")


if __name__ == "__main__":
    main()
