//! The Python executor: starts the worker (`crates/runner/python/ki_worker.py`, embedded here with the
//! timing module it imports, `ki_timing.py`), sends it jobs as JSON lines and reads back outputs
//! (safetensors files) and timing samples. The worker runs the same protocol as the Rust executor;
//! comparing and recording stay on the Rust side.
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use anyhow::{Context, Result, anyhow, bail};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::definition::Definition;
use crate::gpu::TrialTiming;
use crate::protocol::TimingProtocol;

pub const WORKER_SOURCE: &str = include_str!("../python/ki_worker.py");
/// `kernelindex-rerun-v2` for Python callables; the worker imports it before any code under test.
pub const TIMING_SOURCE: &str = include_str!("../python/ki_timing.py");
/// The timing module's own import (the CUPTI windows).
pub const WINDOWS_SOURCE: &str = include_str!("../python/ki_windows.py");

pub struct PythonWorker {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    _script_dir: tempfile::TempDir,
    /// What the worker reported about itself (python, torch, flashinfer versions).
    pub environment: Value,
}

#[derive(Deserialize)]
struct TrialReply {
    eager_ns: Vec<f64>,
    graph_ns: Option<Vec<f64>>,
    in_graph_ns: Option<Vec<f64>>,
    cupti_ns: Option<Vec<f64>>,
    graph_error: Option<String>,
}

/// One trial as the worker sees it: where its inputs are and where to put its outputs.
#[derive(Clone, Debug)]
pub struct TrialFiles {
    pub inputs: PathBuf,
    pub outputs: PathBuf,
}

impl PythonWorker {
    /// Starts `python` on the embedded worker with the extra environment variables given.
    pub fn start(python: &str, environment: &[(String, String)]) -> Result<PythonWorker> {
        let script_dir = tempfile::tempdir()?;
        let script = script_dir.path().join("ki_worker.py");
        std::fs::write(&script, WORKER_SOURCE)?;
        std::fs::write(script_dir.path().join("ki_timing.py"), TIMING_SOURCE)?;
        std::fs::write(script_dir.path().join("ki_windows.py"), WINDOWS_SOURCE)?;
        let mut command = Command::new(python);
        command.arg("-u").arg(&script).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit());
        for (k, v) in environment {
            command.env(k, v);
        }
        let mut child = command.spawn().with_context(|| format!("starting the Python worker with `{python}`"))?;
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut worker = PythonWorker { child, stdin, stdout, _script_dir: script_dir, environment: Value::Null };
        let hello = worker.request(&json!({"op": "hello"}))?;
        worker.environment = hello.get("environment").cloned().unwrap_or(Value::Null);
        Ok(worker)
    }

    fn request(&mut self, job: &Value) -> Result<Value> {
        writeln!(self.stdin, "{job}").context("sending a job to the Python worker")?;
        self.stdin.flush()?;
        let mut line = String::new();
        if self.stdout.read_line(&mut line)? == 0 {
            let status = self.child.wait()?;
            bail!("the Python worker exited ({status}) before answering");
        }
        let reply: Value =
            serde_json::from_str(&line).with_context(|| format!("the Python worker answered `{}`", line.trim()))?;
        if reply.get("ok") != Some(&Value::Bool(true)) {
            bail!(
                "Python worker: {}\n{}",
                reply.get("error").and_then(Value::as_str).unwrap_or("unknown error"),
                reply.get("traceback").and_then(Value::as_str).unwrap_or("")
            );
        }
        Ok(reply)
    }

    /// Runs `implementation` ("flashinfer" or "python:PATH") over the trials; each trial's outputs are
    /// written to its `outputs` file. Returns the timing samples per trial, and any reason a graph
    /// could not be captured.
    pub fn run(
        &mut self,
        implementation: &str,
        options: &Value,
        definition: &Definition,
        protocol: &TimingProtocol,
        flush_bytes: usize,
        trials: &[TrialFiles],
    ) -> Result<Vec<(TrialTiming, Option<String>)>> {
        let axis = |name: &str| definition.const_axis(name).unwrap_or(0);
        let input_names: Vec<String> =
            definition.input_specs().map_err(|e| anyhow!(e))?.into_iter().map(|s| s.name).collect();
        let output_names: Vec<String> =
            definition.output_specs().map_err(|e| anyhow!(e))?.into_iter().map(|s| s.name).collect();
        let path = |p: &Path| p.display().to_string();
        let job = json!({
            "implementation": implementation,
            "options": options,
            "definition": {
                "name": definition.name,
                "num_qo_heads": axis("num_qo_heads"),
                "num_kv_heads": axis("num_kv_heads"),
                "head_dim": axis("head_dim"),
                "page_size": axis("page_size"),
                "output_names": output_names,
            },
            "input_names": input_names,
            "trials": trials.iter().map(|t| json!({"inputs": path(&t.inputs), "outputs": path(&t.outputs)})).collect::<Vec<_>>(),
            "warmups": protocol.warmup_iterations,
            "iterations": protocol.timed_iterations,
            "calls_per_graph": protocol.calls_per_graph,
            "graph_pairs": protocol.graph_pairs,
            "flush_bytes": flush_bytes,
            "graph": true,
        });
        let reply = self.request(&job)?;
        let replies: Vec<TrialReply> = serde_json::from_value(reply.get("trials").cloned().unwrap_or(Value::Null))
            .context("reading the Python worker's trial results")?;
        if replies.len() != trials.len() {
            bail!("the Python worker returned {} trials, expected {}", replies.len(), trials.len());
        }
        Ok(replies
            .into_iter()
            .map(|r| {
                let timing = TrialTiming {
                    eager_ns: r.eager_ns,
                    graph_ns: r.graph_ns,
                    in_graph_ns: r.in_graph_ns,
                    cupti_ns: r.cupti_ns,
                };
                (timing, r.graph_error)
            })
            .collect())
    }
}

impl Drop for PythonWorker {
    fn drop(&mut self) {
        // Closing stdin ends the worker's loop; wait so no process is left behind.
        let _ = self.stdin.flush();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
