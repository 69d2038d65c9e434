//! `ki-kernels`: KernelIndex's own GPU kernels, written in CUDA C (`cuda/*.cu`) and compiled
//! by NVRTC at run time through cudarc, so that building and testing need no CUDA toolkit.
//!
//! * [`gqa_paged_decode`]: batched GQA decode attention over a paged KV cache (issue 8),
//!   covering every `gqa_paged_decode_*` definition of FlashInfer-Bench.
pub mod gqa_paged_decode;

pub use gqa_paged_decode::{
    AUTOMATIC_VARIANTS, GqaConfig, GqaPagedDecode, GqaPointers, KernelError, LaunchPlan, ProblemSize, Schedule, Tuning,
    Workspace, automatic_tuning, compile, plan_launch,
};
