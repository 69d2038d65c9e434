//! The runner's commands end to end through the `ki-runner` binary (the same functions `ki reference`
//! and `ki run` call): a reference run on a real shared workload, its determinism, and bad inputs.
use std::path::PathBuf;
use std::process::Command;

use ki_runner::definition::Definition;
use ki_runner::reference::run_definition_reference;
use ki_runner::tensor::{HostTensor, TensorSet};

fn binary() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ki-runner"))
}

fn workloads_file() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/flashinfer-trace-samples/flashinfer_trace/workloads/gqa_paged/gqa_paged_decode_h32_kv4_d128_ps1.jsonl")
}

/// The seed's workload (batch 16, 1,020 tokens): materialize, save the inputs, run the reference
/// from the saved inputs, and check the outputs equal the library call on the same inputs.
#[test]
fn reference_command_on_a_shared_workload() {
    let dir = tempfile::tempdir().unwrap();
    let inputs = dir.path().join("in.safetensors");
    let out_a = dir.path().join("a.safetensors");
    let out_b = dir.path().join("b.safetensors");
    let status = binary()
        .args(["reference", "gqa_paged_decode_h32_kv4_d128_ps1", "--workloads"])
        .arg(workloads_file())
        .args(["--workload", "ec96bc77-3fba-4ebe-9895-e4d9cba52c9c", "--seed", "3", "--save-inputs"])
        .arg(&inputs)
        .arg("--out")
        .arg(&out_a)
        .status()
        .unwrap();
    assert!(status.success());
    let status = binary()
        .args(["reference", "gqa_paged_decode_h32_kv4_d128_ps1", "--inputs"])
        .arg(&inputs)
        .arg("--out")
        .arg(&out_b)
        .status()
        .unwrap();
    assert!(status.success());
    let a = TensorSet::read(&out_a).unwrap();
    assert_eq!(a, TensorSet::read(&out_b).unwrap(), "same inputs, same outputs");
    let saved = TensorSet::read(&inputs).unwrap();
    assert_eq!(saved.get("q").unwrap().shape, vec![16, 32, 128]);
    assert_eq!(saved.get("kv_indices").unwrap().shape, vec![1020]);
    let definition = Definition::builtin("gqa_paged_decode_h32_kv4_d128_ps1").unwrap();
    assert_eq!(run_definition_reference(&definition, &saved, "in").unwrap(), a);
    assert_eq!(a.get("output").unwrap().shape, vec![16, 32, 128]);
    assert!(a.get("lse").unwrap().to_f32_exact().unwrap().iter().all(|v| v.is_finite()));
}

#[test]
fn reference_command_rejects_bad_inputs_with_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let inputs = dir.path().join("in.safetensors");
    let mut set = TensorSet::new();
    set.insert("q", HostTensor::from_f32(vec![1, 32, 128], &vec![0.5; 32 * 128]));
    set.write(&inputs).unwrap();
    let out = dir.path().join("out.safetensors");
    let output = binary()
        .args(["reference", "gqa_paged_decode_h32_kv4_d128_ps1", "--inputs"])
        .arg(&inputs)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("in.safetensors") && stderr.contains("`q` has dtype float32, expected bfloat16"),
        "{stderr}"
    );
    assert!(!out.exists(), "nothing written on error");

    let output = binary()
        .args(["reference", "no_such_definition", "--inputs"])
        .arg(&inputs)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("unknown definition `no_such_definition`"));

    std::fs::write(&inputs, b"not safetensors").unwrap();
    let output = binary()
        .args(["reference", "gqa_paged_decode_h32_kv4_d128_ps64", "--inputs"])
        .arg(&inputs)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("not a valid safetensors file"));
}

#[test]
fn run_command_checks_its_arguments_before_touching_a_gpu() {
    let output = binary()
        .args([
            "run",
            "--operation",
            "gqa_paged_decode_h32_kv4_d128_ps1",
            "--implementation",
            "cutlass",
            "--axis",
            "batch_size=2",
        ])
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("unknown `cutlass`"));
    let output = binary()
        .args([
            "run",
            "--operation",
            "gqa_paged_decode_h32_kv4_d128_ps1",
            "--implementation",
            "native",
            "--axis",
            "batch_size=two",
        ])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&output.stderr).contains("`two` is not an integer"));
}
