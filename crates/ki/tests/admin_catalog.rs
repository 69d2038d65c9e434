//! `ki admin publish`, `ki admin retract` and `ki admin supersede` as an admin runs them,
//! against a running `ki serve`: a bundle submitted over HTTP is published into the
//! catalog (once), the server shows it without a restart, a record holder is retracted
//! (its page then shows why), bad corrections are refused, and `ki catalog verify`
//! still passes on the corrected catalog's export. SQLite, on two real comparison
//! groups of the shared export.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use ki_catalog::{Catalog, ExportLine, ImportOptions};
use ki_model::rows::{RecordEventRow, SourceRow};
use serde_json::{Map, Value};

/// A file of this repository (fixtures/, data/), by its path from the root.
fn repository(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(path)
}

fn ki(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ki")).args(args).env_remove("KI_DATABASE_URL").output().expect("ki runs")
}

fn out(output: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

fn text<'a>(row: &'a Map<String, Value>, column: &str) -> &'a str {
    row.get(column).and_then(Value::as_str).unwrap_or("")
}

/// Two comparison groups of the shared export with three or more eligible runs and a
/// stored record: (key, record holder, an eligible run observed after the group's last
/// record event, which may supersede the holder) each, and every row those groups need.
fn two_groups() -> (Vec<(String, String, String)>, Vec<ExportLine>) {
    let lines = ki_model::export::read_export(repository("data/catalog-2026-08-16-0022af0b.jsonl.zst")).unwrap();
    let eligible = |run: &Map<String, Value>| {
        text(run, "status") == "passed" && run["primaryValue"].is_number() && !run["publishedAt"].is_null()
    };
    let mut chosen: Vec<(String, String, String)> = Vec::new();
    for line in lines.iter().filter(|line| line.table == "record_events") {
        let key = text(&line.row, "comparisonKey");
        if chosen.len() == 2 || chosen.iter().any(|(k, _, _)| k == key) {
            continue;
        }
        let runs: Vec<&Map<String, Value>> = lines
            .iter()
            .filter(|l| l.table == "benchmark_runs" && text(&l.row, "comparisonKey") == key && eligible(&l.row))
            .map(|l| &l.row)
            .collect();
        let events: Vec<&Map<String, Value>> = lines
            .iter()
            .filter(|l| l.table == "record_events" && text(&l.row, "comparisonKey") == key)
            .map(|l| &l.row)
            .collect();
        let Some(last) = events.iter().max_by_key(|event| text(event, "at")) else { continue };
        let holder = text(last, "runId");
        let later = runs.iter().find(|run| text(run, "id") != holder && text(run, "observedAt") > text(last, "at"));
        if let (true, Some(later)) = (runs.len() >= 3, later) {
            chosen.push((key.to_string(), holder.to_string(), text(later, "id").to_string()));
        }
    }
    let keys: BTreeSet<&str> = chosen.iter().map(|(key, _, _)| key.as_str()).collect();
    let runs: Vec<&ExportLine> =
        lines.iter().filter(|l| l.table == "benchmark_runs" && keys.contains(text(&l.row, "comparisonKey"))).collect();
    let of_runs =
        |column: &str| -> BTreeSet<String> { runs.iter().map(|l| text(&l.row, column).to_string()).collect() };
    let (run_ids, implementation_ids, workload_ids, source_ids) =
        (of_runs("id"), of_runs("implementationId"), of_runs("workloadId"), of_runs("sourceId"));
    let parents = |table: &str, ids: &BTreeSet<String>, column: &str| -> BTreeSet<String> {
        lines
            .iter()
            .filter(|l| l.table == table && ids.contains(text(&l.row, "id")))
            .map(|l| text(&l.row, column).to_string())
            .collect()
    };
    let project_ids = parents("implementations", &implementation_ids, "projectId");
    let mut operation_ids = parents("implementations", &implementation_ids, "operationId");
    operation_ids.extend(parents("workloads", &workload_ids, "operationId"));
    let subset = lines
        .iter()
        .filter(|l| {
            let id = text(&l.row, "id");
            match l.table.as_str() {
                "sources" => source_ids.contains(id),
                "projects" => project_ids.contains(id),
                "operations" => operation_ids.contains(id),
                "operation_aliases" => operation_ids.contains(text(&l.row, "operationId")),
                "implementations" => implementation_ids.contains(id),
                "workloads" => workload_ids.contains(id),
                "benchmark_runs" => run_ids.contains(id),
                "measurements" => run_ids.contains(text(&l.row, "runId")),
                "record_events" => keys.contains(text(&l.row, "comparisonKey")),
                _ => false,
            }
        })
        .cloned()
        .collect();
    (chosen, subset)
}

struct Server {
    child: Child,
    addr: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A minimal HTTP/1.1 exchange (Connection: close); returns status and body.
fn http(addr: &str, method: &str, path: &str, headers: &str, body: &str) -> std::io::Result<(u16, String)> {
    let mut stream = TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{headers}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, rest) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    Ok((head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0), rest.to_string()))
}

fn get(addr: &str, path: &str) -> (u16, String) {
    http(addr, "GET", path, "", "").unwrap_or((0, String::new()))
}

/// Polls until `ready` accepts a GET of `path` (the server reloads every second).
fn wait_for(addr: &str, path: &str, what: &str, ready: impl Fn(u16, &str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (status, body) = get(addr, path);
        if ready(status, &body) {
            return body;
        }
        assert!(Instant::now() < deadline, "{what}: {path} still answers {status} after 60 s");
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn start_server(url: &str, state: &Path) -> Server {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let addr = format!("127.0.0.1:{port}");
    let child = Command::new(env!("CARGO_BIN_EXE_ki"))
        .args(["serve", "--database", url, "--addr", &addr, "--reload-every", "1"])
        .args(["--state", &state.display().to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("ki serve starts");
    let server = Server { child, addr };
    wait_for(&server.addr, "/healthz", "ki serve starts", |status, _| status == 200);
    server
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publish_and_correct_while_serving() {
    let directory = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", directory.path().join("catalog.db").display());
    let state = directory.path().join("state");
    let (groups, subset) = two_groups();
    let catalog = Catalog::open(&url).await.unwrap();
    catalog.import_lines(&subset, &ImportOptions::default()).await.unwrap();
    let server = start_server(&url, &state);
    let state_arg = state.display().to_string();

    // A submitter's key, and the registry's fixture bundle submitted over the API.
    let key = ki(&["admin", "key", "create", "--label", "tester", "--scope", "submit", "--database", &url]);
    assert!(key.status.success(), "{}", out(&key));
    let secret = String::from_utf8_lossy(&key.stdout).trim().to_string();
    let bundle =
        std::fs::read_to_string(repository("fixtures/kernelindex-registry/submissions/example-fixture.yaml")).unwrap();
    let auth = format!("Authorization: Bearer {secret}\r\nContent-Type: application/yaml\r\n");
    let (status, body) = http(&server.addr, "POST", "/api/v1/submissions", &auth, &bundle).unwrap();
    assert_eq!(status, 201, "{body}");
    let submission: Value = serde_json::from_str(&body).unwrap();
    let submission_id = submission["id"].as_str().unwrap().to_string();
    let run_digest = submission["documents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|document| document["kind"] == "BenchmarkRun")
        .and_then(|document| document["digest"].as_str())
        .unwrap()
        .to_string();
    assert_eq!(catalog.run_by_digest(&run_digest).await.unwrap(), None, "not in the catalog before publication");

    // Published: the manifests are catalog rows, published, evidence Reported.
    let published = ki(&["admin", "publish", &submission_id, "--database", &url, "--state", &state_arg]);
    assert!(published.status.success(), "{}", out(&published));
    assert!(out(&published).contains("published: "), "{}", out(&published));
    let run = catalog.run_by_digest(&run_digest).await.unwrap().expect("the submitted run is in the catalog");
    assert!(run.published_at.is_some());
    assert_eq!((run.reported, run.reproduced_by_kernelindex), (true, false));
    let source = catalog.rows_where::<SourceRow>("id", run.source_id.as_deref().unwrap_or("")).await.unwrap();
    assert_eq!(source[0].slug, "community");
    let events = catalog.rows_where::<RecordEventRow>("runId", &run.id).await.unwrap();
    assert_eq!(events.len(), 1, "the first run of its comparison group holds its record");
    let counts = catalog.row_counts().await.unwrap();

    // Publishing again writes nothing.
    let again = ki(&["admin", "publish", &submission_id, "--database", &url, "--state", &state_arg]);
    assert!(again.status.success(), "{}", out(&again));
    assert!(out(&again).contains("nothing new written"), "{}", out(&again));
    assert_eq!(catalog.row_counts().await.unwrap(), counts);

    // The running server shows the published run without a restart.
    let page =
        wait_for(&server.addr, &format!("/api/v1/runs/{run_digest}"), "the published run", |status, _| status == 200);
    assert!(page.contains("reported"), "{page}");

    // A serving submission (the registry's five serving examples as one multi-document
    // bundle) publishes into the serving tables and shows on its page.
    let serving_bundle =
        ["model-revision", "serving-stack-revision", "serving-configuration", "serving-workload", "serving-run"]
            .iter()
            .map(|name| {
                std::fs::read_to_string(repository(&format!("fixtures/kernelindex-registry/examples/{name}.yaml")))
                    .unwrap()
            })
            .collect::<Vec<_>>()
            .join("\n---\n");
    let (status, body) = http(&server.addr, "POST", "/api/v1/submissions", &auth, &serving_bundle).unwrap();
    assert_eq!(status, 201, "{body}");
    let serving: Value = serde_json::from_str(&body).unwrap();
    let serving_digest =
        serving["documents"].as_array().unwrap().iter().find(|d| d["kind"] == "ServingRun").unwrap()["digest"]
            .as_str()
            .unwrap()
            .to_string();
    let published =
        ki(&["admin", "publish", serving["id"].as_str().unwrap(), "--database", &url, "--state", &state_arg]);
    assert!(published.status.success(), "{}", out(&published));
    assert!(out(&published).contains("serving_runs"), "{}", out(&published));
    let page =
        wait_for(&server.addr, &format!("/serving/runs/{serving_digest}"), "the published serving run", |status, _| {
            status == 200
        });
    assert!(page.contains("NVIDIA B200"), "the serving run page names its accelerator");

    // Retract the record holder of a shared-export group.
    let (key, holder, _) = &groups[0];
    let reason = "the kernel skipped the softmax scaling";
    let retracted = ki(&["admin", "retract", holder, "--reason", reason, "--actor", "test-admin", "--database", &url]);
    assert!(retracted.status.success(), "{}", out(&retracted));
    let printed = out(&retracted);
    assert!(printed.contains(&format!("retracted run {holder}")), "{printed}");
    assert!(printed.contains(&format!("previous holder {holder} (retraction")), "{printed}");
    assert!(printed.contains(key.as_str()), "{printed}");
    let twice = ki(&["admin", "retract", holder, "--reason", reason, "--actor", "test-admin", "--database", &url]);
    assert!(!twice.status.success());
    assert!(out(&twice).contains("already retracted"), "{}", out(&twice));

    // Its page shows the retraction and why, once the server has reloaded.
    wait_for(&server.addr, &format!("/runs/{holder}"), "the retraction banner", |status, body| {
        status == 200 && body.contains(reason)
    });

    // Superseding across comparison groups, or an unknown run: refused, named.
    let (_, other_holder, successor) = &groups[1];
    let across =
        ki(&["admin", "supersede", other_holder, "--by", holder, "--reason", "x", "--actor", "a", "--database", &url]);
    assert!(!across.status.success());
    assert!(out(&across).contains("different comparison groups"), "{}", out(&across));
    let unknown = ki(&[
        "admin",
        "retract",
        "01a00000-0000-7000-8000-000000000000",
        "--reason",
        "x",
        "--actor",
        "a",
        "--database",
        &url,
    ]);
    assert!(!unknown.status.success());
    assert!(out(&unknown).contains("no benchmark run has the id or digest"), "{}", out(&unknown));

    // A supersession within a group: the old run's page says by whom and why.
    let why = "rerun under the fixed timing harness";
    let superseded = ki(&[
        "admin",
        "supersede",
        other_holder,
        "--by",
        successor,
        "--reason",
        why,
        "--actor",
        "test-admin",
        "--database",
        &url,
    ]);
    assert!(superseded.status.success(), "{}", out(&superseded));
    assert!(out(&superseded).contains(&format!("is superseded by run {successor}")), "{}", out(&superseded));
    let page = wait_for(&server.addr, &format!("/runs/{other_holder}"), "the supersession banner", |status, body| {
        status == 200 && body.contains(why)
    });
    assert!(page.contains(&format!("/runs/{successor}")), "the banner links the superseding run");

    // The audit trail lists both corrections, oldest first, as lines and as JSON.
    let listed = ki(&["admin", "corrections", "--database", &url]);
    assert!(listed.status.success(), "{}", out(&listed));
    let lines: Vec<String> = String::from_utf8_lossy(&listed.stdout).lines().map(String::from).collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(
        lines[0].contains("retract") && lines[0].contains(holder.as_str()) && lines[0].ends_with(reason),
        "{lines:?}"
    );
    assert!(
        lines[1].contains("supersede")
            && lines[1].contains(&format!("{other_holder} by {successor}"))
            && lines[1].ends_with(why),
        "{lines:?}"
    );
    let json = ki(&["admin", "corrections", "--json", "--database", &url]);
    let entries: Vec<Value> = serde_json::from_slice(&json.stdout).expect("--json prints a JSON array");
    assert_eq!(entries.iter().map(|e| e["action"].as_str().unwrap()).collect::<Vec<_>>(), ["retract", "supersede"]);
    assert_eq!(entries[1]["byRunId"], successor.as_str());
    assert_eq!(entries[1]["actor"], "test-admin");

    // `ki show run` says why a run was superseded, and by which run (its page's banner).
    let shown = ki(&["show", "run", other_holder, "--database", &url]);
    assert!(shown.status.success(), "{}", out(&shown));
    let text = String::from_utf8_lossy(&shown.stdout).to_string();
    assert!(
        text.contains("by a newer published run: ")
            && text.contains(why)
            && text.contains(&format!("/runs/{successor}")),
        "{text}"
    );
    let superseded_json = ki(&["show", "run", other_holder, "--json", "--database", &url]);
    let dossier: Value = serde_json::from_slice(&superseded_json.stdout).expect("--json prints the dossier");
    let banner = dossier["banners"].as_array().unwrap().iter().find(|b| b["kind"] == "superseded").unwrap();
    assert!(banner["message"].as_str().unwrap().ends_with(why), "{banner}");
    assert_eq!(banner["link"]["href"], format!("/runs/{successor}"));

    // The corrected catalog's export still verifies, record-event ledger included.
    let export = directory.path().join("corrected.jsonl.zst");
    let exported = ki(&["catalog", "export", "--database", &url, "--out", &export.display().to_string()]);
    assert!(exported.status.success(), "{}", out(&exported));
    let verified = ki(&["catalog", "verify", &export.display().to_string()]);
    assert!(verified.status.success(), "{}", out(&verified));
    assert!(out(&verified).contains("comparison groups match"), "{}", out(&verified));
    drop(server);
    catalog.close().await;
}
