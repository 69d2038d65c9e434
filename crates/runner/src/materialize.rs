//! Materialization: turning a workload (a FlashInfer-Bench WorkloadCase line: axes plus one source
//! per input) into concrete input tensors.
//!
//! # Random generator (documented so that anyone can regenerate the same tensors)
//!
//! * Every random tensor has its own 64-bit seed: the first 8 bytes, read little-endian, of
//!   `sha256(seed as 8 little-endian bytes ‖ UTF-8 tensor name)`.
//! * Its stream is SplitMix64 (Steele, Lea, Flood 2014; Java's `SplittableRandom`): draw i (from 0) is
//!   `mix(seed + (i + 1)·0x9E3779B97F4A7C15)` with `mix(z) = z ^= z >> 30; z *= 0xBF58476D1CE4E5B9;
//!   z ^= z >> 27; z *= 0x94D049BB133111EB; z ^ (z >> 31)` (wrapping arithmetic). Being a counter of
//!   draws, the stream is computed in parallel chunks with the same result as in sequence.
//! * Floats: standard normal by Box–Muller on draw pairs (2k, 2k+1): u1 = ((d₂ₖ >> 11) + 1)·2⁻⁵³ in
//!   (0, 1], u2 = (d₂ₖ₊₁ >> 11)·2⁻⁵³, r = √(−2 ln u1); element 2k = r·cos(2πu2), element 2k+1 =
//!   r·sin(2πu2), computed in f64, rounded to f32, then (for bf16) to bf16 to nearest, ties to even.
//!   This is the distribution `torch.randn` draws from, not its bit stream: torch's Philox / MT19937
//!   streams are not reproducible without torch, so the tensors differ from torch's for the same seed.
//! * Integers: uniform in [low, high) by Lemire's multiply-shift, `low + ((dᵢ · (high − low)) >> 64)`.
//!
//! # Page tables (FlashInfer-Bench workloads whose index blobs are not available)
//!
//! The h32 page-size-1 workloads name `kv_indptr` / `kv_indices` in safetensors blobs that were never
//! published. [`synthesize_page_table`] stands in for them under a named [`LengthRule`], and every rule
//! honours the axes exactly: `batch_size` sequences whose page counts sum to `num_kv_indices`, every
//! page id below `num_pages`. All draws come from one SplitMix64 stream, that of the tensor name
//! "page_table" under the run's seed (so a new trial gets a new table), in the order given below.
//!
//! Sequence lengths (in pages; "share" means apportioned by the largest-remainder rule below):
//!
//! * `realistic` (the default): the shape of the one real decode batch we have, the FlashInfer-Bench
//!   capture `decode_paged_004a271b…` (Llama-3.1-8B, h32/kv8, page size 1: 64 sequences of 395–3,058
//!   tokens, 51,670 in all; [`CAPTURE_LENGTHS`]). Its 64 lengths, sorted, are an empirical quantile
//!   function Q(u) = sorted[⌊64u⌋]. Sequence k of a batch of B draws u = (k + v)/B with v uniform in
//!   [0, 1) (draw k: `(d >> 11)·2⁻⁵³`), stratified so that every batch spans the whole shape (at
//!   B = 64 it is the capture's lengths exactly), and the B values are then shuffled over the sequence
//!   positions (Fisher–Yates from the last position down, j = `below(i + 1)`). The pages are shared in
//!   proportion to these weights.
//! * `uniform`: the even split (the rule before realistic lengths): the first `num_kv_indices mod
//!   batch_size` sequences get one page more. No draws.
//! * `lognormal`: weights e^(1.2·z), z standard normal by the Box–Muller rule of the generator above on
//!   draw pairs (2k, 2k + 1) for sequence k.
//! * `tail`: one sequence, position `below(B)`, holds round(num_kv_indices / 3) pages (within what the
//!   minimum below leaves); the others share the rest evenly, as `uniform` does.
//!
//! Sharing: sequence b gets ⌊R·w_b / Σw⌋ pages of R = num_kv_indices, and the pages left over go one
//! each to the largest fractional parts (ties to the lower position). When there are at least as many
//! pages as sequences, every sequence gets at least one: a sequence left with none takes a page from
//! the longest (the lowest such position). With fewer pages than sequences, some sequences are empty.
//!
//! Page ids:
//!
//! * `uniform`: `num_kv_indices` distinct ids below `num_pages`, by a partial Fisher–Yates shuffle of
//!   0..num_pages (draw i: j = i + `below(num_pages − i)`), so they come in shuffled order.
//! * `realistic`, `lognormal` and `tail`: the layout of the capture, which is how a paged KV cache
//!   fills in serving. There every sequence begins with one page all 64 share (its page 1), then holds
//!   its prompt as one contiguous run, then 393 pages written one per decode step, the batch's
//!   sequences taking consecutive ids at each step (so a sequence's decode pages are 64 ids apart).
//!   The rule: D = round(393·64 / 51,670 × num_kv_indices / B) decode steps (393 of the capture's
//!   mean of 807.3 pages per sequence, computed in integers); a non-empty sequence of L pages is the shared page, a prompt run of
//!   L − 1 − d pages and d = min(D, L − 1) decode pages. Ids are handed out by a counter from a base
//!   drawn uniform in 0..=num_pages − K (K = the ids used): first the shared page, then every prompt
//!   run in sequence order, then the decode steps, step by step, each sequence still decoding taking
//!   the next id in sequence order. The capture's other shared pages (prefix-cache hits between 2–6
//!   sequences, 0.3% of its entries) are not modelled.
//!
//! For page size > 1, `kv_last_page_len` is uniform in 1..=page_size per non-empty sequence (0 for an
//! empty one), drawn after everything above.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use half::bf16;
use rayon::prelude::*;
use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::definition::{Definition, check_tensor};
use crate::tensor::{DType, HostTensor, TensorSet};

const GOLDEN_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

#[inline]
fn splitmix_mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// SplitMix64: a small, fast, well-specified generator (see the module docs).
#[derive(Clone, Debug)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GOLDEN_GAMMA);
        splitmix_mix(self.state)
    }

    /// Draw i of the stream started at `seed`, without drawing the ones before it.
    pub fn draw_at(seed: u64, index: u64) -> u64 {
        splitmix_mix(seed.wrapping_add(index.wrapping_add(1).wrapping_mul(GOLDEN_GAMMA)))
    }

    /// Uniform in 0..bound (bound > 0), Lemire's multiply-shift.
    pub fn below(&mut self, bound: u64) -> u64 {
        ((self.next_u64() as u128 * bound as u128) >> 64) as u64
    }
}

/// The seed of one named tensor under a run's seed.
pub fn tensor_seed(seed: u64, name: &str) -> u64 {
    let mut hasher = Sha256::new();
    hasher.update(seed.to_le_bytes());
    hasher.update(name.as_bytes());
    u64::from_le_bytes(hasher.finalize()[..8].try_into().unwrap())
}

/// The seed of trial `trial` of a run: fresh inputs per trial, reproducible from the run's seed.
pub fn trial_seed(seed: u64, trial: usize) -> u64 {
    splitmix_mix(seed ^ (trial as u64 + 1).wrapping_mul(GOLDEN_GAMMA))
}

const CHUNK: usize = 1 << 16;

/// `count` standard-normal values (see the module docs), as f32.
pub fn standard_normal_f32(seed: u64, count: usize) -> Vec<f32> {
    let mut values = vec![0.0f32; count];
    values.par_chunks_mut(CHUNK).enumerate().for_each(|(chunk, out)| {
        let first = (chunk * CHUNK) as u64; // CHUNK is even, so pairs never straddle chunks
        for pair in 0..out.len().div_ceil(2) {
            let i = first + 2 * pair as u64;
            let u1 = ((SplitMix64::draw_at(seed, i) >> 11) + 1) as f64 * (1.0 / (1u64 << 53) as f64);
            let u2 = (SplitMix64::draw_at(seed, i + 1) >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
            let r = (-2.0 * u1.ln()).sqrt();
            let angle = std::f64::consts::TAU * u2;
            out[2 * pair] = (r * angle.cos()) as f32;
            if 2 * pair + 1 < out.len() {
                out[2 * pair + 1] = (r * angle.sin()) as f32;
            }
        }
    });
    values
}

pub fn standard_normal_bf16(seed: u64, count: usize) -> Vec<bf16> {
    standard_normal_f32(seed, count).into_par_iter().map(bf16::from_f32).collect()
}

/// `count` integers uniform in [low, high).
pub fn uniform_i64(seed: u64, count: usize, low: i64, high: i64) -> Vec<i64> {
    let range = (high - low) as u128;
    (0..count as u64)
        .into_par_iter()
        .map(|i| low + ((SplitMix64::draw_at(seed, i) as u128 * range) >> 64) as i64)
        .collect()
}

/// A paged KV layout: which pages each sequence reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageTable {
    pub kv_indptr: Vec<i32>,
    pub kv_indices: Vec<i32>,
    pub kv_last_page_len: Vec<i32>,
}

#[derive(Debug, thiserror::Error, PartialEq)]
#[error("{0}")]
pub struct MaterializeError(pub String);

/// How a synthesized page table draws its sequence lengths and page ids (module docs). The rule is
/// part of a run's protocol, so runs under different rules are never compared with each other.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LengthRule {
    /// Shaped like the real decode batch of [`CAPTURE_LENGTHS`], with its page layout.
    #[default]
    Realistic,
    /// The even split.
    Uniform,
    /// Weights e^(1.2·z), z standard normal.
    Lognormal,
    /// One sequence holds a third of the pages.
    Tail,
}

impl LengthRule {
    pub const ALL: [LengthRule; 4] =
        [LengthRule::Realistic, LengthRule::Uniform, LengthRule::Lognormal, LengthRule::Tail];

    pub fn name(self) -> &'static str {
        match self {
            LengthRule::Realistic => "realistic",
            LengthRule::Uniform => "uniform",
            LengthRule::Lognormal => "lognormal",
            LengthRule::Tail => "tail",
        }
    }
}

impl std::fmt::Display for LengthRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for LengthRule {
    type Err = MaterializeError;

    fn from_str(text: &str) -> Result<LengthRule, MaterializeError> {
        LengthRule::ALL.into_iter().find(|rule| rule.name() == text).ok_or_else(|| {
            MaterializeError(format!("unknown length rule `{text}` (realistic, uniform, lognormal, tail)"))
        })
    }
}

/// The sequence lengths (tokens = pages, page size 1) of the real decode batch the `realistic` rule is
/// fitted to, in batch order: `kv_indptr` differences of FlashInfer-Bench's capture
/// `blob/workloads/batch_gqa_paged_decode_h32_kv8_d128_ps1/decode_paged_004a271b3a4749878102ce6fdc7e49e5.safetensors`
/// (github.com/flashinfer-ai/flashinfer-bench, Apache-2.0, © 2025 FlashInfer-Bench Contributors; a copy
/// with its licence note is in `fixtures/real-decode-capture/`, which a test holds this table to).
pub const CAPTURE_LENGTHS: [u32; 64] = [
    428, 411, 456, 485, 664, 410, 411, 399, 444, 404, 402, 441, 397, 406, 413, 734, 464, 2456, 2973, 1429, 2206, 2208,
    1363, 1459, 1403, 413, 591, 407, 415, 409, 424, 402, 410, 418, 404, 806, 527, 575, 403, 402, 408, 437, 418, 423,
    2769, 3058, 708, 408, 786, 528, 398, 409, 437, 2381, 417, 2009, 1475, 693, 443, 401, 734, 802, 395, 461,
];
/// Decode steps in the capture: every sequence ends in this many pages written one per step.
pub const CAPTURE_DECODE_STEPS: u64 = 393;

/// Uniform in [0, 1) from one draw (53 bits).
fn unit_interval(draw: u64) -> f64 {
    (draw >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// Shares `total` in proportion to `weights` (positive, finite) by the largest-remainder rule, then,
/// when `total` ≥ the count, moves single pages from the longest share to every empty one (module docs).
pub fn apportion(weights: &[f64], total: usize) -> Vec<usize> {
    let count = weights.len();
    if count == 0 {
        return Vec::new();
    }
    let sum: f64 = weights.iter().sum();
    let quotas: Vec<f64> = weights.iter().map(|w| total as f64 * w / sum).collect();
    let mut shares: Vec<usize> = quotas.iter().map(|q| (q.floor() as usize).min(total)).collect();
    // Rounding in the quotas can only overshoot by a page or so: take it back from the longest.
    while shares.iter().sum::<usize>() > total {
        let longest = (0..count).max_by_key(|&b| (shares[b], std::cmp::Reverse(b))).unwrap();
        shares[longest] -= 1;
    }
    let mut left = total - shares.iter().sum::<usize>();
    let mut order: Vec<usize> = (0..count).collect();
    // Largest fractional part first, ties to the lower position (a stable sort keeps index order).
    order.sort_by(|&a, &b| (quotas[b] - quotas[b].floor()).total_cmp(&(quotas[a] - quotas[a].floor())));
    for &b in order.iter().cycle().take(count * 2) {
        if left == 0 {
            break;
        }
        shares[b] += 1;
        left -= 1;
    }
    if total >= count {
        while let Some(empty) = shares.iter().position(|&s| s == 0) {
            let longest = (0..count).max_by_key(|&b| (shares[b], std::cmp::Reverse(b))).unwrap();
            shares[longest] -= 1;
            shares[empty] += 1;
        }
    }
    shares
}

/// Pages per sequence under `rule` (module docs), summing to `total` exactly; draws from `rng`.
pub fn sequence_lengths(rule: LengthRule, batch: usize, total: usize, rng: &mut SplitMix64) -> Vec<usize> {
    if batch == 0 {
        return Vec::new();
    }
    let even = |count: usize, total: usize| -> Vec<usize> {
        (0..count).map(|b| total / count + usize::from(b < total % count)).collect()
    };
    match rule {
        LengthRule::Uniform => even(batch, total),
        LengthRule::Realistic => {
            let mut sorted = CAPTURE_LENGTHS;
            sorted.sort_unstable();
            let mut weights: Vec<f64> = (0..batch)
                .map(|k| {
                    let u = (k as f64 + unit_interval(rng.next_u64())) / batch as f64;
                    sorted[((u * sorted.len() as f64) as usize).min(sorted.len() - 1)] as f64
                })
                .collect();
            for i in (1..batch).rev() {
                weights.swap(i, rng.below(i as u64 + 1) as usize);
            }
            apportion(&weights, total)
        }
        LengthRule::Lognormal => {
            let weights: Vec<f64> = (0..batch)
                .map(|_| {
                    let u1 = ((rng.next_u64() >> 11) + 1) as f64 * (1.0 / (1u64 << 53) as f64);
                    let u2 = unit_interval(rng.next_u64());
                    let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                    (1.2 * z).exp()
                })
                .collect();
            apportion(&weights, total)
        }
        LengthRule::Tail if batch == 1 => vec![total],
        LengthRule::Tail => {
            let at = rng.below(batch as u64) as usize;
            let minimum = usize::from(total >= batch);
            let long = (total as f64 / 3.0).round() as usize;
            let long = long.clamp(minimum.min(total), total - minimum * (batch - 1));
            let rest = even(batch - 1, total - long);
            let mut lengths = rest;
            lengths.insert(at, long);
            lengths
        }
    }
}

/// The capture's page layout for these lengths (module docs): each sequence's page ids, and how many
/// distinct ids they use (ids relative to the base).
fn serving_layout(lengths: &[usize]) -> (Vec<Vec<i64>>, usize) {
    let batch = lengths.len().max(1) as u128;
    let total: usize = lengths.iter().sum();
    let decode_steps =
        ((total as u128 * (CAPTURE_DECODE_STEPS as u128 * 64) + batch * 51_670 / 2) / (batch * 51_670)) as usize;
    let mut next = 0i64;
    let mut take = || {
        next += 1;
        next - 1
    };
    let any = lengths.iter().any(|&l| l > 0);
    let shared = if any { take() } else { 0 };
    let decode: Vec<usize> = lengths.iter().map(|&l| decode_steps.min(l.saturating_sub(1))).collect();
    let mut pages: Vec<Vec<i64>> = lengths
        .iter()
        .zip(&decode)
        .map(|(&l, &d)| {
            let mut own = Vec::with_capacity(l);
            if l > 0 {
                own.push(shared);
                own.extend((0..l - 1 - d).map(|_| take()));
            }
            own
        })
        .collect();
    for step in 0..decode_steps {
        for (own, &d) in pages.iter_mut().zip(&decode) {
            if step < d {
                own.push(take());
            }
        }
    }
    (pages, next as usize)
}

/// The documented page-table synthesizer (module docs).
pub fn synthesize_page_table(
    rule: LengthRule,
    batch_size: usize,
    num_pages: usize,
    num_kv_indices: usize,
    page_size: usize,
    seed: u64,
) -> Result<PageTable, MaterializeError> {
    if batch_size == 0 && num_kv_indices > 0 {
        return Err(MaterializeError("axes: batch_size 0 with num_kv_indices > 0".into()));
    }
    if num_kv_indices > i32::MAX as usize || num_pages > i32::MAX as usize {
        return Err(MaterializeError("axes: num_pages / num_kv_indices exceed int32".into()));
    }
    let mut rng = SplitMix64::new(tensor_seed(seed, "page_table"));
    let lengths = sequence_lengths(rule, batch_size, num_kv_indices, &mut rng);
    let mut kv_indptr = Vec::with_capacity(batch_size + 1);
    kv_indptr.push(0i32);
    for (b, &len) in lengths.iter().enumerate() {
        kv_indptr.push(kv_indptr[b] + len as i32);
    }
    let kv_indices = if rule == LengthRule::Uniform {
        if num_kv_indices > num_pages {
            return Err(MaterializeError(format!(
                "axes: num_kv_indices {num_kv_indices} > num_pages {num_pages}: the pages cannot be distinct"
            )));
        }
        let mut pool: Vec<i32> = (0..num_pages as i32).collect();
        for i in 0..num_kv_indices {
            let j = i + rng.below((num_pages - i) as u64) as usize;
            pool.swap(i, j);
        }
        pool.truncate(num_kv_indices);
        pool
    } else {
        let (pages, used) = serving_layout(&lengths);
        if used > num_pages {
            return Err(MaterializeError(format!(
                "axes: the {rule} layout of {num_kv_indices} kv_indices over {batch_size} sequences uses {used} \
                 pages, more than num_pages {num_pages}"
            )));
        }
        let base = rng.below((num_pages - used) as u64 + 1) as i64;
        pages.into_iter().flatten().map(|p| (base + p) as i32).collect()
    };
    let kv_last_page_len = (0..batch_size)
        .map(|b| {
            if kv_indptr[b + 1] == kv_indptr[b] {
                0
            } else if page_size == 1 {
                1
            } else {
                1 + rng.below(page_size as u64) as i32
            }
        })
        .collect();
    Ok(PageTable { kv_indptr, kv_indices, kv_last_page_len })
}

/// Where one input comes from.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum InputSource {
    Random,
    Scalar { value: serde_json::Number },
    Safetensors { path: String, tensor_key: String },
}

/// A FlashInfer-Bench workload: the definition's var axes and one source per input.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct WorkloadCase {
    pub uuid: String,
    pub axes: BTreeMap<String, i64>,
    pub inputs: BTreeMap<String, InputSource>,
}

/// One line of a workloads `.jsonl` file.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct WorkloadLine {
    pub definition: String,
    pub workload: WorkloadCase,
}

/// Reads a workloads `.jsonl` file; an error names the file and line.
pub fn read_workloads(path: &Path) -> Result<Vec<WorkloadLine>, MaterializeError> {
    let text = std::fs::read_to_string(path).map_err(|e| MaterializeError(format!("{}: {e}", path.display())))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, line)| {
            serde_json::from_str::<WorkloadLine>(line)
                .map_err(|e| MaterializeError(format!("{}:{}: column {}: {e}", path.display(), i + 1, e.column())))
        })
        .collect()
}

impl WorkloadCase {
    /// A workload from axis values alone (`ki run --axis k=v`): random tensors, a synthesized page
    /// table, and sm_scale = 1/√head_dim.
    pub fn from_axes(definition: &Definition, axes: BTreeMap<String, i64>) -> Result<WorkloadCase, MaterializeError> {
        let head_dim = definition.const_axis("head_dim").unwrap_or(128) as f64;
        let mut inputs = BTreeMap::new();
        for spec in definition.input_specs().map_err(MaterializeError)? {
            let source = match spec.name.as_str() {
                "kv_indptr" | "kv_indices" | "kv_last_page_len" => {
                    InputSource::Safetensors { path: String::new(), tensor_key: spec.name.clone() }
                }
                "sm_scale" => {
                    InputSource::Scalar { value: serde_json::Number::from_f64(1.0 / head_dim.sqrt()).unwrap() }
                }
                _ => InputSource::Random,
            };
            inputs.insert(spec.name, source);
        }
        for (name, axis) in &definition.axes {
            if axis.kind == "var" && !axes.contains_key(name) && name != "len_indptr" {
                return Err(MaterializeError(format!("axis `{name}` needs a value (--axis {name}=N)")));
            }
        }
        let mut axes = axes;
        if let Some(&b) = axes.get("batch_size") {
            axes.entry("len_indptr".into()).or_insert(b + 1);
        }
        Ok(WorkloadCase { uuid: String::new(), axes, inputs })
    }
}

/// True when `materialize` synthesizes this workload's page table (a gqa_paged definition whose
/// index blob is not under `blob_root`), i.e. when the length rule shapes its inputs.
pub fn synthesizes_page_table(definition: &Definition, workload: &WorkloadCase, blob_root: Option<&Path>) -> bool {
    definition.op_type == "gqa_paged"
        && ["kv_indptr", "kv_indices", "kv_last_page_len"].iter().any(|name| match workload.inputs.get(*name) {
            Some(InputSource::Safetensors { path, .. }) => {
                blob_root.map(|root| root.join(path)).filter(|p| !path.is_empty() && p.is_file()).is_none()
            }
            _ => false,
        })
}

/// Materializes every input of `workload` for `definition` with `seed`. Safetensors sources are
/// read from `blob_root`/path when that file exists; for the page-table tensors of a gqa_paged
/// definition whose blob is missing, the synthesizer stands in under `lengths` (module docs).
pub fn materialize(
    definition: &Definition,
    workload: &WorkloadCase,
    seed: u64,
    blob_root: Option<&Path>,
    lengths: LengthRule,
) -> Result<TensorSet, MaterializeError> {
    let specs = definition.input_specs().map_err(MaterializeError)?;
    let mut axes: BTreeMap<String, usize> = BTreeMap::new();
    for (name, axis) in &definition.axes {
        let value = match (axis.kind.as_str(), axis.value, workload.axes.get(name)) {
            ("const", Some(v), Some(&w)) if v != w => {
                return Err(MaterializeError(format!(
                    "workload {}: /axes/{name} = {w}, the definition fixes it at {v}",
                    workload.uuid
                )));
            }
            ("const", Some(v), _) => v,
            (_, _, Some(&w)) => w,
            _ => {
                return Err(MaterializeError(format!("workload {}: /axes/{name} is missing", workload.uuid)));
            }
        };
        if value < 0 {
            return Err(MaterializeError(format!("workload {}: /axes/{name} = {value} is negative", workload.uuid)));
        }
        axes.insert(name.clone(), value as usize);
    }
    for name in workload.axes.keys() {
        if !definition.axes.contains_key(name) {
            return Err(MaterializeError(format!(
                "workload {}: /axes/{name} is not an axis of {}",
                workload.uuid, definition.name
            )));
        }
    }
    let axis = |name: &str| axes.get(name).copied().unwrap_or(0);
    let mut page_table: Option<PageTable> = None;
    let mut tensors = TensorSet::new();
    for spec in &specs {
        let pointer = format!("workload {}: /inputs/{}", workload.uuid, spec.name);
        let source =
            workload.inputs.get(&spec.name).ok_or_else(|| MaterializeError(format!("{pointer} is missing")))?;
        let shape: Vec<usize> = spec
            .shape
            .as_deref()
            .unwrap_or(&[])
            .iter()
            .map(|a| {
                axes.get(a).copied().ok_or_else(|| MaterializeError(format!("{pointer}: axis `{a}` has no value")))
            })
            .collect::<Result<_, _>>()?;
        let count: usize = shape.iter().product();
        let tensor = match source {
            InputSource::Random => {
                let s = tensor_seed(seed, &spec.name);
                match spec.dtype {
                    DType::BF16 => HostTensor::from_bf16(shape, &standard_normal_bf16(s, count)),
                    DType::F32 => HostTensor::from_f32(shape, &standard_normal_f32(s, count)),
                    DType::I32 => {
                        let values: Vec<i32> = uniform_i64(s, count, 0, 128).into_iter().map(|v| v as i32).collect();
                        HostTensor::from_i32(shape, &values)
                    }
                    other => {
                        return Err(MaterializeError(format!("{pointer}: random {other} is not supported")));
                    }
                }
            }
            InputSource::Scalar { value } => {
                let v = value.as_f64().unwrap_or(f64::NAN);
                match spec.dtype {
                    DType::F32 => HostTensor::from_f32(shape, &vec![v as f32; count]),
                    DType::I32 => HostTensor::from_i32(shape, &vec![v as i32; count]),
                    DType::BF16 => HostTensor::from_bf16(shape, &vec![bf16::from_f64(v); count]),
                    other => {
                        return Err(MaterializeError(format!("{pointer}: scalar {other} is not supported")));
                    }
                }
            }
            InputSource::Safetensors { path, tensor_key } => {
                let file: Option<PathBuf> =
                    blob_root.map(|root| root.join(path)).filter(|p| !path.is_empty() && p.is_file());
                match file {
                    Some(file) => {
                        let set = TensorSet::read(&file).map_err(|e| MaterializeError(format!("{pointer}: {e}")))?;
                        set.get(tensor_key).cloned().ok_or_else(|| {
                            MaterializeError(format!("{pointer}: {} has no tensor `{tensor_key}`", file.display()))
                        })?
                    }
                    None if definition.op_type == "gqa_paged"
                        && matches!(spec.name.as_str(), "kv_indptr" | "kv_indices" | "kv_last_page_len") =>
                    {
                        if page_table.is_none() {
                            page_table = Some(synthesize_page_table(
                                lengths,
                                axis("batch_size"),
                                axis("num_pages"),
                                axis("num_kv_indices"),
                                axis("page_size").max(1),
                                seed,
                            )?);
                        }
                        let table = page_table.as_ref().unwrap();
                        let values = match spec.name.as_str() {
                            "kv_indptr" => &table.kv_indptr,
                            "kv_indices" => &table.kv_indices,
                            _ => &table.kv_last_page_len,
                        };
                        HostTensor::from_i32(vec![values.len()], values)
                    }
                    None => {
                        return Err(MaterializeError(format!(
                            "{pointer}: blob `{path}` not found and no synthesizer for it"
                        )));
                    }
                }
            }
        };
        let mut check_axes = axes.clone();
        check_tensor(spec, &tensor, &mut check_axes, &pointer).map_err(MaterializeError)?;
        tensors.insert(spec.name.clone(), tensor);
    }
    Ok(tensors)
}
