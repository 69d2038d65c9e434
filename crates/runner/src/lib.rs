//! `ki-runner`: KernelIndex's verification runner (issue 7).
//!
//! * [`reference`]: CPU references (the GQA paged-decode family), multi-threaded.
//! * [`compare`]: the comparators (flashinfer_bench_eval, sol_execbench_eval, relative L2).
//! * [`materialize`]: seeded, documented input generation and the page-table synthesizer.
//! * [`tensor`]: host tensors and safetensors I/O; [`definition`]: FlashInfer-Bench definitions.
//! * [`stats`]: median and bootstrap interval of timing samples.
//!
//! # Architecture notes
//!
//! Moved from ARCHITECTURE.md, which keeps the map; this is the detail.
//!
//! ## The crate
//!
//! `crates/runner` — the verification runner: workload materialization (seeded generator, page
//! tables under a named length rule, `realistic` by default), CPU references, comparators, the GPU
//! executor (cudarc, dynamic loading, NVRTC) and the timing protocol `kernelindex-rerun-v2`
//! (`protocol.rs`: per-call device time inside one captured graph is the published latency, eager
//! and one-call replay beside it; the input rule is part of the protocol record), a Python worker for
//! Python/Triton/torch implementations (`python/ki_worker.py`, timing through `python/ki_timing.py`),
//! and the manifests a Verified run is published with.
//!
//! ## The crate
//!
//! `crates/runner`, `ki verify` (`verify/`: `intake`, `plan`, `build`, `run`, `record`, the session in `mod.rs`;
//! `recorded.rs` resumes a run split over GPU calls, on one card; docs/PROTOCOL-V2.md the protocol) — third-party FlashInfer-Bench Solutions verified on the GPU.
//! `solution.rs` is the intake (current and legacy schema; a refusal names the file and JSON pointer and writes
//! nothing; the source digest covers every file), `families/` the per-family rules for inputs the workloads take from
//! blobs we lack (`even` lengths and shuffled page ids for attention, `moe-normal-logits-zero-bias`) and the
//! speed-of-light bounds, `verdict.rs` the verdicts (BenchmarkRun statuses), `worker.rs` the processes (own process
//! group, deadline on every answer, kill on hang). Trust boundary: a *judge* process per definition (`python/
//! ki_judge.py`) runs the definition's reference on the GPU and keeps the references; each solution runs in a fresh
//! *solution worker* (`python/ki_solution.py`) that imports the timing code (`python/ki_timing.py`, protocol
//! kernelindex-rerun-v2) before the solution and trusts nothing after: outputs go to the judge through device memory
//! it maps (CUDA IPC, `python/ki_exchange.py`), so no comparison runs in the solution's interpreter; integrity,
//! thread, child-process, side-stream and lazy-output checks run after every call; times under 80% of the bound are refused
//! in Rust. Limit, stated: code that rewrites the worker's memory natively can forge its timing samples (not its
//! correctness); the bound and the checks are what stands between that and a record. Builds (torch's extension
//! builder, for the device's architecture, cached by architecture and digest) and FlashInfer JIT warm-ups run `--jobs` at a time beside the GPU work; the GPU
//! takes each definition as soon as an implementation of it is ready.
//! Since issue 31: every call's random inputs are rewritten on the GPU from a seed drawn at its turn (`ki_inputs.Slot`,
//! a Triton Philox kernel reading its seed from device memory, so captured graphs refill too) and the judge checks calls
//! on their own inputs; `latency_cupti` is every device activity between marker kernels (`ki_windows.py`, pure, unit
//! tested with `python3 -m unittest`); `consistency.rs` (pure) holds the rules between figures (`unmeasurable`,
//! `graph_divergence`, which figure is published when the in-graph one is not resolved), the seed ledger and the speed-of-light margin; harness failures are their own verdicts
//! (`incomplete_evidence`). `.ci/run` lints every Python file with ruff (`ruff.toml`).
//!
//! ## Code map
//!
//! `runner` (`ki_runner`) — `Executor` paths (`execute`), `materialize`, `reference`,
//! `compare`, `records::RecordWriter` (the session's manifests and `catalog-rows.jsonl`,
//! built with the typed-row constructors). `kernels` (`ki_kernels`) — `gqa_paged_decode`
//! (`GqaPagedDecode`, `plan_launch`, `automatic_tuning`).
// Every line the runner prints goes through `say!`: solution logs, definition names and paths
// reach the terminal with their control and bidi characters escaped.
#![deny(clippy::print_stderr, clippy::print_stdout)]

/// Prints one line on stderr through the one escaper (`worker::sanitize`).
macro_rules! say {
    ($($arg:tt)*) => { $crate::say_line(&format!($($arg)*)) };
}

/// One line on stderr, whitespace folded and every control and bidi character escaped.
pub fn say_line(text: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{}", worker::sanitize(text));
}

pub mod compare;
pub mod definition;
pub mod materialize;
pub mod reference;
pub mod stats;
pub mod tensor;

pub use half::bf16;
pub mod cli;
pub mod consistency;
pub mod execute;
pub mod families;
pub mod gpu;
pub mod native;
pub mod protocol;
pub mod python;
pub mod recorded;
pub mod records;
pub mod solution;
pub mod verdict;
pub mod verify;
pub mod worker;
