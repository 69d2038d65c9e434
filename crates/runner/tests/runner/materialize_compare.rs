//! Materialization (determinism per seed, the page-table synthesizer, workload files), the
//! comparators and the statistics, on known inputs.
use std::collections::BTreeMap;
use std::path::PathBuf;

use ki_runner::compare::{Tolerance, compare_values, flashinfer_bench_eval, relative_l2_error, sol_execbench_eval};
use ki_runner::definition::Definition;
use ki_runner::materialize::{
    LengthRule, SplitMix64, WorkloadCase, materialize, read_workloads, standard_normal_f32, synthesize_page_table,
    trial_seed,
};
use ki_runner::stats::{bootstrap_median_ci95, median, quantile_sorted, summarize};
use ki_runner::tensor::TensorSet;

/// The FlashInfer-Bench samples in fixtures/ (their blob root: the blobs they name were never published).
fn samples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/flashinfer-trace-samples")
}

fn workloads_file() -> PathBuf {
    samples().join("flashinfer_trace/workloads/gqa_paged/gqa_paged_decode_h32_kv4_d128_ps1.jsonl")
}

#[test]
fn splitmix64_matches_its_published_sequence() {
    // First outputs of SplitMix64 seeded with 1234567 (the reference C implementation's test values).
    let mut rng = SplitMix64::new(1234567);
    let expected =
        [6457827717110365317u64, 3203168211198807973, 9817491932198370423, 4593380528125082431, 16408922859458223821];
    for e in expected {
        assert_eq!(rng.next_u64(), e);
    }
    assert_eq!(SplitMix64::draw_at(1234567, 4), expected[4]);
}

#[test]
fn normal_samples_have_the_standard_moments() {
    let values = standard_normal_f32(7, 1 << 20);
    let n = values.len() as f64;
    let mean = values.iter().map(|&v| v as f64).sum::<f64>() / n;
    let var = values.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / n;
    assert!(mean.abs() < 0.005, "mean {mean}");
    assert!((var - 1.0).abs() < 0.005, "variance {var}");
    let within_one = values.iter().filter(|v| v.abs() < 1.0).count() as f64 / n;
    assert!((within_one - 0.6827).abs() < 0.003, "P(|z|<1) = {within_one}");
}

#[test]
fn every_shared_workload_materializes_deterministically_and_honours_its_axes() {
    let definition = Definition::builtin("gqa_paged_decode_h32_kv4_d128_ps1").unwrap();
    let lines = read_workloads(&workloads_file()).unwrap();
    assert_eq!(lines.len(), 48);
    for line in &lines {
        let w = &line.workload;
        // Full materialization of the large caches is slow in a debug build: do the small ones in full,
        // the page tables of all.
        if w.axes["num_pages"] > 3000 {
            let t = synthesize_page_table(
                LengthRule::Uniform,
                w.axes["batch_size"] as usize,
                w.axes["num_pages"] as usize,
                w.axes["num_kv_indices"] as usize,
                1,
                5,
            )
            .unwrap();
            assert_eq!(*t.kv_indptr.last().unwrap() as i64, w.axes["num_kv_indices"]);
            let mut sorted = t.kv_indices.clone();
            sorted.sort();
            sorted.dedup();
            assert_eq!(sorted.len() as i64, w.axes["num_kv_indices"]);
            assert!(t.kv_indices.iter().all(|&p| (p as i64) < w.axes["num_pages"]));
            continue;
        }
        let inputs = materialize(&definition, w, 5, Some(&samples()), LengthRule::Uniform).unwrap();
        let indptr = inputs.get("kv_indptr").unwrap().to_i32().unwrap();
        let indices = inputs.get("kv_indices").unwrap().to_i32().unwrap();
        assert_eq!(indptr.len() as i64, w.axes["batch_size"] + 1);
        assert_eq!(*indptr.last().unwrap() as i64, w.axes["num_kv_indices"]);
        assert_eq!(indices.len() as i64, w.axes["num_kv_indices"]);
        let mut sorted = indices.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), indices.len(), "page ids are distinct");
        assert!(indices.iter().all(|&p| (p as i64) < w.axes["num_pages"]));
        assert_eq!(inputs.get("k_cache").unwrap().shape, vec![w.axes["num_pages"] as usize, 1, 4, 128]);
        assert_eq!(inputs.get("sm_scale").unwrap().shape, Vec::<usize>::new());
    }
    // Same seed, same bytes; another seed (or trial), other bytes.
    let w = &lines[32].workload;
    let a = materialize(&definition, w, 5, None, LengthRule::Realistic).unwrap();
    let b = materialize(&definition, w, 5, None, LengthRule::Realistic).unwrap();
    let c = materialize(&definition, w, trial_seed(5, 1), None, LengthRule::Realistic).unwrap();
    assert_eq!(a, b);
    assert_ne!(a.get("q"), c.get("q"));
    assert_ne!(a.get("kv_indices"), c.get("kv_indices"));
    // Round trip through safetensors keeps every bit.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("in.safetensors");
    a.write(&path).unwrap();
    assert_eq!(TensorSet::read(&path).unwrap(), a);
}

#[test]
fn page_table_synthesizer_page_size_64() {
    let table = synthesize_page_table(LengthRule::Uniform, 5, 40, 23, 64, 9).unwrap();
    assert_eq!(table.kv_indptr, vec![0, 5, 10, 15, 19, 23]);
    assert!(table.kv_last_page_len.iter().all(|&l| (1..=64).contains(&l)));
    let table = synthesize_page_table(LengthRule::Uniform, 4, 10, 2, 64, 9).unwrap();
    assert_eq!(table.kv_indptr, vec![0, 1, 2, 2, 2]);
    assert_eq!(&table.kv_last_page_len[2..], &[0, 0]);
    let err = synthesize_page_table(LengthRule::Uniform, 2, 5, 6, 1, 0).unwrap_err();
    assert!(err.0.contains("num_kv_indices 6 > num_pages 5"), "{}", err.0);
}

#[test]
fn workload_errors_name_the_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.jsonl");
    let good = std::fs::read_to_string(workloads_file()).unwrap();
    let first = good.lines().next().unwrap();
    std::fs::write(&path, format!("{first}\n{{\"definition\": 3}}\n")).unwrap();
    let err = read_workloads(&path).unwrap_err().0;
    assert!(err.contains("w.jsonl:2:"), "{err}");

    let definition = Definition::builtin("gqa_paged_decode_h32_kv4_d128_ps1").unwrap();
    let mut axes = BTreeMap::new();
    axes.insert("batch_size".to_string(), 2);
    axes.insert("num_pages".to_string(), 4);
    let err = WorkloadCase::from_axes(&definition, axes).unwrap_err().0;
    assert!(err.contains("num_kv_indices"), "{err}");
}

#[test]
fn comparators_on_known_values() {
    let tol = Tolerance::FLASHINFER_BENCH_DEFAULT;
    let reference = [1.0f32, 100.0, 0.0, f32::NEG_INFINITY];
    // Element 1 is off by 0.5 (abs 0.5 > atol, rel 0.005 <= rtol: passes flashinfer; sol allows 0.01+1.0).
    // Element 2 is off by 0.02 (abs > atol and rel huge: fails flashinfer; sol allows 0.01: fails).
    let out = [1.0f32, 100.5, 0.02, f32::NEG_INFINITY];
    let (passing, all) = flashinfer_bench_eval(&out, &reference, tol);
    assert_eq!((passing, all), (3, false));
    let (passing, all) = sol_execbench_eval(&out, &reference, tol);
    assert_eq!((passing, all), (3, false));
    let l2 = relative_l2_error(&out, &reference);
    let expected = ((0.5f64 * 0.5 + 0.02 * 0.02) / (1.0 + 100.0 * 100.0)).sqrt();
    assert!((l2 - expected).abs() < 1e-12, "{l2} vs {expected}");
    let report = compare_values("lse", &out, &reference, tol).unwrap();
    assert_eq!(report.max_abs_error, 0.5);
    assert!((report.max_rel_error - 0.02 / 1e-8).abs() / (0.02 / 1e-8) < 1e-6);
    assert_eq!(report.matched_ratio, 0.75);
    assert_eq!(report.non_finite_mismatches, 0);
    // A NaN, or -inf where the reference is finite, fails.
    let report = compare_values("o", &[f32::NAN, f32::NEG_INFINITY], &[1.0, 2.0], tol).unwrap();
    assert_eq!((report.non_finite_mismatches, report.matched_ratio, report.flashinfer_bench_pass), (2, 0.0, false));
    let report = compare_values("o", &[1.005, 2.0], &[1.0, 2.0], tol).unwrap();
    assert!(report.flashinfer_bench_pass && report.sol_execbench_pass);
    assert!(compare_values("o", &[1.0], &[1.0, 2.0], tol).is_err());
}

#[test]
fn the_worst_of_several_comparisons_counts_each_once() {
    let tol = Tolerance::FLASHINFER_BENCH_DEFAULT;
    let mut worst = compare_values("o", &[f32::NAN, 1.0], &[1.0, 1.0], tol).unwrap();
    let second = compare_values("o", &[1.0, 3.0], &[1.0, 1.0], tol).unwrap();
    worst.fold_worst(&second);
    assert_eq!(worst.non_finite_mismatches, 1);
    assert_eq!((worst.max_abs_error, worst.matched_ratio, worst.sol_execbench_matched_ratio), (2.0, 0.5, 0.5));
    assert!(!worst.flashinfer_bench_pass && !worst.sol_execbench_pass);
}

#[test]
fn statistics_on_known_samples() {
    assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
    assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
    assert_eq!(quantile_sorted(&[0.0, 10.0], 0.25), 2.5);
    // All samples equal: the interval collapses onto them.
    assert_eq!(bootstrap_median_ci95(&[5.0; 50], 500, 1), (5.0, 5.0));
    // 1..=601: median 301; the bootstrap interval of the median of a uniform sample of n = 601 has
    // a half-width near 1.96·(range/2)/√n·√(π/2)·... ≈ 30; check it brackets the median and is sane.
    let samples: Vec<f64> = (1..=601).map(f64::from).collect();
    let (low, high) = bootstrap_median_ci95(&samples, 2000, 3);
    assert!(low < 301.0 && high > 301.0 && low > 250.0 && high < 350.0, "({low}, {high})");
    assert_eq!(bootstrap_median_ci95(&samples, 2000, 3), (low, high), "deterministic");
    let s = summarize(&samples);
    assert_eq!((s.count, s.median, s.min, s.max, s.mean), (601, 301.0, 1.0, 601.0, 301.0));
    assert_eq!(s.p10, 61.0);
}
