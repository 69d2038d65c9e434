//! `ki verify` when its worker processes die (issue 36, finding 5): a judge whose input is closed
//! at once must be a recorded failure, not a SIGPIPE that ends `ki` (which restores the default
//! SIGPIPE disposition for its other commands). Seen before the fix: exit 141 when every worker died
//! at load. Runs without a GPU: the "interpreter" is a script of ours.
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::Command;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../runner/tests/fixtures/verify")
}

/// Runs `ki verify` on two fixture solutions of one definition with `interpreter` (a script's
/// text) standing in for Python; returns its output and the folder of its records.
fn verify_with(
    interpreter: &str,
    limit: &str,
    timeout: &str,
    env: &[(&str, &str)],
) -> (std::process::Output, PathBuf, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let python = dir.path().join("python");
    std::fs::write(&python, interpreter).unwrap();
    std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = dir.path().join("out");
    let solutions = fixtures().join("solutions");
    let output = Command::new(env!("CARGO_BIN_EXE_ki"))
        .arg("verify")
        .arg(solutions.join("honest_torch_rmsnorm.json"))
        .arg(solutions.join("bad_hang.json"))
        .arg("--definition")
        .arg(fixtures().join("flashinfer_trace"))
        .args(["--python", python.to_str().unwrap(), "--limit", limit, "--trials", "1", "--timeout", timeout])
        .arg("--out")
        .arg(&out)
        .envs(env.iter().copied())
        .env_remove("KI_DATABASE_URL")
        .output()
        .expect("ki runs");
    (output, out, dir)
}

#[test]
fn a_judge_that_dies_at_once_is_recorded_and_ki_verify_ends_by_itself() {
    // Closes its input, answers the first request (so `ki verify` writes the next one), then
    // lingers: that next write meets a closed pipe (EPIPE, or SIGPIPE under the default disposition).
    let judge = format!(
        "#!/bin/sh\nexec 0<&-\necho '{{\"ok\": true, \"environment\": {HELLO_ENVIRONMENT}, \"pid\": 1}}'\nsleep 1\n"
    );
    let (output, out, _dir) = verify_with(&judge, "1", "5", &[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.signal(), None, "ki verify was killed by a signal; stderr: {stderr}");
    assert_eq!(output.status.code(), Some(1), "nothing was verified, so the exit is 1; stderr: {stderr}");
    assert!(stderr.contains("nothing was verified"), "{stderr}");
    assert!(stderr.contains("judge"), "the judge's failure is named: {stderr}");
    // Every implementation × workload is accounted for in runs.jsonl, none passed.
    let runs = std::fs::read_to_string(out.join("runs.jsonl")).unwrap();
    assert_eq!(runs.lines().count(), 2, "{runs}");
    assert!(runs.lines().all(|l| l.contains("not_run") && !l.contains("\"passed\"")), "{runs}");
}

/// A stand-in for the Python interpreter: as the judge (`ki_judge.py`) it answers every request
/// `ok` with every field the protocol's replies require (`hello`'s environment, `reference`'s
/// seconds and outputs); as a solution's worker (`ki_solution.py`) it answers `ok` until the request named by
/// `KI_TEST_DIE_AT` (load, or workload: after it has loaded) and then dies, by exiting or by a
/// signal.
const FAKE_INTERPRETER: &str = r#"#!/usr/bin/env python3
import json, os, signal, sys
judge = sys.argv[-1].endswith("ki_judge.py")
for line in sys.stdin:
    op = json.loads(line).get("op")
    if not judge and op == os.environ["KI_TEST_DIE_AT"]:
        if os.environ["KI_TEST_DEATH"] == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        sys.exit(3)
    answer = {"ok": True, "pid": os.getpid(), "environment": json.loads(os.environ["KI_TEST_ENVIRONMENT"]), "seconds": 0.0, "outputs": {}}
    print(json.dumps(answer), flush=True)
"#;

/// What a judge says of its machine in answer to `hello` (every field the protocol requires,
/// crates/runner/python/messages.schema.json): a machine with no GPU.
const HELLO_ENVIRONMENT: &str =
    r#"{"device": "none", "capability": "0.0", "sm_count": 0, "memory_bytes": 0, "l2_bytes": 0}"#;

/// A solution's worker that dies at each stage (while loading, or loaded and asked for its
/// workload), by exiting or by SIGKILL: each is a recorded verdict naming the death, for every
/// workload of that solution, and the batch goes on to the next solution; `ki verify` itself
/// ends by itself, never by a signal (issue 36, finding 5).
#[test]
fn a_worker_that_dies_at_any_stage_is_a_recorded_verdict_and_the_batch_goes_on() {
    for stage in ["load", "workload"] {
        for death in ["exit", "kill"] {
            let env = [("KI_TEST_DIE_AT", stage), ("KI_TEST_DEATH", death), ("KI_TEST_ENVIRONMENT", HELLO_ENVIRONMENT)];
            let (output, out, _dir) = verify_with(FAKE_INTERPRETER, "2", "20", &env);
            let stderr = String::from_utf8_lossy(&output.stderr);
            let case = format!("dies at {stage} by {death}");
            assert_eq!(output.status.signal(), None, "{case}: ki verify was killed by a signal; stderr: {stderr}");
            // Verdicts were recorded (runtime errors), so the exit is 0: not "nothing was verified".
            assert_eq!(output.status.code(), Some(0), "{case}: stderr: {stderr}");
            let runs = std::fs::read_to_string(out.join("runs.jsonl")).unwrap_or_default();
            // Both solutions, each on both workloads: the first one's death did not end the batch.
            assert_eq!(runs.lines().count(), 4, "{case}: {runs}\nstderr: {stderr}");
            let named = if stage == "load" { "the worker ended while loading" } else { "the worker process ended" };
            for line in runs.lines() {
                assert!(line.contains("runtime_error") && line.contains(named), "{case}: {line}");
            }
        }
    }
}
