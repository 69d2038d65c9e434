"""MCP conformance of `ki mcp`, driven by the official Python SDK (PyPI `mcp`) as a client.

Run by `cargo test -p ki --test mcp_conformance`, which makes the venv and the catalog:

    python mcp_client.py --mode auto|legacy --expect-version V -- KI_BINARY mcp --database URL | --api URL

Connects (`auto`: the 2026-07-28 `server/discover` probe; `legacy`: the `initialize`
handshake), lists the tools, checks every input and output schema is valid JSON Schema 2020-12,
calls every tool and validates its structured result against the tool's output schema (the SDK
checks too; this does it again, by hand), then the error cases: a tool's refusal comes back as
`isError` with the CLI's words, an unknown tool as a JSON-RPC error. Prints one JSON object:
the structured results by tool, for the Rust side to compare with the CLI's `--json`.
"""

import argparse
import asyncio
import json
import sys

import jsonschema
from mcp import Client, MCPError, StdioServerParameters

TOOLS = ["search", "resolve", "show_run", "compare", "records_since", "list_runs", "verification_status"]
GQA = "gqa_paged_decode_h32_kv4_d128_ps1"
# Our own H200 runs: the native kernel and FlashInfer both ways, in one comparison group.
SEED_CASE = {
    "operation": GQA,
    "axes": {"batch_size": 1, "len_indptr": 2, "num_kv_indices": 11, "num_pages": 12},
    "hardware": "NVIDIA H200",
}


def fail(message):
    print(f"FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def check(condition, message):
    if not condition:
        fail(message)


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", required=True)
    parser.add_argument("--expect-version", required=True)
    parser.add_argument("--job", help="a verification job id the catalog holds")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    params = StdioServerParameters(command=command[0], args=command[1:])
    results = {}
    async with Client(params, mode=args.mode, read_timeout_seconds=300) as client:
        check(client.protocol_version == args.expect_version, f"negotiated {client.protocol_version}, expected {args.expect_version}")
        check(client.server_info is not None and client.server_info.name == "ki", f"server info {client.server_info}")
        check(client.server_capabilities.tools is not None, "the tools capability is declared")

        listed = await client.list_tools()
        names = [tool.name for tool in listed.tools]
        check(names == TOOLS, f"tools {names}, expected {TOOLS}")
        output_schemas = {}
        for tool in listed.tools:
            jsonschema.Draft202012Validator.check_schema(tool.input_schema)
            check(tool.output_schema is not None, f"{tool.name} declares an output schema")
            jsonschema.Draft202012Validator.check_schema(tool.output_schema)
            check(tool.description and tool.input_schema.get("type") == "object", f"{tool.name}: description, object input")
            output_schemas[tool.name] = tool.output_schema

        async def call(name, arguments):
            result = await client.call_tool(name, arguments)
            text = result.content[0].text if result.content else ""
            check(not result.is_error, f"{name}({arguments}) failed: {text}")
            check(result.structured_content is not None, f"{name} returns structured content")
            errors = sorted(jsonschema.Draft202012Validator(output_schemas[name]).iter_errors(result.structured_content), key=lambda e: list(e.path))
            check(not errors, f"{name}: structured content against its output schema: {[e.message for e in errors[:3]]}")
            check(json.loads(text) == result.structured_content, f"{name}: the text block is the same JSON")
            results[name] = result.structured_content
            return result.structured_content

        found = await call("search", {"query": "gqa decode"})
        check(any(r["label"] == GQA for r in found["results"]), f"search finds {GQA}")
        one = await call("resolve", SEED_CASE)
        # Measured under two protocols on the H200 (the runner's realistic page tables and the
        # verification lane's), so the answer offers both groups.
        check(len(one["responses"]) == 1 and one["responses"][0]["mode"] == "chooser", "one workload's groups offered")
        fastest = one["responses"][0]["cohorts"][0]["fastest"]
        unmeasured = {"operation": GQA, "axes": {"num_kv_indices": 5000}}
        batch = await call("resolve", {"requests": [SEED_CASE, unmeasured, {"operation": "no_such_op"}]})
        check(
            [r["mode"] for r in batch["responses"]] == ["chooser", "browse", "none"],
            f"a batch answers in order: {[r['mode'] for r in batch['responses']]}",
        )
        results["resolve"] = one
        dossier = await call("show_run", {"run": fastest[0]["runId"]})
        check(dossier["id"] == fastest[0]["runId"] and dossier["primary"]["rank"] == 1, "show_run: the #1 run")
        comparison = await call("compare", {"runs": [fastest[0]["runId"], fastest[1]["runId"]]})
        check(comparison["sameComparisonGroup"] is True, "compare: one group")
        since = await call("records_since", {"since": "2026-08-01"})
        check(since["records"] and all(r["at"] >= "2026-08-01" for r in since["records"]), "records_since: only later")
        runs = await call("list_runs", {"operation": GQA, "hardware": "NVIDIA H200", "limit": 5})
        check(len(runs["runs"]) == 5 and runs["total"] > 5 and runs["nextCursor"], "list_runs: a first page of 5")
        more = await call("list_runs", {"operation": GQA, "hardware": "NVIDIA H200", "limit": 5, "cursor": runs["nextCursor"]})
        check(more["runs"][0]["id"] > runs["runs"][-1]["id"], "list_runs: the next page follows the first")
        if args.job:  # a job the catalog holds
            status = await call("verification_status", {"job": args.job})
            check(status["job"]["id"] == args.job, "verification_status: the job asked for")

        # Refusals are tool errors in the CLI's words; bad arguments too.
        for name, arguments, words in [
            ("show_run", {"run": "ffffffff-0000"}, 'no run matches "ffffffff-0000"'),
            ("compare", {"runs": [fastest[0]["runId"]]}, "compare: runs takes 2 to 8 strings, got 1"),
            ("records_since", {"since": "yesterday"}, 'since "yesterday"'),
            ("resolve", {"requests": [SEED_CASE] * 21}, "a resolve batch takes 1 to 20 requests, got 21"),
            ("search", {"query": "x", "limit": 3}, 'search: unknown argument "limit"'),
            ("list_runs", {"evidence": "nope"}, 'evidence: "nope" is not one of reported'),
            ("verification_status", {"job": "ffffffff-0000"}, 'no verification job "ffffffff-0000"'),
        ]:
            result = await client.call_tool(name, arguments)
            text = result.content[0].text if result.content else ""
            check(result.is_error is True, f"{name}({arguments}) is a tool error")
            check(words in text, f"{name}: {text!r} says {words!r}")
            results.setdefault("error", text)

        try:
            await client.call_tool("no_such_tool", {})
            fail("an unknown tool is a protocol error")
        except MCPError as error:
            check(error.error.code == -32602, f"unknown tool: code {error.error.code}")
    print(json.dumps(results))


asyncio.run(main())
