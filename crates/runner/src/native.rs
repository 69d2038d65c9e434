//! `--implementation native`: the project's own CUDA kernels (crates/kernels) as a
//! [`GpuImplementation`]. Inputs are uploaded once per trial; a call is one kernel launch.
use anyhow::{Result, anyhow};
use ki_kernels::{GqaConfig, GqaPagedDecode, GqaPointers, ProblemSize, Workspace};

use crate::definition::Definition;
use crate::gpu::{DeviceTensors, GpuImplementation, GpuSession};
use crate::tensor::TensorSet;

pub struct NativeGqaPagedDecode {
    definition: Definition,
    kernel: GqaPagedDecode,
    state: Option<Prepared>,
}

struct Prepared {
    inputs: DeviceTensors,
    outputs: DeviceTensors,
    workspace: Workspace,
    size: ProblemSize,
    sm_scale: f32,
}

impl NativeGqaPagedDecode {
    /// Compiles the kernel (NVRTC) for `definition` on the session's device.
    pub fn new(session: &GpuSession, definition: &Definition) -> Result<NativeGqaPagedDecode> {
        let config = GqaConfig::from_definition_name(&definition.name).map_err(|e| anyhow!("native: {e}"))?;
        let kernel = GqaPagedDecode::automatic(&session.context, config).map_err(|e| anyhow!("native: {e}"))?;
        Ok(NativeGqaPagedDecode { definition: definition.clone(), kernel, state: None })
    }
}

impl GpuImplementation for NativeGqaPagedDecode {
    fn name(&self) -> String {
        "kernelindex-native".into()
    }

    fn prepare(&mut self, session: &GpuSession, inputs: &TensorSet) -> Result<()> {
        let axes = self.definition.check_inputs(inputs, "native inputs").map_err(|e| anyhow!(e))?;
        let size = ProblemSize {
            batch_size: axes["batch_size"] as u32,
            num_pages: axes["num_pages"] as u32,
            num_kv_indices: axes["num_kv_indices"] as u32,
        };
        let sm_scale = inputs
            .get("sm_scale")
            .and_then(|t| t.to_f32_exact())
            .and_then(|v| v.first().copied())
            .ok_or_else(|| anyhow!("sm_scale missing"))?;
        let stream = session.stream();
        let device_inputs = DeviceTensors::upload(stream, inputs)?;
        let outputs = DeviceTensors::allocate_outputs(stream, &self.definition, &axes)?;
        let workspace = self.kernel.workspace(stream, &size).map_err(|e| anyhow!("native: {e}"))?;
        self.state = Some(Prepared { inputs: device_inputs, outputs, workspace, size, sm_scale });
        Ok(())
    }

    fn launch(&mut self, session: &GpuSession) -> Result<()> {
        let state = self.state.as_ref().ok_or_else(|| anyhow!("native: launch before prepare"))?;
        let stream = session.stream();
        let input = |name: &str| state.inputs.pointer(stream, name);
        let pointers = GqaPointers {
            q: input("q")?,
            k_cache: input("k_cache")?,
            v_cache: input("v_cache")?,
            kv_indptr: input("kv_indptr")?,
            kv_indices: input("kv_indices")?,
            kv_last_page_len: if state.inputs.buffers.contains_key("kv_last_page_len") {
                input("kv_last_page_len")?
            } else {
                0
            },
            output: state.outputs.pointer(stream, "output")?,
            lse: state.outputs.pointer(stream, "lse")?,
        };
        // SAFETY: every pointer addresses a buffer uploaded or allocated for these shapes by
        // `prepare`, checked against the definition; they live in `self.state`.
        unsafe { self.kernel.launch(stream, &pointers, state.sm_scale, &state.size, &state.workspace) }
            .map_err(|e| anyhow!("native: {e}"))
    }

    fn read_outputs(&mut self, session: &GpuSession) -> Result<TensorSet> {
        let state = self.state.as_ref().ok_or_else(|| anyhow!("native: no outputs before prepare"))?;
        state.outputs.download(session.stream())
    }
}
