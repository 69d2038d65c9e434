//! The queue's real executor (`ki verify --worker --executor runner`): each job is a child
//! `ki run` of a catalog implementation on this host's GPU. On a machine without one (CI),
//! the child's refusal comes back as an environment failure and the job is parked with the
//! runner's own words; on a GPU host the same test sees the job done, its runs published
//! on the job's workload under the job's protocol. A job the runner cannot time (another
//! protocol) is parked before any child starts. Real SQLite catalog of our bundled H200 runs
//! (`data/`, Apache-2.0).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const OPERATION: &str = "gqa_paged_decode_h32_kv4_d128_ps1";

fn ki() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ki"))
}

fn bundled_runs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/kernelindex-verified-h200-2026-11-30.jsonl.zst")
}

fn json_of(output: &Output) -> Value {
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&output.stdout)))
}

/// A SQLite catalog of the bundled runs, and the native kernel's (implementation, workload)
/// of one of them.
fn catalog(folder: &Path) -> (String, String, String) {
    let url = format!("sqlite://{}", folder.join("catalog.db").display());
    let imported = ki().args(["catalog", "import"]).arg(bundled_runs()).args(["--database", &url]).output().unwrap();
    assert!(imported.status.success(), "import: {}", String::from_utf8_lossy(&imported.stderr));
    let export = folder.join("export.jsonl.zst");
    let exported = ki().args(["catalog", "export", "--database", &url, "--out"]).arg(&export).output().unwrap();
    assert!(exported.status.success(), "export: {}", String::from_utf8_lossy(&exported.stderr));
    let lines = ki_model::export::read_export(&export).unwrap();
    let native = lines
        .iter()
        .find(|l| {
            l.table == "implementations"
                && l.row["title"] == "kernelindex-native"
                && l.row["operationId"] != Value::Null
        })
        .unwrap();
    let operation = lines.iter().find(|l| l.table == "operations" && l.row["id"] == native.row["operationId"]).unwrap();
    assert_eq!(operation.row["name"], OPERATION);
    let workload =
        lines.iter().find(|l| l.table == "workloads" && l.row["operationId"] == native.row["operationId"]).unwrap();
    (url, native.id().to_string(), workload.id().to_string())
}

fn enqueue(url: &str, implementation: &str, workload: &str, protocol: &str) -> String {
    let output = ki()
        .args(["verify", "--enqueue", "--database", url, "--implementation", implementation, "--workload", workload])
        .args(["--definition", OPERATION, "--protocol", protocol, "--max-environment-failures", "1", "--json"])
        .output()
        .unwrap();
    json_of(&output)["job"]["id"].as_str().unwrap().to_string()
}

fn work_until_idle(url: &str, scratch: &Path) -> Vec<Value> {
    let output = ki()
        .args(["verify", "--worker", "--database", url, "--executor", "runner", "--gpu", "NVIDIA H200"])
        .args(["--until", "idle", "--json", "--poll-seconds", "0.2", "--retry-seconds", "0", "--lease-seconds", "60"])
        .arg("--scratch")
        .arg(scratch)
        .output()
        .unwrap();
    assert!(output.status.success(), "worker: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).lines().map(|line| serde_json::from_str(line).unwrap()).collect()
}

fn job(url: &str, id: &str) -> Value {
    json_of(&ki().args(["verify", "status", "--json", "--database", url, id]).output().unwrap())
}

#[test]
fn a_runner_job_runs_on_the_gpu_or_is_parked_with_the_runners_words() {
    let folder = tempfile::tempdir().unwrap();
    let (url, native, workload) = catalog(folder.path());
    let id = enqueue(&url, &native, &workload, "kernelindex-rerun-v2-uniform");
    let scratch = folder.path().join("scratch");
    let events = work_until_idle(&url, &scratch);
    assert!(events.iter().any(|e| e["event"] == "claimed" && e["jobId"] == id.as_str()), "{events:?}");
    let detail = job(&url, &id);
    if ki_runner::gpu::cuda_available() {
        assert_eq!(detail["job"]["state"], "done", "{detail:#}");
        assert_eq!(detail["job"]["verdict"]["status"], "passed", "{detail:#}");
        assert_eq!(detail["job"]["published"]["runIds"].as_array().unwrap().len(), 1, "{detail:#}");
    } else {
        assert_eq!(detail["job"]["state"], "parked", "{detail:#}");
        let reason = detail["job"]["parkedReason"].as_str().unwrap();
        assert!(reason.contains("`ki run` failed"), "the failure of the child is named: {reason}");
        assert!(reason.to_lowercase().contains("cuda"), "the runner's own words about the GPU come through: {reason}");
    }
    // The job's folder went with it; the kernel cache (if any) stays for the next job.
    let left: Vec<_> = std::fs::read_dir(&scratch)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("ki-job-"))
        .collect();
    assert!(left.is_empty(), "job folders left behind: {left:?}");
}

#[test]
fn a_protocol_the_runner_does_not_time_is_parked_before_anything_runs() {
    let folder = tempfile::tempdir().unwrap();
    let (url, native, workload) = catalog(folder.path());
    let id = enqueue(&url, &native, &workload, "sol-execbench-v1");
    work_until_idle(&url, &folder.path().join("scratch"));
    let detail = job(&url, &id);
    assert_eq!(detail["job"]["state"], "parked", "{detail:#}");
    let reason = detail["job"]["parkedReason"].as_str().unwrap();
    assert!(reason.contains("protocol \"sol-execbench-v1\" is not one the runner times"), "{reason}");
}
