//! CPU reference for the GQA paged-decode family: what every `gqa_paged_decode_*` definition's
//! PyTorch `reference` computes, in Rust.
//!
//! Arithmetic follows the definitions: bf16 inputs widened to f32; logits = (q · k) * sm_scale in f32;
//! lse = logsumexp(logits) / ln 2 (base 2); softmax = exp(logit − max) / Σ; output = Σ softmax · v in
//! f32, rounded to bf16 (round to nearest, ties to even). A sequence with no tokens gives an output
//! of zeros and an lse of −inf. Query head h reads KV head h / (num_qo_heads / num_kv_heads).
//! Summation order differs from PyTorch's (an 8-lane dot product, sequential sums over tokens), so
//! results agree with the PyTorch reference to f32 rounding, not bit for bit.
//!
//! Work is split across threads by (sequence, KV head): the query heads of one KV-head group are
//! contiguous in the output, so each task owns one contiguous slice of `output` and of `lse`.
use half::bf16;
use rayon::prelude::*;

use crate::definition::Definition;
use crate::tensor::{HostTensor, TensorSet};

/// The constant shape of one definition of the family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GqaPagedDecodeShape {
    pub num_qo_heads: usize,
    pub num_kv_heads: usize,
    pub head_dim: usize,
    pub page_size: usize,
}

/// Host inputs, in the definitions' layouts:
/// q `[batch, num_qo_heads, head_dim]`, k_cache / v_cache `[num_pages, page_size, num_kv_heads, head_dim]`,
/// kv_indptr `[batch + 1]`, kv_indices `[kv_indptr[batch]]`, kv_last_page_len `[batch]` (page size > 1
/// definitions; None means every last page is full, which is what page size 1 implies).
#[derive(Clone, Copy, Debug)]
pub struct GqaPagedDecodeInputs<'a> {
    pub q: &'a [bf16],
    pub k_cache: &'a [bf16],
    pub v_cache: &'a [bf16],
    pub kv_indptr: &'a [i32],
    pub kv_indices: &'a [i32],
    pub kv_last_page_len: Option<&'a [i32]>,
    pub sm_scale: f32,
}

/// output `[batch, num_qo_heads, head_dim]` bf16, lse `[batch, num_qo_heads]` f32 (base 2).
#[derive(Clone, Debug, PartialEq)]
pub struct GqaPagedDecodeOutputs {
    pub output: Vec<bf16>,
    pub lse: Vec<f32>,
}

#[derive(Debug, thiserror::Error, PartialEq)]
#[error("{0}")]
pub struct ReferenceError(pub String);

impl GqaPagedDecodeShape {
    /// Reads the const axes of a `gqa_paged_decode_*` definition.
    pub fn from_definition(definition: &Definition) -> Result<GqaPagedDecodeShape, ReferenceError> {
        let axis = |name: &str| {
            definition.const_axis(name).filter(|&v| v > 0).map(|v| v as usize).ok_or_else(|| {
                ReferenceError(format!("definition {}: /axes/{name} is not a positive const", definition.name))
            })
        };
        let shape = GqaPagedDecodeShape {
            num_qo_heads: axis("num_qo_heads")?,
            num_kv_heads: axis("num_kv_heads")?,
            head_dim: axis("head_dim")?,
            page_size: axis("page_size")?,
        };
        if !shape.num_qo_heads.is_multiple_of(shape.num_kv_heads) {
            return Err(ReferenceError(format!(
                "definition {}: num_qo_heads {} is not a multiple of num_kv_heads {}",
                definition.name, shape.num_qo_heads, shape.num_kv_heads
            )));
        }
        Ok(shape)
    }

    pub fn group_size(&self) -> usize {
        self.num_qo_heads / self.num_kv_heads
    }
}

/// Where one sequence's tokens are: (page id, tokens used in that page) per page.
fn sequence_pages<'a>(
    inputs: &GqaPagedDecodeInputs<'a>,
    shape: &GqaPagedDecodeShape,
    batch_index: usize,
) -> impl Iterator<Item = (usize, usize)> + 'a {
    let start = inputs.kv_indptr[batch_index] as usize;
    let end = inputs.kv_indptr[batch_index + 1] as usize;
    let page_size = shape.page_size;
    let last_len = inputs.kv_last_page_len.map_or(page_size, |l| l[batch_index] as usize);
    inputs.kv_indices[start..end]
        .iter()
        .enumerate()
        .map(move |(i, &page)| (page as usize, if start + i + 1 == end { last_len } else { page_size }))
}

/// Checks every index the reference will follow, so bad inputs give an error instead of a panic.
pub fn validate_inputs(shape: &GqaPagedDecodeShape, inputs: &GqaPagedDecodeInputs) -> Result<usize, ReferenceError> {
    let fail = |m: String| Err(ReferenceError(m));
    if inputs.kv_indptr.is_empty() {
        return fail("kv_indptr: must have batch_size + 1 >= 1 entries".into());
    }
    let batch = inputs.kv_indptr.len() - 1;
    let row = shape.num_qo_heads * shape.head_dim;
    if inputs.q.len() != batch * row {
        return fail(format!(
            "q: {} elements, expected batch_size {batch} × num_qo_heads {} × head_dim {}",
            inputs.q.len(),
            shape.num_qo_heads,
            shape.head_dim
        ));
    }
    let page_elems = shape.page_size * shape.num_kv_heads * shape.head_dim;
    if !inputs.k_cache.len().is_multiple_of(page_elems) || inputs.k_cache.len() != inputs.v_cache.len() {
        return fail(format!(
            "k_cache / v_cache: {} / {} elements, expected equal multiples of page_size × num_kv_heads × head_dim = {page_elems}",
            inputs.k_cache.len(),
            inputs.v_cache.len()
        ));
    }
    let num_pages = inputs.k_cache.len() / page_elems;
    let total = inputs.kv_indices.len();
    for (b, pair) in inputs.kv_indptr.windows(2).enumerate() {
        if pair[0] < 0 || pair[1] < pair[0] {
            return fail(format!(
                "kv_indptr[{b}..={}]: {} then {}: must be non-negative and non-decreasing",
                b + 1,
                pair[0],
                pair[1]
            ));
        }
    }
    if inputs.kv_indptr[batch] as usize != total {
        return fail(format!(
            "kv_indptr[{batch}] = {} but kv_indices has {total} entries (num_kv_indices == kv_indptr[-1])",
            inputs.kv_indptr[batch]
        ));
    }
    if let Some(i) = inputs.kv_indices.iter().position(|&p| p < 0 || p as usize >= num_pages) {
        return fail(format!("kv_indices[{i}] = {} is outside 0..{num_pages} (num_pages)", inputs.kv_indices[i]));
    }
    if let Some(last) = inputs.kv_last_page_len {
        if last.len() != batch {
            return fail(format!("kv_last_page_len: {} entries, expected batch_size {batch}", last.len()));
        }
        if let Some(b) = last.iter().position(|&l| l < 0 || l as usize > shape.page_size) {
            return fail(format!("kv_last_page_len[{b}] = {} is outside 0..={}", last[b], shape.page_size));
        }
    }
    if !inputs.sm_scale.is_finite() {
        return fail(format!("sm_scale = {} is not finite", inputs.sm_scale));
    }
    Ok(batch)
}

#[inline]
fn dot_f32(a: &[f32], b: &[f32]) -> f32 {
    // Eight independent partial sums let the compiler vectorize; the order is fixed, so results are
    // deterministic on every machine.
    let mut lanes = [0.0f32; 8];
    let chunks = a.len() / 8;
    for c in 0..chunks {
        for l in 0..8 {
            lanes[l] += a[c * 8 + l] * b[c * 8 + l];
        }
    }
    let mut sum = ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
    for i in chunks * 8..a.len() {
        sum += a[i] * b[i];
    }
    sum
}

/// The reference for any definition of the family. Multi-threaded with rayon.
pub fn gqa_paged_decode_reference(
    shape: &GqaPagedDecodeShape,
    inputs: &GqaPagedDecodeInputs,
) -> Result<GqaPagedDecodeOutputs, ReferenceError> {
    let batch = validate_inputs(shape, inputs)?;
    let (hq, hkv, d, g) = (shape.num_qo_heads, shape.num_kv_heads, shape.head_dim, shape.group_size());
    let mut output = vec![bf16::ZERO; batch * hq * d];
    let mut lse = vec![f32::NEG_INFINITY; batch * hq];
    let row_of = |page: usize, slot: usize, kv_head: usize| ((page * shape.page_size + slot) * hkv + kv_head) * d;

    output.par_chunks_mut(g * d).zip(lse.par_chunks_mut(g)).enumerate().for_each(|(task, (out_group, lse_group))| {
        let (b, kv_head) = (task / hkv, task % hkv);
        let tokens: Vec<usize> = sequence_pages(inputs, shape, b)
            .flat_map(|(page, used)| (0..used).map(move |slot| row_of(page, slot, kv_head)))
            .collect();
        if tokens.is_empty() {
            return; // zeros and -inf, as initialised
        }
        let widen = |s: &[bf16]| s.iter().map(|v| v.to_f32()).collect::<Vec<f32>>();
        let q_rows: Vec<Vec<f32>> = (0..g).map(|j| widen(&inputs.q[(b * hq + kv_head * g + j) * d..][..d])).collect();
        // logits[j][t] for the group's query heads j over the sequence's tokens t.
        let mut logits = vec![vec![0.0f32; tokens.len()]; g];
        let mut key = vec![0.0f32; d];
        for (t, &row) in tokens.iter().enumerate() {
            for (k, v) in key.iter_mut().zip(&inputs.k_cache[row..row + d]) {
                *k = v.to_f32();
            }
            for j in 0..g {
                logits[j][t] = dot_f32(&q_rows[j], &key) * inputs.sm_scale;
            }
        }
        let mut accum = vec![vec![0.0f32; d]; g];
        for j in 0..g {
            let max = logits[j].iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let mut sum = 0.0f32;
            for l in logits[j].iter_mut() {
                *l = (*l - max).exp();
                sum += *l;
            }
            lse_group[j] = (max + sum.ln()) / std::f32::consts::LN_2;
            for l in logits[j].iter_mut() {
                *l /= sum;
            }
        }
        let mut value = vec![0.0f32; d];
        for (t, &row) in tokens.iter().enumerate() {
            for (x, v) in value.iter_mut().zip(&inputs.v_cache[row..row + d]) {
                *x = v.to_f32();
            }
            for j in 0..g {
                let p = logits[j][t];
                for (a, x) in accum[j].iter_mut().zip(&value) {
                    *a += p * x;
                }
            }
        }
        for j in 0..g {
            for (o, a) in out_group[j * d..(j + 1) * d].iter_mut().zip(&accum[j]) {
                *o = bf16::from_f32(*a);
            }
        }
    });
    Ok(GqaPagedDecodeOutputs { output, lse })
}

fn input<'a>(tensors: &'a TensorSet, name: &str) -> Result<&'a HostTensor, ReferenceError> {
    tensors.get(name).ok_or_else(|| ReferenceError(format!("input tensor `{name}` is missing")))
}

/// Runs the reference of `definition` on named tensors (as `ki reference` reads them) and returns the
/// named outputs. Names, dtypes and shapes are checked against the definition first.
pub fn run_definition_reference(
    definition: &Definition,
    tensors: &TensorSet,
    origin: &str,
) -> Result<TensorSet, ReferenceError> {
    if definition.op_type != "gqa_paged" || !definition.name.starts_with("gqa_paged_decode") {
        return Err(ReferenceError(format!(
            "definition {}: no CPU reference for op_type `{}` (the runner has the gqa_paged_decode family)",
            definition.name, definition.op_type
        )));
    }
    let shape = GqaPagedDecodeShape::from_definition(definition)?;
    definition.check_inputs(tensors, origin).map_err(ReferenceError)?;
    let q = input(tensors, "q")?.to_bf16().unwrap();
    let k_cache = input(tensors, "k_cache")?.to_bf16().unwrap();
    let v_cache = input(tensors, "v_cache")?.to_bf16().unwrap();
    let kv_indptr = input(tensors, "kv_indptr")?.to_i32().unwrap();
    let kv_indices = input(tensors, "kv_indices")?.to_i32().unwrap();
    let kv_last_page_len = match tensors.get("kv_last_page_len") {
        Some(t) if definition.inputs.contains_key("kv_last_page_len") => {
            Some(t.to_i32().ok_or_else(|| ReferenceError(format!("{origin}: kv_last_page_len must be int32")))?)
        }
        _ => None,
    };
    let sm_scale = input(tensors, "sm_scale")?.to_f32_exact().unwrap()[0];
    let batch = kv_indptr.len().saturating_sub(1);
    let inputs = GqaPagedDecodeInputs {
        q: &q,
        k_cache: &k_cache,
        v_cache: &v_cache,
        kv_indptr: &kv_indptr,
        kv_indices: &kv_indices,
        kv_last_page_len: kv_last_page_len.as_deref(),
        sm_scale,
    };
    let result =
        gqa_paged_decode_reference(&shape, &inputs).map_err(|e| ReferenceError(format!("{origin}: {}", e.0)))?;
    let mut out = TensorSet::new();
    out.insert("output", HostTensor::from_bf16(vec![batch, shape.num_qo_heads, shape.head_dim], &result.output));
    out.insert("lse", HostTensor::from_f32(vec![batch, shape.num_qo_heads], &result.lse));
    Ok(out)
}
