//! Records without a GPU: a session's manifests validate under the model's schemas, name the catalog's
//! own workloads by digest, and their catalog rows pass the model's digest-and-key verification with
//! the run marked as reproduced by KernelIndex.
use std::collections::BTreeMap;
use std::path::PathBuf;

use ki_model::folder_archive::FolderArchive;
use ki_runner::compare::{Tolerance, compare_values};
use ki_runner::definition::Definition;
use ki_runner::execute::{TrialRecord, WorkloadRun};
use ki_runner::gpu::{Calibration, DeviceProperties, TrialTiming};
use ki_runner::materialize::LengthRule;
use ki_runner::materialize::read_workloads;
use ki_runner::protocol::{InputRule, PerCallMethod, TimingProtocol};
use ki_runner::records::{RecordWriter, SessionFacts};
use ki_runner::stats::summarize;
use serde_json::Value;

/// This repository's root: the tests read fixtures/ and data/ only.
fn repository() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn facts() -> SessionFacts {
    SessionFacts {
        device: DeviceProperties {
            name: "NVIDIA H200".into(),
            compute_capability: (9, 0),
            multiprocessor_count: 132,
            total_memory_bytes: 150_754_820_096,
            l2_cache_bytes: 62_914_560,
            driver_cuda_version: 13000,
            nvrtc_version: (13, 0),
            max_sm_clock_khz: 1_980_000,
            max_memory_clock_khz: 3_201_000,
            memory_bus_width_bits: 6144,
        },
        nvidia_smi: BTreeMap::from([("driver_version".to_string(), "580.159.04".to_string())]),
        operating_system: Some("Ubuntu 24.04".into()),
        kernel: None,
        worker: Some(serde_json::json!({"flashinfer": "0.5.3", "torch": "2.11.0"})),
        started_at: "2026-11-30T05:00:00Z".into(),
    }
}

#[test]
fn session_records_validate_and_import_as_verified_rows() {
    let definition = Definition::builtin("gqa_paged_decode_h32_kv4_d128_ps1").unwrap();
    let workloads_file = repository().join("fixtures/flashinfer-trace-samples/flashinfer_trace/workloads/gqa_paged/gqa_paged_decode_h32_kv4_d128_ps1.jsonl");
    let workload = read_workloads(&workloads_file).unwrap().remove(32).workload;
    let catalog = repository().join("data/catalog-2026-08-16-0022af0b.jsonl.zst");
    let dir = tempfile::tempdir().unwrap();
    let protocol = TimingProtocol::RERUN_V2;
    let calibration = Calibration {
        empty_kernel_eager_ns: 2100.0,
        empty_kernel_graph_ns: 3200.0,
        empty_kernel_in_graph_ns: 1400.0,
        copy_bandwidth_bytes_per_s: 4.3e12,
        copy_bytes: 1 << 30,
    };
    let catalog = ki_runner::records::catalog_rows(&[catalog], std::slice::from_ref(&definition.name))
        .unwrap()
        .operations
        .remove(&definition.name);
    let mut writer = RecordWriter::new(dir.path(), &definition, &protocol, &facts(), &calibration, catalog).unwrap();

    let samples: Vec<f64> = (0..200).map(|i| 12_000.0 + (i % 17) as f64 * 10.0).collect();
    // The published figure is the per-call one, which differs from the eager and replay samples.
    let per_call: Vec<f64> = (0..90).map(|i| 8_000.0 + (i % 7) as f64 * 10.0).collect();
    let comparison = compare_values("output", &[1.0, 2.0], &[1.0, 2.001], Tolerance::FLASHINFER_BENCH_DEFAULT).unwrap();
    let trial = TrialRecord {
        seed: 1,
        comparisons: vec![comparison.clone()],
        repeat_identical: None,
        timing: TrialTiming {
            eager_ns: samples.clone(),
            graph_ns: Some(samples.clone()),
            in_graph_ns: Some(per_call.clone()),
            cupti_ns: None,
        },
    };
    let run = WorkloadRun {
        implementation: "flashinfer-tc".into(),
        definition: definition.name.clone(),
        workload_uuid: workload.uuid.clone(),
        axes: workload.axes.clone(),
        seed: 0,
        trials: vec![trial],
        correct: true,
        worst: vec![comparison],
        per_call: Some(summarize(&per_call)),
        per_call_method: Some(PerCallMethod::InGraph),
        eager: Some(summarize(&samples)),
        graph: Some(summarize(&samples)),
        graph_error: None,
        minimum_bytes: 1_000_000,
        per_call_percent_of_speed_of_light: Some(2.9),
        eager_percent_of_speed_of_light: Some(1.9),
        graph_percent_of_speed_of_light: Some(1.9),
        error: None,
    };
    let run_manifest = writer.write_run(&workload, &run).unwrap();
    writer.finish(&[run], "ki run ...").unwrap();

    // Every manifest validates under the schemas.
    let mut kinds = Vec::new();
    for entry in std::fs::read_dir(dir.path().join("manifests")).unwrap() {
        let path = entry.unwrap().path();
        let value: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let valid = ki_model::manifest::validate_value(value).unwrap_or_else(|p| panic!("{}: {p:?}", path.display()));
        kinds.push(valid.kind.to_string());
    }
    kinds.sort();
    assert_eq!(kinds.len(), 6, "{kinds:?}");

    // The run names the catalog's workload (seed workload: batch 16, 1,020 tokens) by its digest.
    let rows = ki_model::export::read_export(dir.path().join("catalog-rows.jsonl")).unwrap();
    let workload_row = rows.iter().find(|l| l.table == "workloads").unwrap();
    assert_eq!(run_manifest["spec"]["workloadDigest"], workload_row.row["workloadDigest"]);
    assert_eq!(workload_row.row["manifest"]["metadata"]["name"], "gqa-paged-decode-h32-kv4-d128-ps1-ec96bc77");
    let run_row = rows.iter().find(|l| l.table == "benchmark_runs").unwrap();
    assert_eq!(run_row.row["reproducedByKernelindex"], true);
    assert_eq!(run_row.row["primaryMetric"], "latency");
    assert_eq!(run_row.row["primaryValue"], serde_json::json!(summarize(&per_call).median.round() as u64));
    assert_eq!(run_row.row["sampleCount"], 90);
    // The measurements name the method and keep eager and replay beside it.
    let measurements = run_manifest["spec"]["measurements"].as_array().unwrap();
    let value = |metric: &str| measurements.iter().find(|m| m["metric"] == metric).map(|m| m["value"].clone());
    let per_call_median = serde_json::json!(summarize(&per_call).median.round());
    assert_eq!(value("latency"), Some(per_call_median.clone()));
    assert_eq!(value("latency_in_graph"), Some(per_call_median));
    assert_eq!(value("latency_eager"), Some(serde_json::json!(summarize(&samples).median.round())));
    assert!(value("latency_graph_replay").is_some() && value("speed_of_light") == Some(serde_json::json!(2.9)));
    assert_eq!(run_manifest["metadata"]["labels"]["latency_method"], "latency_in_graph");
    assert_eq!(run_manifest["metadata"]["labels"]["input_rule"], "realistic");
    // The protocol record carries the rule, so a run under another rule has another comparison key.
    let protocol_manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("manifests/benchmark-protocol.json")).unwrap())
            .unwrap();
    assert_eq!(protocol_manifest["metadata"]["name"], "kernelindex-rerun-v2-realistic");
    assert_eq!(protocol_manifest["spec"]["harness"]["version"], "kernelindex-rerun-v2");
    assert_eq!(protocol_manifest["spec"]["measurement"]["timer"], "cuda_graph_per_call");
    assert_eq!(protocol_manifest["spec"]["measurement"]["inputRegeneration"], "per_trial_realistic");
    assert_eq!(protocol_manifest["spec"]["comparability"]["family"], "kernelindex_rerun_v2");
    let uniform = TimingProtocol { input_rule: InputRule::Lengths(LengthRule::Uniform), ..protocol };
    let keys = |p: &TimingProtocol| {
        let protocol = ki_runner::records::protocol_manifest(p);
        let environment: Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join("manifests/execution-environment.json")).unwrap(),
        )
        .unwrap();
        let workload = rows.iter().find(|l| l.table == "workloads").unwrap().row["manifest"].clone();
        ki_model::identity::benchmark_run_keys(&run_manifest, &protocol, &environment, &workload).unwrap()
    };
    assert_ne!(keys(&protocol).comparison_key, keys(&uniform).comparison_key);
    let report = ki_model::verify::verify_export(&rows);
    assert!(report.is_clean(), "{:?}", report.first_mismatch());
    let results = std::fs::read_to_string(dir.path().join("results.md")).unwrap();
    assert!(results.contains("| 1 | ec96bc77 | 16 | 1020 | flashinfer-tc | 8.03 |"), "{results}");
}

/// The committed H200 baseline (fixtures/flashinfer-baseline-h200/manifests, packed): every
/// manifest validates, every run names the protocol, environment and an implementation written
/// beside it, every raw-samples artifact matches its digest, and the catalog rows verify with every
/// run reproduced by KernelIndex.
#[test]
fn committed_baseline_records_are_consistent() {
    let folder = packed(&repository().join("fixtures/flashinfer-baseline-h200/manifests"));
    let mut digests = std::collections::BTreeSet::new();
    let mut runs = Vec::new();
    for (name, bytes) in folder.files() {
        if name.contains('/') || !name.ends_with(".json") || name == "session.json" {
            continue;
        }
        let value: Value = serde_json::from_slice(bytes).unwrap();
        let valid = ki_model::manifest::validate_value(value.clone()).unwrap_or_else(|p| panic!("{name}: {p:?}"));
        digests.insert(valid.digest.clone());
        if valid.kind.to_string() == "BenchmarkRun" {
            runs.push(value);
        }
    }
    assert_eq!(runs.len(), 96);
    for run in &runs {
        let spec = &run["spec"];
        for field in ["implementationDigest", "workloadDigest", "protocolDigest", "environmentDigest"] {
            assert!(digests.contains(spec[field].as_str().unwrap()), "{field} of {}", run["metadata"]["name"]);
        }
        assert_eq!(spec["status"], "passed");
        let samples = &spec["timing"]["rawSamples"];
        let bytes = folder.file(samples["uri"].as_str().unwrap()).unwrap();
        assert_eq!(ki_runner::records::sha256_of(bytes), samples["digest"].as_str().unwrap());
    }
    let rows = folder.export("catalog-rows.jsonl").unwrap().unwrap();
    let report = ki_model::verify::verify_export(&rows);
    assert!(report.is_clean(), "{:?}", report.first_mismatch());
    let run_rows: Vec<_> = rows.iter().filter(|l| l.table == "benchmark_runs").collect();
    assert_eq!(run_rows.len(), 96);
    assert!(run_rows.iter().all(|l| l.row["reproducedByKernelindex"] == true && l.row["hasRawEvidence"] == true));
}

/// A runner output folder kept in fixtures/ as its `files.tar.zst`.
fn packed(folder: &std::path::Path) -> FolderArchive {
    FolderArchive::read(&folder.join(ki_model::folder_archive::PACKED)).unwrap()
}

/// The protocol-v2 records of the final runs (fixtures/gqa-paged-decode/<rule>/, packed): every manifest
/// validates, every run's protocol names its folder's input rule and the per-call timer, `latency`
/// is the per-call figure with its method beside it, every raw-samples artifact matches its digest,
/// and the native kernel's revision is the digest of the kernel and launcher in this tree (so the
/// records name the code that is here, or code that recorded-revision.json says is the same; re-run
/// them when the kernel changes).
#[test]
fn committed_v2_records_name_their_rule_and_this_tree() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/gqa-paged-decode");
    let source = [ki_kernels::gqa_paged_decode::SOURCE, ki_kernels::gqa_paged_decode::LAUNCHER_SOURCE].concat();
    let revision = &ki_runner::records::sha256_of(source.as_bytes())[7..19];
    // The records may name an earlier revision whose kernel code is this tree's (only the tests
    // moved since); recorded-revision.json says which, and names this tree's revision so that any
    // change to the kernel or launcher still fails here.
    let mapping = root.join("recorded-revision.json");
    let recorded_revision = match std::fs::read_to_string(&mapping) {
        Ok(text) => {
            let recorded: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(
                recorded["kernelRevisionOfThisTree"],
                revision,
                "the kernel changed since the records were measured: re-run them and delete {}",
                mapping.display()
            );
            recorded["recordedRevision"].as_str().unwrap().to_owned()
        }
        Err(_) => revision.to_owned(),
    };
    for (folder, rule, runs) in [
        ("realistic", "realistic", 144),
        ("uniform", "uniform", 144),
        ("lognormal", "lognormal", 144),
        ("tail", "tail", 144),
        ("kv8-realistic", "realistic", 144),
        ("capture", "random", 3),
        ("b128x4096", "uniform", 3),
        ("b128-realistic", "realistic", 3),
    ] {
        let files = packed(&root.join(folder));
        let read = |name: &str| -> Value {
            serde_json::from_slice(files.file(&format!("manifests/{name}")).unwrap()).unwrap()
        };
        let protocol = read("benchmark-protocol.json");
        assert_eq!(protocol["metadata"]["name"], format!("kernelindex-rerun-v2-{rule}"), "{folder}");
        assert_eq!(protocol["spec"]["measurement"]["timer"], "cuda_graph_per_call", "{folder}");
        assert_eq!(protocol["spec"]["measurement"]["inputRegeneration"], format!("per_trial_{rule}"), "{folder}");
        let native = read("implementation-kernelindex-native.json");
        let version = native["spec"]["projectRevision"]["version"].as_str().unwrap();
        assert!(
            version.ends_with(&format!("+src.{recorded_revision}")),
            "{folder}: {version} is not this tree's kernel"
        );
        let mut seen = 0;
        for (name, bytes) in files.files_under("manifests") {
            let path = format!("{folder}/manifests/{name}");
            let value: Value = serde_json::from_slice(bytes).unwrap();
            ki_model::manifest::validate_value(value.clone()).unwrap_or_else(|p| panic!("{path}: {p:?}"));
            if value["kind"] != "BenchmarkRun" {
                continue;
            }
            seen += 1;
            let spec = &value["spec"];
            assert_eq!(spec["status"], "passed", "{path}");
            let measurements = spec["measurements"].as_array().unwrap();
            let metric = |name: &str| measurements.iter().find(|m| m["metric"] == name).map(|m| m["value"].clone());
            assert_eq!(metric("latency"), metric("latency_in_graph"), "{path}");
            assert!(metric("latency_eager").is_some() && metric("latency_graph_replay").is_some());
            assert_eq!(value["metadata"]["labels"]["input_rule"], rule);
            let samples = &spec["timing"]["rawSamples"];
            let bytes = files.file(samples["uri"].as_str().unwrap()).unwrap();
            assert_eq!(ki_runner::records::sha256_of(bytes), samples["digest"].as_str().unwrap());
        }
        assert_eq!(seen, runs, "{folder}");
    }
}

/// `ki verify --catalog A --catalog B`: the operations named and their workloads come from the
/// files (each once), and every implementation row by id, so that a solution published before
/// (the 2026-12-01 H200 records) is written as the same row, not a second row of its id.
#[test]
fn catalog_rows_reuse_operations_and_implementations_from_every_file() {
    let files = [
        repository().join("data/catalog-2026-08-16-0022af0b.jsonl.zst"),
        repository().join("data/kernelindex-verify-h200-2026-12-01.jsonl.zst"),
    ];
    let name = "gemm_n4096_k4096".to_string();
    let rows = ki_runner::records::catalog_rows(&files, std::slice::from_ref(&name)).unwrap();
    let (operation, workloads) = &rows.operations[&name];
    assert!(!workloads.is_empty());
    assert!(workloads.iter().all(|w| w["operationId"] == operation["id"]));
    let ids: std::collections::BTreeSet<String> = workloads.iter().map(|w| w["id"].to_string()).collect();
    assert_eq!(ids.len(), workloads.len(), "each workload once, though both files hold it");
    let published = ki_model::export::read_export(&files[1]).unwrap();
    let implementations: Vec<_> = published.iter().filter(|l| l.table == "implementations").collect();
    assert!(!implementations.is_empty());
    for line in implementations {
        assert_eq!(rows.implementations.get(line.id()), Some(&line.row), "{}", line.id());
    }
}
