//! Per operation family: how `ki verify` synthesizes the inputs that FlashInfer-Bench workloads take
//! from safetensors blobs we do not have, and the family's speed-of-light bound.
//!
//! Every rule honours the workload's axes exactly and is named; the name is part of the
//! BenchmarkProtocol (`kernelindex-rerun-v2-<rule>`), so runs under different rules never share a
//! comparison group, and every run lists the inputs that were synthesized.
//!
//! * `random` (gemm, rmsnorm, fused_add_rmsnorm): nothing is synthesized; every input is drawn by
//!   the documented generator (`python/ki_inputs.py`).
//! * `even` (gqa_paged, gqa_ragged, mla_paged): sequence lengths split as evenly as possible
//!   (`materialize::synthesize_page_table`'s rule, until the kernels helper's length rules land),
//!   page ids distinct and shuffled; for prefill, each sequence's KV length is its query length plus
//!   an even share of the extra KV tokens, so causal masks stay meaningful ([`attention`]).
//! * `moe-normal-logits-zero-bias` (moe): routing logits drawn like random inputs, routing bias
//!   zero (the definition's "no bias") ([`moe`]).
pub mod attention;
pub mod dense;
pub mod moe;

use std::collections::BTreeMap;

use crate::definition::Definition;
use crate::materialize::{InputSource, MaterializeError, WorkloadCase};
use crate::tensor::{DType, HostTensor, TensorSet};

/// Device ceilings the speed-of-light bound divides by: the H200's datasheet peaks (HBM3e 4.8 TB/s;
/// dense bf16/fp16 989 TFLOP/s; fp8 1,979 TFLOP/s). Nothing honest runs faster than these, so a time
/// under the bound is refused.
#[derive(Clone, Copy, Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Ceilings {
    pub bytes_per_s: f64,
    pub flops_per_s: f64,
}

impl Ceilings {
    pub const H200_DATASHEET: Ceilings = Ceilings { bytes_per_s: 4.8e12, flops_per_s: 989e12 };
}

/// The least work one call must do.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Bound {
    pub bytes: f64,
    pub flops: f64,
}

impl Bound {
    /// The time no implementation can beat on `ceilings` (ns).
    pub fn time_ns(&self, ceilings: &Ceilings) -> f64 {
        (self.bytes / ceilings.bytes_per_s).max(self.flops / ceilings.flops_per_s) * 1e9
    }
}

/// One trial's inputs as the workers build them.
#[derive(Clone, Debug)]
pub struct TrialInputs {
    /// Index tensors (and other synthesized tensors) the workers read from a file.
    pub synthesized: TensorSet,
    /// Names of the inputs that were synthesized (the blob inputs), with the rule.
    pub synthesized_names: Vec<String>,
    /// Blob inputs the rule draws like random inputs instead (on the GPU, from the trial's seed).
    pub drawn_random: Vec<String>,
}

/// The family's rule name for `definition` (see the module docs).
pub fn rule(definition: &Definition) -> &'static str {
    match definition.op_type.as_str() {
        "gqa_paged" | "gqa_ragged" | "mla_paged" => "even",
        "moe" => "moe-normal-logits-zero-bias",
        _ => "random",
    }
}

/// Every axis of the workload, constants included.
pub fn resolved_axes(
    definition: &Definition,
    workload: &WorkloadCase,
) -> Result<BTreeMap<String, usize>, MaterializeError> {
    let mut axes = BTreeMap::new();
    for (name, axis) in &definition.axes {
        let value = match (axis.kind.as_str(), axis.value, workload.axes.get(name)) {
            ("const", Some(v), Some(&w)) if v != w => {
                return Err(MaterializeError(format!(
                    "workload {}: /axes/{name} = {w}, the definition fixes {v}",
                    workload.uuid
                )));
            }
            ("const", Some(v), _) => v,
            (_, _, Some(&w)) => w,
            _ => return Err(MaterializeError(format!("workload {}: /axes/{name} is missing", workload.uuid))),
        };
        if value < 0 {
            return Err(MaterializeError(format!("workload {}: /axes/{name} = {value} is negative", workload.uuid)));
        }
        axes.insert(name.clone(), value as usize);
    }
    Ok(axes)
}

/// The inputs a workload names in blobs, synthesized by the family's rule.
pub fn synthesize(
    definition: &Definition,
    workload: &WorkloadCase,
    axes: &BTreeMap<String, usize>,
    seed: u64,
) -> Result<TrialInputs, MaterializeError> {
    let wanted: Vec<String> = workload
        .inputs
        .iter()
        .filter(|(_, source)| matches!(source, InputSource::Safetensors { .. }))
        .map(|(name, _)| name.clone())
        .collect();
    let mut synthesized = TensorSet::new();
    if !wanted.is_empty() {
        let made = match definition.op_type.as_str() {
            "gqa_paged" | "gqa_ragged" | "mla_paged" => attention::synthesize(definition, axes, seed)?,
            "moe" => moe::synthesize(definition, axes)?,
            other => {
                return Err(MaterializeError(format!(
                    "workload {}: inputs {} come from blobs and family {other} has no synthesis rule",
                    workload.uuid,
                    wanted.join(", ")
                )));
            }
        };
        for name in &wanted {
            if definition.op_type == "moe" && moe::drawn_like_random(name) {
                continue;
            }
            let tensor = made.get(name).cloned().ok_or_else(|| {
                MaterializeError(format!(
                    "workload {}: no rule of {} makes input `{name}`",
                    workload.uuid, definition.op_type
                ))
            })?;
            synthesized.insert(name.clone(), tensor);
        }
    }
    // Every synthesized tensor has the shape the definition and axes say.
    for spec in definition.input_specs().map_err(MaterializeError)? {
        if let Some(t) = synthesized.get(&spec.name) {
            let mut check = axes.clone();
            crate::definition::check_tensor(
                &spec,
                t,
                &mut check,
                &format!("workload {}: /inputs/{}", workload.uuid, spec.name),
            )
            .map_err(MaterializeError)?;
        }
    }
    let drawn_random: Vec<String> =
        wanted.iter().filter(|n| definition.op_type == "moe" && moe::drawn_like_random(n)).cloned().collect();
    Ok(TrialInputs { synthesized_names: wanted, synthesized, drawn_random })
}

/// The family's bound for one call on these inputs.
pub fn bound(definition: &Definition, axes: &BTreeMap<String, usize>, synthesized: &TensorSet) -> Bound {
    let bytes_of = |specs: Result<Vec<crate::definition::TensorSpec>, String>| -> f64 {
        specs.unwrap_or_default().iter().map(|s| spec_bytes(s, axes)).sum()
    };
    match definition.op_type.as_str() {
        "gemm" => dense::gemm_bound(axes),
        "gqa_paged" | "gqa_ragged" | "mla_paged" => attention::bound(definition, axes, synthesized),
        "moe" => moe::bound(axes),
        // rmsnorm and the rest: every input read once, every output written once.
        _ => Bound { bytes: bytes_of(definition.input_specs()) + bytes_of(definition.output_specs()), flops: 0.0 },
    }
}

/// The bytes of one tensor of `spec` at `axes`.
pub(crate) fn spec_bytes(spec: &crate::definition::TensorSpec, axes: &BTreeMap<String, usize>) -> f64 {
    let n: usize = spec.shape.as_deref().unwrap_or(&[]).iter().map(|a| axes.get(a).copied().unwrap_or(0)).product();
    (n * spec.dtype.size_in_bytes()) as f64
}

pub(crate) fn i32_tensor(values: &[i32]) -> HostTensor {
    HostTensor::from_i32(vec![values.len()], values)
}

pub(crate) fn size_of(dtype: DType) -> f64 {
    dtype.size_in_bytes() as f64
}
