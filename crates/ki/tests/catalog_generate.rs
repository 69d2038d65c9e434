//! `ki catalog generate`: a synthetic export that `ki catalog verify` passes (every digest and
//! key, and the record ledger), that imports, and that one seed reproduces byte for byte.

use std::process::{Command, Output};

fn ki(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ki")).args(args).env_remove("KI_DATABASE_URL").output().expect("ki runs")
}

fn out(output: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

#[test]
fn a_generated_export_verifies_imports_and_repeats() {
    let directory = tempfile::tempdir().unwrap();
    let first = directory.path().join("first.jsonl.zst");
    let second = directory.path().join("second.jsonl.zst");
    for path in [&first, &second] {
        let generated = ki(&["catalog", "generate", "--runs", "3000", "--seed", "7", "--out", path.to_str().unwrap()]);
        assert!(generated.status.success(), "{}", out(&generated));
        assert!(out(&generated).contains("3000 runs"), "{}", out(&generated));
    }
    assert_eq!(std::fs::read(&first).unwrap(), std::fs::read(&second).unwrap(), "one seed, one file");
    let other = directory.path().join("other.jsonl.zst");
    assert!(
        ki(&["catalog", "generate", "--runs", "3000", "--seed", "8", "--out", other.to_str().unwrap()])
            .status
            .success()
    );
    assert_ne!(std::fs::read(&first).unwrap(), std::fs::read(&other).unwrap());

    let verified = ki(&["catalog", "verify", first.to_str().unwrap()]);
    assert!(verified.status.success(), "{}", out(&verified));
    let report = out(&verified);
    assert!(report.contains(" 0 mismatches"), "{report}");
    let ledger = report.lines().find(|line| line.starts_with("record events (ranking-v1)")).expect("a ledger line");
    let groups: Vec<u64> = ledger
        .split(|c: char| !c.is_ascii_digit())
        .filter(|part| !part.is_empty())
        .filter_map(|part| part.parse().ok())
        .collect();
    // "… N stored, N recomputed, M of M comparison groups match"
    assert!(groups.len() >= 5 && groups[1] == groups[2] && groups[3] == groups[4] && groups[1] > 0, "{ledger}");

    let database = format!("sqlite://{}", directory.path().join("catalog.db").display());
    let imported = ki(&["catalog", "import", first.to_str().unwrap(), "--database", &database]);
    assert!(imported.status.success(), "{}", out(&imported));
    assert!(out(&imported).contains("in one transaction"), "{}", out(&imported));
}
