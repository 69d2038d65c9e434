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

/// How a user builds and calls [`gqa_paged_decode`] from PyTorch: the install recipe the runner
/// records on the native implementation (`installKind: source`). `python/ki_gqa_paged_decode.py`
/// compiles the same CUDA source by NVRTC at run time (through CuPy) and launches it on PyTorch's
/// current stream with the Rust launcher's plan; `python/tests/` checks it against the
/// definitions' reference on a GPU. Kept out of `gqa_paged_decode.rs`, whose digest is part of
/// the kernel's recorded revision.
pub const GQA_PAGED_DECODE_INSTALL_RECIPE: &str = "git clone https://github.com/SamMausberg/KernelIndex && \
pip install torch cupy-cuda12x && export PYTHONPATH=\"$PWD/KernelIndex/crates/kernels/python\"\n\
# then, in Python (bf16 q [batch, 32, 128]; k_cache, v_cache [pages, 1, 4, 128]; int32 kv_indptr, kv_indices):\n\
import ki_gqa_paged_decode as ki\n\
decode = ki.GqaPagedDecode(num_qo_heads=32, num_kv_heads=4, head_dim=128, page_size=1)\n\
out, lse = decode(q, k_cache, v_cache, kv_indptr, kv_indices, sm_scale=128 ** -0.5)";
