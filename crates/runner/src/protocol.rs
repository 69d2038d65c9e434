//! The timing protocol `kernelindex-rerun-v2` (docs/PROTOCOL-V2.md), in one
//! place so the Rust executor, the Python worker (which receives these numbers in its job and times
//! through `python/ki_timing.py`) and the BenchmarkProtocol record agree.
//!
//! The published statistic is the **per-call device time**: a CUDA graph of N × (L2 flush, call)
//! and a graph of the N flushes alone are replayed in pairs, and each pair gives one sample,
//! (t(flushes and calls) − t(flushes)) ÷ N; the median of the samples is `latency`. A decode step
//! runs as one captured graph, so this is what a call costs there: no host launch latency, which a
//! one-call graph replay (3–4 µs on the H200) or an eager call (plus any Python launcher's host
//! time) would count. A callable that cannot be captured is timed by CUPTI instead (the Python
//! worker only): the kernels one call launches, summed. Beside it every run keeps v1's eager
//! figure and the one-call graph replay. The input rule is part of the protocol, so runs whose
//! inputs were drawn under different rules never share a comparison group.
use serde::Serialize;

use crate::materialize::LengthRule;

/// `spec.harness.version` of the protocol record.
pub const PROTOCOL_VERSION: &str = "kernelindex-rerun-v2";
/// `spec.comparability.family`.
pub const COMPARABILITY_FAMILY: &str = "kernelindex_rerun_v2";
/// `spec.measurement.timer`.
pub const TIMER: &str = "cuda_graph_per_call";

/// How a run's inputs were made beyond what the definition fixes (part of the protocol key).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum InputRule {
    /// Every input drawn by the documented generator (or read from the workload's blobs); nothing
    /// synthesized.
    Random,
    /// Page tables synthesized under a length rule (crates/runner/src/materialize.rs).
    Lengths(LengthRule),
}

impl InputRule {
    pub fn name(self) -> &'static str {
        match self {
            InputRule::Random => "random",
            InputRule::Lengths(rule) => rule.name(),
        }
    }
}

/// Which method gave a run's `latency`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PerCallMethod {
    /// N × (flush, call) in one graph, minus N flushes, ÷ N.
    InGraph,
    /// CUPTI kernel durations of one call, summed (callables that cannot be captured).
    Cupti,
}

impl PerCallMethod {
    /// The second measurement that carries the same value under the method's own name.
    pub fn metric(self) -> &'static str {
        match self {
            PerCallMethod::InGraph => "latency_in_graph",
            PerCallMethod::Cupti => "latency_cupti",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TimingProtocol {
    pub warmup_iterations: usize,
    /// Timed eager calls, and timed replays of a one-call graph, per trial.
    pub timed_iterations: usize,
    pub trials: usize,
    /// The L2 flush writes at least this many times the device's L2 size before every timed
    /// call (and every warm-up), outside the timed span.
    pub l2_flush_factor: usize,
    pub bootstrap_resamples: usize,
    /// N: calls, each after its own flush, in one captured graph of the per-call figure.
    pub calls_per_graph: usize,
    /// Replay pairs (the flushes alone, then flushes and calls) per trial; one sample each.
    pub graph_pairs: usize,
    pub input_rule: InputRule,
}

impl TimingProtocol {
    pub const RERUN_V2: TimingProtocol = TimingProtocol {
        warmup_iterations: 10,
        timed_iterations: 100,
        trials: 3,
        l2_flush_factor: 2,
        bootstrap_resamples: crate::stats::BOOTSTRAP_RESAMPLES,
        calls_per_graph: 20,
        graph_pairs: 30,
        input_rule: InputRule::Lengths(LengthRule::Realistic),
    };

    /// Bytes the flush writes for an L2 of `l2_bytes`: over factor × L2, rounded up to 1 MiB.
    pub fn flush_bytes(&self, l2_bytes: usize) -> usize {
        let minimum = self.l2_flush_factor * l2_bytes + 1;
        minimum.div_ceil(1 << 20) * (1 << 20)
    }

    /// The protocol record's name: the version and the input rule, `kernelindex-rerun-v2-realistic`.
    pub fn name(&self) -> String {
        format!("{PROTOCOL_VERSION}-{}", self.input_rule.name())
    }

    /// `spec.measurement.inputRegeneration`: fresh inputs every trial, under the input rule.
    pub fn input_regeneration(&self) -> String {
        format!("per_trial_{}", self.input_rule.name())
    }

    /// Per-call samples of one run: pairs × trials.
    pub fn per_call_samples(&self) -> usize {
        self.graph_pairs * self.trials
    }

    /// The protocol in words, for the BenchmarkProtocol record and the results tables.
    pub fn description(&self) -> String {
        let rule = match self.input_rule {
            InputRule::Random => "every input drawn by the runner's documented generator or read from the workload's \
                                  files, nothing synthesized"
                .to_string(),
            InputRule::Lengths(rule) => format!(
                "page tables synthesized under the `{rule}` length rule (crates/runner/src/materialize.rs), \
                 every other input drawn by the documented generator"
            ),
        };
        format!(
            "{}: latency = per-call device time, the median over {} trials x {} samples, each sample \
             (t(graph of {} x (L2 flush, call)) - t(graph of the {} flushes)) / {}, with a percentile-bootstrap \
             95% interval; a callable that cannot be captured is timed by CUPTI (its kernels per call, summed). \
             Every flush writes more than {}x the L2. Beside it: latency_eager ({} warm-ups, then {} calls each \
             between two CUDA events after a flush) and latency_graph_replay (a one-call graph, the same way). \
             Inputs: fresh every trial; {}.",
            self.name(),
            self.trials,
            self.graph_pairs,
            self.calls_per_graph,
            self.calls_per_graph,
            self.calls_per_graph,
            self.l2_flush_factor,
            self.warmup_iterations,
            self.timed_iterations,
            rule
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rule_names_the_protocol() {
        let realistic = TimingProtocol::RERUN_V2;
        assert_eq!(realistic.name(), "kernelindex-rerun-v2-realistic");
        assert_eq!(realistic.input_regeneration(), "per_trial_realistic");
        let tail = TimingProtocol { input_rule: InputRule::Lengths(LengthRule::Tail), ..realistic };
        assert_eq!(tail.name(), "kernelindex-rerun-v2-tail");
        let random = TimingProtocol { input_rule: InputRule::Random, ..realistic };
        assert_eq!(random.input_regeneration(), "per_trial_random");
        assert!(random.description().contains("nothing synthesized"));
        assert!(realistic.description().len() <= 1000, "fits comparability.notes");
        assert_eq!(realistic.per_call_samples(), 90);
        // 2 x a 60 MiB L2, plus a byte, rounded up to a MiB.
        assert_eq!(realistic.flush_bytes(60 << 20), 121 << 20);
    }
}
