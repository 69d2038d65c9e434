//! `ki resolve`, `ki show run`, `ki records`, `ki compare`: the ranking-v1 judgement
//! (crate ki-ranking) over the rows of a catalog database or of an export file.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use ki_ranking::rows::RANKING_TABLES;
use ki_ranking::{CatalogRows, CohortView, Index, ResolveMode, ResolveRequest, RunSummary};
use serde_json::Value;

use super::database::{DatabaseArgs, runtime};
use crate::term::{errln, outln};

/// Where the rows come from.
#[derive(Args, Clone)]
pub struct DataArgs {
    /// The catalog read (an empty one gets the bundled snapshot first).
    #[command(flatten)]
    pub database: DatabaseArgs,
    /// Read an export file (.jsonl or .jsonl.zst) instead of a catalog database.
    #[arg(long, conflicts_with = "database")]
    pub export: Option<PathBuf>,
}

#[derive(Args)]
pub struct ResolveArgs {
    /// Operation name, slug or alias.
    #[arg(long)]
    pub operation: String,
    /// An axis value, NAME=VALUE (repeat for each axis).
    #[arg(long = "axis", value_name = "NAME=VALUE")]
    pub axes: Vec<String>,
    /// A dtype the workload must use (repeat or comma-separate).
    #[arg(long = "dtype", value_delimiter = ',')]
    pub dtypes: Vec<String>,
    /// Hardware model, e.g. "NVIDIA B200".
    #[arg(long)]
    pub hardware: Option<String>,
    /// Framework, e.g. pytorch.
    #[arg(long)]
    pub framework: Option<String>,
    /// Print the answer as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub data: DataArgs,
}

#[derive(Subcommand)]
pub enum ShowCommand {
    /// A run's dossier: measurement, rank, evidence, identity, manifest.
    Run {
        /// Run id, run digest, or a unique prefix of either (8+ characters).
        run: String,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        data: DataArgs,
    },
}

#[derive(Args)]
pub struct RecordsArgs {
    /// Only events at or after this time (RFC 3339, or a date YYYY-MM-DD).
    #[arg(long)]
    pub since: Option<String>,
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub data: DataArgs,
}

#[derive(Args)]
pub struct CompareArgs {
    /// 2 to 8 runs: ids, digests or unique prefixes.
    #[arg(required = true, num_args = 1..)]
    pub runs: Vec<String>,
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub data: DataArgs,
}

/// Loads the rows the ranking reads and builds the index.
pub fn load_index(data: &DataArgs) -> anyhow::Result<Index> {
    load(data, None)
}

/// The index of one operation only, when the rows come from a database: the operation's
/// comparison groups are whole in it (a group never spans operations), so a resolve answers
/// exactly as on the full index while reading a fraction of the catalog. An operation that
/// is not found gives an index of every operation and no runs, so the resolver's
/// not-found and ambiguity messages are the same.
fn load_index_for_operation(data: &DataArgs, operation: &str) -> anyhow::Result<Index> {
    load(data, Some(operation))
}

fn load(data: &DataArgs, operation: Option<&str>) -> anyhow::Result<Index> {
    let mut rows = CatalogRows::new();
    if let Some(path) = &data.export {
        let lines = ki_model::export::read_export(path)
            .with_context(|| format!("cannot read the export {}", path.display()))?;
        for line in lines {
            rows.push(&line.table, line.row, Some(line.line as u64));
        }
        return Index::from_owned_rows(rows).with_context(|| format!("cannot rank the rows of {}", path.display()));
    }
    // Messages name the catalog without its password.
    let shown = data.database.shown();
    runtime()?.block_on(async {
        let catalog = data.database.open().await?;
        if let Some(report) = catalog.ensure_bundled_snapshot().await.context("cannot import the bundled snapshot")? {
            errln!("note: the catalog was empty; imported the bundled snapshot ({} rows)", report.inserted());
        }
        let read_tables = async |tables: &[&'static str], into: &mut CatalogRows| -> anyhow::Result<()> {
            for &table in tables {
                catalog
                    .for_each_row(table, |row| {
                        into.push(table, row, None);
                        Ok(())
                    })
                    .await
                    .with_context(|| format!("cannot read {table} from {shown}"))?;
            }
            Ok(())
        };
        match operation {
            None => read_tables(&RANKING_TABLES, &mut rows).await?,
            Some(name) => {
                let mut names = CatalogRows::new();
                read_tables(&["sources", "projects", "operations", "operation_aliases"], &mut names).await?;
                let names =
                    Index::from_owned_rows(names).with_context(|| format!("cannot read the operations of {shown}"))?;
                let ids: Vec<String> =
                    names.find_operation(name).map(|op| vec![names.operations[op].id.clone()]).unwrap_or_default();
                catalog
                    .for_each_ranking_row_of_operations(&ids, |table, row| {
                        rows.push(table, row, None);
                        Ok(())
                    })
                    .await
                    .with_context(|| format!("cannot read the rows of operation {name} from {shown}"))?;
            }
        }
        catalog.close().await;
        anyhow::Ok(())
    })?;
    Index::from_owned_rows(rows).with_context(|| format!("cannot rank the rows of {shown}"))
}

/// `NAME=VALUE`, the value a JSON number or boolean when it reads as one, else text.
pub fn parse_axis(argument: &str) -> anyhow::Result<(String, Value)> {
    let Some((name, value)) = argument.split_once('=') else {
        bail!("--axis {argument:?}: expected NAME=VALUE");
    };
    let (name, value) = (name.trim(), value.trim());
    if name.is_empty() || value.is_empty() {
        bail!("--axis {argument:?}: both NAME and VALUE are needed");
    }
    let parsed = match serde_json::from_str::<Value>(value) {
        Ok(number @ Value::Number(_)) => number,
        Ok(boolean @ Value::Bool(_)) => boolean,
        _ => Value::String(value.to_string()),
    };
    Ok((name.to_string(), parsed))
}

pub fn resolve(args: ResolveArgs) -> anyhow::Result<ExitCode> {
    let mut axes = BTreeMap::new();
    for argument in &args.axes {
        let (name, value) = parse_axis(argument)?;
        if axes.insert(name.clone(), value).is_some() {
            bail!("--axis {name} is given twice");
        }
    }
    let request = ResolveRequest {
        operation: args.operation.clone(),
        axes,
        dtypes: args.dtypes.iter().map(|d| d.trim().to_string()).filter(|d| !d.is_empty()).collect(),
        hardware: args.hardware.clone(),
        framework: args.framework.clone(),
    };
    let index = load_index_for_operation(&args.data, &args.operation)?;
    let answer = index.resolve(&request);
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&answer)?);
    } else {
        outln!("{}", render_resolve(&answer));
    }
    Ok(if answer.mode == ResolveMode::None { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

pub fn show(command: ShowCommand) -> anyhow::Result<ExitCode> {
    match command {
        ShowCommand::Run { run, json, data } => {
            let index = load_index(&data)?;
            let dossier = index.run_dossier(&run)?;
            let corrections = corrections_of(&data, &dossier.summary.run_id)?;
            if json {
                let mut value = serde_json::to_value(&dossier)?;
                value["corrections"] = serde_json::to_value(&corrections)?;
                outln!("{}", serde_json::to_string_pretty(&value)?);
            } else {
                outln!("{}", render_dossier(&dossier));
                if !corrections.is_empty() {
                    outln!("\nCorrections");
                    for c in &corrections {
                        let by = c.by_run_id.as_deref().map(|by| format!(" by run {by}")).unwrap_or_default();
                        outln!("  {} {} run {}{by} ({}): {}", c.at, c.action.as_str(), c.run_id, c.actor, c.reason);
                    }
                }
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The audit entries (retractions, supersessions) that name one run, as the corrected or the
/// superseding run, oldest first, when the rows come from a catalog; an export carries no
/// audit trail.
fn corrections_of(data: &DataArgs, run_id: &str) -> anyhow::Result<Vec<ki_catalog::Correction>> {
    if data.export.is_some() {
        return Ok(Vec::new());
    }
    runtime()?.block_on(async {
        let catalog = data.database.open().await?;
        let all = catalog.corrections().await.context("cannot read the corrections");
        catalog.close().await;
        Ok(all?.into_iter().filter(|c| c.run_id == run_id || c.by_run_id.as_deref() == Some(run_id)).collect())
    })
}

/// `--since`: a full RFC 3339 time, or a date meaning its midnight UTC.
fn parse_since(text: &str) -> anyhow::Result<ki_ranking::Instant> {
    let text = text.trim();
    let full = if text.len() == 10 { format!("{text}T00:00:00Z") } else { text.to_string() };
    ki_ranking::Instant::parse(&full).map_err(|err| anyhow::anyhow!("--since: {err}"))
}

pub fn records(args: RecordsArgs) -> anyhow::Result<ExitCode> {
    let since = args.since.as_deref().map(parse_since).transpose()?;
    let index = load_index(&args.data)?;
    let history = index.record_history(since);
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&history)?);
        return Ok(ExitCode::SUCCESS);
    }
    let mut table =
        Table::new(&["at", "cause", "comparison group", "new holder", "value", "previous", "previous value"]);
    for record in &history {
        let (holder, value) = match &record.run {
            Some(run) => (
                format!("{} ({})", run.implementation, short(&run.run_id)),
                format_value(run.value, run.unit.as_deref()),
            ),
            None => (short(&record.event.run_id).to_string(), "?".into()),
        };
        let unit = record.run.as_ref().and_then(|r| r.unit.clone());
        table.row(vec![
            record.event.at.text.clone(),
            record.event.cause.clone(),
            short_key(&record.event.comparison_key),
            holder,
            value,
            record.event.previous_run_id.as_deref().map(short).unwrap_or("—").to_string(),
            if record.event.previous_run_id.is_some() {
                format_value(record.previous_value, unit.as_deref())
            } else {
                "—".into()
            },
        ]);
    }
    outln!("{}", table.render());
    outln!("{} record event(s){}", history.len(), args.since.map(|s| format!(" since {s}")).unwrap_or_default());
    Ok(ExitCode::SUCCESS)
}

pub fn compare(args: CompareArgs) -> anyhow::Result<ExitCode> {
    let index = load_index(&args.data)?;
    let references: Vec<&str> = args.runs.iter().map(String::as_str).collect();
    let comparison = index.compare(&references)?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&comparison)?);
        return Ok(ExitCode::SUCCESS);
    }
    let mut headers = vec!["run", "implementation", "hardware", "value", "rank", "trust", "× best"];
    headers.extend(comparison.differing_axes.iter().map(String::as_str));
    let mut table = Table::new(&headers);
    for run in &comparison.runs {
        let s = &run.summary;
        let mut cells = vec![
            short(&s.run_id).to_string(),
            s.implementation.clone(),
            s.hardware.clone().unwrap_or_default(),
            format_value(s.value, s.unit.as_deref()),
            s.rank.map(|r| format!("#{r}")).unwrap_or_else(|| ineligible_text(s)),
            s.trust.as_str().to_string(),
            run.relative_to_best_in_group.map(|r| format!("{r:.2}")).unwrap_or_else(|| "—".into()),
        ];
        cells.extend(comparison.differing_axes.iter().map(|a| run.axes.get(a).map(value_text).unwrap_or_default()));
        table.row(cells);
    }
    outln!("{}", table.render());
    if comparison.same_comparison_group {
        outln!("All runs are in one comparison group: values compare directly.");
    } else {
        outln!(
            "The runs are in different comparison groups (workload, hardware, protocol or environment differ): × best is within each group only."
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn ineligible_text(summary: &RunSummary) -> String {
    let codes: Vec<String> = summary.ineligibility.iter().map(|r| r.code()).collect();
    format!("unranked ({})", codes.join(", "))
}

fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

fn short_key(key: &str) -> String {
    format!("{}…", key.get(..23).unwrap_or(key))
}

fn value_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A measure with its unit, as the web prints it (19451 ns → 19.5 µs).
pub fn format_value(value: Option<f64>, unit: Option<&str>) -> String {
    ki_model::units::value(value, unit)
}

fn axes_text(axes: &BTreeMap<String, Value>) -> String {
    axes.iter().map(|(k, v)| format!("{k}={}", value_text(v))).collect::<Vec<_>>().join(" ")
}

fn render_runs(out: &mut String, runs: &[RunSummary]) {
    let mut table = Table::new(&[
        "#",
        "implementation",
        "project",
        "value",
        "× reference",
        "trust",
        "deployable",
        "observed",
        "run",
    ]);
    for run in runs {
        table.row(vec![
            run.rank.map(|r| r.to_string()).unwrap_or_default(),
            run.implementation.clone(),
            run.project.clone(),
            format_value(run.value, run.unit.as_deref()),
            run.reference_speedup.map(|x| format!("{x:.2}×")).unwrap_or_else(|| "—".into()),
            run.trust.as_str().to_string(),
            if run.deployable { "yes" } else { "no" }.to_string(),
            run.observed_at.get(..10).unwrap_or(&run.observed_at).to_string(),
            run.run_id.clone(),
        ]);
    }
    for line in table.render().lines() {
        out.push_str("    ");
        out.push_str(line);
        out.push('\n');
    }
}

fn render_cohort(out: &mut String, cohort: &CohortView) {
    let direction = match cohort.direction {
        ki_ranking::Direction::LowerIsBetter => "lower is better",
        ki_ranking::Direction::HigherIsBetter => "higher is better",
    };
    let profile = match cohort.profile {
        ki_ranking::CohortProfile::SourceNative => "source-native comparison",
        ki_ranking::CohortProfile::StrictExact => "strict exact comparison",
    };
    out.push_str(&format!(
        "  Comparison group {} · {} · {} {} ({direction}) · {profile} · {} eligible of {} runs\n",
        short_key(&cohort.comparison_key),
        cohort.hardware.as_deref().unwrap_or("unknown hardware"),
        cohort.metric.as_deref().unwrap_or("?"),
        cohort.statistic.as_deref().unwrap_or(""),
        cohort.eligible_runs,
        cohort.runs,
    ));
    out.push_str(&format!("    workload {} {}\n", axes_text(&cohort.axes), cohort.dtypes.join(",")));
    render_runs(out, &cohort.fastest);
    let name = |run: &Option<RunSummary>| match run {
        Some(run) => format!(
            "{} ({}, #{})",
            run.implementation,
            format_value(run.value, run.unit.as_deref()),
            run.rank.unwrap_or(0)
        ),
        None => "none".into(),
    };
    out.push_str(&format!(
        "    best verified: {} · best deployable: {}\n",
        name(&cohort.best_verified),
        name(&cohort.best_deployable)
    ));
    if let Some(baseline) = &cohort.baseline {
        out.push_str(&format!(
            "    baseline: {} ({})\n",
            baseline.implementation,
            format_value(baseline.value, baseline.unit.as_deref())
        ));
    }
}

pub fn render_resolve(answer: &ki_ranking::ResolveResponse) -> String {
    let mut out = String::new();
    let request = &answer.request;
    let operation = answer.operation.as_ref().map(|o| o.name.as_str()).unwrap_or(&request.operation);
    let mut header = vec![operation.to_string()];
    if !request.axes.is_empty() {
        header.push(axes_text(&request.axes));
    }
    if !request.dtypes.is_empty() {
        header.push(request.dtypes.join(","));
    }
    header.extend(request.hardware.clone());
    header.extend(request.framework.clone());
    out.push_str(&header.join(" · "));
    out.push('\n');
    let mode = match answer.mode {
        ResolveMode::Exact => "exact",
        ResolveMode::Chooser => "chooser (several comparison groups measured this case; pick one)",
        ResolveMode::Browse => "browse",
        ResolveMode::None => "none",
    };
    out.push_str(&format!("mode: {mode}\n"));
    for note in &answer.notes {
        out.push_str(&format!("note: {note}\n"));
    }
    for cohort in &answer.cohorts {
        out.push('\n');
        render_cohort(&mut out, cohort);
    }
    if answer.omitted_cohorts > 0 {
        out.push_str(&format!(
            "\n… and {} more comparison group(s); narrow with --axis, --hardware or --framework\n",
            answer.omitted_cohorts
        ));
    }
    for case in &answer.nearest {
        let side = match case.side {
            ki_ranking::Side::Below => "below",
            ki_ranking::Side::Above => "above",
        };
        out.push_str(&format!(
            "\nNearest measured case {side}: {}={} (requested {})\n",
            case.axis,
            value_text(&case.measured),
            value_text(&case.requested)
        ));
        for cohort in &case.cohorts {
            render_cohort(&mut out, cohort);
        }
    }
    out
}

pub fn render_dossier(d: &ki_ranking::RunDossier) -> String {
    let s = &d.summary;
    let mut out = String::new();
    let line = |out: &mut String, label: &str, value: String| out.push_str(&format!("  {label:<18} {value}\n"));
    out.push_str(&format!("Run {} · {}\n\n", short(&s.run_id), s.operation));
    out.push_str(&format!(
        "Primary measurement  {} {}\n",
        format_value(s.value, s.unit.as_deref()),
        s.statistic.as_deref().unwrap_or("")
    ));
    let profile = match d.profile {
        ki_ranking::CohortProfile::SourceNative => "source-native comparison",
        ki_ranking::CohortProfile::StrictExact => "strict exact comparison",
    };
    let standing = match s.rank {
        Some(rank) => format!("Rank {rank} in its comparison group of {} eligible run(s)", d.cohort_eligible_runs),
        None => format!("Not ranked: {}", s.ineligibility.iter().map(|r| r.code()).collect::<Vec<_>>().join(", ")),
    };
    out.push_str(&format!("{standing} · {profile} · observed {}\n", s.observed_at.get(..10).unwrap_or(&s.observed_at)));
    if let Some(leader) = &d.leader {
        out.push_str(&format!(
            "Compare with #1: {} {} ({})\n",
            leader.implementation,
            format_value(leader.value, leader.unit.as_deref()),
            leader.run_id
        ));
    }
    if let Some(x) = s.reference_speedup {
        out.push_str(&format!("{x:.2}× reference\n"));
    }
    if let Some(x) = s.baseline_speedup {
        out.push_str(&format!("{x:.2}× baseline\n"));
    }
    out.push_str("\nIdentity\n");
    line(&mut out, "implementation", s.implementation.clone());
    line(&mut out, "project", s.project.clone());
    line(&mut out, "revision", d.implementation_revision.clone().unwrap_or_else(|| "—".into()));
    line(&mut out, "workload", format!("{} · {}", axes_text(&d.workload_axes), d.workload_dtypes.join(",")));
    line(&mut out, "comparison key", d.keys.comparison_key.clone());
    line(&mut out, "source", s.source.clone().unwrap_or_else(|| "—".into()));
    line(&mut out, "external id", d.external_id.clone().unwrap_or_else(|| "—".into()));
    line(&mut out, "run digest", s.run_digest.clone());
    line(&mut out, "run id", s.run_id.clone());
    out.push_str("\nEvidence\n");
    line(&mut out, "status", d.status.clone());
    line(&mut out, "trust", s.trust.as_str().to_string());
    line(&mut out, "published", d.published_at.clone().unwrap_or_else(|| "no".into()));
    if let Some(at) = &d.retracted_at {
        line(&mut out, "retracted", format!("{at} ({})", d.retraction_reason.as_deref().unwrap_or("no reason given")));
    }
    if let Some(by) = &d.superseded_by {
        line(&mut out, "superseded by", by.clone());
    }
    let deploy = if d.deployability.deployable {
        "yes".to_string()
    } else {
        let reasons: Vec<String> = d
            .deployability
            .reasons
            .iter()
            .map(|r| serde_json::to_value(r).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default())
            .collect();
        format!("no ({})", reasons.join(", "))
    };
    line(&mut out, "deployable", deploy);
    if let Some(correctness) = &d.correctness {
        out.push_str("\nCorrectness\n");
        if let Some(map) = correctness.as_object() {
            for (k, v) in map {
                line(&mut out, k, value_text(v));
            }
        }
    }
    out.push_str("\nMeasurements\n");
    for m in &d.measurements {
        line(&mut out, &format!("{} · {}", m.metric, m.statistic), format_value(m.value, Some(m.unit.as_str())));
    }
    if let Some(Value::Object(metrics)) = &d.source_native_metrics {
        out.push_str("\nSource-native metrics\n");
        for (k, v) in metrics {
            line(&mut out, k, value_text(v));
        }
    }
    for (title, section) in [("Protocol", &d.protocol), ("Environment", &d.environment)] {
        if let Some(section) = section {
            out.push_str(&format!("\n{title}\n"));
            flatten(&mut out, "", section);
        }
    }
    out.push_str("\nArtifacts\n");
    if d.artifacts.is_empty() {
        out.push_str("  No artifacts published with this run.\n");
    }
    for a in &d.artifacts {
        line(&mut out, &a.kind, format!("{} {}", a.content_digest, a.uri.as_deref().unwrap_or("")));
    }
    if !d.record_events.is_empty() {
        out.push_str("\nRecord events\n");
        for e in &d.record_events {
            line(
                &mut out,
                &e.at.text,
                format!("{} (previous {})", e.cause, e.previous_run_id.as_deref().unwrap_or("none")),
            );
        }
    }
    out.push_str("\nCanonical manifest\n");
    out.push_str(&serde_json::to_string_pretty(&d.manifest).unwrap_or_default());
    out.push('\n');
    out
}

fn flatten(out: &mut String, prefix: &str, value: &Value) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                let key = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                flatten(out, &key, v);
            }
        }
        other => out.push_str(&format!("  {prefix:<34} {}\n", value_text(other))),
    }
}

/// A plain text table: left-aligned columns, two spaces apart.
struct Table {
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    fn new(headers: &[&str]) -> Table {
        Table { headers: headers.iter().map(|h| h.to_string()).collect(), rows: Vec::new() }
    }

    fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    fn render(&self) -> String {
        let width = |i: usize| {
            self.rows
                .iter()
                .map(|r| r.get(i).map(|c| c.chars().count()).unwrap_or(0))
                .chain([self.headers[i].chars().count()])
                .max()
                .unwrap_or(0)
        };
        let widths: Vec<usize> = (0..self.headers.len()).map(width).collect();
        let mut out = String::new();
        for cells in std::iter::once(&self.headers).chain(&self.rows) {
            let line: Vec<String> = cells
                .iter()
                .zip(&widths)
                .map(|(c, w)| format!("{c}{}", " ".repeat(w.saturating_sub(c.chars().count()))))
                .collect();
            out.push_str(line.join("  ").trim_end());
            out.push('\n');
        }
        out
    }
}
