//! gemm (C = A · Bᵀ) and the rmsnorm family: every input is random, nothing is synthesized.
use std::collections::BTreeMap;

use super::Bound;

/// 2·M·N·K operations; A, B read once and C written once (the definitions are fp16).
pub fn gemm_bound(axes: &BTreeMap<String, usize>) -> Bound {
    let (m, n, k) =
        (axes.get("M").copied().unwrap_or(0), axes.get("N").copied().unwrap_or(0), axes.get("K").copied().unwrap_or(0));
    let (m, n, k) = (m as f64, n as f64, k as f64);
    Bound { bytes: 2.0 * (m * k + n * k + m * n), flops: 2.0 * m * n * k }
}
