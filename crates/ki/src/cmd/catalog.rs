use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;

#[derive(Subcommand)]
pub enum CatalogCommand {
    /// Recompute every digest and key of an export (`.jsonl` or `.jsonl.zst`).
    Verify { export: PathBuf },
}

pub fn run(command: CatalogCommand) -> anyhow::Result<ExitCode> {
    match command {
        CatalogCommand::Verify { .. } => anyhow::bail!("not implemented yet"),
    }
}
