//! Bad input gets clear, located problems and never a panic; the YAML reader follows the
//! YAML 1.2 core schema and its limits (1 MiB, 100 aliases, duplicate keys).

use std::path::{Path, PathBuf};

use ki_model::manifest::{parse_manifests, read_manifest_file};
use ki_model::parse::{MAX_ALIASES, MAX_INPUT_BYTES, parse_documents};
use ki_model::problem::Problem;
use serde_json::{Value, json};

fn example(name: &str) -> String {
    let path: PathBuf =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/kernelindex-registry/examples").join(name);
    std::fs::read_to_string(path).unwrap()
}

fn problems(text: &str) -> Vec<Problem> {
    parse_manifests(text.as_bytes()).expect_err("input should be refused")
}

fn first_value(text: &str) -> Value {
    parse_documents(text.as_bytes()).unwrap().remove(0).value
}

#[test]
fn ten_megabyte_manifest_is_refused_by_size() {
    let mut text = example("software-project.yaml");
    text.push_str("  homepage: \"");
    text.push_str(&"x".repeat(10 * 1024 * 1024));
    text.push_str("\"\n");
    let found = problems(&text);
    assert_eq!(found.len(), 1);
    assert!(found[0].message.contains(&format!("the limit is {MAX_INPUT_BYTES} bytes")), "{}", found[0]);
    // From a file, without reading all of it.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.yaml");
    std::fs::write(&path, &text).unwrap();
    let found = read_manifest_file(&path).unwrap_err();
    assert!(found[0].message.starts_with(&format!("input is {} bytes", text.len())), "{}", found[0]);
}

/// Issue 17: `ki manifest validate /dev/zero` said "input is 0 bytes" (a device's metadata
/// has no size). Binary input is named as such, with where its first NUL byte is.
#[test]
fn dev_zero_is_named_binary_not_zero_bytes() {
    let found = read_manifest_file(Path::new("/dev/zero")).unwrap_err();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(
        found[0].to_string(),
        "/: byte 0 is a NUL byte: a manifest is YAML or JSON text, not binary data (line 1, column 1)"
    );
    // And in the middle of text, with its line and column.
    let found = parse_manifests(b"apiVersion: kernelindex.dev/v1alpha1\nkind: Oper\0ationSpec\n").unwrap_err();
    assert_eq!(found[0].message, "byte 47 is a NUL byte: a manifest is YAML or JSON text, not binary data");
    assert_eq!(found[0].location.map(|l| (l.line, l.column)), Some((2, 11)));
}

/// Too much text from a pipe (no size in its metadata): over the limit, without a made-up size.
#[test]
fn too_long_input_from_a_pipe_is_refused_by_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe.yaml");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            use std::io::Write;
            let mut pipe = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
            // The reader stops at the limit and closes its end: a broken pipe is expected.
            let _ = pipe.write_all(format!("a: \"{}\"\n", "x".repeat(2 * MAX_INPUT_BYTES)).as_bytes());
        })
    };
    let found = read_manifest_file(&fifo).unwrap_err();
    writer.join().unwrap();
    assert_eq!(found[0].message, format!("input is longer than the limit of {MAX_INPUT_BYTES} bytes (1 MiB)"));
}

#[test]
fn wrong_type_deep_in_a_spec_is_located() {
    let text = example("workload-case.yaml").replace("seed: 230486", "seed: \"230486\"");
    let found = problems(&text);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].pointer, "/spec/tensors/weight/data/seed");
    assert!(found[0].message.contains("expected integer, got string \"230486\""), "{}", found[0]);
    let line = text.lines().position(|l| l.contains("seed: \"230486\"")).unwrap() + 1;
    assert_eq!(found[0].location.map(|l| l.line), Some(line));
}

#[test]
fn all_problems_of_a_file_are_reported() {
    let text = example("benchmark-run.yaml")
        .replace("status: passed", "status: fine")
        .replace("samples: 200", "samples: 0")
        .replace("mad: 24", "mad: 24\n      stddev: 3")
        .replace("observedAt: 2026-08-01T12:00:00Z", "observedAt: 2026-08-01T12:00:00+02:00");
    let found = problems(&text);
    let pointers: Vec<&str> = found.iter().map(|p| p.pointer.as_str()).collect();
    assert_eq!(
        pointers,
        ["/spec/status", "/spec/timing/samples", "/spec/timing/latencyNs/stddev", "/spec/observedAt"],
        "{found:#?}"
    );
    assert!(found[0].message.contains("must be one of \"passed\""));
    assert!(found[1].message.contains("must be greater than 0"));
    assert!(found[2].message.starts_with("unknown field \"stddev\""));
    assert!(found[3].message.contains("UTC timestamp"), "{}", found[3]);
}

#[test]
fn missing_required_fields_are_named() {
    let found = problems(
        "apiVersion: kernelindex.dev/v1alpha1\nkind: BenchmarkRun\nmetadata: {name: x}\nspec: {status: passed}\n",
    );
    let pointers: Vec<&str> = found.iter().map(|p| p.pointer.as_str()).collect();
    for missing in [
        "/spec/implementationDigest",
        "/spec/workloadDigest",
        "/spec/protocolDigest",
        "/spec/environmentDigest",
        "/spec/observedAt",
    ] {
        assert!(pointers.contains(&missing), "{missing} in {pointers:?}");
    }
    assert!(found.iter().all(|p| p.message == "required field is missing"));
}

#[test]
fn wrong_api_version_and_unknown_kind_are_refused() {
    let text = example("model-revision.yaml").replace("kernelindex.dev/v1alpha1", "kernelindex.dev/v2");
    let found = problems(&text);
    assert_eq!(found[0].pointer, "/apiVersion");
    let found = problems("apiVersion: kernelindex.dev/v1alpha1\nkind: Kernel\nmetadata: {name: x}\nspec: {}\n");
    assert_eq!(found[0].pointer, "/kind");
    assert!(found[0].message.contains("unknown kind \"Kernel\""));
}

#[test]
fn binary_garbage_and_empty_input_are_refused_without_panic() {
    let found = problems("");
    assert!(found[0].message.contains("no manifest"), "{}", found[0]);
    let found = problems("# only a comment\n");
    assert!(found[0].message.contains("no manifest"));
    let found = parse_manifests(&[0xff, 0xfe, 0x00, 0x9c, 0x80]).unwrap_err();
    assert!(found[0].message.contains("not valid UTF-8"), "{}", found[0]);
    // Deterministic pseudo-random bytes and text: any outcome but a panic is acceptable, and a
    // refusal must carry a message.
    let mut state: u64 = 0x9e3779b97f4a7c15;
    for round in 0..2000 {
        let len = (round * 7) % 300;
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let b = (state >> 24) as u8;
                // Half the rounds stay within YAML's punctuation to reach deeper parser states.
                const YAML_BYTES: &[u8] = b"{}[]:,-?&*!|>'\"%@` \n\tab1.";
                if round % 2 == 0 { YAML_BYTES[b as usize % YAML_BYTES.len()] } else { b }
            })
            .collect();
        if let Err(found) = parse_manifests(&bytes) {
            assert!(found.iter().all(|p| !p.message.is_empty()));
        }
    }
    // A scalar or a list is not a manifest.
    assert!(problems("42\n")[0].message.contains("must be a mapping"));
    assert!(problems("- a\n- b\n")[0].message.contains("must be a mapping"));
}

#[test]
fn syntax_errors_name_line_and_column() {
    let found = problems("apiVersion: kernelindex.dev/v1alpha1\nkind: [unclosed\nspec: x\n");
    assert_eq!(found.len(), 1);
    assert!(found[0].message.starts_with("YAML syntax error"), "{}", found[0]);
    assert!(found[0].location.is_some_and(|l| l.line >= 2), "{:?}", found[0].location);
}

#[test]
fn aliases_are_counted_and_bombs_defused() {
    let within = format!("a: &x 1\nlist: [{}]\n", vec!["*x"; MAX_ALIASES].join(", "));
    assert_eq!(first_value(&within)["list"].as_array().unwrap().len(), MAX_ALIASES);
    let over = format!("a: &x 1\nlist: [{}]\n", vec!["*x"; MAX_ALIASES + 1].join(", "));
    let found = parse_documents(over.as_bytes()).unwrap_err();
    assert!(found[0].message.contains(&format!("more than {MAX_ALIASES} aliases")), "{}", found[0]);
    // Nine aliases per level, nine levels: 81 aliases describing 9^9 nodes.
    let mut bomb = String::from("l0: &l0 [x, x, x, x, x, x, x, x, x]\n");
    for level in 1..=9 {
        bomb.push_str(&format!("l{level}: &l{level} [{}]\n", vec![format!("*l{}", level - 1); 9].join(", ")));
    }
    let found = parse_documents(bomb.as_bytes()).unwrap_err();
    assert!(found[0].message.contains("expands to more than"), "{}", found[0]);
}

#[test]
fn deep_nesting_is_refused_not_a_stack_overflow() {
    // Flow collections: the YAML scanner's own limit answers first.
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let found = parse_documents(deep.as_bytes()).unwrap_err();
    assert!(found[0].message.contains("recursion limit"), "{}", found[0]);
    // Block collections: ours.
    let deep = format!("{}x\n", "- ".repeat(10_000));
    let found = parse_documents(deep.as_bytes()).unwrap_err();
    assert!(found[0].message.contains("nesting deeper than 64 levels"), "{}", found[0]);
    let within = format!("{}x\n", "- ".repeat(60));
    assert!(parse_documents(within.as_bytes()).is_ok());
    // Aliases of aliases, each adding 30 levels: the expanded depth is what counts.
    let mut chain = format!("a0: &a0 {}x{}\n", "[".repeat(30), "]".repeat(30));
    for i in 1..10 {
        chain.push_str(&format!("a{i}: &a{i} {}*a{}{}\n", "[".repeat(30), i - 1, "]".repeat(30)));
    }
    let found = parse_documents(chain.as_bytes()).unwrap_err();
    assert!(found[0].message.contains("alias nests the document deeper than 64 levels"), "{}", found[0]);
}

#[test]
fn duplicate_keys_are_found_at_every_depth_and_in_json() {
    let found = parse_documents(b"a: 1\nb:\n  c: 1\n  c: 2\na: 3\n").unwrap_err();
    let pointers: Vec<&str> = found.iter().map(|p| p.pointer.as_str()).collect();
    assert_eq!(pointers, ["/b/c", "/a"]);
    let found = parse_documents(br#"{"kind": "OperationSpec", "kind": "WorkloadCase"}"#).unwrap_err();
    assert_eq!(found[0].pointer, "/kind");
}

#[test]
fn yaml_1_2_core_schema_scalars() {
    let v = first_value(
        "a: yes\nb: no\nc: on\nd: off\ne: 0o17\nf: 0x1F\ng: 1_000\nh: 2026-08-01T12:00:00Z\ni: ~\nj: True\nk: .5\nl: 1e3\nm: '1'\nn: 017\no: -0\n",
    );
    assert_eq!(
        v,
        json!({"a": "yes", "b": "no", "c": "on", "d": "off", "e": 15, "f": 31, "g": "1_000", "h": "2026-08-01T12:00:00Z",
               "i": null, "j": true, "k": 0.5, "l": 1000.0, "m": "1", "n": 17, "o": 0})
    );
    for bad in ["x: .nan\n", "x: -.inf\n", "x: 1e999\n", "x: 99999999999999999999999\n", "x: !!python/object foo\n"] {
        let found = parse_documents(bad.as_bytes()).unwrap_err();
        assert_eq!(found[0].pointer, "/x", "{bad}: {found:?}");
    }
}

#[test]
fn durations_with_units_become_nanoseconds() {
    use ki_model::normalize::duration_to_nanoseconds as ns;
    assert_eq!(ns("0.008 ms"), Ok(8_000));
    assert_eq!(ns("5 us"), Ok(5_000));
    assert_eq!(ns("5µs"), Ok(5_000));
    assert_eq!(ns("1 s"), Ok(1_000_000_000));
    assert_eq!(ns("8120 ns"), Ok(8_120));
    assert_eq!(ns("1.500000000000 s"), Ok(1_500_000_000));
    assert!(ns("0.0000005 ms").unwrap_err().contains("not a whole number"));
    assert!(ns("1.5 ns").unwrap_err().contains("not a whole number"));
    assert!(ns("9007199254740992 ns").unwrap_err().contains("exceeds"));
    assert!(ns("99999999999999999999999999 s").unwrap_err().contains("exceeds"));
    assert!(ns("5 min").is_err());

    // In a manifest: a protocol's warmupDuration and every latency statistic.
    let text = example("benchmark-run.yaml")
        .replace("median: 8120", "median: 8.12 us")
        .replace("confidence95: [8095, 8151]", "confidence95: [\"8.095 us\", 0.008151 ms]");
    let m = parse_manifests(text.as_bytes()).unwrap().remove(0);
    let plain = parse_manifests(example("benchmark-run.yaml").as_bytes()).unwrap().remove(0);
    assert_eq!(m.value["spec"]["timing"]["latencyNs"]["median"], 8120);
    assert_eq!(m.value["spec"]["timing"]["latencyNs"]["confidence95"], json!([8095, 8151]));
    assert_eq!(m.digest, plain.digest, "a duration digests as its nanosecond count");
    let text = example("benchmark-protocol.yaml")
        .replace("warmupIterations: 50", "warmupIterations: 50\n    warmupDuration: 25 ms");
    let m = parse_manifests(text.as_bytes()).unwrap().remove(0);
    assert_eq!(m.value["spec"]["measurement"]["warmupDuration"], 25_000_000);
    // A confidence interval is a pair.
    let text = example("benchmark-run.yaml").replace("confidence95: [8095, 8151]", "confidence95: [8095]");
    assert!(problems(&text)[0].message.contains("exactly 2 items"));
}

#[test]
fn set_like_lists_are_sorted_and_deduplicated() {
    let text = example("implementation-revision.yaml").replace("dtypes: [bf16]", "dtypes: [fp16, bf16, fp16]");
    let m = parse_manifests(text.as_bytes()).unwrap().remove(0);
    assert_eq!(m.value["spec"]["support"]["dtypes"], json!(["bf16", "fp16"]));
    let reordered = example("implementation-revision.yaml").replace("dtypes: [bf16]", "dtypes: [bf16, fp16]");
    assert_eq!(parse_manifests(reordered.as_bytes()).unwrap()[0].digest, m.digest);
    // Ordered lists stay as written.
    let stack = parse_manifests(example("serving-stack-revision.yaml").as_bytes()).unwrap().remove(0);
    assert_eq!(stack.value["spec"]["backends"], json!(["pytorch", "cuda"]));
}

#[test]
fn float_spelling_of_an_integer_is_accepted_and_digests_the_same() {
    let text = example("model-revision.yaml").replace("contextLength: 32768", "contextLength: 32768.0");
    let plain = parse_manifests(example("model-revision.yaml").as_bytes()).unwrap().remove(0);
    let m = parse_manifests(text.as_bytes()).unwrap().remove(0);
    assert_eq!(m.digest, plain.digest);
    let text = example("model-revision.yaml").replace("contextLength: 32768", "contextLength: 32768.5");
    assert_eq!(problems(&text)[0].pointer, "/spec/contextLength");
}

#[test]
fn a_file_of_many_empty_documents_is_one_problem() {
    let text = "---\n".repeat(200_000);
    let found = problems(&text);
    assert_eq!(found.len(), 1, "{} problems for one file of empty documents", found.len());
    assert!(found[0].message.contains("200000 empty documents"), "{}", found[0]);
    // An empty document beside a valid manifest is still one problem, named.
    let mixed = format!("{}\n---\nnull\n---\nnull\n", example("operation-spec.yaml"));
    let found = problems(&mixed);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].message.contains("2 empty documents"), "{}", found[0]);
}
