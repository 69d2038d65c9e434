use super::*;
use ki_runner::materialize::{LengthRule, SplitMix64, sequence_lengths};

fn h32kv4(page_size: u32) -> GqaConfig {
    GqaConfig { num_qo_heads: 32, num_kv_heads: 4, head_dim: 128, page_size }
}

/// CTAs per SM by shared memory on the H200, as the driver reports them for the automatic
/// variants (4 × 2: 3, 5 × 2: 2, 8 × 3: 1).
fn occupancy(tuning: &Tuning) -> u32 {
    match tuning.warps_per_cta {
        4 => 3,
        5 => 2,
        _ => 1,
    }
}

/// The automatic plan on a 132-SM sm_90 device.
fn auto_plan(config: &GqaConfig, batch: u32, total: u32) -> LaunchPlan {
    let size = ProblemSize { batch_size: batch, num_pages: total.max(1), num_kv_indices: total };
    let tuning = automatic_tuning(config, &size, 132, MAX_CLUSTER, occupancy);
    plan_launch(config, &tuning, &size, 132, occupancy(&tuning), MAX_CLUSTER).unwrap()
}

#[test]
fn reads_every_definition_name_in_the_fixtures() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/flashinfer-trace-samples/flashinfer_trace/definitions/gqa_paged");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_str().unwrap().to_string();
        if !name.starts_with("gqa_paged_decode") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let config = GqaConfig::from_definition_name(&name).unwrap();
        // The name must agree with the definition's const axes.
        for (axis, value) in [
            ("num_qo_heads", config.num_qo_heads),
            ("num_kv_heads", config.num_kv_heads),
            ("head_dim", config.head_dim),
            ("page_size", config.page_size),
        ] {
            let needle = format!("\"{axis}\": {{\n      \"type\": \"const\",\n      \"value\": {value}");
            assert!(text.contains(&needle), "{name}: axis {axis} is not const {value}");
        }
        seen += 1;
    }
    assert_eq!(seen, 17, "the family has 17 definitions in fixtures/");
}

#[test]
fn rejects_bad_names_and_configs() {
    for bad in [
        "gqa_paged_decode_h32_kv4_d128",
        "gqa_paged_prefill_h32_kv4_d128_ps1",
        "gqa_paged_decode_h32_kv5_d128_ps1",
        "gqa_paged_decode_h32_kv4_d96_ps1",
        "gqa_paged_decode_hx_kv4_d128_ps1",
    ] {
        let err = GqaConfig::from_definition_name(bad).unwrap_err();
        assert!(matches!(err, KernelError::InvalidConfig(_)), "{bad}: {err}");
    }
    assert!(GqaConfig { num_qo_heads: 0, ..h32kv4(1) }.validate().is_err());
    assert!(Tuning { stages: 1, ..Tuning::default() }.validate().is_err());
    assert!(Tuning { warps_per_cta: 0, ..Tuning::default() }.validate().is_err());
    for schedule in [
        Schedule::Balanced { chunk_tokens: 0 },
        Schedule::Cluster { parts: 1, min_part_tokens: 16 },
        Schedule::Cluster { parts: MAX_CLUSTER + 1, min_part_tokens: 16 },
        Schedule::Cluster { parts: 4, min_part_tokens: 0 },
    ] {
        assert!(Tuning { schedule: Some(schedule), ..Tuning::default() }.validate().is_err(), "{schedule:?}");
    }
}

/// Lengths with empty and one-entry sequences, long and short ones.
fn mixed_lengths(rng: &mut SplitMix64, batch: usize) -> Vec<u64> {
    (0..batch)
        .map(|_| match rng.below(6) {
            0 => 0,
            1 => 1,
            2 => rng.below(40),
            3 => 40 + rng.below(400),
            4 => 400 + rng.below(4000),
            _ => 4000 + rng.below(40_000),
        })
        .collect()
}

#[test]
fn the_plan_covers_every_entry_once_largest_items_first() {
    let mut rng = SplitMix64::new(42);
    for round in 0..300 {
        let batch = [1, 2, 3, 16, 31, 32, 33, 64, 65, 300][round % 10];
        let entries = mixed_lengths(&mut rng, batch);
        let chunk = [1, 7, 16, 100, 512, 1024, 5000, u64::from(u32::MAX)][round % 8];
        let items = plan_items(&entries, chunk);
        let total: u64 = entries.iter().sum();
        // The host's bound on the item count, which sizes the grid and the records.
        assert!(items.len() as u64 <= batch as u64 + total / chunk, "round {round}");
        let mut covered = vec![0u64; batch];
        let mut seen_parts = vec![0u64; batch];
        for (i, item) in items.iter().enumerate() {
            let n = entries[item.sequence];
            assert!(item.first_entry <= item.end_entry && item.end_entry <= n);
            assert!(item.end_entry - item.first_entry <= chunk, "no item over a chunk");
            assert_eq!(item.record + item.part, i as u64, "a sequence's parts are consecutive items");
            assert_eq!(item.parts, items_of(n, chunk));
            assert_eq!(item.first_entry, covered[item.sequence], "parts in order, no gap");
            covered[item.sequence] = item.end_entry;
            seen_parts[item.sequence] += 1;
        }
        for b in 0..batch {
            assert_eq!(covered[b], entries[b], "round {round}: sequence {b} covered");
            assert_eq!(seen_parts[b], items_of(entries[b], chunk), "every sequence has its items, empty ones too");
        }
        // Longest first, by class: an item of a later class is at most half the largest of an
        // earlier one, up to rounding.
        let classes: Vec<usize> = items.iter().map(|it| class_of(entries[it.sequence], it.parts, chunk)).collect();
        assert!(classes.windows(2).all(|w| w[0] <= w[1]), "round {round}: classes in order");
    }
    // Edge cases: nothing to read, one sequence, chunk of one entry.
    assert_eq!(plan_items(&[0, 0, 0], 16).len(), 3);
    assert_eq!(plan_items(&[10], 1).len(), 10);
    assert_eq!(plan_items(&[10], 10).len(), 1);
    assert_eq!(plan_items(&[11], 10).iter().map(|i| i.end_entry - i.first_entry).collect::<Vec<_>>(), [5, 6]);
}

#[test]
fn plans_size_grid_records_and_shared_memory() {
    let balanced = |chunk_tokens| Tuning { schedule: Some(Schedule::Balanced { chunk_tokens }), ..Tuning::default() };
    let plan = |config: &GqaConfig, tuning: &Tuning, batch, total| {
        let size = ProblemSize { batch_size: batch, num_pages: total + 5, num_kv_indices: total };
        plan_launch(config, tuning, &size, 132, 3, 1).unwrap()
    };
    // 16 sequences, 5,000 entries, chunks of 100: at most 16 + 50 items, all four head tiles each.
    let p = plan(&h32kv4(1), &balanced(100), 16, 5000);
    assert_eq!((p.chunk_entries, p.items, p.grid, p.cluster), (100, 66, (264, 1, 1), 1));
    assert_eq!(p.partial_floats, 66 * 4 * (16 * 128 + 32));
    assert_eq!(p.counter_count, 64);
    // Over IDX_CACHE entries: no shared copy of kv_indices.
    assert!(!p.cache_indices);
    assert_eq!(p.shared_bytes, 4 * (2 * 2 * 16 * 256 + 2 * 64));
    // A short batch copies kv_indices into shared memory; chunks are pages at page size 64.
    let p = plan(&h32kv4(64), &balanced(256), 8, 100);
    assert_eq!(p.chunk_entries, 4);
    assert!(p.cache_indices);
    assert_eq!(p.shared_bytes, 4 * (2 * 2 * 16 * 256 + 2 * 64) + 400);
    // Whole sequences: no records at all.
    let p = plan(&h32kv4(1), &balanced(u32::MAX), 16, 1020);
    assert_eq!((p.items, p.partial_floats), (16, 0));
    // No sequence in more parts than the kernel's counter holds.
    let p = plan(&h32kv4(1), &balanced(1), 1, 100_000);
    assert_eq!(p.chunk_entries as u64, 100_000u64.div_ceil(MAX_PARTS_PER_SEQUENCE));
    // An empty batch still has one CTA row; batch 0 with entries is refused by name.
    assert_eq!(plan(&h32kv4(1), &Tuning::default(), 3, 0).items, 3);
    let err = plan_launch(
        &h32kv4(1),
        &Tuning::default(),
        &ProblemSize { batch_size: 0, num_pages: 5, num_kv_indices: 4 },
        132,
        3,
        1,
    )
    .unwrap_err();
    assert!(err.to_string().contains("batch_size 0"), "{err}");
    let too_many = ProblemSize { batch_size: 1, num_pages: 1 << 30, num_kv_indices: 1 << 26 };
    assert!(matches!(
        plan_launch(&h32kv4(64), &Tuning::default(), &too_many, 132, 3, 1),
        Err(KernelError::InvalidSize(_))
    ));
    let deep = Tuning { warps_per_cta: 16, stages: 8, ..Tuning::default() };
    assert!(matches!(
        plan_launch(&h32kv4(1), &deep, &ProblemSize { batch_size: 1, num_pages: 1, num_kv_indices: 1 }, 132, 3, 1),
        Err(KernelError::InvalidConfig(_))
    ));
    // Groups above 16 query heads take several query tiles per KV head.
    let wide = GqaConfig { num_qo_heads: 40, num_kv_heads: 1, head_dim: 64, page_size: 1 };
    assert_eq!(wide.head_tiles(), 3);
    assert_eq!(plan(&wide, &balanced(64), 2, 300).grid, ((2 + 4) * 3, 1, 1));
}

#[test]
fn on_sm90_a_batch_of_few_short_sequences_is_cut_into_clusters() {
    let config = h32kv4(1);
    let plan = |batch, total, schedule, max_cluster| {
        let tuning = Tuning { schedule, ..Tuning::default() };
        plan_launch(
            &config,
            &tuning,
            &ProblemSize { batch_size: batch, num_pages: total, num_kv_indices: total },
            132,
            3,
            max_cluster,
        )
    };
    // Batch 1 × 546 tokens: 4 parts of at least 128 tokens, one cluster per head tile, no records.
    let one = plan(1, 546, None, MAX_CLUSTER).unwrap();
    assert_eq!(one.schedule, Schedule::Cluster { parts: 4, min_part_tokens: CLUSTER_PART_TOKENS });
    assert_eq!((one.cluster, one.grid, one.partial_floats), (4, (1, 4, 4), 0));
    // Parts are at least 128 tokens: 141 tokens stay whole, in the balanced plan.
    assert_eq!(plan(1, 141, None, MAX_CLUSTER).unwrap().cluster, 1);
    // Clusters take at most a quarter of the SMs (33 CTAs): 8 sequences no longer fit two each.
    assert_eq!(
        plan(4, 4 * 546, None, MAX_CLUSTER).unwrap().schedule,
        Schedule::Cluster { parts: 2, min_part_tokens: 128 }
    );
    assert_eq!(plan(8, 8 * 546, None, MAX_CLUSTER).unwrap().cluster, 1);
    // A single long sequence wants more CTAs than a cluster has: the balanced plan.
    assert!(matches!(plan(1, 131_072, None, MAX_CLUSTER).unwrap().schedule, Schedule::Balanced { .. }));
    // Without clusters, the balanced plan.
    assert!(matches!(plan(1, 546, None, 1).unwrap().schedule, Schedule::Balanced { .. }));
    // An explicit cluster beyond the device's limit is refused by name.
    let cluster = Some(Schedule::Cluster { parts: 4, min_part_tokens: 16 });
    assert_eq!(plan(2, 100, cluster, MAX_CLUSTER).unwrap().grid, (2, 4, 4));
    let err = plan(2, 100, cluster, 1).unwrap_err();
    assert!(err.to_string().contains("a cluster of 4 CTAs"), "{err}");
}

#[test]
fn uniform_batches_stay_whole_where_whole_sequences_won_and_fill_the_gpu_where_they_did_not() {
    let kv4 = h32kv4(1);
    let kv8 = GqaConfig { num_kv_heads: 8, ..kv4 };
    // The seed (16 × 64 tokens) and the other short batch-16 workloads: whole (v7: parts lost
    // ~4 µs to their merge).
    for total in [1020, 2108, 5372, 8636] {
        let p = auto_plan(&kv4, 16, total);
        let chunk = p.chunk_entries as u64;
        assert!(chunk >= (total as u64).div_ceil(16), "16 x {total}: {p:?}");
    }
    // 16 × 966–1,442 run as 16 whole sequences of 8 warps × 3 stages (v7).
    for total in [15_463, 23_079] {
        let p = auto_plan(&kv4, 16, total);
        assert_eq!((p.warps_per_cta, p.stages), (8, 3));
        assert!(p.chunk_entries as u64 >= (total as u64).div_ceil(16), "16 x {total}: {p:?}");
    }
    // Batch 64 × 450–960: whole (v6).
    for total in [28_815, 61_519] {
        let p = auto_plan(&kv4, 64, total);
        assert!(p.chunk_entries as u64 >= (total as u64).div_ceil(64), "64 x {total}: {p:?}");
    }
    // 128 × 4,096: whole sequences at 5 warps, 1.94 waves (v8).
    let p = auto_plan(&kv4, 128, 128 * 4096);
    assert_eq!(p.warps_per_cta, 5);
    assert!(p.chunk_entries >= 4096);
    // 16 × 8,192: four to six parts per sequence (v8: 83.7 µs in parts of 2,048, 87.7 in parts
    // of 1,328, against 125.7 whole).
    let p = auto_plan(&kv4, 16, 16 * 8192);
    assert!((4..=6).contains(&items_of(8192, p.chunk_entries as u64)), "{p:?}");
    // 16 × 1,307 on kv8: 16 whole sequences are 128 CTAs; ~3 parts each fill the GPU as v6's
    // 392 CTAs of 432 tokens did (40.3 µs, against 46.5 µs in 256).
    let p = auto_plan(&kv8, 16, 20_911);
    let parts = items_of(1307, p.chunk_entries as u64);
    assert!((3..=4).contains(&parts), "{p:?}");
}

/// A model of one CTA's time in token-equivalents (NOTES.md, v9): a fixed start (three
/// dependent round trips) plus its tokens, plus a merge for the part that finishes a split
/// sequence.
fn item_cost(item: &PlannedItem, per_warp: u64) -> u64 {
    // One µs is ~19 tokens per warp at 4 warps × 2 stages (v7: 13,963 tokens in one CTA took
    // ~180 µs); the start is ~3 dependent round trips, the merge ~3.4 µs (v9 sweep).
    const START: u64 = 40;
    const MERGE: u64 = 65;
    START + (item.end_entry - item.first_entry) / per_warp + if item.parts > 1 { MERGE } else { 0 }
}

/// The plan's list-scheduled makespan for these lengths on `config`'s automatic plan.
fn modelled_makespan(config: &GqaConfig, entries: &[u64]) -> u64 {
    let total: u64 = entries.iter().sum();
    let size = ProblemSize { batch_size: entries.len() as u32, num_pages: total as u32, num_kv_indices: total as u32 };
    let tuning = automatic_tuning(config, &size, 132, 1, occupancy);
    let plan = plan_launch(config, &tuning, &size, 132, occupancy(&tuning), 1).unwrap();
    let slots = (occupancy(&tuning) * 132 / config.head_tiles()) as usize;
    let costs: Vec<u64> = plan_items(entries, plan.chunk_entries as u64)
        .iter()
        .map(|item| item_cost(item, plan.warps_per_cta as u64))
        .collect();
    list_schedule_makespan(&costs, slots)
}

/// Skewed batches cost the plan little more than even ones: on axes of the h32/kv4 workloads
/// (batch 16 and 64) and 128 × 4,096, lengths drawn as `realistic`, `lognormal` and `tail`, the
/// modelled makespan stays within 1.5× of the uniform batch's, or within ~6 µs of it (the short
/// batches, where a merge costs as much as the split saves and a long sequence stays whole);
/// v8.1's one CTA per sequence reached ~30× on `tail`.
#[test]
fn skewed_batches_are_balanced() {
    let config = h32kv4(1);
    let axes: Vec<(usize, usize)> = [
        (16, 1020),
        (16, 2108),
        (16, 5372),
        (16, 8636),
        (16, 15_463),
        (16, 23_079),
        (64, 28_815),
        (64, 44_047),
        (64, 61_519),
        (128, 524_288),
    ]
    .into();
    let mut worst = 0f64;
    for (batch, total) in axes {
        let uniform = modelled_makespan(&config, &vec![(total / batch) as u64; batch]);
        for rule in [LengthRule::Realistic, LengthRule::Lognormal, LengthRule::Tail] {
            for seed in 0..4 {
                let mut rng = SplitMix64::new(seed * 7 + batch as u64);
                let lengths: Vec<u64> =
                    sequence_lengths(rule, batch, total, &mut rng).into_iter().map(|l| l as u64).collect();
                let skewed = modelled_makespan(&config, &lengths);
                let ratio = skewed as f64 / uniform as f64;
                worst = worst.max(ratio);
                eprintln!("{rule} {batch} x {total} seed {seed}: {skewed} vs uniform {uniform}: {ratio:.2}");
                assert!(
                    ratio <= 1.5 || skewed - uniform <= 120,
                    "{rule} {batch} x {total} seed {seed}: {skewed} vs uniform {uniform}"
                );
            }
        }
    }
    eprintln!("worst modelled skewed / uniform makespan: {worst:.2}");
}

#[test]
fn list_scheduling_is_greedy_in_order() {
    assert_eq!(list_schedule_makespan(&[5, 5, 5, 5], 2), 10);
    assert_eq!(list_schedule_makespan(&[9, 1, 1, 1], 2), 9);
    assert_eq!(list_schedule_makespan(&[1, 1, 1, 9], 2), 10);
    assert_eq!(list_schedule_makespan(&[], 3), 0);
}

#[test]
fn automatic_tuning_deepens_the_pipeline_only_for_few_long_sequences() {
    let config = h32kv4(1);
    let pick_on = |batch, total, max_cluster| {
        automatic_tuning(
            &config,
            &ProblemSize { batch_size: batch, num_pages: total, num_kv_indices: total },
            132,
            max_cluster,
            occupancy,
        )
    };
    let pick = |batch, total| pick_on(batch, total, 1);
    let [small, deep, five] = AUTOMATIC_VARIANTS;
    assert_eq!(
        (small.warps_per_cta, small.stages, deep.warps_per_cta, deep.stages, five.warps_per_cta, five.stages),
        (4, 2, 8, 3, 5, 2)
    );
    assert_eq!(pick(16, 1020), small); // the seed: 64 tokens per sequence
    assert_eq!(pick(16, 15463), deep);
    assert_eq!(pick(16, 23079), deep);
    // Long sequences: 512 CTAs fill 1.94 waves of 5 warps and 1.29 of 4.
    assert_eq!(pick(128, 128 * 4096), five);
    assert_eq!(pick(16, 16 * 8192), small); // 384 CTAs fill a wave of 4 warps as well as 256 do one of 5
    assert_eq!(pick(99, 99 * 4096), small); // 396 CTAs: one wave of 4 warps
    assert_eq!(pick(1, 546), deep);
    assert_eq!(pick_on(1, 546, MAX_CLUSTER), small); // cut into parts of one cluster
    assert_eq!(pick_on(16, 15463, MAX_CLUSTER), deep);
    assert_eq!(pick(1, 252), small);
    assert_eq!(pick(64, 61519), small); // 256 CTAs fill the GPU already
    assert_eq!(pick(0, 0), small);
    // Every automatic variant fits in shared memory, the copy of kv_indices too, for every
    // configuration of the family.
    for variant in AUTOMATIC_VARIANTS {
        for head_dim in [64, 128] {
            let config = GqaConfig { head_dim, ..config };
            for total in [1, IDX_CACHE_ENTRIES] {
                let size = ProblemSize { batch_size: 1, num_pages: total, num_kv_indices: total };
                assert!(plan_launch(&config, &variant, &size, 132, 1, 8).is_ok());
            }
        }
    }
}
