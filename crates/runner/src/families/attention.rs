//! gqa_paged (decode, prefill), gqa_ragged (prefill) and mla_paged (decode, prefill): the `even`
//! rule for their index tensors, and their bound.
//!
//! * Batch size: `batch_size` when the definition has it, else `len_indptr − 1`.
//! * Query lengths (prefill): `total_q` split as evenly as possible (the first `total_q mod batch`
//!   sequences one longer).
//! * KV lengths: decode, `num_kv_indices` (or `total_kv`) split the same way; prefill, each sequence's
//!   query length plus an even share of the KV tokens beyond `total_q`. A prefill workload with fewer
//!   KV tokens than queries is not run, with its numbers: under any split some causal query sees no key
//!   (the reference's softmax over nothing is NaN) or some sequence holds queries and no KV, which only
//!   the reference's convention answers (zeros and lse −inf; FlashInfer's prefill does not share it,
//!   and 42 of its baselines were wrongly `incorrect` on the H200 on 2026-12-07 under such a split).
//! * Page ids (paged definitions): `num_kv_indices` distinct ids below `num_pages`, a partial
//!   Fisher–Yates shuffle (`materialize::synthesize_page_table`, seeded by the trial); for page size
//!   > 1, `kv_last_page_len` as that function draws it.
use std::collections::BTreeMap;

use super::{Bound, i32_tensor, size_of};
use crate::definition::Definition;
use crate::materialize::{LengthRule, MaterializeError, synthesize_page_table};
use crate::tensor::{DType, TensorSet};

fn even_split(total: usize, parts: usize) -> Vec<usize> {
    if parts == 0 {
        return Vec::new();
    }
    (0..parts).map(|b| total / parts + usize::from(b < total % parts)).collect()
}

fn indptr(lengths: &[usize]) -> Result<Vec<i32>, MaterializeError> {
    let mut out = Vec::with_capacity(lengths.len() + 1);
    let mut acc: i64 = 0;
    out.push(0);
    for &l in lengths {
        acc += l as i64;
        out.push(i32::try_from(acc).map_err(|_| MaterializeError("index pointer exceeds int32".into()))?);
    }
    Ok(out)
}

/// (query lengths, kv lengths) per sequence under the `even` rule.
pub fn lengths(definition: &Definition, axes: &BTreeMap<String, usize>) -> (Vec<usize>, Vec<usize>) {
    sequence_lengths(definition.inputs.contains_key("qo_indptr"), axes)
}

fn sequence_lengths(prefill: bool, axes: &BTreeMap<String, usize>) -> (Vec<usize>, Vec<usize>) {
    let axis = |n: &str| axes.get(n).copied();
    let batch = axis("batch_size").unwrap_or_else(|| axis("len_indptr").unwrap_or(1).saturating_sub(1));
    let kv_total = axis("num_kv_indices").or(axis("total_kv")).unwrap_or(0);
    if !prefill {
        return (vec![1; batch], even_split(kv_total, batch));
    }
    let total_q = axis("total_q").unwrap_or(0);
    let q = even_split(total_q, batch);
    if kv_total < total_q {
        // Refused by `check_every_query_sees_a_key`; any split shows it.
        return (q, even_split(kv_total, batch));
    }
    let extra = even_split(kv_total - total_q, batch);
    let kv = q.iter().zip(extra).map(|(a, b)| a + b).collect();
    (q, kv)
}

pub fn synthesize(
    definition: &Definition,
    axes: &BTreeMap<String, usize>,
    seed: u64,
) -> Result<TensorSet, MaterializeError> {
    let (q, kv) = lengths(definition, axes);
    if definition.inputs.contains_key("qo_indptr") {
        check_every_query_sees_a_key(&q, &kv)?;
    }
    let mut out = TensorSet::new();
    out.insert("qo_indptr", i32_tensor(&indptr(&q)?));
    out.insert("kv_indptr", i32_tensor(&indptr(&kv)?));
    if definition.inputs.contains_key("kv_indices") {
        let kv_total: usize = kv.iter().sum();
        let num_pages = axes.get("num_pages").copied().unwrap_or(0);
        let page_size = axes.get("page_size").copied().unwrap_or(1).max(1);
        // The even split above with shuffled page ids is the `uniform` rule, which is what the
        // 2026-12-01 verify records were measured under; moving these families to `realistic`
        // changes their protocol (issue 13).
        let table = synthesize_page_table(LengthRule::Uniform, kv.len(), num_pages, kv_total, page_size, seed)?;
        out.insert("kv_indices", i32_tensor(&table.kv_indices));
        out.insert("kv_last_page_len", i32_tensor(&table.kv_last_page_len));
    }
    Ok(out)
}

/// A causal query that sees no key has no defined output (the reference's softmax over nothing is
/// NaN), and a sequence with queries and no KV only a convention (so no verdict could be given on
/// either); `lengths` gives every sequence at least its query count of KV tokens wherever the
/// workload has as many KV tokens as queries, and no split can where it has fewer.
fn check_every_query_sees_a_key(q: &[usize], kv: &[usize]) -> Result<(), MaterializeError> {
    if q.iter().zip(kv).all(|(nq, nk)| nk >= nq) {
        return Ok(());
    }
    let (queries, keys) = (q.iter().sum::<usize>(), kv.iter().sum::<usize>());
    Err(MaterializeError(format!(
        "the workload's {queries} queries and {keys} KV tokens in {} sequences: with fewer KV tokens than queries, \
         under any split some causal query sees no key (where the reference's output is undefined, NaN) or some \
         sequence holds queries and no KV (answered only by the reference's convention), so no output could be \
         checked there",
        q.len()
    )))
}

/// Query–key pairs a causal (prefill) or full (decode) attention evaluates.
fn pairs(q: &[usize], kv: &[usize], causal: bool) -> f64 {
    q.iter()
        .zip(kv)
        .map(|(&nq, &nk)| {
            if !causal {
                return (nq * nk) as f64;
            }
            // query i (0-based) sees keys 0 ..= i + (nk − nq), clamped to [0, nk].
            let delta = nk as i64 - nq as i64;
            (0..nq as i64).map(|i| (i + delta + 1).clamp(0, nk as i64) as f64).sum::<f64>()
        })
        .sum()
}

pub fn bound(definition: &Definition, axes: &BTreeMap<String, usize>, synthesized: &TensorSet) -> Bound {
    let (q, _) = lengths(definition, axes);
    let kv: Vec<usize> = synthesized
        .get("kv_indptr")
        .and_then(|t| t.to_i32())
        .map(|p| p.windows(2).map(|w| (w[1] - w[0]).max(0) as usize).collect())
        .unwrap_or_default();
    let causal = definition.inputs.contains_key("qo_indptr");
    let evaluated = pairs(&q, &kv, causal);
    let tokens: f64 = kv.iter().sum::<usize>() as f64;
    let total_q: f64 = q.iter().sum::<usize>() as f64;
    let axis = |n: &str| axes.get(n).copied().unwrap_or(0) as f64;
    let bf16 = size_of(DType::BF16);
    if definition.op_type == "mla_paged" {
        let (h, ckv, kpe) = (axis("num_qo_heads"), axis("head_dim_ckv"), axis("head_dim_kpe"));
        let bytes = total_q * h * (ckv + kpe) * bf16 + tokens * (ckv + kpe) * bf16 + total_q * h * (ckv * bf16 + 4.0);
        return Bound { bytes, flops: 2.0 * h * evaluated * (ckv + kpe + ckv) };
    }
    let (hq, hkv, d) = (axis("num_qo_heads"), axis("num_kv_heads"), axis("head_dim"));
    let bytes = total_q * hq * d * bf16 * 2.0 + tokens * hkv * d * bf16 * 2.0 + total_q * hq * 4.0;
    Bound { bytes, flops: 4.0 * hq * d * evaluated }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn axes(len_indptr: usize, total_q: usize, num_kv_indices: usize) -> BTreeMap<String, usize> {
        [("len_indptr", len_indptr), ("total_q", total_q), ("num_kv_indices", num_kv_indices)]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect()
    }

    /// Workloads of FlashInfer-Bench's prefill lists (2026-12-07 coverage calls): with as many KV
    /// tokens as queries, every sequence holds at least its queries' count of KV tokens; with fewer,
    /// the workload is refused, naming its numbers.
    #[test]
    fn every_prefill_query_sees_a_key_or_the_workload_is_refused() {
        for (len_indptr, total_q, kv_total) in [
            (29, 12383, 1),
            (16, 14823, 16),
            (2, 1210, 1),
            (2, 5, 1),
            (3, 14, 2),
            (64, 9277, 117),
            (2, 16, 2),
            (17, 300, 9000),
            (19, 7938, 16403),
            (2, 1, 33),
            (5, 3, 1),
            (2, 34, 34),
            (1, 0, 0),
        ] {
            let (q, kv) = sequence_lengths(true, &axes(len_indptr, total_q, kv_total));
            assert_eq!((q.len(), kv.len()), (len_indptr - 1, len_indptr - 1));
            if len_indptr < 2 {
                continue;
            }
            assert_eq!((q.iter().sum::<usize>(), kv.iter().sum::<usize>()), (total_q, kv_total), "{q:?} {kv:?}");
            let checked = check_every_query_sees_a_key(&q, &kv);
            if kv_total >= total_q {
                assert!(checked.is_ok() && q.iter().zip(&kv).all(|(nq, nk)| nk >= nq), "{q:?} {kv:?}");
            } else {
                let error = checked.unwrap_err().to_string();
                let numbers = format!("{total_q} queries and {kv_total} KV tokens in {} sequences", len_indptr - 1);
                assert!(error.contains(&numbers), "{error}");
            }
        }
    }

    #[test]
    fn decode_splits_the_kv_tokens_evenly() {
        let decode = Definition::builtin("gqa_paged_decode_h32_kv4_d128_ps1").unwrap();
        let axes = [("batch_size", 3), ("num_kv_indices", 10)].into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        assert_eq!(lengths(&decode, &axes), (vec![1, 1, 1], vec![4, 3, 3]));
        assert_eq!(sequence_lengths(true, &axes), (vec![0, 0, 0], vec![4, 3, 3]));
    }
}
