//! Measures what a small decode kernel cannot avoid under the timing protocol (graph replay
//! of one kernel right after a 256 MiB L2-flushing memset): the empty-kernel floor, the cost
//! of a large dynamic shared-memory request, the latency of dependent DRAM loads after the
//! flush, and one "round" of gathering a few MB of 256-byte rows with everything in flight.
//! These numbers bound what the seed workload (2 MB of K/V behind one level of indirection)
//! can reach. Output: one table row per probe (median, p10, p90 in µs).
use std::sync::Arc;

use anyhow::{Result, anyhow};
use cudarc::driver::sys::{CUevent_flags, CUfunction_attribute_enum, CUgraphInstantiate_flags, CUstreamCaptureMode};
use cudarc::driver::{CudaContext, CudaFunction, CudaSlice, CudaStream, DevicePtr, LaunchConfig, PushKernelArg};
use cudarc::nvrtc::{CompileOptions, compile_ptx_with_opts};

const SOURCE: &str = r#"
extern "C" __global__ void empty_kernel() {}

// One thread per CTA follows `hops` dependent loads through a random cycle in `next`.
extern "C" __global__ void chase(const int* next, int hops, int start_stride, int* out) {
    int i = (blockIdx.x * start_stride) & 0x0fffffff;
    for (int h = 0; h < hops; ++h) i = __ldcg(next + i);
    if (threadIdx.x == 0) out[blockIdx.x] = i;
}

// Each CTA reads `rows_per_cta` 256-byte rows (16 lanes x 16 B per row), all loads issued
// before any is used. With `indirect`, row ids come from an index array first (two rounds).
extern "C" __global__ void gather(const uint4* rows, const int* ids, int rows_per_cta, int num_rows, int indirect, uint4* out) {
    const int lane16 = threadIdx.x & 15;
    const int r0 = threadIdx.x >> 4;  // row slot of this thread
    const int per_pass = blockDim.x >> 4;
    uint4 acc = make_uint4(0, 0, 0, 0);
    uint4 v[8];
    int id[8];
#pragma unroll
    for (int p = 0; p < 8; ++p) {
        int r = blockIdx.x * rows_per_cta + r0 + p * per_pass;
        id[p] = indirect ? __ldcg(ids + (r % num_rows)) : (int)(((unsigned)r * 2654435761u) % (unsigned)num_rows);
    }
#pragma unroll
    for (int p = 0; p < 8; ++p) {
        bool ok = r0 + p * per_pass < rows_per_cta;
        v[p] = ok ? __ldcg(rows + (size_t)id[p] * 16 + lane16) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int p = 0; p < 8; ++p) { acc.x ^= v[p].x; acc.y ^= v[p].y; acc.z ^= v[p].z; acc.w ^= v[p].w; }
    if (acc.x == 0x12345678u) out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
"#;

struct Timer {
    flush: CudaSlice<u8>,
    samples: usize,
}

impl Timer {
    fn median(
        &self,
        ctx: &Arc<CudaContext>,
        stream: &Arc<CudaStream>,
        run: &mut dyn FnMut() -> Result<()>,
    ) -> Result<(f64, f64, f64)> {
        stream.begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)?;
        let launched = run();
        let graph = stream.end_capture(CUgraphInstantiate_flags(0))?.ok_or_else(|| anyhow!("empty graph"))?;
        launched?;
        graph.upload()?;
        let mk = || ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT));
        let events: Vec<_> =
            (0..self.samples).map(|_| Ok::<_, anyhow::Error>((mk()?, mk()?))).collect::<Result<_>>()?;
        let (fp, _g) = self.flush.device_ptr(stream);
        for _ in 0..5 {
            graph.launch()?;
        }
        for (i, (s, e)) in events.iter().enumerate() {
            unsafe {
                cudarc::driver::result::memset_d8_async(fp, (i & 0xff) as u8, self.flush.len(), stream.cu_stream())?
            };
            s.record(stream)?;
            graph.launch()?;
            e.record(stream)?;
        }
        stream.synchronize()?;
        let mut v: Vec<f64> =
            events.iter().map(|(s, e)| s.elapsed_ms(e).map(|ms| ms as f64 * 1000.0)).collect::<Result<_, _>>()?;
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        Ok((v[v.len() / 2], v[v.len() / 10], v[v.len() * 9 / 10]))
    }
}

fn main() -> Result<()> {
    let ctx = CudaContext::new(0)?;
    unsafe { ctx.disable_event_tracking() };
    let stream = ctx.new_stream()?;
    let (major, minor) = ctx.compute_capability()?;
    let arch: &'static str = if (major, minor) == (9, 0) { "sm_90" } else { "compute_80" };
    let ptx = compile_ptx_with_opts(SOURCE, CompileOptions { arch: Some(arch), ..Default::default() })?;
    let module = ctx.load_module(ptx)?;
    let empty = module.load_function("empty_kernel")?;
    let chase = module.load_function("chase")?;
    let gather = module.load_function("gather")?;
    let timer = Timer { flush: stream.alloc_zeros::<u8>(256 << 20)?, samples: 200 };

    // A random cycle over 2^28 ints (1 GiB), so every hop lands on a new DRAM page.
    let n_next = 1usize << 28;
    let mut rng = 0x9e3779b97f4a7c15u64;
    let mut perm: Vec<u32> = (0..n_next as u32).collect();
    for i in (1..n_next).rev() {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        perm.swap(i, (rng % (i as u64 + 1)) as usize);
    }
    let mut next = vec![0i32; n_next];
    for w in 0..n_next {
        next[perm[w] as usize] = perm[(w + 1) % n_next] as i32;
    }
    drop(perm);
    let d_next = stream.clone_htod(&next)?;
    drop(next);
    let d_out = stream.alloc_zeros::<i32>(1 << 16)?;
    // 1 GiB of 256-byte rows, and an index array of random row ids.
    let num_rows = 1i32 << 22;
    let d_rows = stream.alloc_zeros::<u8>((num_rows as usize) * 256)?;
    let ids: Vec<i32> = (0..num_rows).map(|i| ((i as u64 * 2654435761u64 + 12345) % num_rows as u64) as i32).collect();
    let d_ids = stream.clone_htod(&ids)?;
    let d_gout = stream.alloc_zeros::<u8>(64 << 20)?;

    println!("probe | median_us | p10 | p90");
    let report = |name: String, r: (f64, f64, f64)| println!("{name} | {:.2} | {:.2} | {:.2}", r.0, r.1, r.2);
    let one = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (32, 1, 1), shared_mem_bytes: 0 };
    report(
        "empty 1 CTA".into(),
        timer.median(&ctx, &stream, &mut || {
            unsafe {
                stream.launch_builder(&empty).launch(one)?;
            }
            Ok(())
        })?,
    );
    let wide = LaunchConfig { grid_dim: (264, 1, 1), block_dim: (128, 1, 1), shared_mem_bytes: 0 };
    report(
        "empty 264 CTAs".into(),
        timer.median(&ctx, &stream, &mut || {
            unsafe {
                stream.launch_builder(&empty).launch(wide)?;
            }
            Ok(())
        })?,
    );
    set_smem(&empty, 160 * 1024)?;
    for smem in [48 * 1024u32, 100 * 1024, 160 * 1024] {
        let cfg = LaunchConfig { grid_dim: (132, 1, 1), block_dim: (128, 1, 1), shared_mem_bytes: smem };
        report(
            format!("empty 132 CTAs smem {} KiB", smem / 1024),
            timer.median(&ctx, &stream, &mut || {
                unsafe {
                    stream.launch_builder(&empty).launch(cfg)?;
                }
                Ok(())
            })?,
        );
    }
    for (ctas, smem) in [(1u32, 0u32), (132, 0), (132, 100 * 1024)] {
        if smem > 0 {
            set_smem(&chase, smem)?;
        }
        for hops in [0i32, 1, 2, 4, 8] {
            let cfg = LaunchConfig { grid_dim: (ctas, 1, 1), block_dim: (32, 1, 1), shared_mem_bytes: smem };
            let stride = 977_123i32;
            report(
                format!("chase {ctas} CTAs smem {} KiB hops {hops}", smem / 1024),
                timer.median(&ctx, &stream, &mut || {
                    unsafe {
                        stream.launch_builder(&chase).arg(&d_next).arg(&hops).arg(&stride).arg(&d_out).launch(cfg)?;
                    }
                    Ok(())
                })?,
            );
        }
    }
    for total_rows in [8160i32, 16320, 65280] {
        for indirect in [0i32, 1] {
            for threads in [128u32, 256] {
                let per_cta = (threads / 16 * 8) as i32;
                let ctas = ((total_rows + per_cta - 1) / per_cta) as u32;
                let cfg = LaunchConfig { grid_dim: (ctas, 1, 1), block_dim: (threads, 1, 1), shared_mem_bytes: 0 };
                report(
                    format!(
                        "gather {:.1} MB rows={total_rows} ctas={ctas} thr={threads} indirect={indirect}",
                        total_rows as f64 * 256.0 / 1e6
                    ),
                    timer.median(&ctx, &stream, &mut || {
                        unsafe {
                            stream
                                .launch_builder(&gather)
                                .arg(&d_rows)
                                .arg(&d_ids)
                                .arg(&per_cta)
                                .arg(&num_rows)
                                .arg(&indirect)
                                .arg(&d_gout)
                                .launch(cfg)?;
                        }
                        Ok(())
                    })?,
                );
            }
        }
    }
    Ok(())
}

fn set_smem(f: &CudaFunction, bytes: u32) -> Result<()> {
    f.set_attribute(CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes as i32)?;
    Ok(())
}
