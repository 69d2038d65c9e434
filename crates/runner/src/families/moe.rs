//! moe (FP8 block-scale, DeepSeek routing): the `moe-normal-logits-zero-bias` rule and a bound.
//!
//! The workloads take `routing_logits` and `routing_bias` from blobs. The rule: logits are drawn like
//! any random float input (standard normal, float32, from the trial's seed), and the bias is zero,
//! which the definition names as "no bias". Every token then routes by its logits alone, so the
//! experts' loads are as even as random logits make them.
//!
//! The bound from the axes counts only what every call must touch whatever the routing: the hidden
//! states and their scales, the logits and the output. The expert weights a call reads depend on the
//! routing: the judge counts, on each trial's own inputs, the local experts some token is routed to
//! and the (token, local expert) pairs (`python/ki_routing.py`), and [`ExpertWork::routed`] adds
//! each reached expert's weights and scales once and each pair's two GEMMs' flops.
use std::collections::BTreeMap;

use super::Bound;
use crate::definition::Definition;
use crate::materialize::MaterializeError;
use crate::tensor::{HostTensor, TensorSet};

pub fn synthesize(definition: &Definition, axes: &BTreeMap<String, usize>) -> Result<TensorSet, MaterializeError> {
    let _ = definition;
    let e = axes.get("num_experts").copied().unwrap_or(0);
    let mut out = TensorSet::new();
    // The logits are drawn on the GPU like random inputs (`drawn_like_random`); the bias is a tensor.
    out.insert("routing_bias", HostTensor::from_bf16(vec![e], &vec![half::bf16::ZERO; e]));
    Ok(out)
}

/// The MoE routing logits are random inputs under this rule (the plan draws them on the GPU).
pub fn drawn_like_random(name: &str) -> bool {
    name == "routing_logits"
}

pub fn bound(axes: &BTreeMap<String, usize>) -> Bound {
    let axis = |n: &str| axes.get(n).copied().unwrap_or(0) as f64;
    let (t, h, e) = (axis("seq_len"), axis("hidden_size"), axis("num_experts"));
    let blocks = axis("num_hidden_blocks");
    Bound { bytes: t * h + blocks * t * 4.0 + t * e * 4.0 + t * h * 2.0, flops: 0.0 }
}

/// What one local expert adds to a call: its weights and scales read once, and the flops of one
/// token through it (gate/up GEMM, then down GEMM). The GEMMs are fp8, whose dense peak on Hopper
/// (1,979 TFLOP/s) is twice the bf16 one the bound divides by: each fp8 flop counts as half, so
/// the bound stays one no fp8 kernel can beat.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ExpertWork {
    pub bytes: f64,
    pub flops_per_token: f64,
}

/// The weights of the definition's moe (`gemm1_weights`, `gemm2_weights` and their scales, split
/// over `num_local_experts`), or None for a definition without them.
pub fn expert_work(definition: &Definition, axes: &BTreeMap<String, usize>) -> Option<ExpertWork> {
    let specs = definition.input_specs().ok()?;
    let experts = *axes.get("num_local_experts").filter(|&&e| e > 0)? as f64;
    let weights = ["gemm1_weights", "gemm1_weights_scale", "gemm2_weights", "gemm2_weights_scale"];
    let mut bytes = 0.0;
    for name in weights {
        bytes += super::spec_bytes(specs.iter().find(|s| s.name == name)?, axes);
    }
    let axis = |n: &str| axes.get(n).copied().unwrap_or(0) as f64;
    let (h, i, gemm1_out) = (axis("hidden_size"), axis("intermediate_size"), axis("gemm1_out_size"));
    Some(ExpertWork { bytes: bytes / experts, flops_per_token: (2.0 * h * gemm1_out + 2.0 * i * h) / 2.0 })
}

impl ExpertWork {
    /// The work of `experts` reached local experts and `assignments` (token, local expert) pairs.
    pub fn routed(&self, experts: u64, assignments: u64) -> Bound {
        Bound { bytes: self.bytes * experts as f64, flops: self.flops_per_token * assignments as f64 }
    }
}
