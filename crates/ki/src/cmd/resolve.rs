//! `ki resolve`: the fastest compatible runs for an exact workload (ranking-v1), the answer of
//! `POST /api/v1/resolve/kernel`.

use std::collections::BTreeMap;
use std::process::ExitCode;

use anyhow::bail;
use clap::Args;
use ki_ranking::ResolveRequest;
use serde_json::Value;

use super::output::{
    FormatArgs, Table, axes_text, joined, list, measure, number, opt_text, present, scalar, short_key, text,
};
use super::ranking::parse_axis;
use crate::reader::{ReadArgs, Reader};

#[derive(Args)]
pub struct ResolveArgs {
    /// Operation name, slug or alias, or words the search reads ("gqa paged decode", "rms norm").
    #[arg(long)]
    pub operation: String,
    /// An axis value, NAME=VALUE (repeat for each axis).
    #[arg(long = "axis", value_name = "NAME=VALUE")]
    pub axes: Vec<String>,
    /// A dtype the workload must use (repeat or comma-separate).
    #[arg(long = "dtype", value_delimiter = ',')]
    pub dtypes: Vec<String>,
    /// Hardware model as the runs name it or as people write it: "NVIDIA H200", "H200", "H100 SXM".
    #[arg(long)]
    pub hardware: Option<String>,
    /// Framework, e.g. pytorch.
    #[arg(long)]
    pub framework: Option<String>,
    /// Most comparison groups to list, 1 to 50 [default: 10]; the answer counts the rest.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=50))]
    pub limit: Option<u16>,
    #[command(flatten)]
    pub format: FormatArgs,
    #[command(flatten)]
    pub read: ReadArgs,
}

impl ResolveArgs {
    pub fn request(&self) -> anyhow::Result<ResolveRequest> {
        let mut axes = BTreeMap::new();
        for argument in &self.axes {
            let (name, value) = parse_axis(argument)?;
            if axes.insert(name.clone(), value).is_some() {
                bail!("--axis {name} is given twice");
            }
        }
        Ok(ResolveRequest {
            operation: self.operation.clone(),
            axes,
            dtypes: self.dtypes.iter().map(|d| d.trim().to_string()).filter(|d| !d.is_empty()).collect(),
            hardware: self.hardware.clone(),
            framework: self.framework.clone(),
            limit: self.limit.map(usize::from),
        })
    }
}

pub fn run(args: ResolveArgs) -> anyhow::Result<ExitCode> {
    let request = args.request()?;
    let answer = Reader::new(&args.read)?.resolve(&request)?;
    args.format.print(&answer, None, render);
    Ok(if text(&answer, "mode") == "none" { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

pub fn render(answer: &Value) -> String {
    let mut out = String::new();
    let request = &answer["request"];
    let operation = present(answer, "operation").map(|o| text(o, "name")).unwrap_or(text(request, "operation"));
    let mut header = vec![operation.to_string()];
    let axes = axes_text(request.get("axes"));
    if !axes.is_empty() {
        header.push(axes);
    }
    let dtypes = joined(request, "dtypes", ",");
    if !dtypes.is_empty() {
        header.push(dtypes);
    }
    header.extend(opt_text(request, "hardware").map(str::to_string));
    header.extend(opt_text(request, "framework").map(str::to_string));
    out.push_str(&header.join(" · "));
    out.push('\n');
    let mode = match text(answer, "mode") {
        "chooser" => "chooser (several comparison groups measured this case; pick one)",
        other => other,
    };
    out.push_str(&format!("mode: {mode}\n"));
    for read in list(answer, "readAs") {
        out.push_str(&format!("read {} “{}” as {}", text(read, "field"), text(read, "given"), text(read, "read")));
        if let Some(note) = opt_text(read, "note") {
            out.push_str(&format!(" ({note})"));
        }
        out.push('\n');
    }
    for note in list(answer, "notes") {
        out.push_str(&format!("note: {}\n", scalar(note)));
    }
    for cohort in list(answer, "cohorts") {
        out.push('\n');
        render_cohort(&mut out, cohort);
    }
    let omitted = answer["omittedCohorts"].as_u64().unwrap_or(0);
    if omitted > 0 {
        out.push_str(&format!(
            "\n… and {omitted} more comparison group(s); narrow with --axis, --hardware or --framework\n"
        ));
    }
    for case in list(answer, "nearest") {
        let differs: Vec<String> = list(case, "differs")
            .iter()
            .map(|d| format!("{}={} (requested {})", text(d, "axis"), scalar(&d["measured"]), scalar(&d["asked"])))
            .collect();
        out.push_str(&format!("\nNearest measured case {}: {}\n", text(case, "side"), differs.join(", ")));
        for cohort in list(case, "cohorts") {
            render_cohort(&mut out, cohort);
        }
    }
    out
}

fn render_cohort(out: &mut String, cohort: &Value) {
    let direction = match text(cohort, "direction") {
        "higher_is_better" => "higher is better",
        _ => "lower is better",
    };
    out.push_str(&format!(
        "  Comparison group {} · {} · {} {} ({direction}) · {} · {} eligible of {} runs\n",
        short_key(text(cohort, "comparisonKey")),
        opt_text(cohort, "hardware").unwrap_or("unknown hardware"),
        opt_text(cohort, "metric").unwrap_or("?"),
        text(cohort, "statistic"),
        profile(text(cohort, "profile")),
        scalar(&cohort["eligibleRuns"]),
        scalar(&cohort["runs"]),
    ));
    out.push_str(&format!("    workload {} {}\n", axes_text(cohort.get("axes")), joined(cohort, "dtypes", ",")));
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
    for run in list(cohort, "fastest") {
        let observed = text(run, "observedAt");
        table.row(vec![
            scalar(&run["rank"]),
            text(run, "implementation").to_string(),
            text(run, "project").to_string(),
            measure(number(run, "value"), opt_text(run, "unit")),
            number(run, "referenceSpeedup").map(|x| format!("{x:.2}×")).unwrap_or_else(|| "—".into()),
            text(run, "trust").to_string(),
            if run["deployable"].as_bool() == Some(true) { "yes" } else { "no" }.to_string(),
            observed.get(..10).unwrap_or(observed).to_string(),
            text(run, "runId").to_string(),
        ]);
    }
    for line in table.render().lines() {
        out.push_str("    ");
        out.push_str(line);
        out.push('\n');
    }
    let name = |run: Option<&Value>| match run {
        Some(run) => format!(
            "{} ({}, #{})",
            text(run, "implementation"),
            measure(number(run, "value"), opt_text(run, "unit")),
            run["rank"].as_u64().unwrap_or(0)
        ),
        None => "none".into(),
    };
    out.push_str(&format!(
        "    best verified: {} · best deployable: {}\n",
        name(present(cohort, "bestVerified")),
        name(present(cohort, "bestDeployable"))
    ));
    for caveat in list(cohort, "caveats") {
        out.push_str(&format!("    caveat: {}\n", text(caveat, "message")));
    }
    if let Some(baseline) = present(cohort, "baseline") {
        out.push_str(&format!(
            "    baseline: {} ({})\n",
            text(baseline, "implementation"),
            measure(number(baseline, "value"), opt_text(baseline, "unit"))
        ));
    }
}

/// How a comparison group compares its runs, in words.
pub fn profile(code: &str) -> &str {
    match code {
        "source_native" => "source-native comparison",
        "strict_exact" => "strict exact comparison",
        other => other,
    }
}
