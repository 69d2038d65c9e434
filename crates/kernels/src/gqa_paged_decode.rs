//! Batched GQA decode attention over a paged KV cache, for every `gqa_paged_decode_*`
//! definition of FlashInfer-Bench: any query/KV head grouping, head_dim 64 or 128, any page
//! size (with `kv_last_page_len` when it is above 1), bf16 in, fp32 accumulation, bf16 output,
//! lse in base 2.
//!
//! One launch per call, no host synchronization, and nothing read from device memory on the
//! host: the launch geometry depends only on shapes ([`ProblemSize`]), and every CTA plans the
//! batch from `kv_indptr` on the device ([`plan_items`] is that plan, in Rust, for the tests), so
//! a call can be captured in a CUDA graph and is balanced whatever the sequences' lengths.
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
/// Entries of kv_indices that the kernel copies whole into shared memory (`IDX_CACHE` in the .cu
/// file), so that a short batch's page ids need no dependent load.
pub const IDX_CACHE_ENTRIES: u32 = 2048;

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
    /// Warps per CTA; they share the CTA's piece tile by tile.
    pub warps_per_cta: u32,
    /// cp.async pipeline depth per warp, in 16-token tiles.
    pub stages: u32,
    /// How work is cut into CTAs; None lets [`plan_launch`] choose from the problem size.
    pub schedule: Option<Schedule>,
}

/// How the kernel cuts a batch into CTAs (one per head tile and piece).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Schedule {
    /// The device plan of [`plan_items`]: each sequence in ceil(tokens ÷ `chunk_tokens`) equal
    /// parts (one when shorter), largest items first; split sequences merge through global
    /// records. `u32::MAX` keeps every sequence whole.
    Balanced { chunk_tokens: u32 },
    /// Each sequence in min(`parts`, max(1, ⌊tokens ÷ `min_part_tokens`⌋)) equal parts, the parts
    /// of a sequence one thread-block cluster of `parts` CTAs (2..=[`MAX_CLUSTER`]) that merges in
    /// distributed shared memory (sm_90).
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
            Some(Schedule::Balanced { chunk_tokens: 0 }) => {
                Err(KernelError::InvalidConfig("chunk_tokens must be positive".into()))
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

    /// 16-token tiles this tuning keeps in flight per CTA (every warp NSTAGE − 1 ahead).
    fn tiles_in_flight(&self) -> u64 {
        self.warps_per_cta as u64 * (self.stages as u64 - 1)
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
    /// Balanced: most kv_indices entries (pages) per item; clusters: least per part.
    pub chunk_entries: u32,
    /// Balanced: the most items any batch of these shapes can have (CTA rows launched; rows past
    /// the batch's own count exit at once). Clusters: batch × parts.
    pub items: u32,
    /// CTAs per thread-block cluster along z (1: no clusters): the parts of one sequence, which
    /// then merge in distributed shared memory instead of through global records.
    pub cluster: u32,
    pub grid: (u32, u32, u32),
    pub block: (u32, u32, u32),
    pub shared_bytes: u32,
    /// kv_indices is copied whole into shared memory (at most [`IDX_CACHE_ENTRIES`]).
    pub cache_indices: bool,
    /// f32 elements of the partial-result buffer.
    pub partial_floats: usize,
    /// i32 arrival counters (zero between launches).
    pub counter_count: usize,
}

/// Shared memory one warp uses: `stages` tiles of 16 rows of K and of V.
fn warp_shared_bytes(config: &GqaConfig, tuning: &Tuning) -> u32 {
    tuning.stages * 2 * 16 * config.head_dim * 2 + tuning.stages * 16 * 4
}

/// Chooses the schedule (the tuning's, or [`auto_schedule`]'s) and the grid and workspace that
/// follow. `ctas_per_sm` is how many CTAs of this kernel an SM holds at once (the driver's
/// occupancy); `max_cluster` the largest cluster the device launches (1 before sm_90).
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
    let cache_indices = size.num_kv_indices <= IDX_CACHE_ENTRIES;
    let cache_bytes = if cache_indices { (size.num_kv_indices * 4).div_ceil(16) * 16 } else { 0 };
    let shared_bytes = warp_shared_bytes(config, tuning) * tuning.warps_per_cta + cache_bytes;
    if shared_bytes > MAX_SMEM_PER_CTA {
        return Err(KernelError::InvalidConfig(format!(
            "{} warps × {} stages need {shared_bytes} bytes of shared memory, over {MAX_SMEM_PER_CTA}",
            tuning.warps_per_cta, tuning.stages
        )));
    }
    let head_tiles = config.head_tiles();
    // One wave: as many CTA rows (all head tiles each) as can be resident at once.
    let wave_rows = (ctas_per_sm * sm_count / head_tiles).max(1) as u64;
    let schedule = match tuning.schedule {
        Some(schedule) => schedule,
        None => auto_schedule(config, tuning, size, wave_rows, sm_count, max_cluster),
    };
    let record_floats = 16 * config.head_dim as usize + 32;
    let batch = size.batch_size as u64;
    let (chunk_entries, items, cluster, grid, records) = match schedule {
        Schedule::Balanced { chunk_tokens } => {
            let chunk = (chunk_tokens as u64)
                .div_ceil(config.page_size as u64)
                .max((size.num_kv_indices as u64).div_ceil(MAX_PARTS_PER_SEQUENCE))
                .clamp(1, i32::MAX as u64);
            // Σ max(1, ⌈n_b ÷ chunk⌉) ≤ batch + ⌊Σ n_b ÷ chunk⌋.
            let items = (batch + size.num_kv_indices as u64 / chunk).max(1);
            let ctas = items * head_tiles as u64;
            if ctas > i32::MAX as u64 {
                return Err(KernelError::InvalidSize(format!("{items} items × {head_tiles} head tiles exceed int32")));
            }
            // A sequence can be split only when it can be longer than a chunk.
            let records = if (size.num_kv_indices as u64) > chunk { items as usize } else { 0 };
            (chunk as u32, items as u32, 1, (ctas as u32, 1, 1), records)
        }
        Schedule::Cluster { parts, min_part_tokens } => {
            if parts > max_cluster {
                return Err(KernelError::InvalidConfig(format!(
                    "a cluster of {parts} CTAs; this device launches at most {max_cluster}"
                )));
            }
            let rows = batch * parts as u64;
            if rows > i32::MAX as u64 {
                return Err(KernelError::InvalidSize(format!("batch {batch} × {parts} parts exceed int32")));
            }
            let chunk = min_part_tokens.div_ceil(config.page_size).max(1);
            // Parts are the grid's slowest dimension: every first part is dispatched before any
            // other (v8: 16 short sequences with 6 rows each, 5 exiting at once, took 16.2 µs
            // against 14.2 µs whole when the rows of a sequence were adjacent).
            (chunk, rows as u32, parts, (size.batch_size, head_tiles, parts), 0)
        }
    };
    Ok(LaunchPlan {
        warps_per_cta: tuning.warps_per_cta,
        stages: tuning.stages,
        schedule,
        chunk_entries,
        items,
        cluster,
        grid,
        block: (32 * tuning.warps_per_cta, 1, 1),
        shared_bytes,
        cache_indices,
        partial_floats: records * head_tiles as usize * record_floats,
        counter_count: (size.batch_size as usize * head_tiles as usize).max(1),
    })
}

/// 16-token tiles in flight across the GPU that keep memory busy: the saturation point the
/// balanced plan fills to when the batch alone leaves it short. Measured on the H200 (NOTES.md):
/// 16 × 1,307 tokens on kv8 ran 40.3 µs in 392 CTAs of 4 warps (1,568 tiles in flight) and
/// 46.5 µs in 256 (1,024), while 16 × 966 on kv4 ran fastest as 64 whole sequences of 8 warps ×
/// 3 stages (1,024) and 64 × 450–960 as 256 whole sequences of 4 warps (1,024).
pub const SATURATION_TILES: u64 = 1600;
/// Least tokens of a part cut to fill the GPU: shorter parts merge for less than they save
/// (v7: 16 × 132 tokens in two parts each took 14.4 µs, whole 10.1 µs).
pub const FILL_PART_TOKENS: u64 = 384;
/// Least tokens of a part cut from a long sequence, per warp of the CTA: a merge costs about what
/// streaming five more tiles per warp does (v9 sweep, 2026-12-01: the seed's axes with realistic
/// lengths took 10.0 µs per call with its 224-token sequence in two parts, 7.9 µs whole).
pub const MIN_PART_TOKENS_PER_WARP: u64 = 80;
/// Most parts of one sequence: the kernel's arrival counter holds tickets in 16 bits.
pub const MAX_PARTS_PER_SEQUENCE: u64 = 32_767;
/// Sequences stay whole up to this many times the average length (numerator / denominator), so
/// that a uniform batch never splits for balance and a skewed one cuts its long sequences down
/// near the rest.
pub const SKEW_NUM: u64 = 1;
pub const SKEW_DEN: u64 = 1;

/// The chunk of [`Schedule::Balanced`] from shapes alone (`wave_rows` CTA rows are resident at
/// once). Sequences longer than 1.5 × the average are cut ("skew"). When the batch gives fewer
/// CTA rows than keep memory busy ([`SATURATION_TILES`]) and parts that fill up to it would be at
/// least [`FILL_PART_TOKENS`], the chunk is the smaller of those parts and the skew cut; past one
/// wave, no item is longer than an even share of the wave.
pub fn balanced_chunk_tokens(config: &GqaConfig, tuning: &Tuning, size: &ProblemSize, wave_rows: u64) -> u32 {
    let batch = size.batch_size.max(1) as u64;
    let total = (size.num_kv_indices as u64 * config.page_size as u64).max(1);
    let wave_rows = wave_rows.max(1);
    let skew =
        (total * SKEW_NUM).div_ceil(batch * SKEW_DEN).max(MIN_PART_TOKENS_PER_WARP * tuning.warps_per_cta as u64);
    let target_rows = (SATURATION_TILES / (tuning.tiles_in_flight() * config.head_tiles() as u64)).clamp(1, wave_rows);
    let chunk = if batch < target_rows {
        let fill = total.div_ceil(target_rows - batch);
        if fill >= FILL_PART_TOKENS { fill.min(skew) } else { skew }
    } else {
        skew.max(total.div_ceil(wave_rows))
    };
    chunk.min(u32::MAX as u64) as u32
}

/// The schedule [`plan_launch`] chooses from shapes alone: clusters for a batch of very few short
/// sequences ([`cluster_parts`]), else the balanced plan with [`balanced_chunk_tokens`].
fn auto_schedule(
    config: &GqaConfig,
    tuning: &Tuning,
    size: &ProblemSize,
    wave_rows: u64,
    sm_count: u32,
    max_cluster: u32,
) -> Schedule {
    match cluster_parts(config, size, sm_count, max_cluster) {
        Some(parts) => Schedule::Cluster { parts, min_part_tokens: CLUSTER_PART_TOKENS },
        None => Schedule::Balanced { chunk_tokens: balanced_chunk_tokens(config, tuning, size, wave_rows) },
    }
}

/// Least tokens per part when the parts of a sequence merge in a cluster.
pub const CLUSTER_PART_TOKENS: u32 = 128;

/// Parts per sequence (2 or more) when a batch is cut into clusters, from shapes alone, or None.
/// Measured on the H200 (NOTES.md, v8): one sequence of 362–546 tokens took 12.5–14.9 µs whole
/// and 11.2–12.0 µs in parts of 128 tokens or more in one cluster, parts of ~70 tokens lost
/// (141 tokens: 9.7 → 10.4 µs), and 16 sequences in clusters of 2–6 (128–384 CTAs) lost 1–6 µs to
/// whole sequences, as did the launch in clusters alone (+1.2 µs for the seed's 384 CTAs of which
/// 320 exit at once). So clusters are used only while all of them take at most a quarter of the
/// SMs, one CTA each, and only for short sequences (at most 2,048 tokens on average: a longer one
/// wants more CTAs than a cluster has).
pub fn cluster_parts(config: &GqaConfig, size: &ProblemSize, sm_count: u32, max_cluster: u32) -> Option<u32> {
    let rows = size.batch_size.max(1) as u64 * config.head_tiles() as u64;
    let room = (sm_count / 4) as u64 / rows;
    let average = size.tokens_per_sequence(config.page_size);
    let useful = average / CLUSTER_PART_TOKENS as u64;
    let parts = room.min(useful).min(max_cluster as u64) as u32;
    (parts >= 2 && average <= 2048).then_some(parts)
}

/// One work item of the balanced plan (the kernel's `find_item`, in Rust).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlannedItem {
    pub sequence: usize,
    pub part: u64,
    pub parts: u64,
    /// Entries of the sequence this item covers: [first_entry, end_entry), relative to the
    /// sequence's start.
    pub first_entry: u64,
    pub end_entry: u64,
    /// The item number of the sequence's part 0; its partial record is `record + part`.
    pub record: u64,
}

/// Items of a sequence of `entries` entries: one for an empty or short one, else ⌈entries ÷ chunk⌉.
pub fn items_of(entries: u64, chunk: u64) -> u64 {
    if entries <= chunk { 1 } else { entries.div_ceil(chunk) }
}

/// The size class of a sequence's items (0 = largest): entries per item against chunk ÷ 2, ÷ 4, ÷ 8.
pub fn class_of(entries: u64, items: u64, chunk: u64) -> usize {
    let whole = chunk as u128 * items as u128;
    let n = entries as u128;
    if 2 * n > whole {
        0
    } else if 4 * n > whole {
        1
    } else if 8 * n > whole {
        2
    } else {
        3
    }
}

/// The balanced plan for sequences of `entries` each (kv_indptr differences) and a chunk, in item
/// order: the items of class 0, then 1, 2, 3, each in sequence order; item i is CTA row i.
pub fn plan_items(entries: &[u64], chunk: u64) -> Vec<PlannedItem> {
    let chunk = chunk.max(1);
    let mut items = Vec::new();
    for class in 0..4 {
        for (sequence, &n) in entries.iter().enumerate() {
            let parts = items_of(n, chunk);
            if class_of(n, parts, chunk) != class {
                continue;
            }
            let record = items.len() as u64;
            for part in 0..parts {
                let first_entry = (n as u128 * part as u128 / parts as u128) as u64;
                let end_entry = (n as u128 * (part + 1) as u128 / parts as u128) as u64;
                items.push(PlannedItem { sequence, part, parts, first_entry, end_entry, record });
            }
        }
    }
    items
}

/// When the last of `work` (units of time per item, in dispatch order) finishes on `slots`
/// processors that each take the next item as they become free: how the hardware runs a grid of
/// more CTAs than are resident. For tests of the plan's balance.
pub fn list_schedule_makespan(work: &[u64], slots: usize) -> u64 {
    let mut free = std::collections::BinaryHeap::new();
    for _ in 0..slots.max(1) {
        free.push(std::cmp::Reverse(0u64));
    }
    let mut end = 0;
    for &w in work {
        let std::cmp::Reverse(at) = free.pop().unwrap();
        end = end.max(at + w);
        free.push(std::cmp::Reverse(at + w));
    }
    end
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
    chunk: i32,
    cluster_parts: i32,
    cache_indices: i32,
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
/// - v8: for long sequences 5 warps win where their CTAs fill the last wave clearly better:
///   128 × 4,096 tokens is 512 CTAs, 1.3 waves of 4 warps (293 µs whole, 272 µs in 99 units of
///   5,296) and 1.94 waves of 5 warps (267 µs). The fill is that of the balanced plan on a uniform
///   batch of these shapes ([`last_wave_fill`]).
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

/// The share of the CTA slots of its waves that a tuning's balanced plan fills on a uniform batch
/// of these shapes.
fn last_wave_fill(config: &GqaConfig, size: &ProblemSize, tuning: &Tuning, sm_count: u32, ctas_per_sm: u32) -> f64 {
    let head_tiles = config.head_tiles() as u64;
    let slots = (ctas_per_sm * sm_count) as u64;
    let wave_rows = (slots / head_tiles).max(1);
    let chunk = balanced_chunk_tokens(config, tuning, size, wave_rows) as u64;
    let items = size.batch_size.max(1) as u64 * items_of(size.tokens_per_sequence(config.page_size), chunk);
    let ctas = items * head_tiles;
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
                // Room for the shared copy of a short kv_indices too.
                function.set_attribute(
                    CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    (shared + IDX_CACHE_ENTRIES * 4).min(MAX_SMEM_PER_CTA) as i32,
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

    /// CTA rows of `size`'s variant resident at once on this device (for benchmarks that choose
    /// chunks themselves).
    pub fn wave_rows(&self, size: &ProblemSize) -> u64 {
        let variant = self.variant(size);
        (variant.ctas_per_sm * self.sm_count / self.config.head_tiles()).max(1) as u64
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
            chunk: plan.chunk_entries as i32,
            cluster_parts: match plan.schedule {
                Schedule::Cluster { parts, .. } => parts as i32,
                Schedule::Balanced { .. } => 0,
            },
            // The copy into shared memory moves 16 bytes at a time.
            cache_indices: i32::from(plan.cache_indices && pointers.kv_indices.is_multiple_of(16)),
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

// The tests live in their own file so that editing them does not change the kernel revision
// (the digest of this file and the CUDA source) that every published run names.
#[cfg(test)]
mod tests;
