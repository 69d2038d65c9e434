//! Checks and times the native GQA paged-decode kernel on a GPU.
//!
//! `gqa_bench ptx DIR`   compile every definition's kernel with NVRTC and write the PTX (no GPU).
//! `gqa_bench check`     every definition of the fixtures on edge cases and on batches drawn by every
//!                       length rule, and the 48 h32/kv4 workloads under each rule through a graph:
//!                       fresh random inputs, poisoned outputs, every element against ki-runner's
//!                       CPU reference (flashinfer_bench_eval atol=rtol=1e-2, relative L2 <= 1e-2).
//! `gqa_bench time`      h32/kv4 ps1 workloads (+ 16x8192, 128x4096) under each length rule: the
//!                       per-call time inside one graph (N x (flush, call) minus N flushes, / N, the
//!                       runner's protocol), and graph replay and eager after a flush, per variant.
//! Options: --out DIR (logs), --samples N (replay and eager samples; 0 skips them), --pairs P and
//!          --calls N (in-graph replay pairs and calls per graph), --variants "auto,w4s2,w8s3" (auto =
//!          the variant set the runner uses, chosen per call), --tpw "0,whole,bal:512,cluster:4/128"
//!          (schedules: 0 = automatic, whole = every sequence whole, bal:C = the balanced plan with
//!          chunks of C tokens, cluster:N/M = clusters of N parts of at least M tokens), --rules
//!          "uniform,realistic,lognormal,tail" (length rules of the page tables), --definition NAME
//!          (time another definition's workload axes, e.g. gqa_paged_decode_h32_kv8_d128_ps1),
//!          --only wl32,b128x4096 (time only these cases), --part I/N (check: every N-th definition
//!          and workload from the I-th, for N processes side by side).
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, anyhow, bail};
use cudarc::driver::sys::{CUdeviceptr, CUevent_flags, CUgraphInstantiate_flags, CUstreamCaptureMode};
use cudarc::driver::{CudaContext, CudaSlice, CudaStream, DevicePtr};
use half::bf16;
use ki_kernels::{GqaConfig, GqaPagedDecode, GqaPointers, ProblemSize, Schedule, Tuning};
use ki_runner::compare::{Tolerance, compare_values};
use ki_runner::materialize::{LengthRule, standard_normal_bf16, synthesize_page_table};

const RULES: [LengthRule; 4] = LengthRule::ALL;
use ki_runner::reference::{GqaPagedDecodeInputs, GqaPagedDecodeShape, gqa_paged_decode_reference};

/// The FlashInfer-Bench samples in the repository's fixtures/ (they travel with the tree).
fn samples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/flashinfer-trace-samples/flashinfer_trace")
}

fn definition_names() -> Result<Vec<String>> {
    let dir = samples_dir().join("definitions/gqa_paged");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .with_context(|| dir.display().to_string())?
        .filter_map(|e| e.ok())
        .filter_map(|e| e.path().file_stem().and_then(|s| s.to_str()).map(String::from))
        .filter(|n| n.starts_with("gqa_paged_decode"))
        .collect();
    names.sort();
    Ok(names)
}

/// One problem on the host: page table and sizes (tensors are drawn fresh per run).
#[derive(Clone, Debug)]
struct Case {
    label: String,
    kv_indptr: Vec<i32>,
    kv_indices: Vec<i32>,
    kv_last_page_len: Vec<i32>,
    num_pages: usize,
}

impl Case {
    fn batch(&self) -> usize {
        self.kv_indptr.len() - 1
    }
    fn tokens(&self, page_size: usize) -> usize {
        (0..self.batch())
            .map(|b| {
                let n = (self.kv_indptr[b + 1] - self.kv_indptr[b]) as usize;
                if n == 0 { 0 } else { (n - 1) * page_size + self.kv_last_page_len[b] as usize }
            })
            .sum()
    }
}

/// A page table with the given token counts per sequence, distinct random pages out of
/// `spread` times as many as needed (pages far apart), last pages partly filled.
fn case_from_lengths(label: &str, lengths: &[usize], page_size: usize, spread: usize, seed: u64) -> Case {
    let mut rng = ki_runner::materialize::SplitMix64::new(seed);
    let pages_per: Vec<usize> = lengths.iter().map(|&l| l.div_ceil(page_size)).collect();
    let used: usize = pages_per.iter().sum();
    let num_pages = (used * spread).max(1);
    let mut pool: Vec<i32> = (0..num_pages as i32).collect();
    for i in 0..used {
        let j = i + rng.below((num_pages - i) as u64) as usize;
        pool.swap(i, j);
    }
    pool.truncate(used);
    let mut indptr = vec![0i32];
    let mut last = Vec::new();
    for (&l, &p) in lengths.iter().zip(&pages_per) {
        indptr.push(indptr.last().unwrap() + p as i32);
        last.push(if p == 0 { 0 } else { (l - (p - 1) * page_size) as i32 });
    }
    Case { label: label.into(), kv_indptr: indptr, kv_indices: pool, kv_last_page_len: last, num_pages }
}

/// A page table synthesized to (batch, num_pages, num_kv_indices) under a length rule, as the
/// runner draws it.
fn case_from_axes(
    label: &str,
    rule: LengthRule,
    axes: (usize, usize, usize),
    page_size: usize,
    seed: u64,
) -> Result<Case> {
    let (batch, num_pages, num_kv_indices) = axes;
    let t =
        synthesize_page_table(rule, batch, num_pages, num_kv_indices, page_size, seed).map_err(|e| anyhow!("{e}"))?;
    Ok(Case {
        label: label.into(),
        kv_indptr: t.kv_indptr,
        kv_indices: t.kv_indices,
        kv_last_page_len: t.kv_last_page_len,
        num_pages,
    })
}

/// The 48 workloads' axes from the samples' JSONL.
fn workload_axes(file: &str) -> Result<Vec<(String, BTreeMap<String, usize>)>> {
    let path = samples_dir().join("workloads/gqa_paged").join(file);
    let text = std::fs::read_to_string(&path).with_context(|| path.display().to_string())?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let v: serde_json::Value =
            serde_json::from_str(line).with_context(|| format!("{}:{}", path.display(), i + 1))?;
        let w = &v["workload"];
        let uuid = w["uuid"].as_str().ok_or_else(|| anyhow!("{}:{}: /workload/uuid missing", path.display(), i + 1))?;
        let axes = w["axes"]
            .as_object()
            .ok_or_else(|| anyhow!("{}:{}: /workload/axes missing", path.display(), i + 1))?
            .iter()
            .map(|(k, v)| (k.clone(), v.as_u64().unwrap_or(0) as usize))
            .collect();
        out.push((uuid.to_string(), axes));
    }
    Ok(out)
}

struct DeviceCase {
    size: ProblemSize,
    q: CudaSlice<u16>,
    k: CudaSlice<u16>,
    v: CudaSlice<u16>,
    indptr: CudaSlice<i32>,
    indices: CudaSlice<i32>,
    last: CudaSlice<i32>,
    out: CudaSlice<u16>,
    lse: CudaSlice<f32>,
    host_q: Vec<bf16>,
    host_k: Vec<bf16>,
    host_v: Vec<bf16>,
    sm_scale: f32,
}

fn bits(v: &[bf16]) -> Vec<u16> {
    v.iter().map(|x| x.to_bits()).collect()
}

fn upload(stream: &Arc<CudaStream>, config: &GqaConfig, case: &Case, seed: u64, keep_host: bool) -> Result<DeviceCase> {
    let (hq, hkv, d, ps) = (
        config.num_qo_heads as usize,
        config.num_kv_heads as usize,
        config.head_dim as usize,
        config.page_size as usize,
    );
    let batch = case.batch();
    let q = standard_normal_bf16(seed ^ 0x51, batch * hq * d);
    let k = standard_normal_bf16(seed ^ 0x4b, case.num_pages * ps * hkv * d);
    let v = standard_normal_bf16(seed ^ 0x56, case.num_pages * ps * hkv * d);
    let dq = stream.clone_htod(&bits(&q))?;
    let dk = stream.clone_htod(&bits(&k))?;
    let dv = stream.clone_htod(&bits(&v))?;
    let indptr = stream.clone_htod(&case.kv_indptr)?;
    let indices = stream.clone_htod(&if case.kv_indices.is_empty() { vec![0] } else { case.kv_indices.clone() })?;
    let last =
        stream.clone_htod(&if case.kv_last_page_len.is_empty() { vec![0] } else { case.kv_last_page_len.clone() })?;
    let out = stream.alloc_zeros::<u16>((batch * hq * d).max(1))?;
    let lse = stream.alloc_zeros::<f32>((batch * hq).max(1))?;
    let size = ProblemSize {
        batch_size: batch as u32,
        num_pages: case.num_pages as u32,
        num_kv_indices: case.kv_indices.len() as u32,
    };
    let (host_q, host_k, host_v) = if keep_host { (q, k, v) } else { (vec![], vec![], vec![]) };
    Ok(DeviceCase {
        size,
        q: dq,
        k: dk,
        v: dv,
        indptr,
        indices,
        last,
        out,
        lse,
        host_q,
        host_k,
        host_v,
        sm_scale: 1.0 / (d as f32).sqrt(),
    })
}

fn ptr<T>(s: &CudaSlice<T>, stream: &CudaStream) -> CUdeviceptr {
    s.device_ptr(stream).0
}

fn pointers(dc: &DeviceCase, stream: &CudaStream) -> GqaPointers {
    GqaPointers {
        q: ptr(&dc.q, stream),
        k_cache: ptr(&dc.k, stream),
        v_cache: ptr(&dc.v, stream),
        kv_indptr: ptr(&dc.indptr, stream),
        kv_indices: ptr(&dc.indices, stream),
        kv_last_page_len: ptr(&dc.last, stream),
        output: ptr(&dc.out, stream),
        lse: ptr(&dc.lse, stream),
    }
}

/// Fills the outputs with NaN so that an element the kernel never writes cannot pass.
fn poison(stream: &Arc<CudaStream>, dc: &mut DeviceCase) -> Result<()> {
    let n = dc.out.len();
    stream.memcpy_htod(&vec![0x7fc1u16; n], &mut dc.out)?;
    let m = dc.lse.len();
    stream.memcpy_htod(&vec![f32::NAN; m], &mut dc.lse)?;
    Ok(())
}

struct CheckResult {
    pass: bool,
    out_l2: f64,
    out_max_abs: f64,
    lse_l2: f64,
    lse_max_abs: f64,
    mismatches: usize,
}

fn check_against_reference(
    stream: &Arc<CudaStream>,
    config: &GqaConfig,
    case: &Case,
    dc: &DeviceCase,
    reference: &ki_runner::reference::GqaPagedDecodeOutputs,
) -> Result<CheckResult> {
    stream.synchronize()?;
    let out: Vec<u16> = stream.clone_dtoh(&dc.out)?;
    let lse: Vec<f32> = stream.clone_dtoh(&dc.lse)?;
    let batch = case.batch();
    let n_out = batch * config.num_qo_heads as usize * config.head_dim as usize;
    let out_f: Vec<f32> = out[..n_out].iter().map(|&b| bf16::from_bits(b).to_f32()).collect();
    let ref_f: Vec<f32> = reference.output.iter().map(|b| b.to_f32()).collect();
    let tol = Tolerance::FLASHINFER_BENCH_DEFAULT;
    let co = compare_values("output", &out_f, &ref_f, tol).map_err(|e| anyhow!("{}: {}", e.name, e.message))?;
    let n_lse = batch * config.num_qo_heads as usize;
    let cl =
        compare_values("lse", &lse[..n_lse], &reference.lse, tol).map_err(|e| anyhow!("{}: {}", e.name, e.message))?;
    let mismatches = ((1.0 - co.matched_ratio) * co.elements as f64).round() as usize
        + ((1.0 - cl.matched_ratio) * cl.elements as f64).round() as usize;
    let pass = co.flashinfer_bench_pass
        && cl.flashinfer_bench_pass
        && co.relative_l2_error <= 1e-2
        && cl.relative_l2_error <= 1e-2;
    Ok(CheckResult {
        pass,
        out_l2: co.relative_l2_error,
        out_max_abs: co.max_abs_error,
        lse_l2: cl.relative_l2_error,
        lse_max_abs: cl.max_abs_error,
        mismatches,
    })
}

fn reference_for(
    config: &GqaConfig,
    case: &Case,
    dc: &DeviceCase,
) -> Result<ki_runner::reference::GqaPagedDecodeOutputs> {
    let shape = GqaPagedDecodeShape {
        num_qo_heads: config.num_qo_heads as usize,
        num_kv_heads: config.num_kv_heads as usize,
        head_dim: config.head_dim as usize,
        page_size: config.page_size as usize,
    };
    let inputs = GqaPagedDecodeInputs {
        q: &dc.host_q,
        k_cache: &dc.host_k,
        v_cache: &dc.host_v,
        kv_indptr: &case.kv_indptr,
        kv_indices: &case.kv_indices,
        kv_last_page_len: if config.page_size > 1 { Some(&case.kv_last_page_len) } else { None },
        sm_scale: dc.sm_scale,
    };
    gqa_paged_decode_reference(&shape, &inputs).map_err(|e| anyhow!("reference: {e}"))
}

/// A schedule spec (module docs).
fn schedule(spec: &str) -> Result<Option<Schedule>> {
    let bad = || anyhow!("--tpw `{spec}`: expected 0, whole, bal:C or cluster:N/M");
    let number = |text: &str| text.parse::<u32>().map_err(|_| bad());
    Ok(Some(if spec == "0" {
        return Ok(None);
    } else if spec == "whole" {
        Schedule::Balanced { chunk_tokens: u32::MAX }
    } else if let Some(c) = spec.strip_prefix("bal:") {
        Schedule::Balanced { chunk_tokens: number(c)? }
    } else if let Some((n, m)) = spec.strip_prefix("cluster:").and_then(|rest| rest.split_once('/')) {
        Schedule::Cluster { parts: number(n)?, min_part_tokens: number(m)? }
    } else {
        return Err(bad());
    }))
}

/// A short name for a schedule in the logs: `B<chunk tokens>` balanced (`Bwhole`), `C<parts>/<min
/// tokens>` in clusters.
fn plan_label(schedule: &Schedule) -> String {
    match schedule {
        Schedule::Balanced { chunk_tokens: u32::MAX } => "Bwhole".into(),
        Schedule::Balanced { chunk_tokens } => format!("B{chunk_tokens}"),
        Schedule::Cluster { parts, min_part_tokens } => format!("C{parts}/{min_part_tokens}"),
    }
}

/// A compiled variant to check or time: one tuning, or None for [`GqaPagedDecode::automatic`].
type Variant = Option<Tuning>;

fn variant_label(variant: &Variant) -> String {
    variant.map_or("auto".into(), |t| format!("w{}s{}", t.warps_per_cta, t.stages))
}

fn build(ctx: &Arc<CudaContext>, config: GqaConfig, variant: &Variant) -> Result<GqaPagedDecode> {
    Ok(match variant {
        Some(tuning) => GqaPagedDecode::new(ctx, config, *tuning)?,
        None => GqaPagedDecode::automatic(ctx, config)?,
    })
}

fn parse_variants(spec: &str) -> Result<Vec<Variant>> {
    spec.split(',')
        .filter(|s| !s.is_empty())
        .map(|s| {
            let s = s.trim();
            if s == "auto" {
                return Ok(None);
            }
            let (w, st) = s
                .strip_prefix('w')
                .and_then(|r| r.split_once('s'))
                .ok_or_else(|| anyhow!("variant `{s}`: expected w<warps>s<stages>"))?;
            Ok(Some(Tuning { warps_per_cta: w.parse()?, stages: st.parse()?, schedule: None }))
        })
        .collect()
}

struct Opts {
    out: PathBuf,
    samples: usize,
    pairs: usize,
    calls: usize,
    variants: Vec<Variant>,
    tpw: Vec<String>,
    rules: Vec<LengthRule>,
    definition: String,
    only: Option<Vec<String>>,
    /// `check` only: this process takes every `part.1`-th definition and workload from `part.0`, so
    /// that several processes share the CPU-bound compiles and references.
    part: (usize, usize),
}

fn log(out: &mut impl Write, line: &str) {
    println!("{line}");
    let _ = writeln!(out, "{line}");
}

/// Edge and coverage cases for one definition (lengths in tokens), and batches under each length
/// rule (page tables as the runner synthesizes them).
fn coverage_cases(config: &GqaConfig, seed: u64) -> Result<Vec<Case>> {
    let ps = config.page_size as usize;
    let mut rng = ki_runner::materialize::SplitMix64::new(seed);
    let mut mixed: Vec<usize> = (0..24).map(|_| rng.below(700) as usize).collect();
    mixed[3] = 0;
    mixed[10] = 0;
    mixed[11] = 1;
    mixed[23] = 0;
    let mut cases = vec![
        case_from_lengths("mixed24_with_empties", &mixed, ps, 3, seed ^ 1),
        case_from_lengths("all_empty3", &[0, 0, 0], ps, 1, seed ^ 2),
        case_from_lengths("single_token", &[1], ps, 50, seed ^ 3),
        case_from_lengths("skew_1x5000_15x20", &[[5000].as_slice(), &[20; 15]].concat(), ps, 2, seed ^ 4),
    ];
    // Under every length rule: a short batch (kv_indices copied to shared memory), a longer one,
    // and fewer pages than sequences.
    for rule in RULES {
        for (batch, entries) in [(16usize, 1020usize / ps.min(16)), (64, 30_000 / ps), (7, 5)] {
            cases.push(case_from_axes(
                &format!("{rule}_{batch}x{entries}"),
                rule,
                (batch, entries + 64, entries),
                ps,
                seed ^ 7,
            )?);
        }
    }
    if config.num_qo_heads == 32 && config.num_kv_heads == 4 {
        cases.push(case_from_lengths("batch1_131072", &[131072], ps, 2, seed ^ 5));
        cases.push(case_from_lengths(
            "batch300_short",
            &(0..300).map(|i| (i * 7) % 40).collect::<Vec<_>>(),
            ps,
            4,
            seed ^ 6,
        ));
        cases.push(case_from_axes("tail_128x40000", LengthRule::Tail, (128, 40_100, 40_000), ps, seed ^ 8)?);
    }
    Ok(cases)
}

/// Schedules every check runs, besides the automatic one: whole sequences, chunks small enough
/// for hundreds of parts per sequence (more than a warp's 32 in one merge), and clusters.
const CHECK_SCHEDULES: [&str; 7] = ["0", "whole", "bal:16", "bal:48", "bal:256", "cluster:4/16", "cluster:8/64"];

fn run_check(ctx: &Arc<CudaContext>, stream: &Arc<CudaStream>, opts: &Opts, logf: &mut impl Write) -> Result<bool> {
    let mut all_ok = true;
    let mut kernels: std::collections::HashMap<(GqaConfig, Variant), GqaPagedDecode> = Default::default();
    let mut get = |config: GqaConfig, variant: Variant| -> Result<GqaPagedDecode> {
        let key = (config, variant);
        if let std::collections::hash_map::Entry::Vacant(e) = kernels.entry(key) {
            e.insert(build(ctx, config, &variant)?);
        }
        Ok(kernels[&key].rescheduled(None))
    };
    log(
        logf,
        "check | definition | case | variant | tpw | pass | out_relL2 | out_maxabs | lse_relL2 | lse_maxabs | mismatches",
    );
    let mut seed = 1000u64;
    let names = definition_names()?;
    // Also head_dim 64 configurations: the family's shapes allow them though the fixtures have none.
    let mut configs: Vec<(String, GqaConfig)> =
        names.iter().map(|n| Ok((n.clone(), GqaConfig::from_definition_name(n)?))).collect::<Result<_>>()?;
    configs.push((
        "synthetic_h8_kv1_d64_ps1".into(),
        GqaConfig { num_qo_heads: 8, num_kv_heads: 1, head_dim: 64, page_size: 1 },
    ));
    configs.push((
        "synthetic_h40_kv2_d64_ps16".into(),
        GqaConfig { num_qo_heads: 40, num_kv_heads: 2, head_dim: 64, page_size: 16 },
    ));
    configs.push((
        "synthetic_h32_kv8_d64_ps64".into(),
        GqaConfig { num_qo_heads: 32, num_kv_heads: 8, head_dim: 64, page_size: 64 },
    ));
    let (part, parts) = opts.part;
    for (index, (name, config)) in configs.iter().enumerate() {
        if index % parts != part {
            continue;
        }
        for case in coverage_cases(config, seed)? {
            seed += 17;
            let mut dc = upload(stream, config, &case, seed, true)?;
            let reference = reference_for(config, &case, &dc)?;
            for variant in &opts.variants {
                for tpw in CHECK_SCHEDULES {
                    let base = get(*config, *variant)?;
                    let kernel = base.rescheduled(schedule(tpw)?);
                    let ws = kernel.workspace(stream, &dc.size)?;
                    // Twice on the same workspace: the counters must come back to zero.
                    for rep in 0..2 {
                        poison(stream, &mut dc)?;
                        let p = pointers(&dc, stream);
                        unsafe { kernel.launch(stream, &p, dc.sm_scale, &dc.size, &ws)? };
                        let r = check_against_reference(stream, config, &case, &dc, &reference)?;
                        all_ok &= r.pass;
                        log(
                            logf,
                            &format!(
                                "check | {name} | {} rep{rep} | {} | {} | {} | {:.2e} | {:.2e} | {:.2e} | {:.2e} | {}",
                                case.label,
                                variant_label(variant),
                                tpw,
                                r.pass,
                                r.out_l2,
                                r.out_max_abs,
                                r.lse_l2,
                                r.lse_max_abs,
                                r.mismatches
                            ),
                        );
                    }
                }
            }
        }
    }
    // The 48 h32/kv4 workloads under every rule, the first variant's own choices, through a graph.
    let config = GqaConfig::from_definition_name("gqa_paged_decode_h32_kv4_d128_ps1")?;
    for (r, rule) in RULES.into_iter().enumerate() {
        for (w, (uuid, axes)) in workload_axes("gqa_paged_decode_h32_kv4_d128_ps1.jsonl")?.into_iter().enumerate() {
            seed += 17;
            if (r * 48 + w) % parts != part {
                continue;
            }
            let axes = (axes["batch_size"], axes["num_pages"], axes["num_kv_indices"]);
            let case = case_from_axes(&uuid, rule, axes, 1, seed)?;
            let mut dc = upload(stream, &config, &case, seed, true)?;
            let reference = reference_for(&config, &case, &dc)?;
            let kernel = get(config, opts.variants[0])?;
            let ws = kernel.workspace(stream, &dc.size)?;
            poison(stream, &mut dc)?;
            let p = pointers(&dc, stream);
            stream.begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)?;
            unsafe { kernel.launch(stream, &p, dc.sm_scale, &dc.size, &ws)? };
            let graph = stream.end_capture(CUgraphInstantiate_flags(0))?.ok_or_else(|| anyhow!("empty graph"))?;
            graph.launch()?;
            let r = check_against_reference(stream, &config, &case, &dc, &reference)?;
            all_ok &= r.pass;
            log(
                logf,
                &format!(
                    "check | h32kv4ps1 workload {rule} | {uuid} b{} t{} | graph | auto | {} | {:.2e} | {:.2e} | {:.2e} | {:.2e} | {}",
                    case.batch(),
                    case.kv_indices.len(),
                    r.pass,
                    r.out_l2,
                    r.out_max_abs,
                    r.lse_l2,
                    r.lse_max_abs,
                    r.mismatches
                ),
            );
        }
    }
    Ok(all_ok)
}

struct Timer {
    flush: CudaSlice<u8>,
    starts: Vec<cudarc::driver::CudaEvent>,
    ends: Vec<cudarc::driver::CudaEvent>,
}

impl Timer {
    fn new(ctx: &Arc<CudaContext>, stream: &Arc<CudaStream>, samples: usize) -> Result<Timer> {
        // Writing 256 MiB (> 2 × the 60 MB L2) before each sample evicts the inputs and keeps
        // the GPU busy up to the start event, so host launch latency is not timed.
        let flush = stream.alloc_zeros::<u8>(256 << 20)?;
        let mk = || ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT));
        Ok(Timer {
            flush,
            starts: (0..samples.max(1)).map(|_| mk()).collect::<Result<_, _>>()?,
            ends: (0..samples.max(1)).map(|_| mk()).collect::<Result<_, _>>()?,
        })
    }

    fn flush(&self, stream: &Arc<CudaStream>, salt: usize) -> Result<()> {
        let (fp, _g) = self.flush.device_ptr(stream);
        unsafe {
            cudarc::driver::result::memset_d8_async(fp, (salt & 0xff) as u8, self.flush.len(), stream.cu_stream())?
        };
        Ok(())
    }

    /// Median microseconds of `run` over the samples, flushing L2 before each.
    fn median_us(&mut self, stream: &Arc<CudaStream>, mut run: impl FnMut() -> Result<()>) -> Result<f64> {
        for _ in 0..5 {
            run()?;
        }
        for i in 0..self.starts.len() {
            self.flush(stream, i)?;
            self.starts[i].record(stream)?;
            run()?;
            self.ends[i].record(stream)?;
        }
        stream.synchronize()?;
        let mut v: Vec<f64> = self
            .starts
            .iter()
            .zip(&self.ends)
            .map(|(s, e)| s.elapsed_ms(e).map(|ms| ms as f64 * 1000.0))
            .collect::<Result<_, _>>()?;
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        Ok(v[v.len() / 2])
    }

    /// The runner's per-call figure: a graph of `calls` × (flush, launch) and one of the flushes
    /// alone, replayed in `pairs` pairs; median of (t(both) − t(flushes)) ÷ calls, in µs.
    fn in_graph_us(
        &self,
        ctx: &Arc<CudaContext>,
        stream: &Arc<CudaStream>,
        calls: usize,
        pairs: usize,
        mut launch: impl FnMut() -> Result<()>,
    ) -> Result<f64> {
        let capture = |body: &mut dyn FnMut() -> Result<()>| -> Result<cudarc::driver::CudaGraph> {
            stream.begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)?;
            let r = body();
            let graph = stream.end_capture(CUgraphInstantiate_flags(0))?;
            r?;
            let graph = graph.ok_or_else(|| anyhow!("empty graph"))?;
            graph.upload()?;
            Ok(graph)
        };
        let both = capture(&mut || {
            for i in 0..calls {
                self.flush(stream, i)?;
                launch()?;
            }
            Ok(())
        })?;
        let flushes = capture(&mut || {
            for i in 0..calls {
                self.flush(stream, i)?;
            }
            Ok(())
        })?;
        flushes.launch()?;
        both.launch()?;
        let mk = || ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT));
        let marks: Vec<cudarc::driver::CudaEvent> = (0..3 * pairs).map(|_| mk()).collect::<Result<_, _>>()?;
        for m in marks.chunks(3) {
            m[0].record(stream)?;
            flushes.launch()?;
            m[1].record(stream)?;
            both.launch()?;
            m[2].record(stream)?;
        }
        stream.synchronize()?;
        let mut v: Vec<f64> = marks
            .chunks(3)
            .map(|m| -> Result<f64> {
                Ok((m[1].elapsed_ms(&m[2])? as f64 - m[0].elapsed_ms(&m[1])? as f64) * 1000.0 / calls as f64)
            })
            .collect::<Result<_>>()?;
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        Ok(v[v.len() / 2])
    }
}

/// K and V for every timed case: one random block repeated to the largest case's pages (values do
/// not change the kernel's time; zeros would).
struct SharedCaches {
    k: CudaSlice<u16>,
    v: CudaSlice<u16>,
}

fn shared_caches(stream: &Arc<CudaStream>, elements: usize) -> Result<SharedCaches> {
    let block = (1usize << 24).min(elements.max(1));
    let k_block: Vec<u16> = bits(&standard_normal_bf16(0x4b, block));
    let v_block: Vec<u16> = bits(&standard_normal_bf16(0x56, block));
    let mut k = stream.alloc_zeros::<u16>(elements.max(1))?;
    let mut v = stream.alloc_zeros::<u16>(elements.max(1))?;
    let mut at = 0;
    while at < elements {
        let n = block.min(elements - at);
        stream.memcpy_htod(&k_block[..n], &mut k.slice_mut(at..at + n))?;
        stream.memcpy_htod(&v_block[..n], &mut v.slice_mut(at..at + n))?;
        at += n;
    }
    Ok(SharedCaches { k, v })
}

fn run_time(ctx: &Arc<CudaContext>, stream: &Arc<CudaStream>, opts: &Opts, logf: &mut impl Write) -> Result<()> {
    let config = GqaConfig::from_definition_name(&opts.definition)?;
    let (hq, hkv, d) = (config.num_qo_heads as usize, config.num_kv_heads as usize, config.head_dim as usize);
    let mut timer = Timer::new(ctx, stream, opts.samples)?;
    let mut work: Vec<(String, LengthRule, Case)> = Vec::new();
    for &rule in &opts.rules {
        for (i, (uuid, axes)) in workload_axes(&format!("{}.jsonl", opts.definition))?.into_iter().enumerate() {
            let axes = (axes["batch_size"], axes["num_pages"], axes["num_kv_indices"]);
            work.push((format!("wl{i:02}"), rule, case_from_axes(&uuid, rule, axes, 1, 7 + i as u64)?));
        }
        work.push(("b16x8192".into(), rule, case_from_axes("b16x8192", rule, (16, 16 * 8192, 16 * 8192), 1, 99)?));
        work.push(("b128x4096".into(), rule, case_from_axes("b128x4096", rule, (128, 1 << 19, 1 << 19), 1, 98)?));
    }
    if let Some(only) = &opts.only {
        work.retain(|(id, _, _)| only.contains(id));
    }
    log(
        logf,
        "time | id | rule | batch | tokens | max_seq | MB_kv | variant | tpw | plan | items | ingraph_us | replay_us | eager_us | TB/s_ingraph",
    );
    let max_pages = work.iter().map(|(_, _, c)| c.num_pages).max().unwrap_or(1);
    let caches = shared_caches(stream, max_pages * hkv * d)?;
    let mut kernels = Vec::new();
    for variant in &opts.variants {
        kernels.push(build(ctx, config, variant)?);
    }
    for (id, rule, case) in &work {
        let batch = case.batch();
        let q = stream.clone_htod(&bits(&standard_normal_bf16(5, (batch * hq * d).max(1))))?;
        let indptr = stream.clone_htod(&case.kv_indptr)?;
        let indices = stream.clone_htod(&if case.kv_indices.is_empty() { vec![0] } else { case.kv_indices.clone() })?;
        let last = stream.clone_htod(&if case.kv_last_page_len.is_empty() {
            vec![0]
        } else {
            case.kv_last_page_len.clone()
        })?;
        let out = stream.alloc_zeros::<u16>((batch * hq * d).max(1))?;
        let lse = stream.alloc_zeros::<f32>((batch * hq).max(1))?;
        let size = ProblemSize {
            batch_size: batch as u32,
            num_pages: case.num_pages as u32,
            num_kv_indices: case.kv_indices.len() as u32,
        };
        let p = GqaPointers {
            q: ptr(&q, stream),
            k_cache: ptr(&caches.k, stream),
            v_cache: ptr(&caches.v, stream),
            kv_indptr: ptr(&indptr, stream),
            kv_indices: ptr(&indices, stream),
            kv_last_page_len: ptr(&last, stream),
            output: ptr(&out, stream),
            lse: ptr(&lse, stream),
        };
        let tokens = case.tokens(1);
        let longest = case.kv_indptr.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
        let kv_bytes = tokens as f64 * hkv as f64 * d as f64 * 2.0 * 2.0;
        for (vi, base) in kernels.iter().enumerate() {
            for tpw in &opts.tpw {
                let kernel = base.rescheduled(schedule(tpw)?);
                let plan = match kernel.plan(&size) {
                    Ok(plan) => plan,
                    Err(e) => {
                        log(logf, &format!("time | {id} | {rule} | skipped {tpw}: {e}"));
                        continue;
                    }
                };
                let ws = kernel.workspace(stream, &size)?;
                let mut launch = || -> Result<()> {
                    unsafe { kernel.launch(stream, &p, 1.0 / (d as f32).sqrt(), &size, &ws)? };
                    Ok(())
                };
                let in_graph = timer.in_graph_us(ctx, stream, opts.calls, opts.pairs, &mut launch)?;
                let (replay, eager) = if opts.samples > 0 {
                    stream.begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)?;
                    launch()?;
                    let graph =
                        stream.end_capture(CUgraphInstantiate_flags(0))?.ok_or_else(|| anyhow!("empty graph"))?;
                    graph.upload()?;
                    (timer.median_us(stream, || Ok(graph.launch()?))?, timer.median_us(stream, &mut launch)?)
                } else {
                    (f64::NAN, f64::NAN)
                };
                log(
                    logf,
                    &format!(
                        "time | {id} | {rule} | {batch} | {tokens} | {longest} | {:.1} | {} | {tpw} | w{}s{} {} | {} | {in_graph:.2} | {replay:.2} | {eager:.2} | {:.2}",
                        kv_bytes / 1e6,
                        variant_label(&opts.variants[vi]),
                        plan.warps_per_cta,
                        plan.stages,
                        plan_label(&plan.schedule),
                        plan.items,
                        kv_bytes / (in_graph * 1e-6) / 1e12
                    ),
                );
            }
        }
    }
    Ok(())
}

/// Checks and times the native GQA paged-decode kernel (the module docs say what each mode does).
#[derive(clap::Parser)]
struct Cli {
    #[command(subcommand)]
    mode: Mode,
    /// Where the logs go.
    #[arg(long, global = true, default_value = ".")]
    out: PathBuf,
    /// Replay and eager samples per case (0 skips them).
    #[arg(long, global = true, default_value_t = 100)]
    samples: usize,
    /// In-graph replay pairs per case.
    #[arg(long, global = true, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
    pairs: u32,
    /// Calls per captured graph.
    #[arg(long, global = true, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
    calls: u32,
    /// Variants, comma-separated: `auto` (the runner's set, chosen per call) or w<warps>s<stages>.
    #[arg(long, global = true, default_value = "auto")]
    variants: String,
    /// Schedules, comma-separated: 0 (automatic), whole, bal:C, cluster:N/M.
    #[arg(long, global = true, default_value = "0")]
    tpw: String,
    /// Length rules of the page tables, comma-separated (default: all).
    #[arg(long, global = true)]
    rules: Option<String>,
    /// Time another definition's workload axes.
    #[arg(long, global = true, default_value = "gqa_paged_decode_h32_kv4_d128_ps1")]
    definition: String,
    /// Time only these cases, comma-separated (e.g. wl32,b128x4096).
    #[arg(long, global = true)]
    only: Option<String>,
    /// `check` only: every N-th definition and workload from the I-th (I/N), for N processes side by side.
    #[arg(long, global = true, default_value = "0/1")]
    part: String,
}

#[derive(clap::Subcommand)]
enum Mode {
    /// Compile every definition's kernel with NVRTC and write the PTX (no GPU).
    Ptx { dir: PathBuf },
    /// Every definition on edge cases and drawn batches, against the CPU reference.
    Check,
    /// The per-call time inside one graph, and graph replay and eager after a flush.
    Time,
}

fn comma_list(text: &str) -> Vec<String> {
    text.split(',').map(|s| s.trim().to_string()).collect()
}

fn main() -> Result<()> {
    let cli = <Cli as clap::Parser>::parse();
    let part = {
        let text = &cli.part;
        let (i, n) = text.split_once('/').ok_or_else(|| anyhow!("--part {text}: expected I/N"))?;
        let (i, n): (usize, usize) = (i.parse()?, n.parse()?);
        if n == 0 || i >= n {
            bail!("--part {text}: expected 0 <= I < N");
        }
        (i, n)
    };
    let rules = match &cli.rules {
        Some(text) => comma_list(text).iter().map(|s| s.parse().map_err(|e| anyhow!("{e}"))).collect::<Result<_>>()?,
        None => RULES.to_vec(),
    };
    let opts = Opts {
        out: cli.out,
        samples: cli.samples,
        pairs: cli.pairs as usize,
        calls: cli.calls as usize,
        variants: parse_variants(&cli.variants)?,
        tpw: comma_list(&cli.tpw),
        rules,
        definition: cli.definition,
        only: cli.only.as_deref().map(comma_list),
        part,
    };
    for tpw in &opts.tpw {
        schedule(tpw)?;
    }
    let mode = match cli.mode {
        Mode::Check => "check",
        Mode::Time => "time",
        Mode::Ptx { dir } => {
            std::fs::create_dir_all(&dir)?;
            for name in definition_names()? {
                let config = GqaConfig::from_definition_name(&name)?;
                let tunings: Vec<Tuning> = opts
                    .variants
                    .iter()
                    .flat_map(|v| v.map_or(ki_kernels::gqa_paged_decode::AUTOMATIC_VARIANTS.to_vec(), |t| vec![t]))
                    .collect();
                for t in &tunings {
                    for (cluster_merge, suffix) in [(false, ""), (true, "_cluster")] {
                        let ptx = ki_kernels::gqa_paged_decode::compile(&config, t, "compute_90", cluster_merge)?;
                        std::fs::write(
                            dir.join(format!("{name}_w{}s{}{suffix}.ptx", t.warps_per_cta, t.stages)),
                            ptx.to_src(),
                        )?;
                    }
                }
            }
            for (label, d64) in [
                (
                    "synthetic_h40_kv2_d64_ps16",
                    GqaConfig { num_qo_heads: 40, num_kv_heads: 2, head_dim: 64, page_size: 16 },
                ),
                (
                    "synthetic_h8_kv1_d64_ps1",
                    GqaConfig { num_qo_heads: 8, num_kv_heads: 1, head_dim: 64, page_size: 1 },
                ),
            ] {
                for t in ki_kernels::gqa_paged_decode::AUTOMATIC_VARIANTS {
                    std::fs::write(
                        dir.join(format!("{label}_w{}s{}.ptx", t.warps_per_cta, t.stages)),
                        ki_kernels::gqa_paged_decode::compile(&d64, &t, "compute_90", false)?.to_src(),
                    )?;
                }
            }
            println!("wrote PTX to {}", dir.display());
            return Ok(());
        }
    };
    std::fs::create_dir_all(&opts.out)?;
    let ctx = CudaContext::new(0)?;
    // Raw pointers are used throughout; cudarc's per-buffer events would only add work.
    unsafe { ctx.disable_event_tracking() };
    let stream = ctx.new_stream()?;
    println!(
        "device: {} sm_count={}",
        ctx.name()?,
        ctx.attribute(cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?
    );
    let suffix = if opts.part.1 > 1 { format!("_part{}", opts.part.0) } else { String::new() };
    let mut logf = std::fs::File::create(opts.out.join(format!("gqa_bench_{mode}{suffix}.log")))?;
    if mode == "check" {
        let ok = run_check(&ctx, &stream, &opts, &mut logf)?;
        log(&mut logf, &format!("check summary: all_correct={ok}"));
    } else {
        run_time(&ctx, &stream, &opts, &mut logf)?;
    }
    Ok(())
}
