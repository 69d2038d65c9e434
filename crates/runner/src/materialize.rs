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
//! published. `synthesize_page_table` honours the axes exactly: `batch_size` sequences whose page
//! counts sum to `num_kv_indices`, split as evenly as possible (the first `num_kv_indices mod
//! batch_size` sequences get one more), and `num_kv_indices` distinct page ids below `num_pages`,
//! drawn by a partial Fisher–Yates shuffle of 0..num_pages (so they come in shuffled order). For page
//! size > 1, `kv_last_page_len` is uniform in 1..=page_size per non-empty sequence (0 for an empty
//! one). Its stream is the SplitMix64 stream of the tensor name "page_table".
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

/// The documented page-table synthesizer (module docs).
pub fn synthesize_page_table(
    batch_size: usize,
    num_pages: usize,
    num_kv_indices: usize,
    page_size: usize,
    seed: u64,
) -> Result<PageTable, MaterializeError> {
    if num_kv_indices > num_pages {
        return Err(MaterializeError(format!(
            "axes: num_kv_indices {num_kv_indices} > num_pages {num_pages}: the pages cannot be distinct"
        )));
    }
    if batch_size == 0 && num_kv_indices > 0 {
        return Err(MaterializeError("axes: batch_size 0 with num_kv_indices > 0".into()));
    }
    if num_kv_indices > i32::MAX as usize || num_pages > i32::MAX as usize {
        return Err(MaterializeError("axes: num_pages / num_kv_indices exceed int32".into()));
    }
    let mut rng = SplitMix64::new(tensor_seed(seed, "page_table"));
    let mut kv_indptr = Vec::with_capacity(batch_size + 1);
    kv_indptr.push(0i32);
    let base = num_kv_indices.checked_div(batch_size).unwrap_or(0);
    let extra = num_kv_indices.checked_rem(batch_size).unwrap_or(0);
    for b in 0..batch_size {
        let len = base + usize::from(b < extra);
        kv_indptr.push(kv_indptr[b] + len as i32);
    }
    let mut pool: Vec<i32> = (0..num_pages as i32).collect();
    for i in 0..num_kv_indices {
        let j = i + rng.below((num_pages - i) as u64) as usize;
        pool.swap(i, j);
    }
    pool.truncate(num_kv_indices);
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
    Ok(PageTable { kv_indptr, kv_indices: pool, kv_last_page_len })
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

/// Materializes every input of `workload` for `definition` with `seed`. Safetensors sources are
/// read from `blob_root`/path when that file exists; for the page-table tensors of a gqa_paged
/// definition whose blob is missing, the synthesizer stands in (module docs).
pub fn materialize(
    definition: &Definition,
    workload: &WorkloadCase,
    seed: u64,
    blob_root: Option<&Path>,
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
