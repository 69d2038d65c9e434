//! Statistics of timing samples: median, a percentile-bootstrap 95% interval of the median, and the
//! usual summaries. The bootstrap draws from the runner's seeded SplitMix64 stream, so the interval
//! of the same samples is the same every time.
use serde::Serialize;

use crate::materialize::SplitMix64;

/// Bootstrap resamples; 2,000 keeps the 2.5% / 97.5% percentiles stable to well under the timer's
/// resolution for 600 samples.
pub const BOOTSTRAP_RESAMPLES: usize = 2000;

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SampleSummary {
    pub count: usize,
    pub median: f64,
    pub ci95_low: f64,
    pub ci95_high: f64,
    pub mean: f64,
    pub min: f64,
    pub max: f64,
    pub p10: f64,
    pub p90: f64,
}

/// Median of a sorted slice (mean of the two middle values for an even count).
pub fn median_sorted(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 { sorted[n / 2] } else { (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0 }
}

/// Linear-interpolated quantile q in [0, 1] of a sorted slice (NumPy's default "linear" method).
pub fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    let n = sorted.len();
    if n == 0 {
        return f64::NAN;
    }
    let position = q.clamp(0.0, 1.0) * (n - 1) as f64;
    let low = position.floor() as usize;
    let high = position.ceil() as usize;
    sorted[low] + (sorted[high] - sorted[low]) * (position - low as f64)
}

pub fn median(samples: &[f64]) -> f64 {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    median_sorted(&sorted)
}

/// Percentile bootstrap 95% interval of the median: resample with replacement, take each
/// resample's median, report the 2.5% and 97.5% quantiles of those medians.
pub fn bootstrap_median_ci95(samples: &[f64], resamples: usize, seed: u64) -> (f64, f64) {
    if samples.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let mut rng = SplitMix64::new(seed);
    let mut medians = Vec::with_capacity(resamples);
    let mut resample = vec![0.0; samples.len()];
    for _ in 0..resamples {
        for slot in resample.iter_mut() {
            *slot = samples[rng.below(samples.len() as u64) as usize];
        }
        resample.sort_by(f64::total_cmp);
        medians.push(median_sorted(&resample));
    }
    medians.sort_by(f64::total_cmp);
    (quantile_sorted(&medians, 0.025), quantile_sorted(&medians, 0.975))
}

pub fn summarize(samples: &[f64]) -> SampleSummary {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let (ci95_low, ci95_high) = bootstrap_median_ci95(samples, BOOTSTRAP_RESAMPLES, 0x6b69_2d62_6f6f_7473);
    SampleSummary {
        count: samples.len(),
        median: median_sorted(&sorted),
        ci95_low,
        ci95_high,
        mean: if sorted.is_empty() { f64::NAN } else { sorted.iter().sum::<f64>() / sorted.len() as f64 },
        min: sorted.first().copied().unwrap_or(f64::NAN),
        max: sorted.last().copied().unwrap_or(f64::NAN),
        p10: quantile_sorted(&sorted, 0.10),
        p90: quantile_sorted(&sorted, 0.90),
    }
}

/// Geometric mean of positive values (NaN if any is not positive).
pub fn geometric_mean(values: &[f64]) -> f64 {
    if values.is_empty() || values.iter().any(|&v| v <= 0.0 || !v.is_finite()) {
        return f64::NAN;
    }
    (values.iter().map(|v| v.ln()).sum::<f64>() / values.len() as f64).exp()
}
