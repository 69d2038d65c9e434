//! `ki source import flashinfer-bench` as a user runs it: a dry run prints per kind what is
//! new / unchanged / conflicting and writes nothing; the import writes; a second import
//! inserts nothing; a malformed data set is refused naming file and line, nothing written.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn samples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/flashinfer-trace-samples/flashinfer_trace")
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("source_import").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn ki_import(dir: &Path, database: &str, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ki"))
        .args(["source", "import", "flashinfer-bench"])
        .arg(dir)
        .args(["--database", database])
        .args(extra)
        .env_remove("KI_DATABASE_URL")
        .output()
        .expect("ki runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The `new unchanged conflicting` figures printed for `kind`.
fn figures(stdout: &str, kind: &str) -> Vec<u64> {
    let line = stdout
        .lines()
        .find(|l| l.split_whitespace().next() == Some(kind))
        .unwrap_or_else(|| panic!("no {kind} line in:\n{stdout}"));
    line.split_whitespace().skip(1).map(|n| n.parse().unwrap()).collect()
}

#[test]
fn dry_run_then_import_then_nothing_new() {
    let dir = scratch("idempotent");
    let database = format!("sqlite://{}", dir.join("catalog.db").display());

    let dry = ki_import(&samples(), &database, &["--dry-run"]);
    let stdout = text(&dry.stdout);
    assert!(dry.status.success(), "{stdout}\n{}", text(&dry.stderr));
    assert!(stdout.contains("new") && stdout.contains("unchanged") && stdout.contains("conflicting"), "{stdout}");
    assert_eq!(figures(&stdout, "operations"), vec![17, 0, 0]);
    assert_eq!(figures(&stdout, "workloads"), vec![96, 0, 0]);

    let first = ki_import(&samples(), &database, &[]);
    let stdout = text(&first.stdout);
    assert!(first.status.success(), "{stdout}\n{}", text(&first.stderr));
    assert_eq!(figures(&stdout, "workloads"), vec![96, 0, 0]);

    let second = ki_import(&samples(), &database, &["--dry-run"]);
    let stdout = text(&second.stdout);
    assert_eq!(figures(&stdout, "operations"), vec![0, 17, 0]);
    assert_eq!(figures(&stdout, "workloads"), vec![0, 96, 0]);
    let again = ki_import(&samples(), &database, &[]);
    let stdout = text(&again.stdout);
    assert!(stdout.lines().any(|l| l.starts_with("0 rows written")), "{stdout}");
}

#[test]
fn a_malformed_definition_is_refused_and_nothing_written() {
    let dir = scratch("malformed");
    let data = dir.join("data");
    std::fs::create_dir_all(data.join("definitions/gqa_paged")).unwrap();
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../sources/tests/fixtures/definitions/shape_undeclared_axis.json");
    std::fs::copy(&fixture, data.join("definitions/gqa_paged/shape_undeclared_axis.json")).unwrap();
    let database_file = dir.join("catalog.db");
    let output = ki_import(&data, &format!("sqlite://{}", database_file.display()), &[]);
    let stderr = text(&output.stderr);
    assert!(!output.status.success());
    let line =
        std::fs::read_to_string(&fixture).unwrap().lines().position(|l| l.contains("\"num_heads\"")).unwrap() + 1;
    assert!(stderr.contains(&format!("shape_undeclared_axis.json:{line}: /outputs/lse/shape/1:")), "{stderr}");
    assert!(stderr.contains("nothing written"), "{stderr}");
    assert!(!database_file.exists(), "the catalog is not even opened");
}
