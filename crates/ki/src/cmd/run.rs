//! `ki reference` (the CPU reference on safetensors inputs) and `ki run` (the verification runner).
//! The arguments and the work live in `ki_runner::cli`, which the runner's own small binary shares.
use std::process::ExitCode;

use anyhow::Result;

pub use ki_runner::cli::{ReferenceArgs, RunArgs};

pub fn reference(args: ReferenceArgs) -> Result<ExitCode> {
    ki_runner::cli::reference(args)
}

pub fn run(args: RunArgs) -> Result<ExitCode> {
    ki_runner::cli::run(args)
}
