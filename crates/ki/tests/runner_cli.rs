//! `ki reference` and `ki run` as the ki binary exposes them (the work itself is tested in
//! crates/runner/tests): the subcommands exist, compute, and refuse bad input clearly.
use std::path::PathBuf;
use std::process::Command;

fn ki() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ki"))
}

fn workloads_file() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/flashinfer-trace-samples/flashinfer_trace/workloads/gqa_paged/gqa_paged_decode_h32_kv4_d128_ps1.jsonl")
}

#[test]
fn ki_reference_writes_named_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.safetensors");
    let status = ki()
        .args(["reference", "gqa_paged_decode_h32_kv4_d128_ps1", "--workloads"])
        .arg(workloads_file())
        .args(["--workload", "0c2489b2-f878-428b-b1bd-d0c6d4c39338", "--out"])
        .arg(&out)
        .status()
        .unwrap();
    assert!(status.success());
    let bytes = std::fs::read(&out).unwrap();
    // safetensors: an 8-byte header length, then a JSON header naming the outputs.
    let header_len = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header = std::str::from_utf8(&bytes[8..8 + header_len]).unwrap();
    assert!(header.contains("\"lse\"") && header.contains("\"output\"") && header.contains("[1,32,128]"), "{header}");
}

#[test]
fn ki_reference_and_run_refuse_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.safetensors");
    let output = ki()
        .args(["reference", "gqa_paged_decode_h32_kv4_d128_ps1", "--inputs"])
        .arg(&missing)
        .arg("--out")
        .arg(dir.path().join("o.safetensors"))
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("missing.safetensors"));
    let output = ki()
        .args(["run", "--operation", "gqa_paged_decode_h32_kv4_d128_ps1", "--implementation", "flashinfer"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("--workloads"));
}
