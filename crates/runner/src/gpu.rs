//! The GPU executor: cudarc with the driver and NVRTC loaded at run time, so building and testing
//! need no CUDA toolkit and pass on machines without a GPU ([`cuda_available`] says whether one is
//! usable; GPU tests skip when it is false).
//!
//! A [`GpuSession`] owns one context and one non-blocking stream (graph capture needs one that is not
//! the legacy default stream), the L2-flush buffer and two small NVRTC kernels (the flush and an
//! empty kernel for calibration). Implementations plug in through [`GpuImplementation`]; the timing
//! protocol `kernelindex-rerun-v2` (crates/runner/src/protocol.rs) is [`GpuSession::time_trial`].
use std::collections::BTreeMap;
use std::sync::Arc;

use anyhow::{Context, Result, anyhow, bail};
use cudarc::driver::sys::{self, CUdevice_attribute, CUdeviceptr};
use cudarc::driver::{
    CudaContext, CudaEvent, CudaFunction, CudaGraph, CudaSlice, CudaStream, DevicePtr, LaunchConfig, PushKernelArg,
};
use cudarc::nvrtc::{CompileOptions, compile_ptx_with_opts};
use serde::Serialize;

use crate::definition::Definition;
use crate::protocol::TimingProtocol;
use crate::stats::median;
use crate::tensor::{HostTensor, TensorSet};

/// True when the CUDA driver library loads and reports at least one device. Never panics (cudarc
/// panics on first use when the library is missing, so this checks for the library first).
pub fn cuda_available() -> bool {
    // SAFETY: only probes whether the shared libraries load.
    let driver = unsafe { sys::is_culib_present() };
    let nvrtc = unsafe { cudarc::nvrtc::sys::is_culib_present() };
    driver && nvrtc && CudaContext::device_count().map(|n| n > 0).unwrap_or(false)
}

/// Device 0's compute capability (major, minor), read from the driver without creating a context.
pub fn compute_capability() -> Result<(i32, i32)> {
    if !cuda_available() {
        bail!("no usable CUDA driver or device");
    }
    let device = cudarc::driver::result::device::get(0)?;
    // SAFETY: `device` was returned by `device::get`.
    let (major, minor) = unsafe {
        (
            cudarc::driver::result::device::get_attribute(
                device,
                CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
            )?,
            cudarc::driver::result::device::get_attribute(
                device,
                CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
            )?,
        )
    };
    Ok((major, minor))
}

/// The architecture nvcc builds solutions for (`TORCH_CUDA_ARCH_LIST`): the device's own, with the
/// `a` suffix from Hopper on (sm_90a: wgmma and the bulk copy engine are only in the `a` targets).
pub fn build_arch(major: i32, minor: i32) -> String {
    if major >= 9 { format!("{major}.{minor}a") } else { format!("{major}.{minor}") }
}

const SUPPORT_SOURCE: &str = r#"
// Writes every 16-byte word of the buffer. The value depends on the call, so no write can be skipped.
extern "C" __global__ void ki_flush_l2(uint4* buffer, unsigned long long words, unsigned int salt) {
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < words; i += stride) {
        unsigned int v = salt ^ (unsigned int)i;
        buffer[i] = make_uint4(v, v + 1u, v + 2u, v + 3u);
    }
}
extern "C" __global__ void ki_empty_kernel() {}
"#;

/// What the device is, read once at session start (ExecutionEnvironment draws on this).
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceProperties {
    pub name: String,
    pub compute_capability: (i32, i32),
    pub multiprocessor_count: i32,
    pub total_memory_bytes: usize,
    pub l2_cache_bytes: usize,
    /// cuDriverGetVersion, e.g. 13000 for CUDA 13.0.
    pub driver_cuda_version: i32,
    /// nvrtcVersion as (major, minor).
    pub nvrtc_version: (i32, i32),
    /// Peak clocks the device reports (kHz).
    pub max_sm_clock_khz: i32,
    pub max_memory_clock_khz: i32,
    pub memory_bus_width_bits: i32,
}

/// Per-session calibration, recorded with the runs.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Calibration {
    /// Median event-timed span of one empty kernel launched after an L2 flush (ns).
    pub empty_kernel_eager_ns: f64,
    /// The same for a graph replay of one empty kernel (ns).
    pub empty_kernel_graph_ns: f64,
    /// Per call of an empty kernel inside one captured graph (the protocol's statistic, ns): the
    /// floor under every per-call figure.
    pub empty_kernel_in_graph_ns: f64,
    /// Device-to-device copy bandwidth, bytes read plus bytes written per second (median of 20
    /// copies of `copy_bytes`).
    pub copy_bandwidth_bytes_per_s: f64,
    pub copy_bytes: usize,
}

/// Timing samples of one trial (ns): eager, one-call graph replay, and per call (in one graph, or
/// by CUPTI for a Python callable that cannot be captured).
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TrialTiming {
    pub eager_ns: Vec<f64>,
    /// None when the implementation cannot be captured in a graph.
    pub graph_ns: Option<Vec<f64>>,
    /// (t(N × (flush, call)) − t(N flushes)) ÷ N per replay pair; None when not capturable.
    pub in_graph_ns: Option<Vec<f64>>,
    /// CUPTI kernel time per call, summed (only where a graph could not be captured).
    pub cupti_ns: Option<Vec<f64>>,
}

/// An implementation the executor can run. The ki binary adapts native kernels (crates/kernels) to
/// this; anything else written in Rust against cudarc can implement it too.
pub trait GpuImplementation {
    /// A short name for records and tables.
    fn name(&self) -> String;
    /// Uploads one trial's inputs and allocates outputs (outside any timing).
    fn prepare(&mut self, session: &GpuSession, inputs: &TensorSet) -> Result<()>;
    /// Enqueues exactly one call on `session.stream()`: no host synchronization, no reads of device
    /// memory on the host. Must be capturable in a CUDA graph when `capturable()` is true.
    fn launch(&mut self, session: &GpuSession) -> Result<()>;
    /// Copies the outputs of the last call back, named as the definition's outputs.
    fn read_outputs(&mut self, session: &GpuSession) -> Result<TensorSet>;
    fn capturable(&self) -> bool {
        true
    }
}

pub struct GpuSession {
    pub context: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    flush_buffer: CudaSlice<u8>,
    flush_kernel: CudaFunction,
    empty_kernel: CudaFunction,
    flush_calls: std::cell::Cell<u32>,
    pub properties: DeviceProperties,
    pub protocol: TimingProtocol,
}

fn attribute(context: &CudaContext, attribute: CUdevice_attribute) -> Result<i32> {
    context.attribute(attribute).map_err(|e| anyhow!("cuDeviceGetAttribute({attribute:?}): {e}"))
}

impl GpuSession {
    /// Opens device `ordinal`, compiles the support kernels and allocates the flush buffer.
    pub fn open(ordinal: usize, protocol: TimingProtocol) -> Result<GpuSession> {
        if !cuda_available() {
            bail!("no usable CUDA driver / device (libcuda or libnvrtc missing, or no GPU)");
        }
        let context = CudaContext::new(ordinal).context("creating the CUDA context")?;
        // One stream, ordered by itself: cudarc's per-buffer event tracking would add event records
        // inside the timed spans, so it is off.
        unsafe { context.disable_event_tracking() };
        let stream = context.new_stream().context("creating a stream")?;
        let (major, minor) = context.compute_capability()?;
        let mut driver_version = 0;
        unsafe { sys::cuDriverGetVersion(&mut driver_version) }.result()?;
        let (mut nvrtc_major, mut nvrtc_minor) = (0, 0);
        unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut nvrtc_major, &mut nvrtc_minor) }.result()?;
        let properties = DeviceProperties {
            name: context.name()?,
            compute_capability: (major, minor),
            multiprocessor_count: attribute(&context, CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
            total_memory_bytes: context.total_mem()?,
            l2_cache_bytes: attribute(&context, CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)? as usize,
            driver_cuda_version: driver_version,
            nvrtc_version: (nvrtc_major, nvrtc_minor),
            max_sm_clock_khz: attribute(&context, CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CLOCK_RATE)?,
            max_memory_clock_khz: attribute(&context, CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE)?,
            memory_bus_width_bits: attribute(
                &context,
                CUdevice_attribute::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH,
            )?,
        };
        let arch: &'static str = if (major, minor) == (9, 0) { "sm_90" } else { "compute_70" };
        let ptx = compile_ptx_with_opts(
            SUPPORT_SOURCE,
            CompileOptions { arch: Some(arch), name: Some("ki_runner_support.cu".into()), ..Default::default() },
        )
        .map_err(|e| anyhow!("NVRTC: {e}"))?;
        let module = context.load_module(ptx)?;
        let flush_kernel = module.load_function("ki_flush_l2")?;
        let empty_kernel = module.load_function("ki_empty_kernel")?;
        let flush_bytes = protocol.flush_bytes(properties.l2_cache_bytes.max(1 << 20));
        let flush_buffer = stream.alloc_zeros::<u8>(flush_bytes)?;
        Ok(GpuSession {
            context,
            stream,
            flush_buffer,
            flush_kernel,
            empty_kernel,
            flush_calls: std::cell::Cell::new(0),
            properties,
            protocol,
        })
    }

    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    pub fn flush_bytes(&self) -> usize {
        self.flush_buffer.len()
    }

    /// Enqueues the L2 flush: a write over the whole flush buffer (> 2× L2).
    pub fn flush_l2(&self) -> Result<()> {
        let words = (self.flush_buffer.len() / 16) as u64;
        let salt = self.flush_calls.get().wrapping_add(1);
        self.flush_calls.set(salt);
        let blocks = (self.properties.multiprocessor_count.max(1) as u32) * 4;
        let config = LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (512, 1, 1), shared_mem_bytes: 0 };
        unsafe {
            self.stream.launch_builder(&self.flush_kernel).arg(&self.flush_buffer).arg(&words).arg(&salt).launch(config)
        }?;
        Ok(())
    }

    fn timing_events(&self, count: usize) -> Result<Vec<(CudaEvent, CudaEvent)>> {
        let flags = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
        (0..count).map(|_| Ok((self.context.new_event(flags)?, self.context.new_event(flags)?))).collect()
    }

    /// The core loop: warm-ups, then timed iterations, each preceded by a flush, each timed by a pair
    /// of events around `call`. Returns ns per iteration.
    fn timed_loop(&self, warmups: usize, iterations: usize, call: &mut dyn FnMut() -> Result<()>) -> Result<Vec<f64>> {
        for _ in 0..warmups {
            self.flush_l2()?;
            call()?;
        }
        let events = self.timing_events(iterations)?;
        for (start, end) in &events {
            self.flush_l2()?;
            start.record(&self.stream)?;
            call()?;
            end.record(&self.stream)?;
        }
        self.stream.synchronize().context("synchronizing after the timed iterations")?;
        events.iter().map(|(start, end)| Ok(start.elapsed_ms(end)? as f64 * 1e6)).collect()
    }

    /// Captures `call` into a graph on the session's stream.
    fn capture(&self, call: &mut dyn FnMut() -> Result<()>) -> Result<CudaGraph> {
        self.stream.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)?;
        let launched = call();
        let graph = self.stream.end_capture(sys::CUgraphInstantiate_flags(0));
        launched.context("launching while capturing a graph")?;
        let graph = graph?.ok_or_else(|| anyhow!("the captured graph is empty"))?;
        graph.upload()?;
        Ok(graph)
    }

    /// The protocol's per-call samples of `call`: a graph of N × (flush, call) and a graph of the N
    /// flushes alone, replayed in pairs (flushes first); each pair gives
    /// (t(calls) − t(flushes)) ÷ N.
    fn per_call_in_graph(&self, call: &mut dyn FnMut() -> Result<()>) -> Result<Vec<f64>> {
        let n = self.protocol.calls_per_graph.max(1);
        let calls = self.capture(&mut || {
            for _ in 0..n {
                self.flush_l2()?;
                call()?;
            }
            Ok(())
        })?;
        let flushes = self.capture(&mut || {
            for _ in 0..n {
                self.flush_l2()?;
            }
            Ok(())
        })?;
        flushes.launch()?;
        calls.launch()?;
        let flags = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
        let pairs = self.protocol.graph_pairs;
        let marks: Vec<CudaEvent> = (0..3 * pairs).map(|_| self.context.new_event(flags)).collect::<Result<_, _>>()?;
        for pair in marks.chunks(3) {
            pair[0].record(&self.stream)?;
            flushes.launch()?;
            pair[1].record(&self.stream)?;
            calls.launch()?;
            pair[2].record(&self.stream)?;
        }
        self.stream.synchronize().context("synchronizing after the in-graph replays")?;
        marks
            .chunks(3)
            .map(|pair| {
                let flushes_ms = pair[0].elapsed_ms(&pair[1])? as f64;
                let both_ms = pair[1].elapsed_ms(&pair[2])? as f64;
                Ok((both_ms - flushes_ms) * 1e6 / n as f64)
            })
            .collect()
    }

    /// One trial of `kernelindex-rerun-v2` for an implementation already `prepare`d on this trial's
    /// inputs: warm-ups and timed eager calls, the same over replays of a one-call graph, then the
    /// per-call samples in one graph (the published figure).
    pub fn time_trial(&self, implementation: &mut dyn GpuImplementation) -> Result<TrialTiming> {
        if !implementation.capturable() {
            bail!(
                "{}: {} times a callable per call inside one CUDA graph; this one cannot be captured (the Rust \
                 executor has no CUPTI path)",
                implementation.name(),
                crate::protocol::PROTOCOL_VERSION
            );
        }
        let (warmups, iterations) = (self.protocol.warmup_iterations, self.protocol.timed_iterations);
        let eager_ns = self.timed_loop(warmups, iterations, &mut || implementation.launch(self))?;
        let graph = self.capture(&mut || implementation.launch(self))?;
        let graph_ns = Some(self.timed_loop(warmups, iterations, &mut || Ok(graph.launch()?))?);
        let in_graph_ns = Some(self.per_call_in_graph(&mut || implementation.launch(self))?);
        Ok(TrialTiming { eager_ns, graph_ns, in_graph_ns, cupti_ns: None })
    }

    /// Calibration: empty-kernel time (eager and graph, after a flush) and device-to-device copy
    /// bandwidth (bytes read + written per second over a copy of `copy_bytes`).
    pub fn calibrate(&self, copy_bytes: usize) -> Result<Calibration> {
        let config = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (32, 1, 1), shared_mem_bytes: 0 };
        let mut empty = || -> Result<()> {
            unsafe { self.stream.launch_builder(&self.empty_kernel).launch(config) }?;
            Ok(())
        };
        let eager = self.timed_loop(10, 200, &mut empty)?;
        let graph = self.capture(&mut empty)?;
        let replay = self.timed_loop(10, 200, &mut || Ok(graph.launch()?))?;
        let in_graph = self.per_call_in_graph(&mut empty)?;
        let source = self.stream.alloc_zeros::<u8>(copy_bytes)?;
        let mut destination = self.stream.alloc_zeros::<u8>(copy_bytes)?;
        let mut copy = || -> Result<()> { Ok(self.stream.memcpy_dtod(&source, &mut destination)?) };
        let copy_ns = self.timed_loop(3, 20, &mut copy)?;
        Ok(Calibration {
            empty_kernel_eager_ns: median(&eager),
            empty_kernel_graph_ns: median(&replay),
            empty_kernel_in_graph_ns: median(&in_graph),
            copy_bandwidth_bytes_per_s: 2.0 * copy_bytes as f64 / (median(&copy_ns) * 1e-9),
            copy_bytes,
        })
    }
}

/// Device copies of named tensors, kept as bytes; implementations take their addresses.
pub struct DeviceTensors {
    pub buffers: BTreeMap<String, (CudaSlice<u8>, HostTensor)>,
}

impl DeviceTensors {
    /// Uploads every tensor of `set` (the host copy keeps dtype and shape).
    pub fn upload(stream: &Arc<CudaStream>, set: &TensorSet) -> Result<DeviceTensors> {
        let mut buffers = BTreeMap::new();
        for (name, tensor) in &set.tensors {
            // A zero-size allocation is not allowed: keep one byte for empty tensors.
            let buffer = if tensor.bytes.is_empty() {
                stream.alloc_zeros::<u8>(1)?
            } else {
                stream.clone_htod(&tensor.bytes)?
            };
            let shell = HostTensor { dtype: tensor.dtype, shape: tensor.shape.clone(), bytes: Vec::new() };
            buffers.insert(name.clone(), (buffer, shell));
        }
        Ok(DeviceTensors { buffers })
    }

    /// Allocates the definition's outputs for the given axis values, filled with a poison pattern
    /// (0xFF bytes: NaN in bf16 and f32), so an element the implementation never writes fails.
    pub fn allocate_outputs(
        stream: &Arc<CudaStream>,
        definition: &Definition,
        axes: &BTreeMap<String, usize>,
    ) -> Result<DeviceTensors> {
        let mut buffers = BTreeMap::new();
        for spec in definition.output_specs().map_err(|e| anyhow!(e))? {
            let shape: Vec<usize> = spec
                .shape
                .as_deref()
                .unwrap_or(&[])
                .iter()
                .map(|a| axes.get(a).copied().ok_or_else(|| anyhow!("output {}: axis {a} unknown", spec.name)))
                .collect::<Result<_>>()?;
            let bytes = shape.iter().product::<usize>() * spec.dtype.size_in_bytes();
            let buffer = stream.clone_htod(&vec![0xFFu8; bytes.max(1)])?;
            buffers.insert(spec.name.clone(), (buffer, HostTensor { dtype: spec.dtype, shape, bytes: Vec::new() }));
        }
        Ok(DeviceTensors { buffers })
    }

    pub fn pointer(&self, stream: &CudaStream, name: &str) -> Result<CUdeviceptr> {
        let (buffer, _) = self.buffers.get(name).ok_or_else(|| anyhow!("no device tensor `{name}`"))?;
        let (pointer, _sync) = buffer.device_ptr(stream);
        Ok(pointer)
    }

    /// Copies every tensor back (synchronizes the stream).
    pub fn download(&self, stream: &Arc<CudaStream>) -> Result<TensorSet> {
        let mut set = TensorSet::new();
        for (name, (buffer, shell)) in &self.buffers {
            let byte_count = shell.element_count() * shell.dtype.size_in_bytes();
            let mut bytes = stream.clone_dtoh(buffer)?;
            bytes.truncate(byte_count);
            set.insert(name.clone(), HostTensor { dtype: shell.dtype, shape: shell.shape.clone(), bytes });
        }
        Ok(set)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn builds_target_the_devices_own_architecture() {
        assert_eq!(super::build_arch(9, 0), "9.0a");
        assert_eq!(super::build_arch(10, 0), "10.0a");
        assert_eq!(super::build_arch(8, 9), "8.9");
    }
}
