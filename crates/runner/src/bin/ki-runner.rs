//! `ki-runner reference …` / `ki-runner run …`: the runner's commands without the rest of `ki`
//! (the same functions `ki reference` and `ki run` call), for carrying to the GPU machine.
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use ki_runner::cli::{ReferenceArgs, RunArgs};
use ki_runner::verify::VerifyArgs;

#[derive(Parser)]
#[command(name = "ki-runner", version, about = "KernelIndex verification runner")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run an operation's CPU reference on safetensors inputs.
    Reference(ReferenceArgs),
    /// Verify and time implementations on the GPU.
    Run(RunArgs),
    /// Verify FlashInfer-Bench Solutions (and baselines) on the GPU, cheats refused.
    Verify(VerifyArgs),
}

fn main() -> ExitCode {
    let result = match Cli::parse().command {
        Command::Reference(args) => ki_runner::cli::reference(args),
        Command::Run(args) => ki_runner::cli::run(args),
        Command::Verify(args) => ki_runner::verify::verify(args),
    };
    result.unwrap_or_else(|err| {
        ki_runner::say_line(&format!("error: {err:#}"));
        ExitCode::FAILURE
    })
}
