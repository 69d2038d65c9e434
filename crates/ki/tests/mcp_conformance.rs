//! `ki mcp` (issue 19) against a real MCP client: the official Python SDK from PyPI
//! (`mcp`, pinned below), installed into a venv under the target directory on first run,
//! drives `tests/mcp_client.py` — both protocol eras (the 2026-07-28 `server/discover` probe,
//! the 2025-11-25 `initialize` handshake), every tool, every structured result checked against
//! its output schema, the error cases — on a SQLite catalog of the bundled snapshot, and again
//! with `--api` on a running `ki serve` of that catalog. The structured results are the
//! documents the CLI prints with `--json`. Also the protocol by hand: a message over the bound
//! is refused and skipped, and the server keeps serving.
//!
//! Without Python 3 or with PyPI unreachable the SDK part is skipped with a loud message; any
//! other failure to install fails the test.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

/// The SDK release the conformance is shown with (2.x speaks both eras).
const MCP_SDK: &str = "mcp==2.3.0";

fn venv_python() -> Option<PathBuf> {
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mcp-sdk-venv");
    let python = venv.join("bin/python");
    let installed = venv.join(format!("installed-{MCP_SDK}"));
    if installed.exists() {
        return Some(python);
    }
    if Command::new("python3").arg("--version").output().is_err() {
        eprintln!("\n*** SKIPPED: the MCP conformance test needs python3 (to install {MCP_SDK}) ***\n");
        return None;
    }
    let made = Command::new("python3").args(["-m", "venv"]).arg(&venv).output().unwrap();
    assert!(made.status.success(), "python3 -m venv: {}", String::from_utf8_lossy(&made.stderr));
    let pip = Command::new(&python)
        .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", MCP_SDK])
        .output()
        .unwrap();
    if !pip.status.success() {
        let reachable = ("pypi.org", 443)
            .to_socket_addrs()
            .ok()
            .and_then(|mut addrs| addrs.next())
            .is_some_and(|addr| TcpStream::connect_timeout(&addr, Duration::from_secs(10)).is_ok());
        if !reachable {
            eprintln!("\n*** SKIPPED: PyPI is unreachable, so the MCP SDK ({MCP_SDK}) cannot be installed ***\n");
            return None;
        }
        panic!("pip install {MCP_SDK} failed with PyPI reachable:\n{}", String::from_utf8_lossy(&pip.stderr));
    }
    std::fs::write(&installed, "").unwrap();
    Some(python)
}

/// A verification job in the catalog, for `verification_status`: a solution enqueued for one
/// workload of the seed operation.
fn enqueue_job(directory: &Path, database: &str) -> String {
    let workload = tokio::runtime::Runtime::new().unwrap().block_on(async {
        let catalog = ki_catalog::Catalog::open(database).await.unwrap();
        catalog.ensure_bundled_snapshot().await.unwrap();
        let operations = catalog.rows::<ki_model::rows::OperationRow>().await.unwrap();
        let operation = operations.iter().find(|r| r.name == "gqa_paged_decode_h32_kv4_d128_ps1").unwrap();
        let workloads = catalog.rows::<ki_model::rows::WorkloadRow>().await.unwrap();
        let workload = workloads.into_iter().find(|w| w.operation_id == operation.id).unwrap().id;
        catalog.close().await;
        workload
    });
    let solution = directory.join("solution.json");
    std::fs::write(&solution, r#"{"name": "mcp-test-solution", "definition": "gqa_paged_decode_h32_kv4_d128_ps1", "spec": {"language": "python", "entry_point": "main.py::run"}, "sources": [{"path": "main.py", "content": "def run(): pass\n"}]}"#).unwrap();
    let enqueued = common::ki()
        .args(["verify", "--enqueue", "--database", database])
        .arg(&solution)
        .args(["--workload", &workload, "--protocol", "kernelindex-rerun-v2-realistic", "--json"])
        .output()
        .unwrap();
    assert!(enqueued.status.success(), "{}", String::from_utf8_lossy(&enqueued.stderr));
    let job: Value = serde_json::from_slice(&enqueued.stdout).unwrap();
    job["job"]["id"].as_str().unwrap().to_string()
}

/// Runs the SDK client on `ki mcp SOURCE…` in one mode; returns its structured results.
fn sdk_client(python: &Path, mode: &str, version: &str, job: &str, source: &[&str]) -> Value {
    let job: &[&str] = if job.is_empty() { &[] } else { &["--job", job] };
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp_client.py");
    let output = Command::new(python)
        .arg(script)
        .args(["--mode", mode, "--expect-version", version])
        .args(job)
        .args(["--", env!("CARGO_BIN_EXE_ki"), "mcp"])
        .args(source)
        .env_remove("KI_DATABASE_URL")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "the MCP client ({mode}, {source:?}) failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("the client prints its results as JSON")
}

fn cli_json(args: &[&str]) -> Value {
    let output = common::ki().args(args).arg("--json").env_remove("KI_DATABASE_URL").output().unwrap();
    assert!(output.status.success(), "{args:?}: {}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn the_python_sdk_finds_every_tool_conformant_on_a_catalog_and_over_the_api() {
    let Some(python) = venv_python() else { return };
    let directory = tempfile::tempdir().unwrap();
    let database = common::bundled_sqlite(directory.path(), "catalog.db");
    let job = enqueue_job(directory.path(), &database);
    let server = common::start_server_with(directory.path(), &database, &["--base-url", "https://kernelindex.dev"]);
    let api = format!("http://{}", server.addr);

    let local = sdk_client(&python, "auto", "2026-07-28", &job, &["--database", &database]);
    let legacy = sdk_client(&python, "legacy", "2025-11-25", &job, &["--database", &database]);
    let remote = sdk_client(&python, "auto", "2026-07-28", &job, &["--api", &api]);
    for tool in ["search", "resolve", "show_run", "compare", "records_since", "list_runs", "verification_status"] {
        assert!(local[tool].is_object(), "{tool} answered");
        assert_eq!(local[tool], legacy[tool], "{tool}: the same answer in both eras");
        assert_eq!(local[tool], remote[tool], "{tool}: the same answer from the catalog and from the index");
    }
    // The same words; the index's answer names its URL besides.
    let remote_words = remote["error"].as_str().and_then(|e| e.split(" (GET").next()).unwrap();
    assert_eq!(local["error"].as_str(), Some(remote_words), "{remote}");

    // The tools answer with the documents the CLI prints.
    let run = local["show_run"]["id"].as_str().unwrap();
    assert_eq!(local["show_run"], cli_json(&["show", "run", run, "--database", &database]));
    assert_eq!(local["search"], cli_json(&["search", "gqa", "decode", "--database", &database]));
    let compared: Vec<&str> =
        local["compare"]["runs"].as_array().unwrap().iter().map(|r| r["summary"]["runId"].as_str().unwrap()).collect();
    let mut compare = vec!["compare"];
    compare.extend(&compared);
    compare.extend(["--database", &database]);
    assert_eq!(local["compare"], cli_json(&compare));
}

/// Sends `lines` to a fresh `ki mcp` and returns its replies, one per line.
fn exchange(database: &str, lines: &[Vec<u8>]) -> Vec<Value> {
    let mut child = common::ki()
        .args(["mcp", "--database", database])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for line in lines {
        stdin.write_all(line).unwrap();
        stdin.write_all(b"\n").unwrap();
    }
    drop(stdin);
    let replies = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map(|line| serde_json::from_str(&line.unwrap()).expect("each reply is one JSON line"))
        .collect();
    assert!(child.wait().unwrap().success(), "ki mcp ends cleanly at the end of its input");
    replies
}

#[test]
fn the_protocol_is_strict_and_its_input_bounded() {
    let directory = tempfile::tempdir().unwrap();
    let database = common::bundled_sqlite(directory.path(), "catalog.db");
    let meta = json!({ "io.modelcontextprotocol/protocolVersion": "2026-07-28" });
    let huge =
        format!(r#"{{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{{"pad":"{}"}}}}"#, "x".repeat(2 << 20));
    let message = |value: Value| value.to_string().into_bytes();
    let replies = exchange(
        &database,
        &[
            huge.into_bytes(),
            b"{not json".to_vec(),
            message(json!([{ "jsonrpc": "2.0", "id": 1, "method": "tools/list" }])),
            message(json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" })),
            message(
                json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": { "_meta": { "io.modelcontextprotocol/protocolVersion": "1900-01-01" } } }),
            ),
            message(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" })),
            message(json!({ "jsonrpc": "2.0", "id": null, "method": "tools/list", "params": { "_meta": meta } })),
            message(json!({ "jsonrpc": "2.0", "id": "d", "method": "server/discover", "params": { "_meta": meta } })),
            message(json!({ "jsonrpc": "2.0", "id": 4, "method": "resources/list", "params": { "_meta": meta } })),
            message(
                json!({ "jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": { "_meta": meta, "name": "show_run", "arguments": { "run": "\u{1b}[31mffffffff" } } }),
            ),
        ],
    );
    let codes: Vec<(Value, Value)> = replies.iter().map(|r| (r["id"].clone(), r["error"]["code"].clone())).collect();
    assert_eq!(
        codes,
        vec![
            (Value::Null, json!(-32600)), // over 1 MiB: refused, skipped, and the next line is read
            (Value::Null, json!(-32700)),
            (Value::Null, json!(-32600)), // no batches
            (json!(2), json!(-32600)),    // neither a version in _meta nor a handshake
            (json!(3), json!(-32022)),
            (Value::Null, json!(-32600)), // a null id; the notification got no reply
            (json!("d"), Value::Null),
            (json!(4), json!(-32601)),
            (json!(5), Value::Null),
        ],
        "{replies:#?}"
    );
    assert!(replies[0]["error"]["message"].as_str().unwrap().contains("at most 1048576 bytes"));
    assert_eq!(replies[4]["error"]["data"]["supported"], json!(["2026-07-28", "2025-11-25", "2025-06-18"]));
    assert_eq!(replies[6]["result"]["supportedVersions"][0], "2026-07-28");
    assert_eq!(replies[6]["result"]["resultType"], "complete");
    let refusal = &replies[8]["result"];
    assert_eq!(refusal["isError"], true);
    assert!(refusal["content"][0]["text"].as_str().unwrap().starts_with("no run matches"), "{refusal}");
}
