//! `ki verify` when its worker processes die (issue 36, finding 5): a judge whose input is closed
//! at once must be a recorded failure, not a SIGPIPE that ends `ki` (which restores the default
//! SIGPIPE disposition for its other commands). Seen before the fix: exit 141 when every worker died
//! at load. Runs without a GPU: the "interpreter" is a shell script.
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::Command;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../runner/tests/fixtures/verify")
}

#[test]
fn a_judge_that_dies_at_once_is_recorded_and_ki_verify_ends_by_itself() {
    let dir = tempfile::tempdir().unwrap();
    let python = dir.path().join("python");
    // Closes its input, answers the first request (so `ki verify` writes the next one), then
    // lingers: that next write meets a closed pipe (EPIPE, or SIGPIPE under the default disposition).
    std::fs::write(
        &python,
        "#!/bin/sh\nexec 0<&-\necho '{\"ok\": true, \"environment\": {\"device\": \"none\"}, \"pid\": 1}'\nsleep 1\n",
    )
    .unwrap();
    std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = dir.path().join("out");
    let solutions = fixtures().join("solutions");
    let output = Command::new(env!("CARGO_BIN_EXE_ki"))
        .arg("verify")
        .arg(solutions.join("honest_torch_rmsnorm.json"))
        .arg(solutions.join("bad_hang.json"))
        .arg("--definition")
        .arg(fixtures().join("flashinfer_trace"))
        .args(["--python", python.to_str().unwrap(), "--limit", "1", "--trials", "1", "--timeout", "5"])
        .arg("--out")
        .arg(&out)
        .env_remove("KI_DATABASE_URL")
        .output()
        .expect("ki runs");
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
