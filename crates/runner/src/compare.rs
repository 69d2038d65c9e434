//! Comparators: an implementation's outputs against the reference's.
//!
//! * `flashinfer_bench_eval`: an element fails when abs_err > atol AND rel_err > rtol, with
//!   rel_err = abs_err / (|ref| + 1e-8); atol = rtol = 1e-2 by default; every element must pass.
//! * `sol_execbench_eval`: an element passes when |out − ref| <= atol + rtol·|ref|.
//! * relative L2 error ‖out − ref‖₂ / ‖ref‖₂, always reported.
//!
//! Non-finite values: a NaN or ±inf in the output fails, unless the reference holds the same
//! infinity at that position (an empty sequence's lse is −inf in the reference and must be −inf in
//! the output). Such matching infinities count as exact matches (error 0) and are left out of the
//! L2 norms, which would otherwise be NaN.
use serde::Serialize;

use crate::tensor::HostTensor;

#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Tolerance {
    pub atol: f64,
    pub rtol: f64,
}

impl Tolerance {
    pub const FLASHINFER_BENCH_DEFAULT: Tolerance = Tolerance { atol: 1e-2, rtol: 1e-2 };
}

/// How one output compared. Errors are taken over elements where both values are finite.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct OutputComparison {
    pub name: String,
    pub elements: usize,
    pub max_abs_error: f64,
    pub max_rel_error: f64,
    pub relative_l2_error: f64,
    /// Fraction of elements passing `flashinfer_bench_eval`'s element rule.
    pub matched_ratio: f64,
    pub flashinfer_bench_pass: bool,
    /// Fraction of elements passing `sol_execbench_eval`'s element rule.
    pub sol_execbench_matched_ratio: f64,
    pub sol_execbench_pass: bool,
    /// Output elements that are NaN or infinite where the reference is not the same infinity.
    pub non_finite_mismatches: usize,
}

impl OutputComparison {
    /// Folds another comparison of the same output into this one, keeping the worst of each figure.
    pub fn fold_worst(&mut self, other: &OutputComparison) {
        self.max_abs_error = self.max_abs_error.max(other.max_abs_error);
        self.max_rel_error = self.max_rel_error.max(other.max_rel_error);
        self.relative_l2_error = self.relative_l2_error.max(other.relative_l2_error);
        self.matched_ratio = self.matched_ratio.min(other.matched_ratio);
        self.sol_execbench_matched_ratio = self.sol_execbench_matched_ratio.min(other.sol_execbench_matched_ratio);
        self.flashinfer_bench_pass &= other.flashinfer_bench_pass;
        self.sol_execbench_pass &= other.sol_execbench_pass;
        self.non_finite_mismatches += other.non_finite_mismatches;
    }
}

#[derive(Debug, thiserror::Error, PartialEq)]
#[error("output `{name}`: {message}")]
pub struct CompareError {
    pub name: String,
    pub message: String,
}

/// Element-wise outcome under one rule: (elements passing, total).
fn count_passing(out: &[f32], reference: &[f32], passes: impl Fn(f64, f64) -> bool) -> usize {
    out.iter()
        .zip(reference)
        .filter(|&(&o, &r)| match (o.is_finite(), r.is_finite()) {
            (true, true) => passes(o as f64, r as f64),
            _ => o.is_infinite() && o == r,
        })
        .count()
}

/// `flashinfer_bench_eval` element rule over two equally long slices; true when all pass.
pub fn flashinfer_bench_eval(out: &[f32], reference: &[f32], tolerance: Tolerance) -> (usize, bool) {
    let passing = count_passing(out, reference, |o, r| {
        let abs_err = (o - r).abs();
        let rel_err = abs_err / (r.abs() + 1e-8);
        !(abs_err > tolerance.atol && rel_err > tolerance.rtol)
    });
    (passing, passing == out.len() && out.len() == reference.len())
}

/// `sol_execbench_eval` element rule (|out − ref| <= atol + rtol·|ref|); true when all pass.
pub fn sol_execbench_eval(out: &[f32], reference: &[f32], tolerance: Tolerance) -> (usize, bool) {
    let passing = count_passing(out, reference, |o, r| (o - r).abs() <= tolerance.atol + tolerance.rtol * r.abs());
    (passing, passing == out.len() && out.len() == reference.len())
}

/// ‖out − ref‖₂ / ‖ref‖₂ over positions where both are finite; 0 when both norms are 0, +inf when
/// only the reference's is. Non-finite output values are reported separately, not here.
pub fn relative_l2_error(out: &[f32], reference: &[f32]) -> f64 {
    let (mut diff, mut norm) = (0.0f64, 0.0f64);
    for (&o, &r) in out.iter().zip(reference) {
        if o.is_finite() && r.is_finite() {
            diff += (o as f64 - r as f64).powi(2);
            norm += (r as f64).powi(2);
        }
    }
    match (diff, norm) {
        (0.0, _) => 0.0,
        (_, 0.0) => f64::INFINITY,
        (d, n) => (d / n).sqrt(),
    }
}

/// Compares one output with its reference under both rules and reports every statistic.
pub fn compare_values(
    name: &str,
    out: &[f32],
    reference: &[f32],
    tolerance: Tolerance,
) -> Result<OutputComparison, CompareError> {
    if out.len() != reference.len() {
        return Err(CompareError {
            name: name.into(),
            message: format!("{} elements, the reference has {}", out.len(), reference.len()),
        });
    }
    let (mut max_abs, mut max_rel, mut non_finite) = (0.0f64, 0.0f64, 0usize);
    for (&o, &r) in out.iter().zip(reference) {
        if o.is_finite() && r.is_finite() {
            let abs_err = (o as f64 - r as f64).abs();
            max_abs = max_abs.max(abs_err);
            max_rel = max_rel.max(abs_err / (r.abs() as f64 + 1e-8));
        } else if !(o.is_infinite() && o == r) {
            non_finite += 1;
        }
    }
    let (fib_passing, fib_pass) = flashinfer_bench_eval(out, reference, tolerance);
    let (sol_passing, sol_pass) = sol_execbench_eval(out, reference, tolerance);
    let ratio = |n: usize| {
        if out.is_empty() { 1.0 } else { n as f64 / out.len() as f64 }
    };
    Ok(OutputComparison {
        name: name.into(),
        elements: out.len(),
        max_abs_error: max_abs,
        max_rel_error: max_rel,
        relative_l2_error: relative_l2_error(out, reference),
        matched_ratio: ratio(fib_passing),
        flashinfer_bench_pass: fib_pass,
        sol_execbench_matched_ratio: ratio(sol_passing),
        sol_execbench_pass: sol_pass,
        non_finite_mismatches: non_finite,
    })
}

/// Compares two tensors (shapes must agree; values are widened to f32 first).
pub fn compare_tensors(
    name: &str,
    out: &HostTensor,
    reference: &HostTensor,
    tolerance: Tolerance,
) -> Result<OutputComparison, CompareError> {
    if out.shape != reference.shape {
        return Err(CompareError {
            name: name.into(),
            message: format!("shape {:?}, the reference has {:?}", out.shape, reference.shape),
        });
    }
    if out.dtype != reference.dtype {
        return Err(CompareError {
            name: name.into(),
            message: format!("dtype {}, the reference has {}", out.dtype, reference.dtype),
        });
    }
    compare_values(name, &out.to_f32_lossy(), &reference.to_f32_lossy(), tolerance)
}
