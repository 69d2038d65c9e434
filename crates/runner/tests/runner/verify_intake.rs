//! `ki verify`'s intake: FlashInfer-Bench Solutions (current and legacy schema) parsed and validated,
//! refused documents named by file and JSON pointer, nothing written for them.
use std::path::PathBuf;
use std::process::Command;

use ki_runner::solution::{Language, Schema, Solution};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/verify")
}

fn fixture(name: &str) -> PathBuf {
    fixtures().join("solutions").join(name)
}

#[test]
fn malformed_documents_are_refused_with_file_and_pointer() {
    let cases = [
        ("bad_malformed_syntax.json", "", "not valid JSON (line 1"),
        ("bad_malformed_entry.json", "/spec/entry_point", "not of the form file::function"),
        ("bad_malformed_path.json", "/sources/0/path", "'..'"),
    ];
    for (file, pointer, reason) in cases {
        let error = Solution::read(&fixture(file)).expect_err(file);
        assert!(error.file.ends_with(file), "{error}");
        assert_eq!(error.pointer, pointer, "{error}");
        assert!(error.reason.contains(reason), "{error}");
    }
    let mut bad = serde_json::json!({"name": "n", "definition": "d", "author": "a", "spec": {"language": "rust", "target_hardware": [], "entry_point": "a.py::run"}, "sources": [{"path": "a.py", "content": ""}]});
    let text = bad.to_string();
    let error = Solution::parse(text.as_bytes(), "x.json").unwrap_err();
    assert_eq!(error.pointer, "/spec/language");
    bad["spec"]["language"] = "cuda".into();
    let error = Solution::parse(bad.to_string().as_bytes(), "x.json").unwrap_err();
    assert_eq!(error.pointer, "/spec/binding", "{error}");
    bad["spec"]["language"] = "python".into();
    bad["spec"]["entry_point"] = "missing.py::run".into();
    let error = Solution::parse(bad.to_string().as_bytes(), "x.json").unwrap_err();
    assert_eq!((error.pointer.as_str(), error.reason.contains("not among /sources")), ("/spec/entry_point", true));
    bad["spec"]["entry_point"] = "a.py::run".into();
    bad["sources"][0]["content"] = 7.into();
    let error = Solution::parse(bad.to_string().as_bytes(), "x.json").unwrap_err();
    assert_eq!(error.pointer, "/sources/0/content");
    assert_eq!(error.to_string(), "x.json: /sources/0/content: must be a string, found a number");
}

#[test]
fn current_and_legacy_schemas() {
    let control = Solution::read(&fixture("solution_hack_monkey_patch.json")).unwrap();
    assert_eq!((control.language, control.schema), (Language::Python, Schema::Current));
    assert_eq!(control.destination_passing_style, Some(false));
    assert_eq!((control.entry_file.as_str(), control.entry_function.as_str()), ("kernel.py", "run"));
    let cuda = Solution::read(&fixture("bad_compile_error.json")).unwrap();
    assert!(cuda.language.is_compiled());
    assert_eq!(cuda.binding.as_deref(), Some("torch"));
    // The 2025 schema: capitalised language, build_commands, outputs returned.
    let legacy = serde_json::json!({"name": "flashinfer_gqa", "definition": "gqa_paged_decode_h32_kv8_d128_ps1", "author": "flashinfer",
        "spec": {"language": "Python", "target_hardware": ["NVIDIA_H100"], "dependencies": ["flashinfer >= 0.2.8"], "entry_point": "main.py::run", "build_commands": []},
        "sources": [{"path": "main.py", "content": "def run(q): return q"}]});
    let legacy = Solution::parse(legacy.to_string().as_bytes(), "legacy.json").unwrap();
    assert_eq!(
        (legacy.schema, legacy.language, legacy.destination_passing_style),
        (Schema::Legacy, Language::Python, Some(false))
    );
    // Current schema without the field: left to the worker's rule (the schema's default unless the
    // entry point takes only the inputs).
    let mut current: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixture("honest_torch_rmsnorm.json")).unwrap()).unwrap();
    current["spec"].as_object_mut().unwrap().remove("destination_passing_style");
    let current = Solution::parse(current.to_string().as_bytes(), "c.json").unwrap();
    assert_eq!(current.destination_passing_style, None);
}

#[test]
fn the_source_digest_covers_every_file_and_nothing_else() {
    let a = Solution::read(&fixture("honest_torch_rmsnorm.json")).unwrap();
    let mut doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixture("honest_torch_rmsnorm.json")).unwrap()).unwrap();
    doc["description"] = "another description".into();
    doc["name"] = "renamed".into();
    let same = Solution::parse(doc.to_string().as_bytes(), "b.json").unwrap();
    assert_eq!(a.source_digest, same.source_digest, "metadata is not part of the digest");
    doc["sources"][0]["content"] = format!("{}\n", doc["sources"][0]["content"].as_str().unwrap()).into();
    let changed = Solution::parse(doc.to_string().as_bytes(), "c.json").unwrap();
    assert_ne!(a.source_digest, changed.source_digest);
    doc["sources"].as_array_mut().unwrap().push(serde_json::json!({"path": "util/extra.py", "content": "X = 1"}));
    let more = Solution::parse(doc.to_string().as_bytes(), "d.json").unwrap();
    assert_ne!(changed.source_digest, more.source_digest);
    assert!(a.source_digest.starts_with("sha256:") && a.source_digest.len() == 71);
    // The artifact pages show holds every file.
    let artifact = more.artifact();
    assert_eq!(artifact["sources"].as_array().unwrap().len(), 2);
}

#[test]
fn refused_documents_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("records");
    let output = Command::new(env!("CARGO_BIN_EXE_ki-runner"))
        .arg("verify")
        .arg(fixture("bad_malformed_syntax.json"))
        .arg(fixture("bad_malformed_entry.json"))
        .arg("--definition")
        .arg(fixtures().join("flashinfer_trace"))
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("bad_malformed_syntax.json: : not valid JSON"), "{stderr}");
    assert!(stderr.contains("bad_malformed_entry.json: /spec/entry_point:"), "{stderr}");
    assert!(stderr.contains("nothing written"), "{stderr}");
    assert!(!out.exists(), "a refused batch writes nothing");
}

/// A `--catalog` that is missing or malformed stops the session before any work (no judge, no
/// build, no GPU time) and before anything is written, naming the file and, for a bad line, its
/// number.
#[test]
fn a_bad_catalog_stops_the_session_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let malformed = dir.path().join("bad.jsonl");
    std::fs::write(&malformed, "{\"table\":\"operations\",\"row\":{\n").unwrap();
    for (catalog, said) in [
        (dir.path().join("missing.jsonl.zst"), "missing.jsonl.zst: cannot open".to_string()),
        (malformed.clone(), format!("{}:1: invalid JSON", malformed.display())),
    ] {
        let out = dir.path().join("records");
        let output = Command::new(env!("CARGO_BIN_EXE_ki-runner"))
            .arg("verify")
            .arg(fixtures().join("corpus/solutions/honest_triton_rmsnorm.json"))
            .arg("--definition")
            .arg(fixtures().join("corpus/flashinfer_trace"))
            .arg("--catalog")
            .arg(&catalog)
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{stderr}");
        assert!(stderr.contains("--catalog") && stderr.contains(&said), "{stderr}");
        assert!(!stderr.contains("judge") && !stderr.contains("not_run"), "work began: {stderr}");
        assert!(!out.exists(), "nothing is written");
    }
}

/// The verification corpus (issue 31): every solution passes intake, its definition is in the
/// corpus's flashinfer_trace, and expected.json names each one (and only those we hold) with a
/// verdict: honest ones `passed` with a timing method, dishonest ones a non-empty list of refusals
/// that never includes `passed`.
#[test]
fn the_corpus_is_well_formed_and_every_solution_has_an_expected_verdict() {
    let corpus = fixtures().join("corpus");
    let expected: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(corpus.join("expected.json")).unwrap()).unwrap();
    let expected = expected.as_object().unwrap();
    let mut names = Vec::new();
    for entry in std::fs::read_dir(corpus.join("solutions")).unwrap() {
        let path = entry.unwrap().path();
        let solution = Solution::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let definition = corpus
            .join("flashinfer_trace/definitions")
            .join(solution.definition.split('_').next().unwrap())
            .join(format!("{}.json", solution.definition));
        assert!(definition.is_file(), "{name}: {} missing", definition.display());
        names.push(name);
    }
    for name in [
        "solution_hack_lazy_output",
        "solution_hack_monkey_patch",
        "solution_hack_stream_injection",
        "solution_hack_thread_injection",
    ] {
        assert!(fixture(&format!("{name}.json")).is_file());
        names.push(name.to_string());
    }
    names.sort();
    let mut listed: Vec<String> = expected.keys().cloned().collect();
    listed.sort();
    assert_eq!(names, listed);
    let (mut honest, mut dishonest) = (0, 0);
    for (name, want) in expected {
        if want["verdict"] == "passed" {
            assert!(want["method"].as_str().is_some_and(|m| m.starts_with("latency_")), "{name}");
            honest += 1;
        } else {
            let refused = want["refused"].as_array().unwrap_or_else(|| panic!("{name}: no verdict"));
            assert!(!refused.is_empty() && !refused.iter().any(|v| v == "passed"), "{name}");
            dishonest += 1;
        }
    }
    assert!(honest >= 10 && dishonest >= 12, "{honest} honest, {dishonest} dishonest");
}

/// A run split over GPU calls (issue 32): runs an earlier session recorded are not run again, and
/// when nothing is left the session writes nothing; a runs file that is not one is refused with
/// its file and line, before anything is written.
#[test]
fn runs_recorded_earlier_are_not_run_again() {
    let corpus = fixtures().join("corpus");
    let solution_file = corpus.join("solutions/honest_triton_rmsnorm.json");
    let key = Solution::read(&solution_file).unwrap().source_digest;
    let dir = tempfile::tempdir().unwrap();
    let run = |runs: &std::path::Path, out: &std::path::Path| {
        Command::new(env!("CARGO_BIN_EXE_ki-runner"))
            .arg("verify")
            .arg(&solution_file)
            .arg("--definition")
            .arg(corpus.join("flashinfer_trace"))
            .arg("--skip-recorded")
            .arg(runs)
            .arg("--out")
            .arg(out)
            .output()
            .unwrap()
    };
    let runs = dir.path().join("runs.jsonl");
    let line = |verdict: &str| {
        format!(
            r#"{{"implementation":"honest-triton-rmsnorm","implementationKey":"{key}","workload":"841b0afa-80fa-449a-9e1d-f294da92d02f","verdict":{{"verdict":"{verdict}"}}}}"#
        )
    };
    std::fs::write(&runs, format!("{}\n{}\n", line("not_run"), line("passed"))).unwrap();
    let out = dir.path().join("done");
    let output = run(&runs, &out);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains("1 runs recorded earlier are not run again; 0 of 1 implementations have work left"),
        "{stderr}"
    );
    assert!(stderr.contains("nothing left to verify"), "{stderr}");
    assert!(!out.exists(), "a session with nothing left writes nothing");

    std::fs::write(&runs, format!("{}\nnot json\n", line("passed"))).unwrap();
    let out = dir.path().join("bad");
    let output = run(&runs, &out);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains(&format!("{}:2: not a run of `ki verify`'s runs.jsonl", runs.display())), "{stderr}");
    assert!(!out.exists(), "a refused runs file writes nothing");
}
