//! Batched GQA decode attention over a paged KV cache, for every `gqa_paged_decode_*`
//! definition of FlashInfer-Bench: any query/KV head grouping, head_dim 64 or 128, any page
//! size (with `kv_last_page_len` when it is above 1), bf16 in, fp32 accumulation, bf16 output,
//! lse in base 2.
//!
//! One launch per call, no host synchronization, and nothing read from device memory on the
//! host: the launch geometry depends only on shapes ([`ProblemSize`]), and the kernel finds
//! its sequences from `kv_indptr` on the device, so a call can be captured in a CUDA graph.
//! The kernel source is `cuda/gqa_paged_decode.cu`; its header says how work is split.
use std::sync::Arc;

use cudarc::driver::sys::{CUdeviceptr, CUfunction_attribute_enum};
use cudarc::driver::{CudaContext, CudaFunction, CudaSlice, CudaStream, DeviceRepr, LaunchConfig, PushKernelArg};
use cudarc::nvrtc::{CompileOptions, Ptx, compile_ptx_with_opts};

/// The kernel's CUDA C source, compiled by NVRTC with the configuration as `-D` defines.
pub const SOURCE: &str = include_str!("../cuda/gqa_paged_decode.cu");
/// This file: the launcher that picks each call's variant and schedule (part of the kernel's
/// revision in the runner's records).
pub const LAUNCHER_SOURCE: &str = include_str!("gqa_paged_decode.rs");
const KERNEL_NAME: &str = "gqa_paged_decode";
const MAX_SMEM_PER_CTA: u32 = 227 * 1024;
/// Most parts one sequence is cut into under [`Schedule::PerSequence`].
pub const MAX_PARTS: u32 = 128;

/// Most CTAs of a thread-block cluster that every sm_90 device can launch (the portable size).
/// The parts of a sequence merge through the cluster's distributed shared memory when they fit.
pub const MAX_CLUSTER: u32 = 8;

#[derive(Debug, thiserror::Error)]
pub enum KernelError {
    #[error("invalid configuration: {0}")]
    InvalidConfig(String),
    #[error("invalid problem size: {0}")]
    InvalidSize(String),
    #[error("unsupported device: {0}")]
    UnsupportedDevice(String),
    #[error("NVRTC could not compile {name}: {log}")]
    Compile { name: String, log: String },
    #[error("CUDA driver: {0}")]
    Driver(#[from] cudarc::driver::DriverError),
}

/// The constant axes of one definition of the family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GqaConfig {
    pub num_qo_heads: u32,
    pub num_kv_heads: u32,
    pub head_dim: u32,
    pub page_size: u32,
}

impl GqaConfig {
    /// Reads a definition name such as `gqa_paged_decode_h32_kv4_d128_ps1`.
    pub fn from_definition_name(name: &str) -> Result<GqaConfig, KernelError> {
        let bad =
            || KernelError::InvalidConfig(format!("`{name}` is not a gqa_paged_decode_h<Q>_kv<K>_d<D>_ps<P> name"));
        let rest = name.strip_prefix("gqa_paged_decode_").ok_or_else(bad)?;
        let mut fields = [0u32; 4];
        let prefixes = ["h", "kv", "d", "ps"];
        let parts: Vec<&str> = rest.split('_').collect();
        if parts.len() != 4 {
            return Err(bad());
        }
        for ((field, part), prefix) in fields.iter_mut().zip(&parts).zip(prefixes) {
            *field = part.strip_prefix(prefix).and_then(|v| v.parse().ok()).ok_or_else(bad)?;
        }
        let config =
            GqaConfig { num_qo_heads: fields[0], num_kv_heads: fields[1], head_dim: fields[2], page_size: fields[3] };
        config.validate()?;
        Ok(config)
    }

    pub fn validate(&self) -> Result<(), KernelError> {
        let fail = |m: String| Err(KernelError::InvalidConfig(m));
        if self.num_qo_heads == 0 || self.num_kv_heads == 0 {
            return fail(format!(
                "num_qo_heads {} and num_kv_heads {} must be positive",
                self.num_qo_heads, self.num_kv_heads
            ));
        }
        if !self.num_qo_heads.is_multiple_of(self.num_kv_heads) {
            return fail(format!(
                "num_qo_heads {} is not a multiple of num_kv_heads {}",
                self.num_qo_heads, self.num_kv_heads
            ));
        }
        if self.head_dim != 64 && self.head_dim != 128 {
            return fail(format!("head_dim {} is not 64 or 128", self.head_dim));
        }
        if self.page_size == 0 || self.page_size > 1 << 16 {
            return fail(format!("page_size {} is outside 1..=65536", self.page_size));
        }
        Ok(())
    }

    /// Query heads per KV head.
    pub fn group(&self) -> u32 {
        self.num_qo_heads / self.num_kv_heads
    }

    /// 16-row query tiles per KV head (the mma M dimension is 16).
    pub fn m_tiles(&self) -> u32 {
        self.group().div_ceil(16)
    }

    /// The kernel's grid y: one row per (KV head, query tile).
    pub fn head_tiles(&self) -> u32 {
        self.num_kv_heads * self.m_tiles()
    }
}

/// Compile-time and launch choices that do not change results.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Tuning {
    /// Warps per CTA; they share the CTA's unit tile by tile.
    pub warps_per_cta: u32,
    /// cp.async pipeline depth per warp, in 16-token tiles.
    pub stages: u32,
    /// How work is cut into CTAs; None lets [`plan_launch`] choose from the problem size.
    pub schedule: Option<Schedule>,
}

/// How the kernel cuts a batch into units, one CTA (per head tile) each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Schedule {
    /// Consecutive slices of `unit_tokens` tokens of the flat kv_indices range, whatever the
    /// sequences: balanced under any length skew, at the price of merging split sequences.
    FixedUnits { unit_tokens: u32 },
    /// Each sequence cut on the device into min(`max_parts`, max(1, ⌊tokens ÷ `min_part_tokens`⌋))
    /// equal parts; a sequence of one part needs no merge, parts merge through global records.
    PerSequence { max_parts: u32, min_part_tokens: u32 },
    /// As `PerSequence` with `max_parts` = `parts` (2..=[`MAX_CLUSTER`]), but the parts of a
    /// sequence are one thread-block cluster and merge in its distributed shared memory (sm_90).
    Cluster { parts: u32, min_part_tokens: u32 },
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning { warps_per_cta: 4, stages: 2, schedule: None }
    }
}

impl Tuning {
    pub fn validate(&self) -> Result<(), KernelError> {
        if !(1..=16).contains(&self.warps_per_cta) {
            return Err(KernelError::InvalidConfig(format!("warps_per_cta {} is outside 1..=16", self.warps_per_cta)));
        }
        if !(2..=8).contains(&self.stages) {
            return Err(KernelError::InvalidConfig(format!("stages {} is outside 2..=8", self.stages)));
        }
        match self.schedule {
            Some(Schedule::FixedUnits { unit_tokens: 0 }) => {
                Err(KernelError::InvalidConfig("unit_tokens must be positive".into()))
            }
            Some(Schedule::PerSequence { max_parts, min_part_tokens })
                if !(1..=MAX_PARTS).contains(&max_parts) || min_part_tokens == 0 =>
            {
                Err(KernelError::InvalidConfig(format!(
                    "max_parts {max_parts} must be in 1..={MAX_PARTS} and min_part_tokens {min_part_tokens} positive"
                )))
            }
            Some(Schedule::Cluster { parts, min_part_tokens })
                if !(2..=MAX_CLUSTER).contains(&parts) || min_part_tokens == 0 =>
            {
                Err(KernelError::InvalidConfig(format!(
                    "cluster parts {parts} must be in 2..={MAX_CLUSTER} and min_part_tokens {min_part_tokens} positive"
                )))
            }
            _ => Ok(()),
        }
    }
}

/// The shapes of one call: what the host knows without reading device memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ProblemSize {
    pub batch_size: u32,
    pub num_pages: u32,
    /// Length of kv_indices (the definitions' `num_kv_indices`).
    pub num_kv_indices: u32,
}

impl ProblemSize {
    /// Tokens per sequence on average (pages count full; a batch of 0 counts as 1).
    pub fn tokens_per_sequence(&self, page_size: u32) -> u64 {
        (self.num_kv_indices as u64 * page_size as u64).div_ceil(self.batch_size.max(1) as u64)
    }
}

/// Launch geometry and workspace needs, computed on the host from shapes alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchPlan {
    /// The compiled configuration that runs the call.
    pub warps_per_cta: u32,
    pub stages: u32,
    /// The schedule chosen (the tuning's, or the automatic one).
    pub schedule: Schedule,
    /// kv_indices entries (pages) per fixed unit, or the least per sequence part.
    pub entries_per_unit: u32,
    /// CTA rows: fixed units, or batch × max_parts.
    pub num_units: u32,
    /// CTAs per thread-block cluster along z (1: no clusters): the parts of one sequence, which
    /// then merge in distributed shared memory instead of through global records.
    pub cluster: u32,
    pub grid: (u32, u32, u32),
    pub block: (u32, u32, u32),
    pub shared_bytes: u32,
    /// f32 elements of the partial-result buffer.
    pub partial_floats: usize,
    /// i32 arrival counters (zero between launches).
    pub counter_count: usize,
}

/// Shared memory one warp uses: `stages` tiles of 16 rows of K and of V.
fn warp_shared_bytes(config: &GqaConfig, tuning: &Tuning) -> u32 {
    tuning.stages * 2 * 16 * config.head_dim * 2 + tuning.stages * 16 * 4
}

/// Chooses how many kv_indices entries each warp reads (see the comment on the choice below)
/// and the grid and workspace that follow.
/// `ctas_per_sm` is how many CTAs of this kernel an SM holds at once (the driver's occupancy);
/// `max_cluster` the largest cluster the device launches (1 before sm_90).
pub fn plan_launch(
    config: &GqaConfig,
    tuning: &Tuning,
    size: &ProblemSize,
    sm_count: u32,
    ctas_per_sm: u32,
    max_cluster: u32,
) -> Result<LaunchPlan, KernelError> {
    config.validate()?;
    tuning.validate()?;
    if sm_count == 0 || ctas_per_sm == 0 {
        return Err(KernelError::InvalidConfig(format!(
            "sm_count {sm_count} and ctas_per_sm {ctas_per_sm} must be positive"
        )));
    }
    let total_tokens = size.num_kv_indices as u64 * config.page_size as u64;
    if total_tokens > i32::MAX as u64 {
        return Err(KernelError::InvalidSize(format!(
            "num_kv_indices {} × page_size {} exceeds the int32 token positions the kernel uses",
            size.num_kv_indices, config.page_size
        )));
    }
    if size.num_kv_indices > 0 && size.num_pages == 0 {
        return Err(KernelError::InvalidSize("num_pages is 0 but kv_indices is not empty".into()));
    }
    if size.batch_size == 0 && size.num_kv_indices > 0 {
        return Err(KernelError::InvalidSize("batch_size 0 with a non-empty kv_indices".into()));
    }
    let shared_bytes = warp_shared_bytes(config, tuning) * tuning.warps_per_cta;
    if shared_bytes > MAX_SMEM_PER_CTA {
        return Err(KernelError::InvalidConfig(format!(
            "{} warps × {} stages need {shared_bytes} bytes of shared memory, over {MAX_SMEM_PER_CTA}",
            tuning.warps_per_cta, tuning.stages
        )));
    }
    let head_tiles = config.head_tiles();
    // One wave: as many CTAs as can be resident at once.
    let wave_units = (ctas_per_sm * sm_count / head_tiles).max(1) as u64;
    let schedule = match tuning.schedule {
        Some(schedule) => schedule,
        None => auto_schedule(config, tuning, size, total_tokens, wave_units, sm_count, max_cluster),
    };
    let (entries_per_unit, num_units) = match schedule {
        Schedule::FixedUnits { unit_tokens } => {
            let entries = unit_tokens.div_ceil(config.page_size).max(1);
            (entries, size.num_kv_indices.div_ceil(entries).max(1))
        }
        Schedule::PerSequence { max_parts, min_part_tokens }
        | Schedule::Cluster { parts: max_parts, min_part_tokens } => {
            let rows = size.batch_size as u64 * max_parts as u64;
            if rows > i32::MAX as u64 {
                return Err(KernelError::InvalidSize(format!(
                    "batch {} × max_parts {max_parts} CTA rows exceed int32",
                    size.batch_size
                )));
            }
            (min_part_tokens.div_ceil(config.page_size).max(1), rows as u32)
        }
    };
    let cluster = match schedule {
        Schedule::Cluster { parts, .. } if parts > max_cluster => {
            return Err(KernelError::InvalidConfig(format!(
                "a cluster of {parts} CTAs; this device launches at most {max_cluster}"
            )));
        }
        Schedule::Cluster { parts, .. } => parts,
        _ => 1,
    };
    let record_floats = 16 * config.head_dim as usize + 32;
    let records = match schedule {
        Schedule::FixedUnits { .. } => num_units as usize * 2,
        Schedule::Cluster { .. } | Schedule::PerSequence { max_parts: 1, .. } => 0,
        Schedule::PerSequence { .. } => num_units as usize,
    };
    Ok(LaunchPlan {
        warps_per_cta: tuning.warps_per_cta,
        stages: tuning.stages,
        schedule,
        entries_per_unit,
        num_units,
        cluster,
        // Per sequence, parts are the slowest dimension: every first part is dispatched before
        // any other (v8: 16 short sequences with 6 rows each, 5 exiting at once, took 16.2 µs
        // against 14.2 µs whole when the rows of a sequence were adjacent).
        grid: match schedule {
            Schedule::FixedUnits { .. } => (num_units, head_tiles, 1),
            Schedule::PerSequence { max_parts, .. } | Schedule::Cluster { parts: max_parts, .. } => {
                (size.batch_size, head_tiles, max_parts)
            }
        },
        block: (32 * tuning.warps_per_cta, 1, 1),
        shared_bytes,
        partial_floats: records * head_tiles as usize * record_floats,
        counter_count: (size.batch_size as usize * head_tiles as usize).max(1),
    })
}

/// The schedule [`plan_launch`] chooses from shapes alone; `wave_units` is how many CTA rows
/// (all head tiles each) are resident at once. Measured on the H200 (bench/gqa-paged-decode/NOTES.md):
/// - v6: up to 256 tokens per warp on average (1,024 at 4 warps), a CTA per sequence beats fixed
///   units by up to 1.8×.
/// - v7: cutting such sequences into parts that merge through global memory adds ~3 µs, so they
///   stay whole, and only longer ones (a skewed batch, which the host cannot see) are cut, up to
///   one wave of CTA rows: 16 sequences with one of 13,963 tokens took 182 µs whole and 47 µs in
///   6 parts, at 4 warps.
/// - v8: a batch of very few sequences is cut into parts of one cluster ([`cluster_parts`]).
/// - v5: for longer sequences on average, fixed units sized to fill one wave.
fn auto_schedule(
    config: &GqaConfig,
    tuning: &Tuning,
    size: &ProblemSize,
    total_tokens: u64,
    wave_units: u64,
    sm_count: u32,
    max_cluster: u32,
) -> Schedule {
    let average = size.tokens_per_sequence(config.page_size);
    let whole_tokens = 256 * tuning.warps_per_cta;
    if average > whole_tokens as u64 {
        Schedule::FixedUnits { unit_tokens: long_unit_tokens(size, average, total_tokens, tuning, wave_units) }
    } else if let Some(parts) = cluster_parts(config, size, sm_count, max_cluster) {
        Schedule::Cluster { parts, min_part_tokens: CLUSTER_PART_TOKENS }
    } else {
        parts_to_fill(size, total_tokens, wave_units, whole_tokens)
    }
}

/// Fixed units for long sequences. Where whole pieces of a sequence are long, units follow
/// sequence boundaries: the average sequence cut into k units, k the largest power of two whose
/// units fit in one wave, so that a uniform batch never splits a unit between sequences. Where
/// they would be short, v5's units that fill one wave. Measured (NOTES.md, v8):
/// - 16 × 8,192 tokens: 64 units of 2,048 took 83.7 µs, 99 units of 1,328 took 87.7 µs;
/// - 128 × 4,096 tokens: one unit per sequence at 5 warps, 267 µs against 272 µs;
/// - but 16 × 1,307 tokens (h32/kv8): 256 CTAs of 654 tokens took 46.5 µs, where v6's 392 CTAs
///   of 432 tokens took 40.3 µs: with short units, more CTAs win over merges saved.
fn long_unit_tokens(size: &ProblemSize, average: u64, total_tokens: u64, tuning: &Tuning, wave_units: u64) -> u32 {
    let batch = size.batch_size.max(1) as u64;
    let warps = tuning.warps_per_cta as u64;
    let mut k = 1u64;
    while batch * k * 2 <= wave_units {
        k *= 2;
    }
    let aligned = average.div_ceil(k);
    let unit =
        if aligned >= ALIGNED_UNIT_TOKENS { aligned } else { total_tokens.div_ceil(wave_units).div_ceil(16) * 16 };
    unit.clamp(16 * warps, 8192) as u32
}

/// Least tokens of a unit that follows sequence boundaries ([`long_unit_tokens`]).
const ALIGNED_UNIT_TOKENS: u64 = 2048;

/// Least tokens per part when the parts of a sequence merge in a cluster.
pub const CLUSTER_PART_TOKENS: u32 = 128;

/// Parts per sequence (2 or more) when a batch is cut into clusters, from shapes alone, or None.
/// Measured on the H200 (NOTES.md, v8): one sequence of 362–546 tokens took 12.5–14.9 µs whole
/// and 11.2–12.0 µs in parts of 128 tokens or more in one cluster, parts of ~70 tokens lost
/// (141 tokens: 9.7 → 10.4 µs), and 16 sequences in clusters of 2–6 (128–384 CTAs) lost 1–6 µs to
/// whole sequences, as did the launch in clusters alone (+1.2 µs for the seed's 384 CTAs of which
/// 320 exit at once). So clusters are used only while all of them take at most a quarter of the
/// SMs, one CTA each.
pub fn cluster_parts(config: &GqaConfig, size: &ProblemSize, sm_count: u32, max_cluster: u32) -> Option<u32> {
    let rows = size.batch_size.max(1) as u64 * config.head_tiles() as u64;
    let room = (sm_count / 4) as u64 / rows;
    let useful = size.tokens_per_sequence(config.page_size) / CLUSTER_PART_TOKENS as u64;
    let parts = room.min(useful).min(max_cluster as u64) as u32;
    (parts >= 2).then_some(parts)
}

/// The per-sequence schedule with parts of at least `min_part_tokens`, and as many parts as one
/// wave of `wave_units` CTA rows holds, but no more than the batch's tokens could fill.
fn parts_to_fill(size: &ProblemSize, total_tokens: u64, wave_units: u64, min_part_tokens: u32) -> Schedule {
    let min_part_tokens = min_part_tokens.max(1);
    let fill = (wave_units / size.batch_size.max(1) as u64).max(1);
    let useful = total_tokens.div_ceil(min_part_tokens as u64).max(1);
    let max_parts = fill.min(useful).min(MAX_PARTS as u64) as u32;
    Schedule::PerSequence { max_parts, min_part_tokens }
}

/// Device addresses of one call's tensors, in the definitions' layouts:
/// q `[batch, num_qo_heads, head_dim]` bf16, k_cache / v_cache `[num_pages, page_size,
/// num_kv_heads, head_dim]` bf16, kv_indptr `[batch + 1]` i32, kv_indices `[num_kv_indices]`
/// i32, kv_last_page_len `[batch]` i32 (ignored, may be 0, when page_size is 1), output
/// `[batch, num_qo_heads, head_dim]` bf16, lse `[batch, num_qo_heads]` f32.
#[derive(Clone, Copy, Debug)]
pub struct GqaPointers {
    pub q: CUdeviceptr,
    pub k_cache: CUdeviceptr,
    pub v_cache: CUdeviceptr,
    pub kv_indptr: CUdeviceptr,
    pub kv_indices: CUdeviceptr,
    pub kv_last_page_len: CUdeviceptr,
    pub output: CUdeviceptr,
    pub lse: CUdeviceptr,
}

/// Scratch memory for split sequences: partial results and arrival counters. The counters
/// start at zero and every launch leaves them at zero, so one workspace serves any number of
/// launches (and graph replays) on one stream, for any problem its capacity covers.
pub struct Workspace {
    partial: CudaSlice<f32>,
    counters: CudaSlice<i32>,
}

impl Workspace {
    pub fn new(stream: &Arc<CudaStream>, plan: &LaunchPlan) -> Result<Workspace, KernelError> {
        // SAFETY: the partial buffer is written before it is read (the kernel reads a record
        // only after the warp that wrote it has counted its arrival).
        let partial = unsafe { stream.alloc::<f32>(plan.partial_floats.max(1))? };
        let counters = stream.alloc_zeros::<i32>(plan.counter_count.max(1))?;
        Ok(Workspace { partial, counters })
    }

    pub fn covers(&self, plan: &LaunchPlan) -> bool {
        self.partial.len() >= plan.partial_floats && self.counters.len() >= plan.counter_count
    }
}

/// The argument block the kernel takes by value (`struct Args` in the .cu file).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct KernelArgs {
    q: CUdeviceptr,
    k_cache: CUdeviceptr,
    v_cache: CUdeviceptr,
    kv_indptr: CUdeviceptr,
    kv_indices: CUdeviceptr,
    kv_last_page_len: CUdeviceptr,
    out: CUdeviceptr,
    lse: CUdeviceptr,
    partial: CUdeviceptr,
    counters: CUdeviceptr,
    scale_log2: f32,
    batch: i32,
    num_entries: i32,
    num_pages: i32,
    entries_per_unit: i32,
    num_units: i32,
    max_parts: i32,
}

// SAFETY: plain-old-data with the C layout of `struct Args`.
unsafe impl DeviceRepr for KernelArgs {}

/// NVRTC's PTX for one configuration and virtual architecture (e.g. `compute_90`); with
/// `cluster_merge` the build for [`Schedule::Cluster`] launches (sm_90), else one without any
/// cluster instruction. Needs libnvrtc at run time but no GPU.
pub fn compile(
    config: &GqaConfig,
    tuning: &Tuning,
    arch: &'static str,
    cluster_merge: bool,
) -> Result<Ptx, KernelError> {
    config.validate()?;
    tuning.validate()?;
    let name = format!(
        "gqa_paged_decode_h{}_kv{}_d{}_ps{}_w{}_s{}{}",
        config.num_qo_heads,
        config.num_kv_heads,
        config.head_dim,
        config.page_size,
        tuning.warps_per_cta,
        tuning.stages,
        if cluster_merge { "_cluster" } else { "" }
    );
    let options = CompileOptions {
        arch: Some(arch),
        options: vec![
            "-std=c++17".into(),
            format!("-DHEAD_DIM={}", config.head_dim),
            format!("-DPAGE_SIZE={}", config.page_size),
            format!("-DGROUP={}", config.group()),
            format!("-DNUM_KV_HEADS={}", config.num_kv_heads),
            format!("-DNSTAGE={}", tuning.stages),
            format!("-DWARPS={}", tuning.warps_per_cta),
            format!("-DCLUSTER_MERGE={}", u8::from(cluster_merge)),
        ],
        name: Some(format!("{name}.cu")),
        ..Default::default()
    };
    compile_ptx_with_opts(SOURCE, options).map_err(|e| KernelError::Compile { name, log: e.to_string() })
}

/// The configurations [`GqaPagedDecode::automatic`] compiles: 4 warps with 2 stages (3 CTAs per
/// SM), 8 warps with 3 stages (1 CTA per SM, four times the bytes in flight per CTA), and 5 warps
/// with 2 stages (2 CTAs per SM: other wave sizes for long sequences).
pub const AUTOMATIC_VARIANTS: [Tuning; 3] = [
    Tuning { warps_per_cta: 4, stages: 2, schedule: None },
    Tuning { warps_per_cta: 8, stages: 3, schedule: None },
    Tuning { warps_per_cta: 5, stages: 2, schedule: None },
];

/// Which of [`AUTOMATIC_VARIANTS`] serves a call, from shapes alone (`ctas_per_sm` gives each
/// variant's occupancy). Measured on the H200 (bench/gqa-paged-decode/NOTES.md):
/// - v7: when the batch leaves most SMs without a CTA (at most one CTA row per two SMs) and its
///   sequences are 384–2,048 tokens on average, each CTA must keep more bytes in flight, and 8
///   warps × 3 stages beat 4 × 2 by up to 25% (16 sequences of ~1,000–1,450 tokens: 25–33 µs →
///   20–25 µs); shorter sequences do not fill the deeper pipeline, and larger batches fill the
///   GPU with small CTAs already.
/// - v8: where the batch is cut into clusters ([`cluster_parts`]), the parts are short and 4 warps
///   × 2 stages win again (one sequence of 546 tokens in parts: 11.7 against 12.5 µs).
/// - v8: long sequences run in fixed units ([`long_unit_tokens`]); 5 warps win where their CTAs
///   fill the last wave clearly better: 128 × 4,096 tokens is 512 CTAs, 1.3 waves of 4 warps
///   (293 µs in units of 4,096, 272 µs in 99 units of 5,296) and 1.94 waves of 5 warps (267 µs).
pub fn automatic_tuning(
    config: &GqaConfig,
    size: &ProblemSize,
    sm_count: u32,
    max_cluster: u32,
    ctas_per_sm: impl Fn(&Tuning) -> u32,
) -> Tuning {
    let [small, deep, five] = AUTOMATIC_VARIANTS;
    let rows = size.batch_size as u64 * config.head_tiles() as u64;
    let average = size.tokens_per_sequence(config.page_size);
    if cluster_parts(config, size, sm_count, max_cluster).is_some() {
        return small;
    }
    if 2 * rows <= sm_count as u64 && (384..=2048).contains(&average) {
        return deep;
    }
    let long_for = |tuning: &Tuning| average > 256 * tuning.warps_per_cta as u64;
    if long_for(&small) && long_for(&five) {
        let fill = |tuning: &Tuning| last_wave_fill(config, size, tuning, sm_count, ctas_per_sm(tuning).max(1));
        // A clear margin: with both waves nearly full, 4 warps (v6: 16 × 1,307 tokens on kv8 in
        // 49 units at 4 warps, 40.3 µs) beat 5 (33 units, 46.5 µs in 32).
        if fill(&five) > fill(&small) + 0.1 {
            return five;
        }
    }
    small
}

/// The share of the CTA slots of its waves that a tuning's fixed-unit schedule fills.
fn last_wave_fill(config: &GqaConfig, size: &ProblemSize, tuning: &Tuning, sm_count: u32, ctas_per_sm: u32) -> f64 {
    let head_tiles = config.head_tiles() as u64;
    let slots = (ctas_per_sm * sm_count) as u64;
    let wave_units = (slots / head_tiles).max(1);
    let total = size.num_kv_indices as u64 * config.page_size as u64;
    let unit = long_unit_tokens(size, size.tokens_per_sequence(config.page_size), total, tuning, wave_units) as u64;
    let ctas = total.div_ceil(unit).max(1) * head_tiles;
    ctas as f64 / (ctas.div_ceil(slots) * slots) as f64
}

/// One compiled configuration of the kernel.
#[derive(Clone)]
struct Variant {
    tuning: Tuning,
    function: CudaFunction,
    /// The build for cluster launches, where the device has them.
    cluster_function: Option<CudaFunction>,
    ctas_per_sm: u32,
}

/// The kernel compiled for one [`GqaConfig`]: one [`Tuning`] ([`GqaPagedDecode::new`]), or the
/// measured set that [`automatic_tuning`] chooses from per call ([`GqaPagedDecode::automatic`]).
pub struct GqaPagedDecode {
    config: GqaConfig,
    variants: Vec<Variant>,
    schedule: Option<Schedule>,
    sm_count: u32,
    /// Largest cluster launched: [`MAX_CLUSTER`] on sm_90 and newer, else 1.
    max_cluster: u32,
}

impl GqaPagedDecode {
    /// Compiles the kernel with NVRTC for the context's device (compute capability 8.0 or
    /// newer: mma.sync bf16, ldmatrix and cp.async).
    pub fn new(ctx: &Arc<CudaContext>, config: GqaConfig, tuning: Tuning) -> Result<GqaPagedDecode, KernelError> {
        tuning.validate()?;
        Self::compiled(ctx, config, &[tuning], tuning.schedule)
    }

    /// Compiles every one of [`AUTOMATIC_VARIANTS`]; each call runs the one [`automatic_tuning`]
    /// picks, with the schedule [`plan_launch`] picks. What the runner's `native` implementation uses.
    pub fn automatic(ctx: &Arc<CudaContext>, config: GqaConfig) -> Result<GqaPagedDecode, KernelError> {
        Self::compiled(ctx, config, &AUTOMATIC_VARIANTS, None)
    }

    fn compiled(
        ctx: &Arc<CudaContext>,
        config: GqaConfig,
        tunings: &[Tuning],
        schedule: Option<Schedule>,
    ) -> Result<GqaPagedDecode, KernelError> {
        config.validate()?;
        let (major, minor) = ctx.compute_capability()?;
        let arch: &'static str = match (major, minor) {
            (8, 0) => "compute_80",
            (8, 6) => "compute_86",
            (8, 7) => "compute_87",
            (8, 9) => "compute_89",
            (9, 0) => "compute_90",
            (10, 0) => "compute_100",
            (12, 0) => "compute_120",
            (m, n) if m >= 8 => {
                return Err(KernelError::UnsupportedDevice(format!(
                    "compute capability {m}.{n} is not in the kernel's arch list"
                )));
            }
            (m, n) => return Err(KernelError::UnsupportedDevice(format!("compute capability {m}.{n} < 8.0"))),
        };
        let sm_count =
            ctx.attribute(cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32;
        let max_cluster = if major >= 9 { MAX_CLUSTER } else { 1 };
        let mut variants = Vec::with_capacity(tunings.len());
        for tuning in tunings {
            let tuning = Tuning { schedule: None, ..*tuning };
            tuning.validate()?;
            let shared = warp_shared_bytes(&config, &tuning) * tuning.warps_per_cta;
            let load = |cluster_merge: bool| -> Result<CudaFunction, KernelError> {
                let module = ctx.load_module(compile(&config, &tuning, arch, cluster_merge)?)?;
                let function = module.load_function(KERNEL_NAME)?;
                function.set_attribute(
                    CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    shared as i32,
                )?;
                Ok(function)
            };
            let function = load(false)?;
            let cluster_function = if max_cluster > 1 { Some(load(true)?) } else { None };
            let ctas_per_sm = function
                .occupancy_max_active_blocks_per_multiprocessor(32 * tuning.warps_per_cta, shared as usize, None)?
                .max(1);
            variants.push(Variant { tuning, function, cluster_function, ctas_per_sm });
        }
        Ok(GqaPagedDecode { config, variants, schedule, sm_count, max_cluster })
    }

    /// The same compiled kernel with another schedule (None: chosen per problem size).
    pub fn rescheduled(&self, schedule: Option<Schedule>) -> GqaPagedDecode {
        GqaPagedDecode { variants: self.variants.clone(), schedule, ..*self }
    }

    pub fn config(&self) -> &GqaConfig {
        &self.config
    }

    /// The compiled variant that serves `size`.
    fn variant(&self, size: &ProblemSize) -> &Variant {
        if let [only] = self.variants.as_slice() {
            return only;
        }
        let occupancy =
            |tuning: &Tuning| self.variants.iter().find(|v| v.tuning == *tuning).map_or(1, |v| v.ctas_per_sm);
        let chosen = automatic_tuning(&self.config, size, self.sm_count, self.max_cluster, occupancy);
        self.variants.iter().find(|v| v.tuning == chosen).unwrap_or(&self.variants[0])
    }

    /// The per-sequence schedule that fills one wave on this device, with parts of at least
    /// `min_part_tokens` (for benchmarks that compare schedules).
    pub fn parts_to_fill(&self, size: &ProblemSize, min_part_tokens: u32) -> Schedule {
        let variant = self.variant(size);
        let wave_units = (variant.ctas_per_sm * self.sm_count / self.config.head_tiles()).max(1) as u64;
        parts_to_fill(size, size.num_kv_indices as u64 * self.config.page_size as u64, wave_units, min_part_tokens)
    }

    /// The variant, schedule, grid and workspace of a call of this size.
    pub fn plan(&self, size: &ProblemSize) -> Result<LaunchPlan, KernelError> {
        let variant = self.variant(size);
        plan_launch(
            &self.config,
            &Tuning { schedule: self.schedule, ..variant.tuning },
            size,
            self.sm_count,
            variant.ctas_per_sm,
            self.max_cluster,
        )
    }

    /// A workspace large enough for `size`.
    pub fn workspace(&self, stream: &Arc<CudaStream>, size: &ProblemSize) -> Result<Workspace, KernelError> {
        Workspace::new(stream, &self.plan(size)?)
    }

    /// Enqueues one call on `stream`. Does not synchronize; may be captured in a graph.
    ///
    /// # Safety
    /// The pointers must address device buffers of the shapes [`GqaPointers`] lists for
    /// `size` and this kernel's [`GqaConfig`], live until the launch completes; kv_indptr must
    /// be non-decreasing with kv_indptr[batch] == num_kv_indices and every kv_indices entry
    /// below num_pages (the kernel clamps indices so that bad ones cannot read out of
    /// bounds, but then its results are undefined). One workspace must not be used by two
    /// launches that may run at the same time.
    pub unsafe fn launch(
        &self,
        stream: &CudaStream,
        pointers: &GqaPointers,
        sm_scale: f32,
        size: &ProblemSize,
        workspace: &Workspace,
    ) -> Result<(), KernelError> {
        let plan = self.plan(size)?;
        if size.batch_size == 0 {
            return Ok(());
        }
        if !workspace.covers(&plan) {
            return Err(KernelError::InvalidSize(format!(
                "workspace holds {} partial floats and {} counters; this call needs {} and {}",
                workspace.partial.len(),
                workspace.counters.len(),
                plan.partial_floats,
                plan.counter_count
            )));
        }
        if !sm_scale.is_finite() {
            return Err(KernelError::InvalidSize(format!("sm_scale {sm_scale} is not finite")));
        }
        if self.config.page_size > 1 && pointers.kv_last_page_len == 0 {
            return Err(KernelError::InvalidSize("page_size > 1 needs kv_last_page_len".into()));
        }
        let (partial, _p) = cudarc::driver::DevicePtr::device_ptr(&workspace.partial, stream);
        let (counters, _c) = cudarc::driver::DevicePtr::device_ptr(&workspace.counters, stream);
        let args = KernelArgs {
            q: pointers.q,
            k_cache: pointers.k_cache,
            v_cache: pointers.v_cache,
            kv_indptr: pointers.kv_indptr,
            kv_indices: pointers.kv_indices,
            kv_last_page_len: pointers.kv_last_page_len,
            out: pointers.output,
            lse: pointers.lse,
            partial,
            counters,
            scale_log2: sm_scale * std::f32::consts::LOG2_E,
            batch: size.batch_size as i32,
            num_entries: size.num_kv_indices as i32,
            num_pages: size.num_pages as i32,
            entries_per_unit: plan.entries_per_unit as i32,
            num_units: plan.num_units as i32,
            max_parts: match plan.schedule {
                Schedule::PerSequence { max_parts, .. } | Schedule::Cluster { parts: max_parts, .. } => {
                    max_parts as i32
                }
                Schedule::FixedUnits { .. } => 0,
            },
        };
        let variant = self.variant(size);
        if plan.cluster > 1 {
            // plan_launch allows clusters only where the device has them, and then every variant
            // has its cluster build.
            let function = variant
                .cluster_function
                .as_ref()
                .ok_or_else(|| KernelError::InvalidConfig("no cluster build of this kernel".into()))?;
            // SAFETY: as below; the cluster is the grid's z (a sequence's parts).
            return unsafe { launch_in_clusters(stream, function, &plan, &args) };
        }
        let function = &variant.function;
        let config = LaunchConfig { grid_dim: plan.grid, block_dim: plan.block, shared_mem_bytes: plan.shared_bytes };
        // SAFETY: the argument block matches the kernel's signature; the caller vouches for
        // the buffers (see above).
        unsafe { stream.launch_builder(function).arg(&args).launch(config)? };
        Ok(())
    }
}

/// cudarc's launch builder sets no launch attributes, so a cluster launch goes to the driver's
/// `cuLaunchKernelEx` with the cluster dimension attribute.
///
/// # Safety
/// `args` must match the kernel's parameters and address live buffers.
unsafe fn launch_in_clusters(
    stream: &CudaStream,
    function: &CudaFunction,
    plan: &LaunchPlan,
    args: &KernelArgs,
) -> Result<(), KernelError> {
    use cudarc::driver::sys;
    stream.context().bind_to_thread()?;
    // SAFETY: a plain C struct and union for which all-zero bytes are valid.
    let mut attribute: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
    attribute.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attribute.value.clusterDim.x = 1;
    attribute.value.clusterDim.y = 1;
    attribute.value.clusterDim.z = plan.cluster;
    let config = sys::CUlaunchConfig {
        gridDimX: plan.grid.0,
        gridDimY: plan.grid.1,
        gridDimZ: plan.grid.2,
        blockDimX: plan.block.0,
        blockDimY: plan.block.1,
        blockDimZ: plan.block.2,
        sharedMemBytes: plan.shared_bytes,
        hStream: stream.cu_stream(),
        attrs: &mut attribute,
        numAttrs: 1,
    };
    let mut params = [args as *const KernelArgs as *mut std::ffi::c_void];
    // SAFETY: the configuration and parameter array outlive the call, which copies them.
    unsafe {
        sys::cuLaunchKernelEx(&config, function.cu_function(), params.as_mut_ptr(), std::ptr::null_mut()).result()?
    };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h32kv4(page_size: u32) -> GqaConfig {
        GqaConfig { num_qo_heads: 32, num_kv_heads: 4, head_dim: 128, page_size }
    }

    #[test]
    fn reads_every_definition_name_in_shared() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/flashinfer-trace-samples/flashinfer_trace/definitions/gqa_paged");
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
        assert_eq!(seen, 17, "the family has 17 definitions in ../shared");
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
            Schedule::FixedUnits { unit_tokens: 0 },
            Schedule::PerSequence { max_parts: 0, min_part_tokens: 64 },
            Schedule::PerSequence { max_parts: MAX_PARTS + 1, min_part_tokens: 64 },
            Schedule::PerSequence { max_parts: 4, min_part_tokens: 0 },
        ] {
            assert!(Tuning { schedule: Some(schedule), ..Tuning::default() }.validate().is_err(), "{schedule:?}");
        }
    }

    #[test]
    fn plan_covers_every_entry_once() {
        let config = h32kv4(1);
        // 132 SMs × 3 CTAs ÷ 4 head tiles = 99 CTA rows in one wave.
        for (batch, total) in [
            (1u32, 7u32),
            (1, 546),
            (16, 1020),
            (16, 15463),
            (64, 61519),
            (128, 128 * 4096),
            (300, 300 * 2000),
            (1, 150_000),
            (3, 0),
        ] {
            let size = ProblemSize { batch_size: batch, num_pages: total.max(1), num_kv_indices: total };
            let plan = plan_launch(&config, &Tuning::default(), &size, 132, 3, 1).unwrap();
            assert_eq!(plan.counter_count, (batch as usize * 4).max(1));
            match plan.schedule {
                Schedule::PerSequence { max_parts, min_part_tokens } => {
                    // Short sequences on average stay whole; parts only for longer ones.
                    assert!(total <= batch * 1024, "{batch}x{total}");
                    assert_eq!(min_part_tokens, 1024);
                    assert_eq!(plan.num_units, batch * max_parts);
                    // Sequences along x, parts along z (the slowest, so first parts go first).
                    assert_eq!(plan.grid, (batch, 4, max_parts));
                    // At most one wave of CTA rows (or one per sequence), and no more parts than
                    // the batch's tokens could fill.
                    assert!(
                        max_parts == 1 || (plan.num_units <= 99 && (max_parts - 1) * 1024 < total),
                        "{batch}x{total}: {plan:?}"
                    );
                    let records = if max_parts == 1 { 0 } else { plan.num_units as usize * 4 };
                    assert_eq!(plan.partial_floats, records * (16 * 128 + 32));
                }
                Schedule::Cluster { .. } => panic!("{batch}x{total}: no clusters on a device without them"),
                Schedule::FixedUnits { .. } => {
                    assert!(total > batch * 1024, "{batch}x{total}");
                    assert_eq!(plan.grid, (plan.num_units, 4, 1));
                    // Units tile [0, total) with none left over, and there is always one unit
                    // (it writes the empty sequences).
                    assert!(plan.num_units as u64 * plan.entries_per_unit as u64 >= total as u64);
                    assert!(total == 0 || ((plan.num_units - 1) as u64 * plan.entries_per_unit as u64) < total as u64);
                    assert!(plan.num_units >= 1);
                    // An average sequence is cut into at most 64 units (the merge reads each piece).
                    assert!(total.div_ceil(batch).div_ceil(plan.entries_per_unit) <= 64, "{batch}x{total}: {plan:?}");
                }
            }
        }
        let plan = |batch, total| {
            plan_launch(
                &config,
                &Tuning::default(),
                &ProblemSize { batch_size: batch, num_pages: total, num_kv_indices: total },
                132,
                3,
                1,
            )
            .unwrap()
        };
        // The seed's 16 short sequences stay whole and never merge.
        assert_eq!(plan(16, 1020).schedule, Schedule::PerSequence { max_parts: 1, min_part_tokens: 1024 });
        // 16 sequences of ~1,000 tokens: a sequence longer than 1,024 (skew) may take 6 parts.
        assert_eq!(plan(16, 15463).schedule, Schedule::PerSequence { max_parts: 6, min_part_tokens: 1024 });
        assert!(matches!(plan(128, 1 << 19).schedule, Schedule::FixedUnits { .. }));
    }

    #[test]
    fn on_sm90_a_batch_of_few_sequences_is_cut_into_clusters() {
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
        // Parts are at least 128 tokens: 141 tokens stay whole.
        assert_eq!(plan(1, 141, None, MAX_CLUSTER).unwrap().cluster, 1);
        // Clusters take at most a quarter of the SMs (33 CTAs): 8 sequences no longer fit two each.
        assert_eq!(
            plan(4, 4 * 546, None, MAX_CLUSTER).unwrap().schedule,
            Schedule::Cluster { parts: 2, min_part_tokens: 128 }
        );
        assert_eq!(plan(8, 8 * 546, None, MAX_CLUSTER).unwrap().cluster, 1);
        // Without clusters, or with 16 sequences: v7's rule, sequences up to 1,024 tokens stay whole.
        assert_eq!(
            plan(1, 546, None, 1).unwrap().schedule,
            Schedule::PerSequence { max_parts: 1, min_part_tokens: 1024 }
        );
        let sixteen = plan(16, 15463, None, MAX_CLUSTER).unwrap();
        assert_eq!(
            (sixteen.schedule, sixteen.cluster),
            (Schedule::PerSequence { max_parts: 6, min_part_tokens: 1024 }, 1)
        );
        assert_eq!(sixteen.partial_floats, 96 * 4 * (16 * 128 + 32));
        // An explicit cluster beyond the device's limit is refused by name.
        let cluster = Some(Schedule::Cluster { parts: 4, min_part_tokens: 16 });
        assert_eq!(plan(2, 100, cluster, MAX_CLUSTER).unwrap().grid, (2, 4, 4));
        let err = plan(2, 100, cluster, 1).unwrap_err();
        assert!(err.to_string().contains("a cluster of 4 CTAs"), "{err}");
        assert!(
            Tuning {
                schedule: Some(Schedule::Cluster { parts: MAX_CLUSTER + 1, min_part_tokens: 16 }),
                ..Tuning::default()
            }
            .validate()
            .is_err()
        );
        assert!(
            Tuning { schedule: Some(Schedule::Cluster { parts: 1, min_part_tokens: 16 }), ..Tuning::default() }
                .validate()
                .is_err()
        );
        // Long sequences on average keep fixed units.
        assert!(matches!(plan(128, 1 << 19, None, MAX_CLUSTER).unwrap().schedule, Schedule::FixedUnits { .. }));
    }

    #[test]
    fn long_units_follow_sequences_only_where_they_are_long() {
        let unit = |config: &GqaConfig, batch: u32, total: u32| {
            let size = ProblemSize { batch_size: batch, num_pages: total, num_kv_indices: total };
            match plan_launch(config, &Tuning::default(), &size, 132, 3, MAX_CLUSTER).unwrap().schedule {
                Schedule::FixedUnits { unit_tokens } => unit_tokens,
                other => panic!("{batch}x{total}: {other:?}"),
            }
        };
        let kv4 = h32kv4(1);
        let kv8 = GqaConfig { num_kv_heads: 8, ..kv4 };
        // One wave of 4-warp CTAs holds 99 rows of 4 head tiles, or 49 of 8.
        assert_eq!(unit(&kv4, 128, 128 * 4096), 4096); // one unit per sequence
        assert_eq!(unit(&kv4, 16, 16 * 8192), 2048); // a quarter of each sequence
        // 16 × 1,307 tokens on kv8: halves would be 654 tokens, too short; units that fill the wave.
        assert_eq!(unit(&kv8, 16, 20911), 432);
    }

    #[test]
    fn automatic_tuning_deepens_the_pipeline_only_for_few_long_sequences() {
        let config = h32kv4(1);
        // CTAs per SM by shared memory on the H200, as the driver reports them.
        let occupancy = |tuning: &Tuning| match tuning.warps_per_cta {
            4 => 3,
            5 => 2,
            _ => 1,
        };
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
        // Long sequences: units of 4,096 tokens fill 1.94 waves of 5 warps and 1.29 of 4.
        assert_eq!(pick(128, 128 * 4096), five);
        assert_eq!(pick(16, 16 * 8192), five); // 256 CTAs: 0.97 of a wave of 5 warps, 0.65 of 4
        assert_eq!(pick(99, 99 * 4096), small); // 396 CTAs: one wave of 4 warps
        // 16 × 1,307 tokens on kv8: both waves nearly full (392 of 396, 264 of 264): 4 warps.
        let kv8 = GqaConfig { num_kv_heads: 8, ..config };
        assert_eq!(
            automatic_tuning(
                &kv8,
                &ProblemSize { batch_size: 16, num_pages: 20911, num_kv_indices: 20911 },
                132,
                MAX_CLUSTER,
                occupancy
            ),
            small
        );
        assert_eq!(pick(1, 546), deep);
        assert_eq!(pick_on(1, 546, MAX_CLUSTER), small); // cut into 5 parts of one cluster
        assert_eq!(pick_on(16, 15463, MAX_CLUSTER), deep);
        assert_eq!(pick(1, 252), small);
        assert_eq!(pick(64, 61519), small); // 256 CTAs fill the GPU already
        assert_eq!(pick(0, 0), small);
        // Every automatic variant fits in shared memory for every configuration of the family.
        for variant in AUTOMATIC_VARIANTS {
            for head_dim in [64, 128] {
                let config = GqaConfig { head_dim, ..config };
                assert!(
                    plan_launch(
                        &config,
                        &variant,
                        &ProblemSize { batch_size: 1, num_pages: 1, num_kv_indices: 1 },
                        132,
                        1,
                        8
                    )
                    .is_ok()
                );
            }
        }
    }

    #[test]
    fn plan_scales_pages_and_bounds() {
        let plan = plan_launch(
            &h32kv4(64),
            &Tuning::default(),
            &ProblemSize { batch_size: 8, num_pages: 100, num_kv_indices: 64 },
            132,
            3,
            1,
        )
        .unwrap();
        assert!(plan.entries_per_unit >= 1);
        let fixed = Tuning { schedule: Some(Schedule::FixedUnits { unit_tokens: 256 }), ..Tuning::default() };
        let plan = plan_launch(
            &h32kv4(64),
            &fixed,
            &ProblemSize { batch_size: 8, num_pages: 100, num_kv_indices: 64 },
            132,
            3,
            1,
        )
        .unwrap();
        assert_eq!(plan.entries_per_unit, 4);
        assert_eq!(plan.num_units, 16);
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
    }
}
