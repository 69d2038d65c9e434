//! The CPU reference against hand-computed cases, the empty-sequence rule, the family's definitions
//! and bad inputs.
use std::path::PathBuf;

use ki_runner::bf16;
use ki_runner::definition::{BUILTIN_DEFINITIONS, Definition};
use ki_runner::materialize::{LengthRule, WorkloadCase, materialize};
use ki_runner::reference::{
    GqaPagedDecodeInputs, GqaPagedDecodeShape, gqa_paged_decode_reference, run_definition_reference,
};
use ki_runner::tensor::{HostTensor, TensorSet};

fn b(values: &[f32]) -> Vec<bf16> {
    values.iter().map(|&v| bf16::from_f32(v)).collect()
}

/// One query head, one KV head, head_dim 2, page size 1, two tokens: small enough to do by hand.
#[test]
fn two_tokens_by_hand() {
    let shape = GqaPagedDecodeShape { num_qo_heads: 1, num_kv_heads: 1, head_dim: 2, page_size: 1 };
    // Pages: 0 = k(1,0) v(1,2); 1 = k(0,1) v(3,4); 2 = unused.
    let q = b(&[1.0, 2.0]);
    let k = b(&[1.0, 0.0, 0.0, 1.0, 9.0, 9.0]);
    let v = b(&[1.0, 2.0, 3.0, 4.0, 9.0, 9.0]);
    let inputs = GqaPagedDecodeInputs {
        q: &q,
        k_cache: &k,
        v_cache: &v,
        kv_indptr: &[0, 2],
        kv_indices: &[1, 0],
        kv_last_page_len: None,
        sm_scale: 0.5,
    };
    let out = gqa_paged_decode_reference(&shape, &inputs).unwrap();
    // logits: page 1 -> 2*0.5 = 1, page 0 -> 1*0.5 = 0.5.
    let (l1, l0) = (1.0f64, 0.5f64);
    let sum = l1.exp() + l0.exp();
    let lse = sum.ln() / std::f64::consts::LN_2;
    let p1 = l1.exp() / sum;
    let p0 = l0.exp() / sum;
    let expected = [p1 * 3.0 + p0 * 1.0, p1 * 4.0 + p0 * 2.0];
    assert!((out.lse[0] as f64 - lse).abs() < 1e-6, "lse {} vs {lse}", out.lse[0]);
    for (o, e) in out.output.iter().zip(expected) {
        assert_eq!(*o, bf16::from_f64(e), "output {o} vs {e}");
    }
}

/// Grouped heads read their own KV head; page size 4 with a partial last page ignores the rest.
#[test]
fn grouping_and_last_page_len_by_hand() {
    let shape = GqaPagedDecodeShape { num_qo_heads: 4, num_kv_heads: 2, head_dim: 1, page_size: 4 };
    // One page of 4 slots × 2 KV heads × dim 1. Slot s, head h: k = 0, v = 10·h + s.
    let k = b(&[0.0; 8]);
    let v = b(&[0.0, 10.0, 1.0, 11.0, 2.0, 12.0, 3.0, 13.0]);
    let q = b(&[1.0, 1.0, 1.0, 1.0]);
    let inputs = GqaPagedDecodeInputs {
        q: &q,
        k_cache: &k,
        v_cache: &v,
        kv_indptr: &[0, 1],
        kv_indices: &[0],
        kv_last_page_len: Some(&[3]),
        sm_scale: 1.0,
    };
    let out = gqa_paged_decode_reference(&shape, &inputs).unwrap();
    // Equal logits: the mean of the first 3 slots. Heads 0,1 -> KV head 0 (1.0); heads 2,3 -> KV head 1 (11.0).
    let got: Vec<f32> = out.output.iter().map(|v| v.to_f32()).collect();
    assert_eq!(got, vec![1.0, 1.0, 11.0, 11.0]);
    let lse = (3.0f32).ln() / std::f32::consts::LN_2;
    for l in &out.lse {
        assert!((l - lse).abs() < 1e-6);
    }
}

#[test]
fn empty_sequence_gives_zeros_and_negative_infinity() {
    let shape = GqaPagedDecodeShape { num_qo_heads: 2, num_kv_heads: 1, head_dim: 2, page_size: 1 };
    let q = b(&[1.0, 1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.5]);
    let k = b(&[1.0, 1.0]);
    let v = b(&[2.0, 3.0]);
    let inputs = GqaPagedDecodeInputs {
        q: &q,
        k_cache: &k,
        v_cache: &v,
        kv_indptr: &[0, 0, 1],
        kv_indices: &[0],
        kv_last_page_len: None,
        sm_scale: 1.0,
    };
    let out = gqa_paged_decode_reference(&shape, &inputs).unwrap();
    assert!(out.output[..4].iter().all(|v| v.to_f32() == 0.0));
    assert_eq!(&out.lse[..2], &[f32::NEG_INFINITY, f32::NEG_INFINITY]);
    // The non-empty sequence has one token: output = v, lse = logit / ln 2 = 1.0 / ln 2.
    assert_eq!(out.output[4..].iter().map(|v| v.to_f32()).collect::<Vec<_>>(), vec![2.0, 3.0, 2.0, 3.0]);
    assert!((out.lse[2] - 1.0 / std::f32::consts::LN_2).abs() < 1e-6);
}

/// A naive f64 evaluation of the same formula, token by token, for random inputs of every
/// definition of the family: the reference must agree to bf16 rounding.
#[test]
fn every_builtin_definition_matches_a_naive_f64_evaluation() {
    assert_eq!(BUILTIN_DEFINITIONS.len(), 17);
    for (name, _) in BUILTIN_DEFINITIONS {
        let definition = Definition::builtin(name).unwrap();
        let shape = GqaPagedDecodeShape::from_definition(&definition).unwrap();
        let mut axes = std::collections::BTreeMap::new();
        axes.insert("batch_size".to_string(), 3);
        let pages = if shape.page_size == 1 { 60 } else { 5 };
        axes.insert("num_pages".to_string(), pages);
        axes.insert("num_kv_indices".to_string(), pages - 2);
        let workload = WorkloadCase::from_axes(&definition, axes).unwrap();
        let inputs = materialize(&definition, &workload, 42, None, LengthRule::Realistic).unwrap();
        let outputs = run_definition_reference(&definition, &inputs, name).unwrap();
        let q = inputs.get("q").unwrap().to_f32_lossy();
        let k = inputs.get("k_cache").unwrap().to_f32_lossy();
        let v = inputs.get("v_cache").unwrap().to_f32_lossy();
        let indptr = inputs.get("kv_indptr").unwrap().to_i32().unwrap();
        let indices = inputs.get("kv_indices").unwrap().to_i32().unwrap();
        let last = inputs.get("kv_last_page_len").map(|t| t.to_i32().unwrap());
        let scale = inputs.get("sm_scale").unwrap().to_f32_exact().unwrap()[0] as f64;
        let out = outputs.get("output").unwrap().to_f32_lossy();
        let lse = outputs.get("lse").unwrap().to_f32_exact().unwrap();
        let (hq, hkv, d, ps) = (shape.num_qo_heads, shape.num_kv_heads, shape.head_dim, shape.page_size);
        for bi in 0..3 {
            let pages: Vec<usize> =
                indices[indptr[bi] as usize..indptr[bi + 1] as usize].iter().map(|&p| p as usize).collect();
            let mut rows = Vec::new();
            for (i, &p) in pages.iter().enumerate() {
                let used = if i + 1 == pages.len() { last.as_ref().map_or(ps, |l| l[bi] as usize) } else { ps };
                rows.extend((0..used).map(|s| p * ps + s));
            }
            for h in 0..hq {
                let kvh = h / (hq / hkv);
                let qrow = &q[(bi * hq + h) * d..][..d];
                let logits: Vec<f64> = rows
                    .iter()
                    .map(|&r| (0..d).map(|x| qrow[x] as f64 * k[(r * hkv + kvh) * d + x] as f64).sum::<f64>() * scale)
                    .collect();
                let max = logits.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let sum: f64 = logits.iter().map(|l| (l - max).exp()).sum();
                let expected_lse = (max + sum.ln()) / std::f64::consts::LN_2;
                assert!((lse[bi * hq + h] as f64 - expected_lse).abs() < 1e-4, "{name} lse b{bi} h{h}");
                for x in 0..d {
                    let e: f64 = rows
                        .iter()
                        .zip(&logits)
                        .map(|(&r, l)| (l - max).exp() / sum * v[(r * hkv + kvh) * d + x] as f64)
                        .sum();
                    let got = out[(bi * hq + h) * d + x] as f64;
                    // One bf16 ulp of the result, plus f32 accumulation slack.
                    assert!((got - e).abs() <= e.abs() / 128.0 + 1e-4, "{name} out b{bi} h{h} d{x}: {got} vs {e}");
                }
            }
        }
    }
}

fn small_inputs(definition: &Definition) -> TensorSet {
    let mut axes = std::collections::BTreeMap::new();
    axes.insert("batch_size".to_string(), 2);
    axes.insert("num_pages".to_string(), 10);
    axes.insert("num_kv_indices".to_string(), 6);
    materialize(definition, &WorkloadCase::from_axes(definition, axes).unwrap(), 1, None, LengthRule::Realistic)
        .unwrap()
}

#[test]
fn bad_inputs_give_clear_errors() {
    let definition = Definition::builtin("gqa_paged_decode_h32_kv4_d128_ps1").unwrap();
    let good = small_inputs(&definition);

    let mut missing = good.clone();
    missing.tensors.remove("v_cache");
    let err = run_definition_reference(&definition, &missing, "in.safetensors").unwrap_err().0;
    assert!(err.contains("in.safetensors") && err.contains("`v_cache` is missing"), "{err}");

    let mut wrong_dtype = good.clone();
    let q = wrong_dtype.get("q").unwrap().to_f32_lossy();
    wrong_dtype.insert("q", HostTensor::from_f32(vec![2, 32, 128], &q));
    let err = run_definition_reference(&definition, &wrong_dtype, "in.safetensors").unwrap_err().0;
    assert!(err.contains("`q` has dtype float32, expected bfloat16"), "{err}");

    let mut wrong_shape = good.clone();
    let q = wrong_shape.get("q").unwrap().to_bf16().unwrap();
    wrong_shape.insert("q", HostTensor::from_bf16(vec![2, 16, 256], &q));
    let err = run_definition_reference(&definition, &wrong_shape, "in.safetensors").unwrap_err().0;
    assert!(err.contains("`q` dimension 1 (num_qo_heads) is 16, expected 32"), "{err}");

    let mut bad_index = good.clone();
    bad_index.insert("kv_indices", HostTensor::from_i32(vec![6], &[0, 1, 2, 3, 4, 99]));
    let err = run_definition_reference(&definition, &bad_index, "in.safetensors").unwrap_err().0;
    assert!(err.contains("kv_indices[5] = 99 is outside 0..10"), "{err}");

    let mut bad_indptr = good.clone();
    bad_indptr.insert("kv_indptr", HostTensor::from_i32(vec![3], &[0, 4, 5]));
    let err = run_definition_reference(&definition, &bad_indptr, "in.safetensors").unwrap_err().0;
    assert!(err.contains("kv_indptr[2] = 5 but kv_indices has 6 entries"), "{err}");
}

/// A definition given as a JSON file is the same as the built-in of that name; a broken file names
/// itself, the line and the column.
#[test]
fn definitions_load_from_files_too() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/flashinfer-trace-samples/flashinfer_trace/definitions/gqa_paged");
    let from_file = Definition::load(dir.join("gqa_paged_decode_h6_kv1_d128_ps64.json").to_str().unwrap()).unwrap();
    let builtin = Definition::builtin("gqa_paged_decode_h6_kv1_d128_ps64").unwrap();
    assert_eq!(from_file.reference, builtin.reference);
    assert_eq!(
        GqaPagedDecodeShape::from_definition(&from_file).unwrap(),
        GqaPagedDecodeShape::from_definition(&builtin).unwrap()
    );
    let broken = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(broken.path(), "{\"name\": \"x\",\n \"op_type\": 3}").unwrap();
    let err = Definition::load(broken.path().to_str().unwrap()).unwrap_err().to_string();
    assert!(err.contains(&broken.path().display().to_string()) && err.contains("line 2"), "{err}");
}
