//! `ki-kernels`: KernelIndex's own GPU kernels, written in CUDA C (`cuda/*.cu`) and compiled
//! by NVRTC at run time through cudarc, so that building and testing need no CUDA toolkit.
//!
//! * [`gqa_paged_decode`]: batched GQA decode attention over a paged KV cache (issue 8),
//!   covering every `gqa_paged_decode_*` definition of FlashInfer-Bench.
//!
//! # Architecture notes
//!
//! Moved from ARCHITECTURE.md, which keeps the map; this is the detail.
//!
//! ## The crate
//!
//! `crates/kernels` — our own CUDA kernels (`cuda/*.cu`), compiled at run time; notes and
//! results per version in `bench/gqa-paged-decode/`. The compiled variant, the chunk size and
//! the launch geometry come from shapes and the driver's occupancy only (`automatic_tuning`,
//! `plan_launch`, `balanced_chunk_tokens`: pure functions, tested without a GPU); every CTA plans
//! the batch from kv_indptr on the device (`plan_items` is that plan in Rust, for the tests), so a
//! call is one graph-capturable launch, balanced whatever the sequences' lengths. On sm_90 a batch of very few
//! sequences runs as thread-block clusters (`Schedule::Cluster`, launched through the
//! driver's `cuLaunchKernelEx`), whose parts merge in distributed shared memory; that
//! needs a second build of each variant (`CLUSTER_MERGE=1`), because cluster instructions
//! in a kernel slow every launch of it. The native run's revision is the digest of the
//! `.cu` source and of that launcher. `python/ki_gqa_paged_decode.py` is the same kernel called from
//! PyTorch (NVRTC through CuPy, the launcher's tuning and balanced plan ported; `python/tests/` holds it
//! to the definitions' reference on a GPU); `GQA_PAGED_DECODE_INSTALL_RECIPE` (in `lib.rs`, outside the
//! revision's digest) is the install recipe the runner records on the native implementation, which makes it
//! deployable.
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
