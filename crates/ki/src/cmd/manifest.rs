use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;

#[derive(Subcommand)]
pub enum ManifestCommand {
    /// Exit 0 when every file is valid; otherwise one line per problem: `FILE: /pointer: reason`.
    Validate { files: Vec<PathBuf> },
    /// Print `sha256:<hex>  FILE` for each manifest.
    Digest { files: Vec<PathBuf> },
}

pub fn run(command: ManifestCommand) -> anyhow::Result<ExitCode> {
    match command {
        ManifestCommand::Validate { .. } | ManifestCommand::Digest { .. } => {
            anyhow::bail!("not implemented yet")
        }
    }
}
