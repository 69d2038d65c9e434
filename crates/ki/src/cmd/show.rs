//! `ki show run`: one run in full, the dossier of `GET /api/v1/runs/{id}` (the run page's
//! JSON twin): measurement and standing, banners (retracted, superseded, stale), identity,
//! evidence, workload, protocol, environment, artifacts, attestations, canonical manifest.

use std::process::ExitCode;

use clap::Subcommand;
use serde_json::Value;

use super::output::{FormatArgs, list, number, opt_text, present, scalar, text};
use crate::reader::{ReadArgs, Reader};

#[derive(Subcommand)]
pub enum ShowCommand {
    /// A run's dossier: measurement, rank, evidence, identity, manifest.
    Run {
        /// Run id, run digest, or a unique prefix of either (8+ characters).
        run: String,
        #[command(flatten)]
        format: FormatArgs,
        #[command(flatten)]
        read: ReadArgs,
    },
}

pub fn run(command: ShowCommand) -> anyhow::Result<ExitCode> {
    match command {
        ShowCommand::Run { run, format, read } => {
            let dossier = Reader::new(&read)?.run(&run)?;
            format.print(&dossier, None, render);
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn line(out: &mut String, label: &str, value: &str) {
    out.push_str(&format!("  {label:<22} {value}\n"));
}

/// Labelled fields (`[{label, value}]`) as aligned lines under a heading; nothing when empty.
fn fields(out: &mut String, heading: &str, items: &[Value]) {
    if items.is_empty() {
        return;
    }
    out.push_str(&format!("\n{heading}\n"));
    for field in items {
        line(out, text(field, "label"), text(field, "value"));
    }
}

pub fn render(d: &Value) -> String {
    let mut out = String::new();
    let p = &d["primary"];
    out.push_str(&format!("Run {} · {}\n", text(d, "shortId"), text(d, "title")));
    for banner in list(d, "banners") {
        let link = present(banner, "link").map(|l| format!(" ({})", text(l, "href"))).unwrap_or_default();
        out.push_str(&format!("! {} {}{link}\n", text(banner, "title"), text(banner, "message")));
    }
    out.push('\n');
    out.push_str(&format!(
        "Primary measurement  {} {} {}\n",
        text(p, "display"),
        text(p, "metric"),
        text(p, "statistic")
    ));
    if let Some(interval) = opt_text(p, "intervalDisplay") {
        out.push_str(&format!("Interval             {interval} ({})\n", text(p, "intervalLabel")));
    }
    if let Some(count) = d["samples"]["count"].as_u64() {
        out.push_str(&format!("Samples              {}\n", ki_model::units::count(count)));
    }
    let standing = match p["rank"].as_u64() {
        Some(rank) => format!("Rank {rank} in its comparison group of {} eligible run(s)", scalar(&p["groupSize"])),
        None => {
            format!(
                "Not ranked: {}",
                list(p, "ineligibleExplanations").iter().map(scalar).collect::<Vec<_>>().join("; ")
            )
        }
    };
    out.push_str(&format!("{standing} · {} · observed {}\n", text(p, "profile"), text(p, "observedAt")));
    if let Some(leader) = present(p, "leader") {
        out.push_str(&format!(
            "Compare with #1: {} {} ({})\n",
            text(leader, "implementation"),
            text(leader, "display"),
            text(leader, "id")
        ));
    }
    if let Some(x) = number(p, "referenceSpeedup") {
        let reference = present(p, "reference")
            .map(|r| format!(" · reference {} ({})", text(r, "display"), text(r, "explanation")))
            .unwrap_or_default();
        out.push_str(&format!("{x:.2}× reference{reference}\n"));
    }
    if let Some(x) = number(p, "baselineSpeedup") {
        out.push_str(&format!("{x:.2}× baseline\n"));
    }

    out.push_str("\nEvidence\n");
    line(&mut out, "status", text(d, "status"));
    line(&mut out, "evidence level", text(d, "evidenceLevel"));
    line(&mut out, "published", opt_text(d, "publishedAt").unwrap_or("no"));
    let deployability = &d["deployability"];
    let deployable = if deployability["deployable"].as_bool() == Some(true) {
        "yes".to_string()
    } else {
        format!("no: {}", list(deployability, "explanations").iter().map(scalar).collect::<Vec<_>>().join(" "))
    };
    line(&mut out, "deployable", &deployable);
    if let Some(source) = present(d, "source") {
        line(&mut out, "source", text(source, "label"));
    }
    line(&mut out, "licence", opt_text(d, "licence").unwrap_or("—"));
    line(&mut out, "run id", text(d, "id"));
    line(&mut out, "run digest", text(d, "digest"));

    fields(&mut out, "Identity", list(d, "identity"));
    fields(&mut out, "Correctness", list(d, "correctness"));
    let workload = &d["workload"];
    fields(&mut out, "Workload", list(workload, "axes"));
    fields(&mut out, "Workload constants", list(workload, "constants"));
    let tensors = list(workload, "tensors");
    if !tensors.is_empty() {
        out.push_str("\nTensors\n");
        for t in tensors {
            line(&mut out, text(t, "name"), &format!("{} {}", text(t, "dtype"), text(t, "shape")));
        }
    }
    let measurements = list(d, "measurements");
    if !measurements.is_empty() {
        out.push_str("\nMeasurements\n");
        for m in measurements {
            line(&mut out, &format!("{} · {}", text(m, "label"), text(m, "statistic")), text(m, "display"));
        }
    }
    let statistics = list(d, "statistics");
    if !statistics.is_empty() {
        out.push_str("\nStatistics the manifest records\n");
        for s in statistics {
            line(&mut out, text(s, "label"), &format!("{} ({})", text(s, "display"), text(s, "origin")));
        }
    }
    if let Some(explanation) = opt_text(&d["samples"], "explanation") {
        out.push_str(&format!("\nSamples\n  {explanation}\n"));
    }
    fields(&mut out, "Protocol", list(d, "protocol"));
    fields(&mut out, "Environment", list(d, "environment"));
    out.push_str("\nArtifacts\n");
    let artifacts = list(d, "artifacts");
    if artifacts.is_empty() {
        out.push_str("  No artifacts published with this run.\n");
    }
    for a in artifacts {
        line(&mut out, text(a, "name"), format!("{} {}", text(a, "digest"), text(a, "uri")).trim_end());
    }
    let attestations = list(d, "attestations");
    if !attestations.is_empty() {
        out.push_str("\nAttestations\n");
        for a in attestations {
            let mut detail = format!("{} by {}", scalar(&a["kind"]), text(a, "attester"));
            if let Some(ns) = a["observedNs"].as_u64() {
                detail.push_str(&format!(", observed {ns} ns"));
            }
            if let Some(url) = opt_text(a, "evidenceUrl") {
                detail.push_str(&format!(", evidence {url}"));
            }
            if let Some(note) = opt_text(a, "note") {
                detail.push_str(&format!(": {note}"));
            }
            line(&mut out, text(a, "createdAt"), &detail);
        }
    }
    out.push_str(&format!("\nCite as\n  {}\n", text(&d["citation"], "text")));
    out.push_str("\nCanonical manifest\n");
    out.push_str(&serde_json::to_string_pretty(&d["manifest"]).unwrap_or_default());
    out.push('\n');
    out
}
