//! moe (FP8 block-scale, DeepSeek routing): the `moe-normal-logits-zero-bias` rule and a bound.
//!
//! The workloads take `routing_logits` and `routing_bias` from blobs. The rule: logits are drawn like
//! any random float input (standard normal, float32, from the trial's seed), and the bias is zero,
//! which the definition names as "no bias". Every token then routes by its logits alone, so the
//! experts' loads are as even as random logits make them.
//!
//! The bound counts only what every call must touch whatever the routing: the hidden states and
//! their scales, the logits and the output (the expert weights a call reads depend on the routing, so
//! they are left out). It is a weak bound, and says so by being one.
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
