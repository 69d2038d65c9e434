"""Two `ki serve` builds on the same catalog, answer for answer: the check behind "N page and API
answers byte-identical before and after" (issue 35's refactors).

    python3 bench/web/answers_compare.py http://127.0.0.1:18081 http://127.0.0.1:18082

Start both servers first, each on its own copy of the bundled catalog (`ki serve --database
sqlite:///tmp/a.db --addr 127.0.0.1:18081 --reload-every 0`, and likewise the other build). The URLs
come from the bundled row files in data/ (every operation and project; a seeded sample of 400
implementations with the baselines, each with its page, API answer, diff and source; 500 runs, page
and API; searches, lists, feeds, GPUs, models, serving runs). Request ids and the servers' own
addresses are masked before comparing. Prints the URLs whose answers differ and exits 1 if any do.
"""

import hashlib
import json
import random
import re
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SEARCHES = ["gemm", "rmsnorm", "gqa decode", "moe", "flash attention h100", "mla", "fp8", "triton", "cuda", "softmax"]
GPUS = ["nvidia-h100", "nvidia-h200", "nvidia-b200", "nvidia-a100"]
LISTS = [
    "/",
    "/operations",
    "/projects",
    "/gpus",
    "/models",
    "/records",
    "/records.atom",
    "/serving",
    "/docs",
    "/verifications",
    "/api/v1/operations",
    "/api/v1/projects",
    "/api/v1/gpus",
    "/api/v1/models",
    "/api/v1/records",
    "/api/v1/serving",
    "/api/v1/openapi.json",
    "/api/v1/runs",
    "/api/v1/feed?since=2026-01-01T00:00:00Z",
]


def bundled_rows():
    """Rows of the bundled files by table (the files `ki serve` imports on a first start)."""
    rows = {}
    for path in sorted((ROOT / "data").glob("*.jsonl.zst")):
        if path.name.endswith(".contents.jsonl.zst") or path.name.startswith("artifacts-"):
            continue
        text = subprocess.run(["zstd", "-qdc", str(path)], capture_output=True, check=True).stdout.decode()
        for line in text.splitlines():
            entry = json.loads(line)
            rows.setdefault(entry["table"], []).append(entry["row"])
    return rows


def urls(rows):
    chosen = random.Random(7)
    out = list(LISTS)
    for operation in rows["operations"]:
        out += [f"/operations/{operation['slug']}", f"/api/v1/operations/{operation['slug']}"]
    for project in rows["projects"]:
        out += [f"/projects/{project['slug']}", f"/api/v1/projects/{project['slug']}"]
    implementations = rows["implementations"]
    sample = chosen.sample(implementations, min(400, len(implementations)))
    sample += [i for i in implementations if i.get("role") == "baseline"][:50]
    for implementation in sample:
        slug = implementation["slug"]
        out += [f"/implementations/{slug}", f"/api/v1/implementations/{slug}"]
        out += [f"/implementations/{slug}/diff", f"/implementations/{slug}/source"]
    runs = rows["benchmark_runs"]
    for run in chosen.sample(runs, min(400, len(runs))) + runs[-100:]:
        out += [f"/runs/{run['id']}", f"/api/v1/runs/{run['id']}"]
    for words in SEARCHES:
        query = urllib.parse.quote(words)
        out += [f"/api/v1/search?q={query}", f"/resolve?q={query}", f"/?q={query}"]
    for gpu in GPUS:
        out += [f"/gpus/{gpu}", f"/api/v1/gpus/{gpu}"]
    for model in rows.get("model_revisions", []):
        out += [f"/models/{model['slug']}", f"/api/v1/models/{model['slug']}"]
    for serving in rows.get("serving_runs", [])[:50]:
        out += [f"/serving/runs/{serving['id']}", f"/api/v1/serving/runs/{serving['id']}"]
    return out


def answer(base, url):
    """Status and the sha256 of the body, with what differs between two servers masked."""
    try:
        with urllib.request.urlopen(base + url, timeout=30) as response:
            status, body = response.status, response.read()
    except urllib.error.HTTPError as error:
        status, body = error.code, error.read()
    host = urllib.parse.urlsplit(base).netloc.encode()
    body = body.replace(host, b"HOST")
    body = re.sub(rb'"requestId":"[^"]*"', b"", body)
    body = re.sub(rb"request id [0-9a-f-]+", b"", body)
    return f"{status} {hashlib.sha256(body).hexdigest()}"


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    before, after = sys.argv[1].rstrip("/"), sys.argv[2].rstrip("/")
    every = list(dict.fromkeys(urls(bundled_rows())))  # each URL once, in order
    differ = [url for url in every if answer(before, url) != answer(after, url)]
    for url in differ:
        print(f"differs: {url}")
    print(f"{len(every) - len(differ)} of {len(every)} answers byte-identical")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
