//! Batched GQA decode attention over a paged KV cache, for every `gqa_paged_decode_*`
//! definition of FlashInfer-Bench: any query/KV head grouping, head_dim 64 or 128, any page
//! size (with `kv_last_page_len` when it is above 1), bf16 in, fp32 accumulation, bf16 output,
//! lse in base 2.
//!
//! One launch per call, no host synchronization, and nothing read from device memory on the
//! host: the launch geometry depends only on shapes ([`ProblemSize`]), and the kernel finds
//! its sequences from `kv_indptr` on the device, so a call can be captured in a CUDA graph.
//! The kernel source is `cuda/gqa_paged_decode.cu`; its header says how work is split.
use std::sync::Arc;

use cudarc::driver::sys::{CUdeviceptr, CUfunction_attribute_enum};
use cudarc::driver::{CudaContext, CudaFunction, CudaSlice, CudaStream, DeviceRepr, LaunchConfig, PushKernelArg};
use cudarc::nvrtc::{CompileOptions, Ptx, compile_ptx_with_opts};

/// The kernel's CUDA C source, compiled by NVRTC with the configuration as `-D` defines.
pub const SOURCE: &str = include_str!("../cuda/gqa_paged_decode.cu");
const KERNEL_NAME: &str = "gqa_paged_decode";
const MAX_SMEM_PER_CTA: u32 = 227 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum KernelError {
    #[error("invalid configuration: {0}")]
    InvalidConfig(String),
    #[error("invalid problem size: {0}")]
    InvalidSize(String),
    #[error("unsupported device: {0}")]
    UnsupportedDevice(String),
    #[error("NVRTC could not compile {name}: {log}")]
    Compile { name: String, log: String },
    #[error("CUDA driver: {0}")]
    Driver(#[from] cudarc::driver::DriverError),
}

/// The constant axes of one definition of the family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GqaConfig {
    pub num_qo_heads: u32,
    pub num_kv_heads: u32,
    pub head_dim: u32,
    pub page_size: u32,
}

impl GqaConfig {
    /// Reads a definition name such as `gqa_paged_decode_h32_kv4_d128_ps1`.
    pub fn from_definition_name(name: &str) -> Result<GqaConfig, KernelError> {
        let bad = || KernelError::InvalidConfig(format!("`{name}` is not a gqa_paged_decode_h<Q>_kv<K>_d<D>_ps<P> name"));
        let rest = name.strip_prefix("gqa_paged_decode_").ok_or_else(bad)?;
        let mut fields = [0u32; 4];
        let prefixes = ["h", "kv", "d", "ps"];
        let parts: Vec<&str> = rest.split('_').collect();
        if parts.len() != 4 {
            return Err(bad());
        }
        for ((field, part), prefix) in fields.iter_mut().zip(&parts).zip(prefixes) {
            *field = part.strip_prefix(prefix).and_then(|v| v.parse().ok()).ok_or_else(bad)?;
        }
        let config = GqaConfig { num_qo_heads: fields[0], num_kv_heads: fields[1], head_dim: fields[2], page_size: fields[3] };
        config.validate()?;
        Ok(config)
    }

    pub fn validate(&self) -> Result<(), KernelError> {
        let fail = |m: String| Err(KernelError::InvalidConfig(m));
        if self.num_qo_heads == 0 || self.num_kv_heads == 0 {
            return fail(format!("num_qo_heads {} and num_kv_heads {} must be positive", self.num_qo_heads, self.num_kv_heads));
        }
        if self.num_qo_heads % self.num_kv_heads != 0 {
            return fail(format!("num_qo_heads {} is not a multiple of num_kv_heads {}", self.num_qo_heads, self.num_kv_heads));
        }
        if self.head_dim != 64 && self.head_dim != 128 {
            return fail(format!("head_dim {} is not 64 or 128", self.head_dim));
        }
        if self.page_size == 0 || self.page_size > 1 << 16 {
            return fail(format!("page_size {} is outside 1..=65536", self.page_size));
        }
        Ok(())
    }

    /// Query heads per KV head.
    pub fn group(&self) -> u32 {
        self.num_qo_heads / self.num_kv_heads
    }

    /// 16-row query tiles per KV head (the mma M dimension is 16).
    pub fn m_tiles(&self) -> u32 {
        self.group().div_ceil(16)
    }

    /// The kernel's grid y: one row per (KV head, query tile).
    pub fn head_tiles(&self) -> u32 {
        self.num_kv_heads * self.m_tiles()
    }
}

/// Compile-time and launch choices that do not change results.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Tuning {
    /// Warps per CTA; they share the CTA's unit tile by tile.
    pub warps_per_cta: u32,
    /// cp.async pipeline depth per warp, in 16-token tiles.
    pub stages: u32,
    /// Tokens per unit (one CTA's share); None lets [`plan_launch`] choose from the problem size.
    pub tokens_per_warp: Option<u32>,
    /// One unit per sequence (Some(true)) or fixed-size units (Some(false)); None lets
    /// [`plan_launch`] choose by the average sequence length.
    pub per_sequence: Option<bool>,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning { warps_per_cta: 4, stages: 2, tokens_per_warp: None, per_sequence: None }
    }
}

impl Tuning {
    pub fn validate(&self) -> Result<(), KernelError> {
        if !(1..=16).contains(&self.warps_per_cta) {
            return Err(KernelError::InvalidConfig(format!("warps_per_cta {} is outside 1..=16", self.warps_per_cta)));
        }
        if !(2..=8).contains(&self.stages) {
            return Err(KernelError::InvalidConfig(format!("stages {} is outside 2..=8", self.stages)));
        }
        if self.tokens_per_warp == Some(0) {
            return Err(KernelError::InvalidConfig("tokens_per_warp must be positive".into()));
        }
        Ok(())
    }
}

/// The shapes of one call: what the host knows without reading device memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ProblemSize {
    pub batch_size: u32,
    pub num_pages: u32,
    /// Length of kv_indices (the definitions' `num_kv_indices`).
    pub num_kv_indices: u32,
}

/// Launch geometry and workspace needs, computed on the host from shapes alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchPlan {
    /// kv_indices entries (pages) per unit (unused when `per_sequence`).
    pub entries_per_unit: u32,
    /// One unit (CTA row) per sequence.
    pub per_sequence: bool,
    pub num_units: u32,
    pub grid: (u32, u32, u32),
    pub block: (u32, u32, u32),
    pub shared_bytes: u32,
    /// f32 elements of the partial-result buffer.
    pub partial_floats: usize,
    /// i32 arrival counters (zero between launches).
    pub counter_count: usize,
}

/// Shared memory one warp uses: `stages` tiles of 16 rows of K and of V.
fn warp_shared_bytes(config: &GqaConfig, tuning: &Tuning) -> u32 {
    tuning.stages * 2 * 16 * config.head_dim * 2 + tuning.stages * 16 * 4
}

/// Chooses how many kv_indices entries each warp reads (see the comment on the choice below)
/// and the grid and workspace that follow.
/// `ctas_per_sm` is how many CTAs of this kernel an SM holds at once (the driver's occupancy).
pub fn plan_launch(config: &GqaConfig, tuning: &Tuning, size: &ProblemSize, sm_count: u32, ctas_per_sm: u32) -> Result<LaunchPlan, KernelError> {
    config.validate()?;
    tuning.validate()?;
    if sm_count == 0 || ctas_per_sm == 0 {
        return Err(KernelError::InvalidConfig(format!("sm_count {sm_count} and ctas_per_sm {ctas_per_sm} must be positive")));
    }
    let total_tokens = size.num_kv_indices as u64 * config.page_size as u64;
    if total_tokens > i32::MAX as u64 {
        return Err(KernelError::InvalidSize(format!(
            "num_kv_indices {} × page_size {} exceeds the int32 token positions the kernel uses",
            size.num_kv_indices, config.page_size
        )));
    }
    if size.num_kv_indices > 0 && size.num_pages == 0 {
        return Err(KernelError::InvalidSize("num_pages is 0 but kv_indices is not empty".into()));
    }
    if size.batch_size == 0 && size.num_kv_indices > 0 {
        return Err(KernelError::InvalidSize("batch_size 0 with a non-empty kv_indices".into()));
    }
    let shared_bytes = warp_shared_bytes(config, tuning) * tuning.warps_per_cta;
    if shared_bytes > MAX_SMEM_PER_CTA {
        return Err(KernelError::InvalidConfig(format!(
            "{} warps × {} stages need {shared_bytes} bytes of shared memory, over {MAX_SMEM_PER_CTA}",
            tuning.warps_per_cta, tuning.stages
        )));
    }
    let head_tiles = config.head_tiles();
    let tokens_per_warp = match tuning.tokens_per_warp {
        Some(t) => t,
        None => {
            // Measured on the H200 over the h32/kv4 workloads (bench/gqa-paged-decode/NOTES.md):
            // long units win (each warp pays ~two memory round trips to start, and split
            // sequences pay a merge), until too few warps are left to keep memory busy. So
            // about 128 units, at least 64 and at most 2,048 tokens each; this also keeps a
            // sequence to at most ~128 pieces for the merging warp.
            // Measured on the H200 (bench/gqa-paged-decode/NOTES.md, v5): one wave of as many
            // CTAs as can be resident, each unit as long as that makes it. Fewer, longer units
            // mean fewer split sequences to merge; more would only queue.
            let units = (ctas_per_sm * sm_count / head_tiles).max(1) as u64;
            let per_unit = total_tokens.div_ceil(units).clamp(16 * tuning.warps_per_cta as u64, 8192);
            per_unit.div_ceil(16) as u32 * 16
        }
    };
    // Measured on the H200 (bench/gqa-paged-decode/NOTES.md, v6): up to ~16 tiles per warp on
    // average (1,024 tokens at 4 warps) a CTA per sequence, which never merges, beats fixed
    // units by up to 1.8×; above that, fixed units keep more of the GPU busy. A skewed batch
    // still gets the right answer, only less parallelism on its long sequence.
    let per_sequence = size.batch_size > 0
        && tuning.per_sequence.unwrap_or(tuning.tokens_per_warp.is_none() && total_tokens <= size.batch_size as u64 * 256 * tuning.warps_per_cta as u64);
    let entries_per_unit = tokens_per_warp.div_ceil(config.page_size).max(1);
    let num_units = if per_sequence { size.batch_size } else { size.num_kv_indices.div_ceil(entries_per_unit).max(1) };
    let record_floats = 16 * config.head_dim as usize + 32;
    Ok(LaunchPlan {
        entries_per_unit,
        per_sequence,
        num_units,
        grid: (num_units, head_tiles, 1),
        block: (32 * tuning.warps_per_cta, 1, 1),
        shared_bytes,
        partial_floats: if per_sequence { 0 } else { num_units as usize * 2 * head_tiles as usize * record_floats },
        counter_count: (size.batch_size as usize * head_tiles as usize).max(1),
    })
}

/// Device addresses of one call's tensors, in the definitions' layouts:
/// q `[batch, num_qo_heads, head_dim]` bf16, k_cache / v_cache `[num_pages, page_size,
/// num_kv_heads, head_dim]` bf16, kv_indptr `[batch + 1]` i32, kv_indices `[num_kv_indices]`
/// i32, kv_last_page_len `[batch]` i32 (ignored, may be 0, when page_size is 1), output
/// `[batch, num_qo_heads, head_dim]` bf16, lse `[batch, num_qo_heads]` f32.
#[derive(Clone, Copy, Debug)]
pub struct GqaPointers {
    pub q: CUdeviceptr,
    pub k_cache: CUdeviceptr,
    pub v_cache: CUdeviceptr,
    pub kv_indptr: CUdeviceptr,
    pub kv_indices: CUdeviceptr,
    pub kv_last_page_len: CUdeviceptr,
    pub output: CUdeviceptr,
    pub lse: CUdeviceptr,
}

/// Scratch memory for split sequences: partial results and arrival counters. The counters
/// start at zero and every launch leaves them at zero, so one workspace serves any number of
/// launches (and graph replays) on one stream, for any problem its capacity covers.
pub struct Workspace {
    partial: CudaSlice<f32>,
    counters: CudaSlice<i32>,
}

impl Workspace {
    pub fn new(stream: &Arc<CudaStream>, plan: &LaunchPlan) -> Result<Workspace, KernelError> {
        // SAFETY: the partial buffer is written before it is read (the kernel reads a record
        // only after the warp that wrote it has counted its arrival).
        let partial = unsafe { stream.alloc::<f32>(plan.partial_floats.max(1))? };
        let counters = stream.alloc_zeros::<i32>(plan.counter_count.max(1))?;
        Ok(Workspace { partial, counters })
    }

    pub fn covers(&self, plan: &LaunchPlan) -> bool {
        self.partial.len() >= plan.partial_floats && self.counters.len() >= plan.counter_count
    }
}

/// The argument block the kernel takes by value (`struct Args` in the .cu file).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct KernelArgs {
    q: CUdeviceptr,
    k_cache: CUdeviceptr,
    v_cache: CUdeviceptr,
    kv_indptr: CUdeviceptr,
    kv_indices: CUdeviceptr,
    kv_last_page_len: CUdeviceptr,
    out: CUdeviceptr,
    lse: CUdeviceptr,
    partial: CUdeviceptr,
    counters: CUdeviceptr,
    scale_log2: f32,
    batch: i32,
    num_entries: i32,
    num_pages: i32,
    entries_per_unit: i32,
    num_units: i32,
    per_sequence: i32,
}

// SAFETY: plain-old-data with the C layout of `struct Args`.
unsafe impl DeviceRepr for KernelArgs {}

/// NVRTC's PTX for one configuration and virtual architecture (e.g. `compute_90`). Needs
/// libnvrtc at run time but no GPU.
pub fn compile(config: &GqaConfig, tuning: &Tuning, arch: &'static str) -> Result<Ptx, KernelError> {
    config.validate()?;
    tuning.validate()?;
    let name = format!(
        "gqa_paged_decode_h{}_kv{}_d{}_ps{}_w{}_s{}",
        config.num_qo_heads, config.num_kv_heads, config.head_dim, config.page_size, tuning.warps_per_cta, tuning.stages
    );
    let options = CompileOptions {
        arch: Some(arch),
        options: vec![
            "-std=c++17".into(),
            format!("-DHEAD_DIM={}", config.head_dim),
            format!("-DPAGE_SIZE={}", config.page_size),
            format!("-DGROUP={}", config.group()),
            format!("-DNUM_KV_HEADS={}", config.num_kv_heads),
            format!("-DNSTAGE={}", tuning.stages),
            format!("-DWARPS={}", tuning.warps_per_cta),
        ],
        name: Some(format!("{name}.cu")),
        ..Default::default()
    };
    compile_ptx_with_opts(SOURCE, options).map_err(|e| KernelError::Compile { name, log: e.to_string() })
}

/// A compiled kernel for one [`GqaConfig`] and [`Tuning`].
pub struct GqaPagedDecode {
    config: GqaConfig,
    tuning: Tuning,
    function: CudaFunction,
    sm_count: u32,
    ctas_per_sm: u32,
}

impl GqaPagedDecode {
    /// Compiles the kernel with NVRTC for the context's device (compute capability 8.0 or
    /// newer: mma.sync bf16, ldmatrix and cp.async).
    pub fn new(ctx: &Arc<CudaContext>, config: GqaConfig, tuning: Tuning) -> Result<GqaPagedDecode, KernelError> {
        config.validate()?;
        tuning.validate()?;
        let (major, minor) = ctx.compute_capability()?;
        let arch: &'static str = match (major, minor) {
            (8, 0) => "compute_80",
            (8, 6) => "compute_86",
            (8, 7) => "compute_87",
            (8, 9) => "compute_89",
            (9, 0) => "compute_90",
            (10, 0) => "compute_100",
            (12, 0) => "compute_120",
            (m, n) if m >= 8 => {
                return Err(KernelError::UnsupportedDevice(format!("compute capability {m}.{n} is not in the kernel's arch list")));
            }
            (m, n) => return Err(KernelError::UnsupportedDevice(format!("compute capability {m}.{n} < 8.0"))),
        };
        let ptx = compile(&config, &tuning, arch)?;
        let module = ctx.load_module(ptx)?;
        let function = module.load_function(KERNEL_NAME)?;
        let shared = warp_shared_bytes(&config, &tuning) * tuning.warps_per_cta;
        function.set_attribute(CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared as i32)?;
        let sm_count = ctx.attribute(cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32;
        let ctas_per_sm = function.occupancy_max_active_blocks_per_multiprocessor(32 * tuning.warps_per_cta, shared as usize, None)?.max(1);
        Ok(GqaPagedDecode { config, tuning, function, sm_count, ctas_per_sm })
    }

    /// The same compiled kernel with another schedule (None: chosen per problem size).
    pub fn retuned(&self, tokens_per_warp: Option<u32>, per_sequence: Option<bool>) -> GqaPagedDecode {
        GqaPagedDecode {
            config: self.config,
            tuning: Tuning { tokens_per_warp, per_sequence, ..self.tuning },
            function: self.function.clone(),
            sm_count: self.sm_count,
            ctas_per_sm: self.ctas_per_sm,
        }
    }

    pub fn config(&self) -> &GqaConfig {
        &self.config
    }

    pub fn tuning(&self) -> &Tuning {
        &self.tuning
    }

    pub fn plan(&self, size: &ProblemSize) -> Result<LaunchPlan, KernelError> {
        plan_launch(&self.config, &self.tuning, size, self.sm_count, self.ctas_per_sm)
    }

    /// A workspace large enough for `size`.
    pub fn workspace(&self, stream: &Arc<CudaStream>, size: &ProblemSize) -> Result<Workspace, KernelError> {
        Workspace::new(stream, &self.plan(size)?)
    }

    /// Enqueues one call on `stream`. Does not synchronize; may be captured in a graph.
    ///
    /// # Safety
    /// The pointers must address device buffers of the shapes [`GqaPointers`] lists for
    /// `size` and this kernel's [`GqaConfig`], live until the launch completes; kv_indptr must
    /// be non-decreasing with kv_indptr[batch] == num_kv_indices and every kv_indices entry
    /// below num_pages (the kernel clamps indices so that bad ones cannot read out of
    /// bounds, but then its results are undefined). One workspace must not be used by two
    /// launches that may run at the same time.
    pub unsafe fn launch(
        &self,
        stream: &CudaStream,
        pointers: &GqaPointers,
        sm_scale: f32,
        size: &ProblemSize,
        workspace: &Workspace,
    ) -> Result<(), KernelError> {
        let plan = self.plan(size)?;
        if size.batch_size == 0 {
            return Ok(());
        }
        if !workspace.covers(&plan) {
            return Err(KernelError::InvalidSize(format!(
                "workspace holds {} partial floats and {} counters; this call needs {} and {}",
                workspace.partial.len(),
                workspace.counters.len(),
                plan.partial_floats,
                plan.counter_count
            )));
        }
        if !sm_scale.is_finite() {
            return Err(KernelError::InvalidSize(format!("sm_scale {sm_scale} is not finite")));
        }
        if self.config.page_size > 1 && pointers.kv_last_page_len == 0 {
            return Err(KernelError::InvalidSize("page_size > 1 needs kv_last_page_len".into()));
        }
        let (partial, _p) = cudarc::driver::DevicePtr::device_ptr(&workspace.partial, stream);
        let (counters, _c) = cudarc::driver::DevicePtr::device_ptr(&workspace.counters, stream);
        let args = KernelArgs {
            q: pointers.q,
            k_cache: pointers.k_cache,
            v_cache: pointers.v_cache,
            kv_indptr: pointers.kv_indptr,
            kv_indices: pointers.kv_indices,
            kv_last_page_len: pointers.kv_last_page_len,
            out: pointers.output,
            lse: pointers.lse,
            partial,
            counters,
            scale_log2: sm_scale * std::f32::consts::LOG2_E,
            batch: size.batch_size as i32,
            num_entries: size.num_kv_indices as i32,
            num_pages: size.num_pages as i32,
            entries_per_unit: plan.entries_per_unit as i32,
            per_sequence: plan.per_sequence as i32,
            num_units: plan.num_units as i32,
        };
        let config = LaunchConfig { grid_dim: plan.grid, block_dim: plan.block, shared_mem_bytes: plan.shared_bytes };
        // SAFETY: the argument block matches the kernel's signature; the caller vouches for
        // the buffers (see above).
        unsafe { stream.launch_builder(&self.function).arg(&args).launch(config)? };
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h32kv4(page_size: u32) -> GqaConfig {
        GqaConfig { num_qo_heads: 32, num_kv_heads: 4, head_dim: 128, page_size }
    }

    #[test]
    fn reads_every_definition_name_in_shared() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/flashinfer-trace-samples/flashinfer_trace/definitions/gqa_paged");
        let mut seen = 0;
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.unwrap().path();
            let name = path.file_stem().unwrap().to_str().unwrap().to_string();
            if !name.starts_with("gqa_paged_decode") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let config = GqaConfig::from_definition_name(&name).unwrap();
            // The name must agree with the definition's const axes.
            for (axis, value) in [
                ("num_qo_heads", config.num_qo_heads),
                ("num_kv_heads", config.num_kv_heads),
                ("head_dim", config.head_dim),
                ("page_size", config.page_size),
            ] {
                let needle = format!("\"{axis}\": {{\n      \"type\": \"const\",\n      \"value\": {value}");
                assert!(text.contains(&needle), "{name}: axis {axis} is not const {value}");
            }
            seen += 1;
        }
        assert_eq!(seen, 17, "the family has 17 definitions in ../shared");
    }

    #[test]
    fn rejects_bad_names_and_configs() {
        for bad in ["gqa_paged_decode_h32_kv4_d128", "gqa_paged_prefill_h32_kv4_d128_ps1", "gqa_paged_decode_h32_kv5_d128_ps1", "gqa_paged_decode_h32_kv4_d96_ps1", "gqa_paged_decode_hx_kv4_d128_ps1"] {
            let err = GqaConfig::from_definition_name(bad).unwrap_err();
            assert!(matches!(err, KernelError::InvalidConfig(_)), "{bad}: {err}");
        }
        assert!(GqaConfig { num_qo_heads: 0, ..h32kv4(1) }.validate().is_err());
        assert!(Tuning { stages: 1, ..Tuning::default() }.validate().is_err());
        assert!(Tuning { warps_per_cta: 0, ..Tuning::default() }.validate().is_err());
    }

    #[test]
    fn plan_covers_every_entry_once() {
        let config = h32kv4(1);
        for (batch, total) in [(1u32, 7u32), (16, 1020), (64, 61519), (128, 128 * 4096), (1, 150_000), (3, 0)] {
            let size = ProblemSize { batch_size: batch, num_pages: total.max(1), num_kv_indices: total };
            let plan = plan_launch(&config, &Tuning::default(), &size, 132, 3).unwrap();
            // Short sequences on average: one unit per sequence, and no merge space.
            assert_eq!(plan.per_sequence, total <= batch * 1024, "{batch}x{total}");
            if plan.per_sequence {
                assert_eq!((plan.num_units, plan.partial_floats), (batch, 0));
                continue;
            }
            // Units tile [0, total) with none left over, and there is always one unit (it
            // writes the empty sequences).
            assert!(plan.num_units as u64 * plan.entries_per_unit as u64 >= total as u64);
            assert!(total == 0 || ((plan.num_units - 1) as u64 * plan.entries_per_unit as u64) < total as u64);
            assert!(plan.num_units >= 1);
            assert_eq!(plan.grid.0, plan.num_units);
            assert_eq!(plan.grid.1, 4);
            // A sequence is cut into at most ~256 pieces (the merge reads each one).
            assert!(total.div_ceil(plan.entries_per_unit) <= 257, "{batch}x{total}: {plan:?}");
            assert_eq!(plan.counter_count, (batch as usize * 4).max(1));
        }
    }

    #[test]
    fn plan_scales_pages_and_bounds() {
        let plan = plan_launch(&h32kv4(64), &Tuning::default(), &ProblemSize { batch_size: 8, num_pages: 100, num_kv_indices: 64 }, 132, 3).unwrap();
        assert!(plan.entries_per_unit >= 1);
        let fixed = Tuning { tokens_per_warp: Some(256), ..Tuning::default() };
        let plan = plan_launch(&h32kv4(64), &fixed, &ProblemSize { batch_size: 8, num_pages: 100, num_kv_indices: 64 }, 132, 3).unwrap();
        assert_eq!(plan.entries_per_unit, 4);
        assert_eq!(plan.num_units, 16);
        let too_many = ProblemSize { batch_size: 1, num_pages: 1 << 30, num_kv_indices: 1 << 26 };
        assert!(matches!(plan_launch(&h32kv4(64), &Tuning::default(), &too_many, 132, 3), Err(KernelError::InvalidSize(_))));
        let deep = Tuning { warps_per_cta: 16, stages: 8, ..Tuning::default() };
        assert!(matches!(plan_launch(&h32kv4(1), &deep, &ProblemSize { batch_size: 1, num_pages: 1, num_kv_indices: 1 }, 132, 3), Err(KernelError::InvalidConfig(_))));
        // Groups above 16 query heads take several query tiles per KV head.
        let wide = GqaConfig { num_qo_heads: 40, num_kv_heads: 1, head_dim: 64, page_size: 1 };
        assert_eq!(wide.head_tiles(), 3);
    }
}
