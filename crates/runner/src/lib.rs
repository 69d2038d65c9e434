//! `ki-runner`: KernelIndex's verification runner (issue 7).
//!
//! * [`reference`]: CPU references (the GQA paged-decode family), multi-threaded.
//! * [`compare`]: the comparators (flashinfer_bench_eval, sol_execbench_eval, relative L2).
//! * [`materialize`]: seeded, documented input generation and the page-table synthesizer.
//! * [`tensor`]: host tensors and safetensors I/O; [`definition`]: FlashInfer-Bench definitions.
//! * [`stats`]: median and bootstrap interval of timing samples.
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
