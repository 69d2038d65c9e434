//! GPU and NVRTC tests. Each skips (passes with a note on stderr) where the library it needs
//! cannot be loaded: CI has neither a GPU nor NVRTC.
use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaStream, DevicePtr};
use half::bf16;
use ki_kernels::{GqaConfig, GqaPagedDecode, GqaPointers, ProblemSize, Schedule, Tuning};
use ki_runner::compare::{Tolerance, compare_values};
use ki_runner::materialize::{SplitMix64, standard_normal_bf16};
use ki_runner::reference::{GqaPagedDecodeInputs, GqaPagedDecodeShape, gqa_paged_decode_reference};

/// cudarc's dynamic loading panics when a library is missing; that means "skip" here.
fn quietly<T>(f: impl FnOnce() -> T + std::panic::UnwindSafe) -> Option<T> {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let r = std::panic::catch_unwind(f).ok();
    std::panic::set_hook(hook);
    r
}

fn gpu() -> Option<(Arc<CudaContext>, Arc<CudaStream>)> {
    let ctx = quietly(|| CudaContext::new(0).ok()).flatten()?;
    let (major, _) = ctx.compute_capability().ok()?;
    if major < 8 {
        return None;
    }
    let stream = ctx.new_stream().ok()?;
    Some((ctx, stream))
}

#[test]
fn nvrtc_compiles_every_definition() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/flashinfer-trace-samples/flashinfer_trace/definitions/gqa_paged");
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok()?.path().file_stem()?.to_str().map(String::from))
        .collect();
    let first = GqaConfig::from_definition_name(&names[0]).unwrap();
    let Some(probe) = quietly(move || ki_kernels::compile(&first, &Tuning::default(), "compute_90", false)) else {
        eprintln!("skipped: libnvrtc could not be loaded");
        return;
    };
    probe.unwrap();
    for name in &names {
        let config = GqaConfig::from_definition_name(name).unwrap();
        let ptx = ki_kernels::compile(&config, &Tuning::default(), "compute_90", false)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let text = ptx.to_src();
        // The tensor-core path and the async copies must be in the code, not a fallback.
        assert!(text.contains("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"), "{name}");
        assert!(text.contains("cp.async.cg.shared.global"), "{name}");
        // Cluster instructions only in the cluster build: their presence alone slows every launch.
        assert!(!text.contains("cluster"), "{name}: the plain build has cluster instructions");
        let clustered = ki_kernels::compile(&config, &Tuning::default(), "compute_90", true)
            .unwrap_or_else(|e| panic!("{name}: {e}"))
            .to_src();
        assert!(clustered.contains("barrier.cluster.arrive") && clustered.contains("mapa"), "{name}");
    }
}

struct Problem {
    indptr: Vec<i32>,
    indices: Vec<i32>,
    last: Vec<i32>,
    num_pages: usize,
}

fn problem(lengths: &[usize], page_size: usize, seed: u64) -> Problem {
    let mut rng = SplitMix64::new(seed);
    let pages: Vec<usize> = lengths.iter().map(|l| l.div_ceil(page_size)).collect();
    let used: usize = pages.iter().sum();
    let num_pages = (used * 3).max(1);
    let mut pool: Vec<i32> = (0..num_pages as i32).collect();
    for i in 0..used {
        let j = i + rng.below((num_pages - i) as u64) as usize;
        pool.swap(i, j);
    }
    pool.truncate(used);
    let mut indptr = vec![0];
    let mut last = vec![];
    for (&l, &p) in lengths.iter().zip(&pages) {
        indptr.push(indptr.last().unwrap() + p as i32);
        last.push(if p == 0 { 0 } else { (l - (p - 1) * page_size) as i32 });
    }
    Problem { indptr, indices: pool, last, num_pages }
}

/// Checks one kernel against the CPU reference; `tuning` None is [`GqaPagedDecode::automatic`].
fn run_and_compare(
    ctx: &Arc<CudaContext>,
    stream: &Arc<CudaStream>,
    config: GqaConfig,
    tuning: impl Into<Option<Tuning>>,
    lengths: &[usize],
    seed: u64,
) {
    let (hq, hkv, d, ps) = (
        config.num_qo_heads as usize,
        config.num_kv_heads as usize,
        config.head_dim as usize,
        config.page_size as usize,
    );
    let p = problem(lengths, ps, seed);
    let batch = lengths.len();
    let q = standard_normal_bf16(seed + 1, batch * hq * d);
    let k = standard_normal_bf16(seed + 2, p.num_pages * ps * hkv * d);
    let v = standard_normal_bf16(seed + 3, p.num_pages * ps * hkv * d);
    let sm_scale = 1.0 / (d as f32).sqrt();
    let bits = |x: &[bf16]| x.iter().map(|b| b.to_bits()).collect::<Vec<u16>>();
    let dq = stream.clone_htod(&bits(&q)).unwrap();
    let dk = stream.clone_htod(&bits(&k)).unwrap();
    let dv = stream.clone_htod(&bits(&v)).unwrap();
    let di = stream.clone_htod(&p.indptr).unwrap();
    let dx = stream.clone_htod(&if p.indices.is_empty() { vec![0] } else { p.indices.clone() }).unwrap();
    let dl = stream.clone_htod(&p.last).unwrap();
    // NaN-filled outputs: an element the kernel does not write fails the comparison.
    let dout = stream.clone_htod(&vec![0x7fc1u16; batch * hq * d]).unwrap();
    let dlse = stream.clone_htod(&vec![f32::NAN; batch * hq]).unwrap();
    let kernel = match tuning.into() {
        Some(tuning) => GqaPagedDecode::new(ctx, config, tuning).unwrap(),
        None => GqaPagedDecode::automatic(ctx, config).unwrap(),
    };
    let size =
        ProblemSize { batch_size: batch as u32, num_pages: p.num_pages as u32, num_kv_indices: p.indices.len() as u32 };
    let ws = kernel.workspace(stream, &size).unwrap();
    let ptrs = GqaPointers {
        q: dq.device_ptr(stream).0,
        k_cache: dk.device_ptr(stream).0,
        v_cache: dv.device_ptr(stream).0,
        kv_indptr: di.device_ptr(stream).0,
        kv_indices: dx.device_ptr(stream).0,
        kv_last_page_len: dl.device_ptr(stream).0,
        output: dout.device_ptr(stream).0,
        lse: dlse.device_ptr(stream).0,
    };
    // Twice on one workspace: the arrival counters must be back at zero after a launch.
    for _ in 0..2 {
        unsafe { kernel.launch(stream, &ptrs, sm_scale, &size, &ws).unwrap() };
    }
    stream.synchronize().unwrap();
    let out: Vec<f32> = stream.clone_dtoh(&dout).unwrap().iter().map(|&b| bf16::from_bits(b).to_f32()).collect();
    let lse: Vec<f32> = stream.clone_dtoh(&dlse).unwrap();
    let shape = GqaPagedDecodeShape { num_qo_heads: hq, num_kv_heads: hkv, head_dim: d, page_size: ps };
    let inputs = GqaPagedDecodeInputs {
        q: &q,
        k_cache: &k,
        v_cache: &v,
        kv_indptr: &p.indptr,
        kv_indices: &p.indices,
        kv_last_page_len: if ps > 1 { Some(&p.last) } else { None },
        sm_scale,
    };
    let reference = gqa_paged_decode_reference(&shape, &inputs).unwrap();
    let ref_out: Vec<f32> = reference.output.iter().map(|b| b.to_f32()).collect();
    for (name, got, want) in [("output", &out, &ref_out), ("lse", &lse, &reference.lse)] {
        let c = compare_values(name, got, want, Tolerance::FLASHINFER_BENCH_DEFAULT).unwrap();
        assert!(c.flashinfer_bench_pass && c.relative_l2_error <= 1e-2, "{config:?} {lengths:?}: {c:?}");
    }
}

#[test]
fn matches_the_reference_on_edge_cases() {
    let Some((ctx, stream)) = gpu() else {
        eprintln!("skipped: no CUDA device (libcuda could not be loaded or no sm_80+ GPU)");
        return;
    };
    let h32kv4 = |ps| GqaConfig { num_qo_heads: 32, num_kv_heads: 4, head_dim: 128, page_size: ps };
    // Chunks of 32 tokens: most sequences in many parts (over 32 for the longest, more than one
    // merge round); chunks of 100: a few parts; and every sequence whole.
    let small = Tuning { schedule: Some(Schedule::Balanced { chunk_tokens: 32 }), ..Tuning::default() };
    let parts = Tuning { schedule: Some(Schedule::Balanced { chunk_tokens: 100 }), ..Tuning::default() };
    let whole = Tuning { schedule: Some(Schedule::Balanced { chunk_tokens: u32::MAX }), ..Tuning::default() };
    run_and_compare(&ctx, &stream, h32kv4(1), whole, &[64, 0, 1, 300, 0, 2000], 10);
    run_and_compare(&ctx, &stream, h32kv4(1), Tuning::default(), &[64, 0, 1, 300, 0], 11);
    run_and_compare(&ctx, &stream, h32kv4(1), small, &[64, 0, 1, 300, 0, 17, 33], 12);
    run_and_compare(&ctx, &stream, h32kv4(64), small, &[64, 0, 1, 300, 129, 65], 13);
    run_and_compare(&ctx, &stream, h32kv4(1), Tuning::default(), &[0, 0], 14);
    run_and_compare(&ctx, &stream, h32kv4(1), Tuning::default(), &[100_000], 15);
    run_and_compare(
        &ctx,
        &stream,
        GqaConfig { num_qo_heads: 40, num_kv_heads: 2, head_dim: 64, page_size: 16 },
        small,
        &[5, 90, 0, 257],
        16,
    );
    run_and_compare(
        &ctx,
        &stream,
        GqaConfig { num_qo_heads: 6, num_kv_heads: 1, head_dim: 128, page_size: 1 },
        small,
        &[7, 200],
        17,
    );
    // Sequences cut into parts on the device, the longest first.
    run_and_compare(&ctx, &stream, h32kv4(1), parts, &[64, 0, 1, 300, 0, 17, 33, 5000], 18);
    run_and_compare(&ctx, &stream, h32kv4(64), parts, &[64, 0, 1, 300, 129, 65, 2000], 19);
    run_and_compare(
        &ctx,
        &stream,
        GqaConfig { num_qo_heads: 40, num_kv_heads: 2, head_dim: 64, page_size: 16 },
        parts,
        &[5, 90, 0, 257],
        20,
    );
    // The same in clusters (sm_90): parts merge in distributed shared memory, and CTAs without a
    // part still join the cluster's barriers.
    if ctx.compute_capability().unwrap().0 >= 9 {
        let cluster =
            Tuning { schedule: Some(Schedule::Cluster { parts: 4, min_part_tokens: 16 }), ..Tuning::default() };
        run_and_compare(&ctx, &stream, h32kv4(1), cluster, &[64, 0, 1, 300, 0, 17, 33, 5000], 31);
        run_and_compare(&ctx, &stream, h32kv4(64), cluster, &[64, 0, 1, 300, 129, 65, 2000], 32);
        run_and_compare(
            &ctx,
            &stream,
            GqaConfig { num_qo_heads: 40, num_kv_heads: 2, head_dim: 64, page_size: 16 },
            cluster,
            &[5, 90, 0, 257],
            33,
        );
    }
    // Many more items than one wave holds (the hardware runs them as slots free up).
    let many: Vec<usize> = (0..300).map(|i| (i * 37) % 900).collect();
    run_and_compare(&ctx, &stream, h32kv4(1), small, &many, 34);
    // The automatic choice: 4 warps for the seed's shape, 8 warps × 3 stages for 16 sequences of
    // ~1,000 tokens, parts for the long one of a skewed batch, and a cluster for one sequence.
    let seedlike: Vec<usize> = (0..16).map(|i| 40 + 5 * i).collect();
    let long16: Vec<usize> = (0..16).map(|i| 900 + 37 * i).collect();
    let skewed: Vec<usize> = [[13_963].as_slice(), &[100; 15]].concat();
    for (i, lengths) in [seedlike, long16, skewed, vec![546]].iter().enumerate() {
        run_and_compare(&ctx, &stream, h32kv4(1), None, lengths, 21 + i as u64);
    }
}
