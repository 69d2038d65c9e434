//! `ki verify`: FlashInfer-Bench Solutions verified on the GPU here (the work lives in
//! `ki_runner::verify`, which the runner's own small binary shares), or through the
//! verification queue: `ki verify --enqueue FILE`, `ki verify --worker` on each GPU host,
//! `ki verify status [JOB]`, `ki verify reverify` (cmd/verify_queue.rs).
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Subcommand};

use super::database::DatabaseArgs;
use super::verify_queue::{self, EnqueueArgs, ReverifyArgs, StatusArgs, WorkerArgs};

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct VerifyCommand {
    #[command(subcommand)]
    pub queue: Option<QueueCommand>,
    #[command(flatten)]
    pub here: ki_runner::verify::VerifyArgs,
}

#[derive(Subcommand)]
pub enum QueueCommand {
    /// Run verification jobs from the queue until stopped (a GPU host's worker).
    #[command(long_flag = "worker")]
    Worker {
        #[command(flatten)]
        database: DatabaseArgs,
        #[command(flatten)]
        args: WorkerArgs,
    },
    /// Put a solution (or a catalog implementation) on the queue; again: nothing changes.
    #[command(long_flag = "enqueue")]
    Enqueue {
        #[command(flatten)]
        database: DatabaseArgs,
        #[command(flatten)]
        args: EnqueueArgs,
    },
    /// The queue (pending, running with which worker, done, parked), or one job in full.
    Status {
        #[command(flatten)]
        database: DatabaseArgs,
        #[command(flatten)]
        args: StatusArgs,
    },
    /// Enqueue the #1 Verified runs (and runners-up) that went stale.
    Reverify {
        #[command(flatten)]
        database: DatabaseArgs,
        #[command(flatten)]
        args: ReverifyArgs,
    },
}

pub fn run(command: VerifyCommand) -> Result<ExitCode> {
    match command.queue {
        None => {
            if let Some(refused) = strictly_read(&command.here) {
                return Ok(refused);
            }
            ki_runner::verify::verify(command.here)
        }
        Some(QueueCommand::Worker { database, args }) => verify_queue::worker(&database, args),
        Some(QueueCommand::Enqueue { database, args }) => verify_queue::enqueue(&database, args),
        Some(QueueCommand::Status { database, args }) => verify_queue::status(&database, args),
        Some(QueueCommand::Reverify { database, args }) => verify_queue::reverify(&database, args),
    }
}

/// The Solutions and workloads file `ki verify` is given, read first with the one strict JSON
/// reader (`ki_model::parse::parse_json`, as `ki manifest validate` refuses them: a duplicate
/// key is refused, not resolved to its last value): `FILE[:LINE]: /pointer: reason` for each
/// document refused and exit 1, nothing run or written; None when all read.
fn strictly_read(args: &ki_runner::verify::VerifyArgs) -> Option<ExitCode> {
    let mut problems = Vec::new();
    for path in &args.solutions {
        // A file that cannot be read is the runner's to report, as before.
        if let Ok(bytes) = std::fs::read(path)
            && let Err(problem) = ki_model::parse::parse_json(&bytes)
        {
            problems.push(format!("{}: {problem}", path.display()));
        }
    }
    if let Some(path) = &args.workloads
        && let Ok(text) = std::fs::read_to_string(path)
    {
        for (number, line) in text.lines().enumerate().filter(|(_, line)| !line.trim().is_empty()) {
            if let Err(problem) = ki_model::parse::parse_json(line.as_bytes()) {
                problems.push(format!("{}:{}: {problem}", path.display(), number + 1));
            }
        }
    }
    if problems.is_empty() {
        return None;
    }
    for problem in &problems {
        crate::term::errln!("{problem}");
    }
    crate::term::errln!("ki verify: {} document(s) refused; nothing was run or written", problems.len());
    Some(ExitCode::from(1))
}
