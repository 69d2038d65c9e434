//! Resolve as forgiving as search (issue 34), on the bundled catalog (the public export and our
//! own H200 runs): GPUs, operations, axes and dtypes as people write them, read with the
//! index's lexicon, and the nearest measured cases on either side of a case never measured.

use std::path::PathBuf;
use std::sync::OnceLock;

use ki_ranking::understand::Lexicon;
use ki_ranking::{CatalogRows, Index, Instant, ResolveMode, ResolveRequest, Side};
use serde_json::json;

const KV4: &str = "gqa_paged_decode_h32_kv4_d128_ps1";

fn index() -> &'static (Index, Lexicon) {
    static INDEX: OnceLock<(Index, Lexicon)> = OnceLock::new();
    INDEX.get_or_init(|| {
        // As the bundled import takes them: the rows both files hold (the operation, its workloads), once.
        let mut rows = CatalogRows::new();
        let mut seen = std::collections::HashSet::new();
        for file in ["catalog-2026-08-16-0022af0b.jsonl.zst", "kernelindex-verified-h200-2026-11-30.jsonl.zst"] {
            let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data").join(file);
            for line in ki_model::export::read_export(&path).expect("the bundled files read") {
                let id = line
                    .row
                    .get("id")
                    .map(|id| id.to_string())
                    .unwrap_or_else(|| serde_json::to_string(&line.row).unwrap());
                if seen.insert((line.table.clone(), id)) {
                    rows.push(&line.table, line.row, Some(line.line as u64));
                }
            }
        }
        let index = Index::from_rows(&rows).expect("the bundled catalog indexes");
        let lexicon = index.lexicon();
        (index, lexicon)
    })
}

fn now() -> Instant {
    Instant::parse("2026-12-05T00:00:00Z").unwrap()
}

fn request(operation: &str, hardware: Option<&str>, axes: &[(&str, i64)]) -> ResolveRequest {
    ResolveRequest {
        operation: operation.into(),
        hardware: hardware.map(str::to_string),
        axes: axes.iter().map(|(k, v)| (k.to_string(), json!(v))).collect(),
        ..Default::default()
    }
}

#[test]
fn gpu_names_as_people_write_them_are_the_gpus_the_runs_name() {
    let (index, lexicon) = index();
    for (typed, gpu) in [
        ("H200", "NVIDIA H200"),
        ("h200", "NVIDIA H200"),
        ("nvidia h200", "NVIDIA H200"),
        ("H100 SXM", "NVIDIA H100"),
        ("h100 80gb hbm3", "NVIDIA H100"),
        ("mi300x", "AMD Instinct MI300X"),
    ] {
        let (read, read_as) = index.read_request(&request(KV4, Some(typed), &[]), lexicon);
        assert_eq!(read.hardware.as_deref(), Some(gpu), "{typed}");
        assert_eq!(read_as.len(), 1, "{typed}: {read_as:?}");
        assert_eq!((read_as[0].field.as_str(), read_as[0].given.as_str()), ("hardware", typed));
    }
    // The exact name is not "read as" anything, and a GPU the index never saw stays as written.
    let (read, read_as) = index.read_request(&request(KV4, Some("NVIDIA H200"), &[]), lexicon);
    assert_eq!((read.hardware.as_deref(), read_as.len()), (Some("NVIDIA H200"), 0));
    let answer = index.resolve_read_at(&request(KV4, Some("RTX 9999"), &[("batch_size", 16)]), lexicon, now());
    assert_eq!(answer.mode, ResolveMode::None);
    assert!(answer.notes.iter().any(|n| n == "This case was never measured on RTX 9999."), "{:?}", answer.notes);
    assert!(
        answer.notes.iter().any(|n| n.starts_with("It was measured on") && n.contains("NVIDIA H200")),
        "{:?}",
        answer.notes
    );

    // `H200` answers what `NVIDIA H200` answers.
    let typed = index.resolve_read_at(&request(KV4, Some("H200"), &[("batch_size", 16)]), lexicon, now());
    let exact = index.resolve_read_at(&request(KV4, Some("NVIDIA H200"), &[("batch_size", 16)]), lexicon, now());
    let keys = |a: &ki_ranking::ResolveResponse| a.cohorts.iter().map(|c| c.comparison_key.clone()).collect::<Vec<_>>();
    assert!(!keys(&exact).is_empty());
    assert_eq!(keys(&typed), keys(&exact));
    assert_eq!(typed.request.hardware.as_deref(), Some("NVIDIA H200"), "the answer's request is what was answered");
}

#[test]
fn operation_words_name_the_most_run_operation_measured_on_the_gpu() {
    let (index, lexicon) = index();
    let (read, read_as) = index.read_request(&request("gqa paged decode", Some("h200"), &[("batch", 16)]), lexicon);
    assert!(read.operation.starts_with("gqa_paged_decode_h32_kv"), "{}", read.operation);
    let operation = read_as.iter().find(|r| r.field == "operation").expect("the operation is read");
    assert_eq!(operation.given, "gqa paged decode");
    let note = operation.note.as_deref().expect("other operations match");
    assert!(note.contains("was measured on NVIDIA H200") && note.contains("Others: gqa_paged_decode"), "{note}");
    // `batch` is the operation's own `batch_size`.
    assert_eq!(read.axes.get("batch_size"), Some(&json!(16)));
    assert!(read_as.iter().any(|r| r.field == "axis" && r.given == "batch" && r.read == "batch_size"));
    let answer = index.resolve_read_at(&request("gqa paged decode", Some("h200"), &[("batch", 16)]), lexicon, now());
    assert!(!answer.cohorts.is_empty(), "{:?}", answer.notes);
    assert!(answer.cohorts.iter().all(|c| c.hardware.as_deref() == Some("NVIDIA H200")));
    assert!(answer.cohorts.iter().all(|c| c.axes["batch_size"] == json!(16)));

    // A GPU in the words joins the request; a common name stands for the operation's own.
    let (read, _) = index.read_request(&request("gqa paged decode h200", None, &[]), lexicon);
    assert_eq!(read.hardware.as_deref(), Some("NVIDIA H200"));
    let (read, read_as) = index.read_request(&request("rms norm", None, &[]), lexicon);
    let name = read.operation.to_lowercase();
    assert!(name.contains("rmsnorm") || name.contains("rms_norm"), "{}: {read_as:?}", read.operation);
    // Words that name no operation are left for resolve to say so.
    let answer = index.resolve_read_at(&request("zzqx frobnicate", None, &[]), lexicon, now());
    assert!(answer.operation.is_none() && answer.read_as.is_empty());
    assert_eq!(answer.mode, ResolveMode::None);
}

#[test]
fn a_case_never_measured_answers_the_nearest_cases_on_either_side() {
    let (index, lexicon) = index();
    // Batch 32 on the H200: 16 and 64 were measured; each side differs in batch_size alone.
    let answer = index.resolve_read_at(&request(KV4, Some("H200"), &[("batch_size", 32)]), lexicon, now());
    assert_eq!(answer.mode, ResolveMode::Browse);
    let sides: Vec<(Side, serde_json::Value)> = answer.nearest.iter().map(|n| (n.side, n.measured.clone())).collect();
    assert_eq!(sides, [(Side::Below, json!(16)), (Side::Above, json!(64))]);
    for case in &answer.nearest {
        assert_eq!(case.differs.len(), 1);
        assert_eq!((case.differs[0].axis.as_str(), &case.differs[0].asked), ("batch_size", &json!(32)));
        assert!(!case.cohorts.is_empty());
    }

    // Batch 32 with 32,768 pages: no measured case differs in one axis only; the nearest
    // (64 × 33,167) and the nearest on the other side of batch (16 × 23,079) differ in both.
    let answer = index.resolve_read_at(
        &request(KV4, Some("H200"), &[("batch_size", 32), ("num_kv_indices", 32768)]),
        lexicon,
        now(),
    );
    assert_eq!(answer.mode, ResolveMode::Browse, "{:?}", answer.notes);
    assert_eq!(answer.nearest.len(), 2, "{:?}", answer.nearest.iter().map(|n| &n.differs).collect::<Vec<_>>());
    let below = &answer.nearest[0];
    let above = &answer.nearest[1];
    assert_eq!((below.side, above.side), (Side::Below, Side::Above));
    assert_eq!((below.axis.as_str(), above.axis.as_str()), ("batch_size", "batch_size"));
    let measured = |case: &ki_ranking::NearestCase, axis: &str| {
        case.differs.iter().find(|d| d.axis == axis).map(|d| d.measured.clone())
    };
    assert_eq!(measured(below, "batch_size"), Some(json!(16)));
    assert_eq!(measured(below, "num_kv_indices"), Some(json!(23079)));
    assert_eq!(measured(above, "batch_size"), Some(json!(64)));
    assert_eq!(measured(above, "num_kv_indices"), Some(json!(33167)));
    for case in &answer.nearest {
        assert!(case.cohorts.iter().all(|c| c.hardware.as_deref() == Some("NVIDIA H200")));
    }

    // The search's lead takes the nearest of them by relative difference (the one below:
    // 0.5 + 0.30 against 1.0 + 0.01), naming both axes.
    let (_, lead) = index.resolve_lead(
        &request(KV4, Some("NVIDIA H200"), &[("batch_size", 32), ("num_kv_indices", 32768)]),
        None,
        10,
    );
    let differs: Vec<(&str, serde_json::Value)> =
        lead.differs.iter().map(|d| (d.axis.as_str(), d.measured.clone())).collect();
    assert_eq!(differs, [("batch_size", json!(16)), ("num_kv_indices", json!(23079))]);
}

#[test]
fn the_native_kernel_is_deployable_with_its_install_recipe() {
    let (index, _) = index();
    let native: Vec<&ki_ranking::rows::ImplementationRow> =
        index.implementations.iter().filter(|i| i.slug.starts_with("kernelindex-native")).collect();
    assert_eq!(native.len(), 2, "kv4 and kv8");
    for implementation in native {
        // The runner's recipe (`ki_kernels::GQA_PAGED_DECODE_INSTALL_RECIPE`): build from source, call from PyTorch.
        let recipe = implementation.install_command.as_deref().expect("an install recipe");
        assert!(recipe.starts_with("git clone https://github.com/SamMausberg/KernelIndex"), "{recipe}");
        assert!(
            recipe.contains("import ki_gqa_paged_decode") && recipe.contains("decode(q, k_cache, v_cache"),
            "{recipe}"
        );
        assert_eq!((implementation.install_kind.as_deref(), implementation.installable), (Some("source"), true));
    }
    // The H200 groups' #1 (the native kernel) is now its own best deployable.
    let answer = index.resolve(&request(KV4, Some("NVIDIA H200"), &[("batch_size", 16), ("num_kv_indices", 1020)]));
    let group = answer.cohorts.iter().find(|c| c.fastest[0].implementation.starts_with("kernelindex-native")).unwrap();
    assert!(group.fastest[0].deployable);
    assert_eq!(group.best_deployable.as_ref().map(|r| &r.run_id), Some(&group.fastest[0].run_id));
}
