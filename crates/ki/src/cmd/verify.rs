//! `ki verify`: FlashInfer-Bench Solutions verified on the GPU (the work lives in
//! `ki_runner::verify`, which the runner's own small binary shares).
use std::process::ExitCode;

use anyhow::Result;

pub use ki_runner::verify::VerifyArgs;

pub fn run(args: VerifyArgs) -> Result<ExitCode> {
    ki_runner::verify::verify(args)
}
