//! Every manifest in the shared catalog export is a real instance of the record model: it must
//! pass the schema (a sample also through the YAML reader, since JSON is YAML 1.2), normalize to itself
//! (its digest unchanged, which is what proves the normalization rules match the public index),
//! read as a typed record and write back to the same canonical JSON.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;

use ki_model::jcs::canonicalize;
use ki_model::manifest::{parse_manifest, validate_value};
use ki_model::records::Kind;
use serde_json::Value;

const EXPORT: &str = "../../data/catalog-2026-08-16-0022af0b.jsonl.zst";

/// (table, JSON pointer of a manifest in the row, column holding that manifest's digest).
const MANIFEST_COLUMNS: &[(&str, &str, Option<&str>)] = &[
    ("projects", "/manifest", None),
    ("operations", "/manifest", Some("semanticDigest")),
    ("workloads", "/manifest", Some("workloadDigest")),
    ("implementations", "/manifest", Some("implementationDigest")),
    ("benchmark_runs", "/manifest/run", Some("runDigest")),
    ("benchmark_runs", "/manifest/protocol", Some("protocolKey")),
    ("benchmark_runs", "/manifest/environment", Some("environmentKey")),
    ("model_revisions", "/manifest", Some("modelDigest")),
    ("serving_stack_revisions", "/manifest", Some("stackDigest")),
    ("serving_configurations", "/manifest", Some("configurationDigest")),
    ("serving_workloads", "/manifest", Some("workloadDigest")),
    ("serving_runs", "/manifest", Some("runDigest")),
];

#[test]
fn every_export_manifest_validates_and_keeps_its_digest() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(EXPORT);
    let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let reader = BufReader::new(zstd::Decoder::new(file).unwrap());
    let mut checked: BTreeMap<String, usize> = BTreeMap::new();
    let mut kinds: BTreeMap<Kind, usize> = BTreeMap::new();
    let mut failures = Vec::new();
    for (number, line) in reader.lines().enumerate() {
        let line = line.unwrap();
        let entry: Value = serde_json::from_str(&line).unwrap();
        let table = entry["table"].as_str().unwrap();
        for &(_, pointer, digest_column) in MANIFEST_COLUMNS.iter().filter(|(t, _, _)| *t == table) {
            let manifest = entry["row"].pointer(pointer).unwrap_or_else(|| panic!("line {}: no {pointer}", number + 1));
            let place = format!("line {} {table}{pointer}", number + 1);
            let valid = match validate_value(manifest.clone()) {
                Ok(v) => v,
                Err(problems) => {
                    failures.push(format!(
                        "{place}: {}",
                        problems.iter().map(|p| p.to_string()).collect::<Vec<_>>().join("; ")
                    ));
                    continue;
                }
            };
            // A sample also goes through the YAML reader from its JSON text, as `ki manifest`
            // reads a .json file (every row would triple the test's time in a debug build).
            if number % 10 == 0 {
                let text = serde_json::to_string(manifest).unwrap();
                let read = parse_manifest(text.as_bytes()).map(|m| m.digest);
                if read.as_ref() != Ok(&valid.digest) {
                    failures.push(format!("{place}: the YAML reader gave {read:?}"));
                }
            }
            if let Some(column) = digest_column
                && entry["row"][column] != valid.digest.as_str()
            {
                failures.push(format!(
                    "{place}: digest {} but the row's {column} is {}",
                    valid.digest, entry["row"][column]
                ));
            }
            // Normalizing an exported manifest changes nothing it digests, and the typed record
            // writes back the same JSON. Plain equality settles almost every row; canonical
            // text settles the rest (2.0 and 2 are one number to JCS, not to `Value`).
            if !same_json(&valid.value["spec"], &manifest["spec"]) {
                failures.push(format!("{place}: normalization changed the spec"));
            }
            if !same_json(&valid.record.to_value(), &valid.value) {
                failures.push(format!("{place}: typed record does not round-trip"));
            }
            *checked.entry(format!("{table}{pointer}")).or_default() += 1;
            *kinds.entry(valid.kind).or_default() += 1;
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures, first ones:\n{}",
        failures.len(),
        failures.iter().take(20).cloned().collect::<Vec<_>>().join("\n")
    );
    // Row counts of the 2026-08-16 export (its README lists them per table).
    let expected = [
        ("benchmark_runs/manifest/environment", 7857),
        ("benchmark_runs/manifest/protocol", 7857),
        ("benchmark_runs/manifest/run", 7857),
        ("implementations/manifest", 4250),
        ("model_revisions/manifest", 6),
        ("operations/manifest", 449),
        ("projects/manifest", 615),
        ("serving_configurations/manifest", 130),
        ("serving_runs/manifest", 722),
        ("serving_stack_revisions/manifest", 71),
        ("serving_workloads/manifest", 17),
        ("workloads/manifest", 5627),
    ];
    let got: Vec<(&str, usize)> = checked.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    assert_eq!(got, expected);
    eprintln!("kinds checked: {kinds:?}");
}

fn same_json(a: &Value, b: &Value) -> bool {
    a == b || canonicalize(a).unwrap() == canonicalize(b).unwrap()
}
