//! The timing protocol `kernelindex-rerun-v1`, in one place so the Rust executor, the Python worker
//! (which receives these numbers in its job) and the BenchmarkProtocol record agree.
use serde::Serialize;

pub const PROTOCOL_NAME: &str = "kernelindex-rerun-v1";

#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TimingProtocol {
    pub warmup_iterations: usize,
    pub timed_iterations: usize,
    pub trials: usize,
    /// The L2 flush writes at least this many times the device's L2 size before every timed
    /// iteration (and every warm-up), outside the timed span.
    pub l2_flush_factor: usize,
    pub bootstrap_resamples: usize,
}

impl TimingProtocol {
    pub const RERUN_V1: TimingProtocol = TimingProtocol {
        warmup_iterations: 10,
        timed_iterations: 200,
        trials: 3,
        l2_flush_factor: 2,
        bootstrap_resamples: crate::stats::BOOTSTRAP_RESAMPLES,
    };

    /// Bytes the flush writes for an L2 of `l2_bytes`: over factor × L2, rounded up to 1 MiB.
    pub fn flush_bytes(&self, l2_bytes: usize) -> usize {
        let minimum = self.l2_flush_factor * l2_bytes + 1;
        minimum.div_ceil(1 << 20) * (1 << 20)
    }
}

/// The protocol in words, for the BenchmarkProtocol record and the results table.
pub const PROTOCOL_DESCRIPTION: &str = "kernelindex-rerun-v1: before every timed iteration a kernel writes \
more than 2x the L2 size (outside the timed span; it also keeps the GPU busy up to the start event, so host \
launch latency is not counted); 10 warm-up calls, then 200 timed calls per trial, each between two CUDA \
events on one stream; 3 trials, each on freshly generated inputs; primary statistic: the median of all \
600 samples, with a percentile-bootstrap 95% interval (2000 resamples); raw samples kept; beside it the \
same protocol replaying a CUDA graph of one call.";
