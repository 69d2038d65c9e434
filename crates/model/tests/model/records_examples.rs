//! The registry's example manifests: every valid one validates, the digests they name form a
//! closed chain, each invalid one is refused for its stated reason, and the submission bundle
//! validates with its own chain intact.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use ki_model::jcs::canonicalize;
use ki_model::manifest::{ValidManifest, parse_manifests, read_manifest_file};
use ki_model::records::Kind;
use serde_json::Value;

fn registry() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/kernelindex-registry")
}

fn valid_examples() -> Vec<(PathBuf, ValidManifest)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(registry().join("examples"))
        .expect("examples directory")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let mut manifests = read_manifest_file(&path).unwrap_or_else(|p| panic!("{}: {p:?}", path.display()));
            assert_eq!(manifests.len(), 1, "{}", path.display());
            (path, manifests.remove(0))
        })
        .collect()
}

/// Digest-valued fields that name another record, and the kind of record each must name.
fn references(m: &ValidManifest) -> Vec<(&'static str, Kind, String)> {
    let spec = &m.value["spec"];
    let named = |pointer: &'static str, kind: Kind| {
        spec.pointer(pointer).and_then(Value::as_str).map(|d| (pointer, kind, d.to_owned()))
    };
    let candidates = match m.kind {
        Kind::WorkloadCase | Kind::WorkloadSuite => vec![named("/operationSpecDigest", Kind::OperationSpec)],
        Kind::ImplementationRevision => vec![named("/operation/specDigest", Kind::OperationSpec)],
        Kind::BenchmarkRun => vec![
            named("/implementationDigest", Kind::ImplementationRevision),
            named("/workloadDigest", Kind::WorkloadCase),
            named("/protocolDigest", Kind::BenchmarkProtocol),
            named("/environmentDigest", Kind::ExecutionEnvironment),
        ],
        Kind::ServingConfiguration => vec![named("/stackDigest", Kind::ServingStackRevision)],
        Kind::ServingRun => vec![
            named("/modelDigest", Kind::ModelRevision),
            named("/configurationDigest", Kind::ServingConfiguration),
            named("/workloadDigest", Kind::ServingWorkload),
        ],
        _ => vec![],
    };
    candidates.into_iter().flatten().collect()
}

#[test]
fn every_valid_example_validates_and_covers_all_kinds() {
    let examples = valid_examples();
    let mut kinds: Vec<Kind> = examples.iter().map(|(_, m)| m.kind).collect();
    kinds.sort();
    kinds.dedup();
    assert_eq!(kinds.len(), 13, "one example per kind: {kinds:?}");
    for (path, m) in &examples {
        assert!(ki_model::identity::is_digest(&m.digest), "{}: {}", path.display(), m.digest);
        assert_eq!(m.record.kind(), m.kind);
    }
}

#[test]
fn example_digest_chain_is_closed() {
    let examples = valid_examples();
    let by_digest: HashMap<&str, (Kind, &Path)> =
        examples.iter().map(|(p, m)| (m.digest.as_str(), (m.kind, p.as_path()))).collect();
    let mut checked = 0;
    for (path, m) in &examples {
        for (pointer, kind, digest) in references(m) {
            let target = by_digest
                .get(digest.as_str())
                .unwrap_or_else(|| panic!("{}: spec{pointer} = {digest} is the digest of no example", path.display()));
            assert_eq!(
                target.0,
                kind,
                "{}: spec{pointer} names a {} ({})",
                path.display(),
                target.0,
                target.1.display()
            );
            checked += 1;
        }
    }
    // run → 4, serving run → 3, workload/suite/implementation → 1 each, configuration → 1.
    assert_eq!(checked, 11);
}

#[test]
fn implementation_support_lists_are_sorted_before_digesting() {
    // The example's support.axes is written unsorted; the run example names the digest of the
    // sorted form, so the chain test above only passes with normalization. Show it directly too.
    let path = registry().join("examples/implementation-revision.yaml");
    let m = read_manifest_file(&path).unwrap().remove(0);
    let axes: Vec<&str> =
        m.value["spec"]["support"]["axes"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    let mut sorted = axes.clone();
    sorted.sort();
    assert_eq!(axes, sorted);
    let raw = std::fs::read_to_string(&path).unwrap();
    assert!(raw.contains(r#"axes: ["tokens >= 1", "hidden == 4096"]"#), "the example is written unsorted");
}

#[test]
fn typed_records_round_trip_to_the_same_canonical_json() {
    for (path, m) in valid_examples() {
        let back = m.record.to_value();
        assert_eq!(canonicalize(&back).unwrap(), canonicalize(&m.value).unwrap(), "{}", path.display());
    }
}

fn problems_of(name: &str) -> Vec<ki_model::problem::Problem> {
    let path = registry().join("examples/invalid").join(name);
    read_manifest_file(&path).expect_err(name)
}

#[test]
fn ambiguous_duration_is_refused() {
    let problems = problems_of("ambiguous-duration.yaml");
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0].pointer, "/spec/timing/latencyNs/median");
    assert!(problems[0].message.contains("not a whole number of nanoseconds"), "{}", problems[0]);
    assert_eq!(problems[0].location.map(|l| l.line), Some(15));
}

#[test]
fn bad_digest_is_refused() {
    let problems = problems_of("bad-digest.yaml");
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0].pointer, "/spec/operationSpecDigest");
    assert!(problems[0].message.contains("sha256:<64 lowercase hex>"), "{}", problems[0]);
    assert!(problems[0].message.contains("md5:abc123"), "{}", problems[0]);
}

#[test]
fn duplicate_key_is_refused() {
    let problems = problems_of("duplicate-key.yaml");
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0].pointer, "/spec/name");
    assert!(problems[0].message.contains("duplicate mapping key \"name\" (first at line 7)"), "{}", problems[0]);
    assert_eq!(problems[0].location.map(|l| (l.line, l.column)), Some((8, 3)));
}

#[test]
fn unknown_field_is_refused() {
    let problems = problems_of("unknown-field.yaml");
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0].pointer, "/spec/popularity");
    assert!(problems[0].message.starts_with("unknown field \"popularity\""), "{}", problems[0]);
    assert_eq!(problems[0].location.map(|l| l.line), Some(8));
}

#[test]
fn submission_bundle_validates_and_its_chain_holds() {
    let path = registry().join("submissions/example-fixture.yaml");
    let manifests = read_manifest_file(&path).unwrap_or_else(|p| panic!("{p:?}"));
    let at: HashMap<&str, &ValidManifest> = manifests.iter().map(|m| (m.pointer.as_str(), m)).collect();
    let mut pointers: Vec<&str> = at.keys().copied().collect();
    pointers.sort();
    assert_eq!(
        pointers,
        [
            "/implementations/0/manifest",
            "/operations/0",
            "/projects/0",
            "/runs/0/environment",
            "/runs/0/protocol",
            "/runs/0/run",
            "/workloads/0"
        ]
    );
    let run = &at["/runs/0/run"].value["spec"];
    assert_eq!(run["implementationDigest"], at["/implementations/0/manifest"].digest.as_str());
    assert_eq!(run["workloadDigest"], at["/workloads/0"].digest.as_str());
    assert_eq!(run["protocolDigest"], at["/runs/0/protocol"].digest.as_str());
    assert_eq!(run["environmentDigest"], at["/runs/0/environment"].digest.as_str());
    assert_eq!(at["/workloads/0"].value["spec"]["operationSpecDigest"], at["/operations/0"].digest.as_str());
    // The bundle's members equal the examples they mirror where they are the same text.
    let examples: HashMap<Kind, String> = valid_examples().into_iter().map(|(_, m)| (m.kind, m.digest)).collect();
    assert_eq!(at["/runs/0/protocol"].digest, examples[&Kind::BenchmarkProtocol]);
    assert_eq!(at["/operations/0"].digest, examples[&Kind::OperationSpec]);
}

#[test]
fn bundle_run_must_name_the_protocol_given_with_it() {
    let path = registry().join("submissions/example-fixture.yaml");
    let text = std::fs::read_to_string(path).unwrap();
    let tampered = text.replacen("warmupIterations: 50", "warmupIterations: 51", 1);
    assert_ne!(text, tampered);
    let problems = parse_manifests(tampered.as_bytes()).expect_err("protocol changed under the run");
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0].pointer, "/runs/0/run/spec/protocolDigest");
    assert!(problems[0].message.contains("/runs/0/protocol"), "{}", problems[0]);
}

#[test]
fn multi_document_file_yields_each_manifest_with_its_index() {
    let project = std::fs::read_to_string(registry().join("examples/software-project.yaml")).unwrap();
    let model = std::fs::read_to_string(registry().join("examples/model-revision.yaml")).unwrap();
    let both = format!("{project}---\n{model}");
    let manifests = parse_manifests(both.as_bytes()).unwrap();
    assert_eq!(
        manifests.iter().map(|m| (m.document, m.kind)).collect::<Vec<_>>(),
        [(0, Kind::SoftwareProject), (1, Kind::ModelRevision)]
    );
    // A problem in the second document is reported with that document's index and line.
    let broken = format!("{project}---\n{}", model.replace("contextLength: 32768", "contextLength: -1"));
    let problems = parse_manifests(broken.as_bytes()).unwrap_err();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0].document, Some(1));
    assert_eq!(problems[0].pointer, "/spec/contextLength");
    let line = broken.lines().position(|l| l.contains("contextLength: -1")).unwrap() + 1;
    assert_eq!(problems[0].location.map(|l| l.line), Some(line));
}

/// The embedded schemas are the registry's, byte for byte: their sha256 are those of the
/// published files (`sha256sum` of `registry/schemas/*.json`, kept in the fixtures).
#[test]
fn embedded_schemas_are_the_published_ones() {
    use sha2::{Digest, Sha256};
    let listing = std::fs::read_to_string(registry().join("schemas.sha256")).unwrap();
    let published: HashMap<&str, &str> =
        listing.lines().filter_map(|line| line.split_once("  ")).map(|(digest, file)| (file, digest)).collect();
    assert_eq!(published.len(), Kind::ALL.len(), "one published schema per kind");
    for kind in Kind::ALL {
        let file = format!("{}.v1alpha1.schema.json", kebab(kind.name()));
        let embedded = hex::encode(Sha256::digest(ki_model::schema::schema_text(kind).as_bytes()));
        assert_eq!(Some(&embedded.as_str()), published.get(file.as_str()), "{file}");
        assert_eq!(ki_model::schema::schema(kind)["properties"]["kind"]["const"], kind.name());
        assert_only_supported_keywords(ki_model::schema::schema(kind), &file);
    }
}

fn kebab(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('-');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

fn assert_only_supported_keywords(node: &Value, file: &str) {
    if let Value::Object(map) = node {
        for (k, v) in map {
            assert!(ki_model::schema::SUPPORTED_KEYWORDS.contains(&k.as_str()), "{file}: keyword {k}");
            match k.as_str() {
                "properties" => v.as_object().unwrap().values().for_each(|s| assert_only_supported_keywords(s, file)),
                "const" | "enum" | "required" => {}
                _ => match v {
                    Value::Array(items) => items.iter().for_each(|s| assert_only_supported_keywords(s, file)),
                    other => assert_only_supported_keywords(other, file),
                },
            }
        }
    }
}
