//! The page-table synthesizer's length rules (crates/runner/src/materialize.rs docs): every rule
//! honours the axes exactly, is seeded, covers the edge cases, and `realistic` is the real capture
//! in `fixtures/real-decode-capture/` scaled to the axes.
use std::path::PathBuf;

use ki_runner::materialize::{
    CAPTURE_DECODE_STEPS, CAPTURE_LENGTHS, LengthRule, PageTable, SplitMix64, apportion, sequence_lengths,
    synthesize_page_table,
};
use ki_runner::tensor::TensorSet;

fn capture() -> TensorSet {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(
        "../../fixtures/real-decode-capture/blob/workloads/batch_gqa_paged_decode_h32_kv8_d128_ps1/decode_paged_004a271b3a4749878102ce6fdc7e49e5.safetensors",
    );
    TensorSet::read(&path).unwrap()
}

fn lengths_of(table: &PageTable) -> Vec<usize> {
    table.kv_indptr.windows(2).map(|w| (w[1] - w[0]) as usize).collect()
}

#[test]
fn the_capture_table_is_the_fixture() {
    let capture = capture();
    let indptr = capture.get("kv_indptr").unwrap().to_i32().unwrap();
    let indices = capture.get("kv_indices").unwrap().to_i32().unwrap();
    let lengths: Vec<u32> = indptr.windows(2).map(|w| (w[1] - w[0]) as u32).collect();
    assert_eq!(lengths, CAPTURE_LENGTHS.to_vec());
    assert_eq!(lengths.iter().sum::<u32>(), 51_670);
    // Its layout, which the non-uniform rules copy: one page every sequence starts with, and the
    // last CAPTURE_DECODE_STEPS pages of each written one per step, the 64 sequences side by side.
    for b in 0..64 {
        let own = &indices[indptr[b] as usize..indptr[b + 1] as usize];
        assert_eq!(own[0], 1, "sequence {b} starts with the shared page");
        let decode = &own[own.len() - CAPTURE_DECODE_STEPS as usize..];
        assert!(decode.windows(2).all(|w| w[1] - w[0] == 64), "sequence {b}: decode pages 64 apart");
    }
}

#[test]
fn names_parse_and_print() {
    for rule in LengthRule::ALL {
        assert_eq!(rule.name().parse::<LengthRule>().unwrap(), rule);
        assert_eq!(rule.to_string(), rule.name());
    }
    assert_eq!(LengthRule::default(), LengthRule::Realistic);
    let err = "skewed".parse::<LengthRule>().unwrap_err();
    assert!(err.0.contains("unknown length rule `skewed`") && err.0.contains("realistic"), "{}", err.0);
}

#[test]
fn apportioning_is_exact_and_fills_every_sequence() {
    assert_eq!(apportion(&[1.0, 1.0, 1.0], 10), vec![4, 3, 3]); // a tie goes to the lower position
    assert_eq!(apportion(&[3.0, 1.0], 8), vec![6, 2]);
    assert_eq!(apportion(&[1000.0, 1.0, 1.0], 3), vec![1, 1, 1]); // at least one page each
    assert_eq!(apportion(&[1.0, 5.0, 2.0], 2), vec![0, 1, 1]); // fewer pages than sequences
    assert_eq!(apportion(&[2.0], 0), vec![0]);
    assert!(apportion(&[], 5).is_empty());
    let weights: Vec<f64> = (1..=97).map(|i| (i as f64).sqrt() * 0.37).collect();
    for total in [0, 1, 96, 97, 98, 1000, 123_457] {
        let shares = apportion(&weights, total);
        assert_eq!(shares.iter().sum::<usize>(), total);
        if total >= weights.len() {
            assert!(shares.iter().all(|&s| s >= 1), "{total}");
        }
    }
}

/// Every rule on axes from batch 1 to batch 300, empty batches, fewer pages than sequences, and
/// page size 64: exact sums, ids in range, and the same table for the same seed.
#[test]
fn every_rule_honours_the_axes_exactly() {
    let cases: [(usize, usize, usize, usize); 14] = [
        (1, 8, 7, 1),
        (1, 600, 546, 1),
        (1, 4, 0, 1),
        (3, 5, 0, 1),
        (5, 9, 3, 1),
        (16, 16, 16, 1),
        (16, 1070, 1020, 1),
        (16, 24_000, 23_079, 1),
        (64, 61_600, 61_519, 1),
        (64, 51_670, 51_670, 1),
        (300, 12_500, 12_000, 1),
        (5, 40, 23, 64),
        (4, 10, 2, 64),
        (16, 300, 290, 64),
    ];
    for rule in LengthRule::ALL {
        for (batch, num_pages, total, page_size) in cases {
            let label = format!("{rule} batch {batch} pages {num_pages} entries {total} ps {page_size}");
            let table = synthesize_page_table(rule, batch, num_pages, total, page_size, 11).unwrap();
            assert_eq!(table.kv_indptr.len(), batch + 1, "{label}");
            assert_eq!(table.kv_indptr[0], 0, "{label}");
            assert!(table.kv_indptr.windows(2).all(|w| w[0] <= w[1]), "{label}");
            assert_eq!(*table.kv_indptr.last().unwrap() as usize, total, "{label}");
            assert_eq!(table.kv_indices.len(), total, "{label}");
            assert!(table.kv_indices.iter().all(|&p| p >= 0 && (p as usize) < num_pages), "{label}");
            let lengths = lengths_of(&table);
            if total >= batch {
                assert!(lengths.iter().all(|&l| l >= 1), "{label}: {lengths:?}");
            } else {
                assert!(lengths.iter().filter(|&&l| l > 0).count() <= total, "{label}");
            }
            for (b, &l) in lengths.iter().enumerate() {
                let last = table.kv_last_page_len[b] as usize;
                if l == 0 {
                    assert_eq!(last, 0, "{label}");
                } else {
                    assert!((1..=page_size).contains(&last), "{label}");
                }
            }
            if batch == 1 {
                assert_eq!(lengths, vec![total], "{label}: one sequence holds everything");
            }
            assert_eq!(synthesize_page_table(rule, batch, num_pages, total, page_size, 11).unwrap(), table, "{label}");
            if total > batch + 4 && batch > 1 {
                let other = synthesize_page_table(rule, batch, num_pages, total, page_size, 12).unwrap();
                assert_ne!(other, table, "{label}: another seed, another table");
            }
        }
    }
}

#[test]
fn uniform_is_the_even_split_with_distinct_shuffled_pages() {
    let table = synthesize_page_table(LengthRule::Uniform, 16, 1070, 1020, 1, 3).unwrap();
    let lengths = lengths_of(&table);
    assert_eq!(&lengths[..12], &[64; 12]);
    assert_eq!(&lengths[12..], &[63; 4]);
    let mut ids = table.kv_indices.clone();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 1020);
    let err = synthesize_page_table(LengthRule::Uniform, 2, 5, 6, 1, 0).unwrap_err();
    assert!(err.0.contains("num_kv_indices 6 > num_pages 5"), "{}", err.0);
}

#[test]
fn realistic_lengths_are_the_capture_scaled_to_the_axes() {
    // Batch 64 with the capture's own total: its lengths exactly, in another order.
    let table = synthesize_page_table(LengthRule::Realistic, 64, 60_000, 51_670, 1, 5).unwrap();
    let mut lengths: Vec<u32> = lengths_of(&table).into_iter().map(|l| l as u32).collect();
    assert_ne!(lengths, CAPTURE_LENGTHS.to_vec(), "shuffled over the positions");
    lengths.sort_unstable();
    let mut capture = CAPTURE_LENGTHS.to_vec();
    capture.sort_unstable();
    assert_eq!(lengths, capture);
    // Other batches span the same shape: the capture runs from 0.49 to 3.79 times its mean.
    for (batch, total, seed) in [(16, 15_463, 1), (16, 1020, 2), (64, 28_815, 3), (128, 524_288, 4), (1000, 900_000, 5)]
    {
        let mut rng = SplitMix64::new(seed);
        let lengths = sequence_lengths(LengthRule::Realistic, batch, total, &mut rng);
        assert_eq!(lengths.iter().sum::<usize>(), total);
        let mean = total as f64 / batch as f64;
        let max = *lengths.iter().max().unwrap() as f64 / mean;
        let min = *lengths.iter().min().unwrap() as f64 / mean;
        assert!((2.9..=3.9).contains(&max), "batch {batch}: longest {max:.2} x mean");
        assert!((0.45..=0.56).contains(&min), "batch {batch}: shortest {min:.2} x mean");
        // Stratified: half the sequences are at most 0.53 of the mean, as in the capture.
        let mut sorted = lengths.clone();
        sorted.sort_unstable();
        let median = sorted[batch / 2] as f64 / mean;
        assert!((0.49..=0.6).contains(&median), "batch {batch}: median {median:.2} x mean");
    }
}

#[test]
fn serving_layout_shares_a_first_page_then_prompt_runs_then_decode_steps() {
    // Three sequences of three pages: D = round(393·64/51,670 · 9/3) = 1 decode step.
    let table = synthesize_page_table(LengthRule::Tail, 3, 7, 9, 1, 1).unwrap();
    assert_eq!(table.kv_indptr, vec![0, 3, 6, 9]);
    assert_eq!(table.kv_indices, vec![0, 1, 4, 0, 2, 5, 0, 3, 6]);
    // One page fewer than the layout needs is refused by name.
    let err = synthesize_page_table(LengthRule::Tail, 3, 6, 9, 1, 1).unwrap_err();
    assert!(err.0.contains("uses 7 pages, more than num_pages 6"), "{}", err.0);
    // The capture's own shape: 393 decode steps, the batch side by side at each step.
    let table = synthesize_page_table(LengthRule::Realistic, 64, 51_670, 51_670, 1, 9).unwrap();
    let lengths = lengths_of(&table);
    let first = table.kv_indices[0];
    for (b, &length) in lengths.iter().enumerate() {
        let own = &table.kv_indices[table.kv_indptr[b] as usize..table.kv_indptr[b + 1] as usize];
        assert_eq!(own[0], first, "sequence {b} starts with the shared page");
        let decode = &own[own.len() - CAPTURE_DECODE_STEPS as usize..];
        assert!(decode.windows(2).all(|w| w[1] - w[0] == 64), "sequence {b}");
        let prompt = &own[1..own.len() - CAPTURE_DECODE_STEPS as usize];
        assert!(prompt.windows(2).all(|w| w[1] - w[0] == 1), "sequence {b}: the prompt is one run");
        assert_eq!(prompt.len(), length - 1 - CAPTURE_DECODE_STEPS as usize);
    }
    // Every id but the shared one is used once.
    let mut ids = table.kv_indices.clone();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 51_670 - 63);
}

#[test]
fn lognormal_weights_have_sigma_1_2() {
    let mut rng = SplitMix64::new(77);
    let batch = 8192;
    let lengths = sequence_lengths(LengthRule::Lognormal, batch, batch * 10_000, &mut rng);
    assert_eq!(lengths.iter().sum::<usize>(), batch * 10_000);
    let logs: Vec<f64> = lengths.iter().map(|&l| (l as f64).ln()).collect();
    let mean = logs.iter().sum::<f64>() / batch as f64;
    let sigma = (logs.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / batch as f64).sqrt();
    assert!((sigma - 1.2).abs() < 0.05, "sigma {sigma}");
}

#[test]
fn tail_gives_one_sequence_a_third() {
    for (batch, total) in [(16, 15_463), (64, 61_519), (128, 524_288), (2, 90), (3, 3)] {
        let mut rng = SplitMix64::new(batch as u64);
        let lengths = sequence_lengths(LengthRule::Tail, batch, total, &mut rng);
        assert_eq!(lengths.iter().sum::<usize>(), total);
        let third = (total as f64 / 3.0).round() as usize;
        let long = lengths.iter().position(|&l| l == third.max(1)).expect("one sequence holds a third");
        let others: Vec<usize> = lengths.iter().enumerate().filter(|&(b, _)| b != long).map(|(_, &l)| l).collect();
        let (lo, hi) = (others.iter().min().unwrap(), others.iter().max().unwrap());
        assert!(hi - lo <= 1, "batch {batch}: the rest split evenly, {lo}..{hi}");
    }
    // The position is drawn: not always the first sequence.
    let positions: std::collections::BTreeSet<usize> = (0..20)
        .map(|seed| {
            let table = synthesize_page_table(LengthRule::Tail, 16, 20_000, 15_463, 1, seed).unwrap();
            let lengths = lengths_of(&table);
            lengths.iter().position(|&l| l == 5154).unwrap()
        })
        .collect();
    assert!(positions.len() > 5, "{positions:?}");
}

#[test]
fn a_batch_of_none_is_refused_only_with_pages() {
    for rule in LengthRule::ALL {
        let empty = synthesize_page_table(rule, 0, 10, 0, 1, 1).unwrap();
        assert_eq!(empty.kv_indptr, vec![0]);
        let err = synthesize_page_table(rule, 0, 10, 3, 1, 1).unwrap_err();
        assert!(err.0.contains("batch_size 0"), "{}", err.0);
    }
}
