//! `ki manifest validate|digest FILE...`.
//!
//! A file may hold several YAML documents (a submission bundle); each is one manifest. Problems
//! are printed as `FILE: /json/pointer: reason (line L, column C)`, with the document number added
//! for the second and later documents of a bundle. Digests are printed as `sha256:<hex>  FILE`,
//! and as `sha256:<hex>  FILE#N` (N counted from 1) for each document of a multi-document file.
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::term::{errln, outln};
use clap::Subcommand;
use ki_model::manifest::{ValidManifest, read_manifest_file};
use ki_model::problem::Problem;

#[derive(Subcommand)]
pub enum ManifestCommand {
    /// Exit 0 when every file is valid; otherwise one line per problem: `FILE: /pointer: reason`.
    Validate {
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Print `sha256:<hex>  FILE` for each manifest.
    Digest {
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
}

pub fn run(command: ManifestCommand) -> anyhow::Result<ExitCode> {
    let mut all_valid = true;
    match command {
        ManifestCommand::Validate { files } => {
            for file in &files {
                match read_manifest_file(file) {
                    Ok(manifests) => {
                        let kinds: Vec<&str> = manifests.iter().map(|m| m.kind.name()).collect();
                        outln!("{}: ok ({})", file.display(), kinds.join(", "));
                    }
                    Err(problems) => {
                        all_valid = false;
                        print_problems(file, &problems, false);
                    }
                }
            }
        }
        ManifestCommand::Digest { files } => {
            for file in &files {
                match read_manifest_file(file) {
                    Ok(manifests) => print_digests(file, &manifests),
                    Err(problems) => {
                        all_valid = false;
                        print_problems(file, &problems, true);
                    }
                }
            }
        }
    }
    Ok(if all_valid { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// Problems printed per file: the output stays bounded whatever the input holds.
const MAX_PROBLEMS: usize = 100;

/// Problems go to stdout for `validate` (they are its report) and to stderr for `digest`
/// (whose stdout is a digest list other tools read).
/// At most [`MAX_PROBLEMS`] lines per file, then how many more there are.
fn print_problems(file: &Path, problems: &[Problem], to_stderr: bool) {
    let more = problems.len().saturating_sub(MAX_PROBLEMS);
    let lines = problems.iter().take(MAX_PROBLEMS).map(|problem| format!("{}: {problem}", file.display()));
    let summary = (more > 0).then(|| format!("{}: … and {more} more problem(s)", file.display()));
    for line in lines.chain(summary) {
        if to_stderr {
            errln!("{line}");
        } else {
            outln!("{line}");
        }
    }
}

fn print_digests(file: &Path, manifests: &[ValidManifest]) {
    if let [only] = manifests {
        outln!("{}  {}", only.digest, file.display());
        return;
    }
    for m in manifests {
        outln!("{}  {}#{}", m.digest, file.display(), m.document + 1);
    }
}
