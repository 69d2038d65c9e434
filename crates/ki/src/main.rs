//! `ki`: the KernelIndex command line. Each command group lives in `cmd/<group>.rs`;
//! this file only parses arguments and dispatches. Everything printed goes through [`term`],
//! which sanitizes it; plain `print!` and friends are refused elsewhere.
//!
//! # Architecture notes
//!
//! Moved from ARCHITECTURE.md, which keeps the map; this is the detail.
//!
//! ## The crate
//!
//! `crates/ki` — `src/main.rs` parses arguments; `src/cmd/<group>.rs` holds each command. Every line
//! it prints goes through `src/term.rs` (control and bidi characters shown escaped; plain `print!` is
//! denied by lint), the libraries' `tracing` warnings too (a wait for a catalog's write lock). The read commands and `ki mcp` (`cmd/mcp.rs`, `cmd/mcp_tools.rs`) answer with the
//! `/api/v1` JSON documents, from a catalog or a running index (`--api URL`): `src/reader.rs` makes
//! them with the handlers' own library calls, `src/client.rs` asks over HTTP (bounded, with deadlines).
//!
//! ## Code map
//!
//! `ki` — `cmd/<group>.rs` per command group; `cmd/database.rs` has the one `DatabaseArgs`
//! and the one runtime every command uses. Holds no logic of its own. The process allocator is
//! jemalloc (`main.rs`: a background thread returns freed pages, so a read-model build's peak
//! does not stay resident).
#![deny(clippy::print_stdout, clippy::print_stderr, clippy::disallowed_methods)]
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod client;
mod cmd;
mod reader;
mod term;

use term::errln;

#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options, read at its start: a background thread returns freed pages to the
/// system within a second (a read-model build frees twice what the model keeps; without this
/// they stay resident until later allocations happen to purge them).
#[unsafe(export_name = "_rjem_malloc_conf")]
static JEMALLOC_OPTIONS: &u8 = &b"background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0\0"[0];

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
    /// Serve the index on the web (pages and the /api/v1 JSON API).
    Serve(cmd::serve::ServeArgs),
    /// API keys and publication of submissions.
    #[command(subcommand)]
    Admin(cmd::admin::AdminCommand),
    /// Run an operation's CPU reference on safetensors inputs.
    Reference(cmd::run::ReferenceArgs),
    /// Verify and time an implementation on a GPU (the verification runner).
    Run(cmd::run::RunArgs),
    /// Import external benchmark data sets (FlashInfer-Bench) into the catalog.
    #[command(subcommand)]
    Source(cmd::source::SourceCommand),
    /// The fastest compatible kernels for an exact workload (ranking-v1).
    Resolve(cmd::resolve::ResolveArgs),
    /// Find operations, implementations, projects and hardware by name.
    Search(cmd::search::SearchArgs),
    /// Show one record in full.
    #[command(subcommand)]
    Show(cmd::show::ShowCommand),
    /// Record events, newest first: who took the record of a comparison group, and when.
    Records(cmd::records::RecordsArgs),
    /// Compare 2 to 8 runs side by side.
    Compare(cmd::compare::CompareArgs),
    /// Every run, filtered (operation, workload, hardware, evidence, source, implementation,
    /// status), a page at a time.
    Runs(cmd::runs::RunsArgs),
    /// What changed after a time: record events, publications, corrections, verifications.
    Changes(cmd::changes::ChangesArgs),
    /// A Model Context Protocol server on stdin/stdout: the read commands as tools for agents.
    Mcp(cmd::mcp::McpArgs),
    /// Verify FlashInfer-Bench Solutions (and baselines) on the GPU, cheats refused.
    Verify(Box<cmd::verify::VerifyCommand>),
}

fn main() -> ExitCode {
    // Output piped into `head` and the like: end quietly when the reader goes away, as Unix
    // tools do, instead of panicking on the failed write (Rust ignores SIGPIPE by default).
    // SAFETY: restores the default disposition of one signal before any thread starts.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    let cli = Cli::parse();
    term::show_library_warnings();
    let result = match cli.command {
        Command::Manifest(c) => cmd::manifest::run(c),
        Command::Catalog(c) => cmd::catalog::run(c),
        Command::Serve(args) => cmd::serve::run(args),
        Command::Admin(c) => cmd::admin::run(c),
        Command::Reference(args) => cmd::run::reference(args),
        Command::Run(args) => cmd::run::run(args),
        Command::Verify(args) => cmd::verify::run(*args),
        Command::Source(c) => cmd::source::run(c),
        Command::Resolve(args) => cmd::resolve::run(args),
        Command::Search(args) => cmd::search::run(args),
        Command::Show(c) => cmd::show::run(c),
        Command::Records(args) => cmd::records::run(args),
        Command::Compare(args) => cmd::compare::run(args),
        Command::Runs(args) => cmd::runs::run(args),
        Command::Changes(args) => cmd::changes::run(args),
        Command::Mcp(args) => cmd::mcp::run(args),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            errln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
