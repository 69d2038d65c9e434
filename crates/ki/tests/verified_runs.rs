//! The verification runner's records, as it wrote them on the H200 (fixtures/gqa-paged-decode/
//! realistic, packed as its files.tar.zst and unpacked here: FlashInfer 0.5.3 both ways and the native kernel on the 48 h32/kv4 workloads, protocol
//! kernelindex-rerun-v2 with realistic lengths),
//! imported with `ki catalog import` into a fresh SQLite catalog: every run is Verified, the
//! resolver and the run pages say so, and re-importing inserts nothing.

mod common;

use std::path::PathBuf;

use common::{http, ki, start_server};
use serde_json::Value;

/// A runner folder of fixtures/gqa-paged-decode (`realistic`, `kv8-realistic`), unpacked into `into`.
fn runner_folder(rule: &str, into: &std::path::Path) -> PathBuf {
    let packed = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/gqa-paged-decode").join(rule);
    let folder = into.join(rule);
    ki_model::folder_archive::FolderArchive::read(&packed.join(ki_model::folder_archive::PACKED))
        .unwrap()
        .unpack(&folder)
        .unwrap();
    folder
}

/// The rows of a runner folder of fixtures/gqa-paged-decode, unpacked into `into`.
fn runner_rows(rule: &str, into: &std::path::Path) -> PathBuf {
    runner_folder(rule, into).join("catalog-rows.jsonl")
}

fn run_ki(args: &[&str]) -> std::process::Output {
    ki().args(args).env_remove("KI_DATABASE_URL").output().expect("ki runs")
}

/// `ki resolve --json` of the batch-1, 7-token h32/kv4 workload on the H200.
fn resolve_batch1_on_h200(database: &str) -> Value {
    let axes = ["batch_size=1", "num_pages=8", "len_indptr=2", "num_kv_indices=7"];
    let mut args = vec![
        "resolve",
        "--operation",
        "gqa_paged_decode_h32_kv4_d128_ps1",
        "--hardware",
        "NVIDIA H200",
        "--json",
        "--database",
        database,
    ];
    for axis in &axes {
        args.extend(["--axis", axis]);
    }
    let output = run_ki(&args);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn runner_records_import_and_show_as_verified() {
    let dir = tempfile::tempdir().unwrap();
    let database = format!("sqlite://{}", dir.path().join("kernelindex.db").display());
    let rows = runner_rows("realistic", dir.path());
    let rows = rows.to_str().unwrap();

    let first = run_ki(&["catalog", "import", rows, "--database", &database]);
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    let again = run_ki(&["catalog", "import", rows, "--database", &database]);
    assert!(again.status.success(), "{}", String::from_utf8_lossy(&again.stderr));
    let said = format!("{}{}", String::from_utf8_lossy(&again.stdout), String::from_utf8_lossy(&again.stderr));
    assert!(said.contains("0 new rows") || said.contains("nothing new"), "re-import: {said}");

    // The batch-1, 7-token workload: three verified runs on the H200, the native kernel first.
    let answer = resolve_batch1_on_h200(&database);
    assert_eq!(answer["mode"], "exact");
    let cohort = &answer["cohorts"][0];
    assert_eq!(cohort["eligibleRuns"], 3, "{cohort}");
    let fastest = cohort["fastest"].as_array().unwrap();
    assert!(fastest.iter().all(|r| r["trust"] == "verified"), "{fastest:?}");
    let leader = &fastest[0];
    assert_eq!(leader["rank"], 1);
    assert!(leader["implementation"].as_str().unwrap().starts_with("kernelindex-native"), "{leader}");
    assert_eq!(cohort["bestVerified"]["runId"], leader["runId"]);
    let run_id = leader["runId"].as_str().unwrap().to_string();

    // Every run the runner wrote is verified and passed.
    let show = run_ki(&["show", "run", &run_id, "--json", "--database", &database]);
    assert!(show.status.success(), "{}", String::from_utf8_lossy(&show.stderr));
    let dossier: Value = serde_json::from_slice(&show.stdout).unwrap();
    let text = dossier.to_string();
    assert!(text.contains("\"verified\""), "{text}");

    // The run page and its JSON twin, from `ki serve` on the same catalog.
    let server = start_server(dir.path(), &database);
    let (status, _, page) = http(&server.addr, "GET", &format!("/runs/{run_id}"), "text/plain", "").unwrap();
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("evidence: verified"), "the run page names the evidence level");
    assert!(page.contains("kernelindex-native") && page.contains("NVIDIA H200"));
    let (status, _, json) = http(&server.addr, "GET", &format!("/api/v1/runs/{run_id}"), "text/plain", "").unwrap();
    assert_eq!(status, 200, "{json}");
    assert!(json.contains("\"verified\""), "{json}");
    // A FlashInfer run of the same workload, also verified, ranks below it.
    let flashinfer = fastest.iter().find(|r| r["implementation"].as_str().unwrap().starts_with("flashinfer")).unwrap();
    let (status, _, page) =
        http(&server.addr, "GET", &format!("/runs/{}", flashinfer["runId"].as_str().unwrap()), "text/plain", "")
            .unwrap();
    assert_eq!(status, 200);
    assert!(
        page.contains("evidence: verified") && (page.contains("Rank 2") || page.contains("Rank 3")),
        "{}",
        &page[..page.len().min(3000)]
    );
}

/// A fresh index (`ki serve` on an empty catalog) imports the public snapshot and our verified
/// runs together, so the native kernel's H200 records are there from the first start.
#[test]
fn a_fresh_index_holds_the_bundled_verified_runs() {
    let bundled =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/kernelindex-verified-h200-2026-11-30.jsonl.zst");
    let bundled = String::from_utf8(zstd::decode_all(std::fs::File::open(&bundled).unwrap()).unwrap()).unwrap();
    // The h32/kv4 and h32/kv8 runs, each line once (the two sessions share their source and projects).
    let mut expected: Vec<String> = Vec::new();
    let unpacked = tempfile::tempdir().unwrap();
    for file in [runner_rows("realistic", unpacked.path()), runner_rows("kv8-realistic", unpacked.path())] {
        for line in std::fs::read_to_string(file).unwrap().lines() {
            if !expected.iter().any(|held| held == line) {
                expected.push(line.to_string());
            }
        }
    }
    assert_eq!(
        bundled.lines().collect::<Vec<_>>(),
        expected,
        "data/ holds exactly the runner's rows of fixtures/gqa-paged-decode/realistic and kv8-realistic"
    );

    let dir = tempfile::tempdir().unwrap();
    let database = format!("sqlite://{}", dir.path().join("kernelindex.db").display());
    let server = start_server(dir.path(), &database);
    let answer = resolve_batch1_on_h200(&database);
    let leader = &answer["cohorts"][0]["fastest"][0];
    assert!(leader["implementation"].as_str().unwrap().starts_with("kernelindex-native"), "{answer}");
    // The kv8 definition's runs are there too.
    let kv8 = run_ki(&[
        "resolve",
        "--operation",
        "gqa_paged_decode_h32_kv8_d128_ps1",
        "--hardware",
        "NVIDIA H200",
        "--json",
        "--database",
        &database,
    ]);
    let kv8: Value = serde_json::from_slice(&kv8.stdout).unwrap();
    assert!(
        kv8["cohorts"].as_array().is_some_and(|c| c.iter().any(|c| c["fastest"][0]["trust"] == "verified")),
        "{kv8}"
    );
    let (status, _, page) =
        http(&server.addr, "GET", &format!("/runs/{}", leader["runId"].as_str().unwrap()), "text/plain", "").unwrap();
    assert_eq!(status, 200);
    assert!(page.contains("evidence: verified"));
}

/// Two runner sessions (h32/kv4 and h32/kv8, 2026-12-01) import into one catalog: the rows both
/// write (the rerun source, its projects) are the same rows, not conflicts.
#[test]
fn two_runner_sessions_import_into_one_catalog() {
    let dir = tempfile::tempdir().unwrap();
    let database = format!("sqlite://{}", dir.path().join("kernelindex.db").display());
    for file in [runner_rows("realistic", dir.path()), runner_rows("kv8-realistic", dir.path())] {
        let output = run_ki(&["catalog", "import", file.to_str().unwrap(), "--database", &database]);
        assert!(output.status.success(), "{}: {}", file.display(), String::from_utf8_lossy(&output.stderr));
    }
}

/// On every one of the 48 h32/kv4 workloads of the bundled runs (realistic lengths, per-call time),
/// the native kernel is faster than both FlashInfer settings, and the resolver ranks it #1 Verified.
#[test]
fn the_native_kernel_is_first_verified_wherever_it_is_fastest() {
    let dir = tempfile::tempdir().unwrap();
    let database = format!("sqlite://{}", dir.path().join("kernelindex.db").display());
    let rows = runner_rows("realistic", dir.path());
    let import = run_ki(&["catalog", "import", rows.to_str().unwrap(), "--database", &database]);
    assert!(import.status.success(), "{}", String::from_utf8_lossy(&import.stderr));
    let text = std::fs::read_to_string(&rows).unwrap();
    let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let implementations: std::collections::BTreeMap<String, String> = lines
        .iter()
        .filter(|l| l["table"] == "implementations")
        .map(|l| (l["row"]["id"].as_str().unwrap().to_string(), l["row"]["title"].as_str().unwrap().to_string()))
        .collect();
    let workloads: Vec<&Value> = lines.iter().filter(|l| l["table"] == "workloads").map(|l| &l["row"]).collect();
    assert_eq!(workloads.len(), 48);
    for workload in workloads {
        // The fastest run of this workload in the rows themselves.
        let mut runs: Vec<(u64, &str)> = lines
            .iter()
            .filter(|l| l["table"] == "benchmark_runs" && l["row"]["workloadId"] == workload["id"])
            .map(|l| {
                let id = l["row"]["implementationId"].as_str().unwrap();
                (l["row"]["primaryValue"].as_u64().unwrap(), implementations[id].as_str())
            })
            .collect();
        runs.sort();
        assert_eq!(runs.len(), 3);
        assert_eq!(runs[0].1, "kernelindex-native", "{}: {runs:?}", workload["id"]);
        // And the resolver's answer for its axes.
        let axes = workload["manifest"]["spec"]["axes"].as_object().unwrap();
        let mut args = vec![
            "resolve".to_string(),
            "--operation".into(),
            "gqa_paged_decode_h32_kv4_d128_ps1".into(),
            "--hardware".into(),
            "NVIDIA H200".into(),
            "--json".into(),
            "--database".into(),
            database.clone(),
        ];
        for (name, value) in axes {
            args.extend(["--axis".to_string(), format!("{name}={value}")]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let output = run_ki(&args);
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let answer: Value = serde_json::from_slice(&output.stdout).unwrap();
        let leader = &answer["cohorts"][0]["fastest"][0];
        assert_eq!(leader["trust"], "verified", "{answer}");
        assert!(leader["implementation"].as_str().unwrap().starts_with("kernelindex-native"), "{axes:?}: {answer}");
    }
}

fn walk(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() { out.extend(walk(&path)) } else { out.push(path) }
    }
    out
}

/// `ki catalog attach` stores the contents a runner folder's rows name (its raw samples) once
/// the rows are imported; a samples file altered after the run refuses the folder, naming the
/// file, with nothing stored; a single file is taken only when a row names its digest.
#[test]
fn attach_stores_what_the_rows_name_and_refuses_what_does_not_match() {
    let dir = tempfile::tempdir().unwrap();
    let database = format!("sqlite://{}", dir.path().join("kernelindex.db").display());
    let folder = runner_folder("kv8-realistic", dir.path());
    let rows = folder.join("catalog-rows.jsonl");

    // Before the rows are in the catalog, nothing they name is stored.
    let early = run_ki(&["catalog", "attach", folder.to_str().unwrap(), "--database", &database]);
    let early_text = String::from_utf8_lossy(&early.stdout).to_string();
    assert!(early.status.success(), "{early_text}{}", String::from_utf8_lossy(&early.stderr));
    assert!(early_text.contains("0 stored (0 bytes), 0 already held, 144 skipped, 1 missing"), "{early_text}");

    assert!(run_ki(&["catalog", "import", rows.to_str().unwrap(), "--database", &database]).status.success());

    // One samples file altered: the whole folder is refused, the file named, nothing stored.
    let altered = walk(&folder.join("samples")).into_iter().min().unwrap();
    let original = std::fs::read(&altered).unwrap();
    std::fs::write(&altered, [&original[..], b" "].concat()).unwrap();
    let refused = run_ki(&["catalog", "attach", folder.to_str().unwrap(), "--database", &database]);
    let refused_text = String::from_utf8_lossy(&refused.stderr).to_string();
    assert!(!refused.status.success());
    assert!(
        refused_text.contains("refused, nothing written")
            && refused_text.contains(altered.to_str().unwrap())
            && refused_text.contains("as the rows name it"),
        "{refused_text}"
    );
    let catalog_url = database.clone();
    let count = || {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        runtime.block_on(async {
            let catalog = ki_catalog::Catalog::open(&catalog_url).await.unwrap();
            let n = catalog.contents_count().await.unwrap();
            catalog.close().await;
            n
        })
    };
    assert_eq!(count(), 0, "a refused attach stores nothing");

    std::fs::write(&altered, &original).unwrap();
    let stored = run_ki(&["catalog", "attach", folder.to_str().unwrap(), "--database", &database]);
    let stored_text = String::from_utf8_lossy(&stored.stdout).to_string();
    assert!(stored.status.success() && stored_text.contains("144 stored ("), "{stored_text}");
    assert_eq!(count(), 144);
    let again = run_ki(&["catalog", "attach", folder.to_str().unwrap(), "--database", &database]);
    assert!(String::from_utf8_lossy(&again.stdout).contains("0 stored (0 bytes), 144 already held"));
    // The folder's archive, as fixtures/ keeps it, reads as the folder.
    let packed = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/gqa-paged-decode/kv8-realistic")
        .join(ki_model::folder_archive::PACKED);
    let from_archive = run_ki(&["catalog", "attach", packed.to_str().unwrap(), "--database", &database]);
    assert!(
        String::from_utf8_lossy(&from_archive.stdout).contains("0 stored (0 bytes), 144 already held"),
        "{}",
        out_of(&from_archive)
    );

    // The native kernel's source, by the digest its implementation row names; a file no row
    // names is refused.
    let source = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../kernels/cuda/gqa_paged_decode.cu");
    let attached = run_ki(&["catalog", "attach", source.to_str().unwrap(), "--database", &database]);
    assert!(String::from_utf8_lossy(&attached.stdout).contains("1 stored ("), "{}", out_of(&attached));
    let readme = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    let unnamed = run_ki(&["catalog", "attach", readme.to_str().unwrap(), "--database", &database]);
    assert!(!unnamed.status.success());
    assert!(
        String::from_utf8_lossy(&unnamed.stderr).contains("is not named by any row of the catalog"),
        "{}",
        out_of(&unnamed)
    );
    assert_eq!(count(), 145);
}

fn out_of(output: &std::process::Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

/// `ki verify --worker --executor fixture` (runs re-issued, nothing measured) exists only in a
/// build with the `fixture-executor` feature, which only the queue's tests enable: a plain
/// build refuses the executor before it opens any catalog.
#[test]
fn the_fixture_executor_is_only_in_builds_with_its_feature() {
    let dir = tempfile::tempdir().unwrap();
    let database = format!("sqlite://{}", dir.path().join("catalog.db").display());
    let output = run_ki(&[
        "verify",
        "--worker",
        "--database",
        &database,
        "--executor",
        "fixture",
        "--until",
        "idle",
        "--gpu",
        "NVIDIA H200",
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    if cfg!(feature = "fixture-executor") {
        assert!(output.status.success(), "{stderr}");
    } else {
        assert_eq!(output.status.code(), Some(2), "the fixture executor ran in a plain build: {stderr}");
        assert!(stderr.contains("invalid value 'fixture'"), "{stderr}");
        assert!(!dir.path().join("catalog.db").exists(), "a catalog was made");
    }
}
