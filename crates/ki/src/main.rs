//! `ki`: the KernelIndex command line. Each command group lives in `cmd/<group>.rs`;
//! this file only parses arguments and dispatches.
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cmd;

#[derive(Parser)]
#[command(name = "ki", version, about = "KernelIndex: the fastest verified kernel for your exact workload")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Validate and digest kernelindex.dev/v1alpha1 manifests.
    #[command(subcommand)]
    Manifest(cmd::manifest::ManifestCommand),
    /// Verify, import and export catalog snapshots.
    #[command(subcommand)]
    Catalog(cmd::catalog::CatalogCommand),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Manifest(c) => cmd::manifest::run(c),
        Command::Catalog(c) => cmd::catalog::run(c),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
