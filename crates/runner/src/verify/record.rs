//! Records: each run's verdict and figures (runs.jsonl as they finish), then the manifests, samples,
//! catalog rows, results table and session file.
use super::*;

impl Session {
    /// Folds one workload's answer into a RunResult, appends it to runs.jsonl and keeps it.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn record(
        &mut self,
        implementation: &Implementation,
        definition: &Definition,
        plans: &WorkloadPlans,
        verdict: Verdict,
        answer: Option<&Finished>,
        dps: Option<String>,
        log: String,
    ) -> RunResult {
        let trials: &[Trial] = answer.map(|a| a.answer.trials.as_slice()).unwrap_or_default();
        // A figure every trial has (none when a trial lacks it).
        let collect = |figure: Figure| -> Option<Vec<f64>> {
            (!trials.is_empty() && trials.iter().all(|t| t.figure(figure).is_some())).then(|| samples(trials, figure))
        };
        // Each trial's primary figure: in-graph where its calls were captured, else CUPTI.
        let in_graph_trials = trials.iter().filter(|t| t.figure(Figure::InGraph).is_some()).count();
        let mut method = match in_graph_trials {
            _ if trials.is_empty() => None,
            0 => Some("latency_cupti".to_string()),
            n if n == trials.len() => Some("latency_in_graph".to_string()),
            _ => Some("latency_in_graph+latency_cupti".to_string()),
        };
        let mut primary: Vec<f64> = trials
            .iter()
            .flat_map(|t| t.in_graph_ns.as_deref().or(t.cupti_ns.as_deref()).unwrap_or_default())
            .copied()
            .collect();
        let mut method_note = None;
        let mut verdict = verdict;
        if verdict == Verdict::Passed
            && let Some(answer) = answer
        {
            match self.harness_rules(answer, plans, trials, &primary, in_graph_trials) {
                Ok(None) => {}
                Ok(Some(why)) => {
                    primary = samples(trials, Figure::Cupti);
                    method = Some("latency_cupti".to_string());
                    method_note = Some(why);
                }
                Err(refusal) => verdict = refusal,
            }
        }
        let latency = (!primary.is_empty()).then(|| summarize(&primary));
        let eager = collect(Figure::Eager).filter(|s| !s.is_empty()).map(|s| summarize(&s));
        let graph_replay = collect(Figure::GraphReplay).filter(|s| !s.is_empty()).map(|s| summarize(&s));
        // The least of the trials' bounds: the median spans every trial, each on its own inputs.
        let bound = plans
            .trials
            .iter()
            .map(TrialPlan::bound)
            .min_by(|a, b| a.time_ns(&Ceilings::H200_DATASHEET).total_cmp(&b.time_ns(&Ceilings::H200_DATASHEET)))
            .unwrap_or_default();
        let bound_ns = bound.time_ns(&Ceilings::H200_DATASHEET);
        if verdict == Verdict::Passed
            && let Some(l) = &latency
            && crate::consistency::below_speed_of_light(l.median, bound_ns)
        {
            verdict = Verdict::SuspectedRewardHack {
                check: "below_speed_of_light".into(),
                reason: format!(
                    "median {:.0} ns is below {:.0}% of the speed-of-light bound {:.0} ns ({:.3e} bytes, {:.3e} FLOP at the H200's datasheet peaks)",
                    l.median,
                    crate::consistency::SPEED_OF_LIGHT_MARGIN * 100.0,
                    bound_ns,
                    bound.bytes,
                    bound.flops
                ),
            };
        }
        if verdict == Verdict::Passed && latency.is_none() {
            verdict = Verdict::RuntimeError { reason: "passed every check but produced no timing samples".into() };
        }
        let worst: Vec<OutputComparison> = answer.map(|a| a.worst.clone()).unwrap_or_default();
        let checks = trials.iter().map(|t| t.checks as usize).sum();
        // Filled in when the records are written (the CPU reference runs beside the GPU work).
        let agreement = None;
        let result = RunResult {
            implementation: implementation.label(),
            implementation_key: implementation.key.clone(),
            definition: definition.name.clone(),
            workload: plans.case.uuid.clone(),
            axes: plans.case.axes.clone(),
            speed_of_light_percent: latency.as_ref().filter(|_| bound_ns > 0.0).map(|l| 100.0 * bound_ns / l.median),
            method: method.filter(|_| latency.is_some()),
            method_note,
            latency,
            eager,
            graph_replay,
            bound_ns,
            worst,
            checks,
            dps,
            reference_agreement: agreement,
            seconds: answer.map_or(0.0, |a| a.seconds),
            samples: json!({"trials": trials}),
            primary_samples: primary,
            log: (!log.is_empty()).then_some(log),
            verdict,
        };
        let line = serde_json::to_string(&result).unwrap_or_default();
        let _ = writeln!(self.runs_file, "{line}");
        say!(
            "  [{:.0}s] {} {} {}{}",
            self.started.elapsed().as_secs_f64(),
            result.implementation,
            result.workload.split('-').next().unwrap_or(""),
            result.verdict.label(),
            result.latency.as_ref().map(|l| format!(" {:.2} us", l.median / 1e3)).unwrap_or_else(|| format!(
                " {}",
                sanitize(&result.verdict.reason()).chars().take(160).collect::<String>()
            ))
        );
        self.results.push(result.clone());
        result
    }
}

pub(super) fn family_project(label: &str) -> (&'static str, &'static str, &'static str) {
    if label.starts_with("flashinfer") {
        ("flashinfer-library", "FlashInfer", "https://github.com/flashinfer-ai/flashinfer")
    } else if label.starts_with("torch") {
        ("pytorch", "PyTorch", "https://github.com/pytorch/pytorch")
    } else {
        ("flashinfer-bench", "FlashInfer-Bench", "https://github.com/flashinfer-ai/flashinfer-bench")
    }
}

/// The FlashInfer-Bench commit the definitions (and so the reference baselines) come from.
pub(super) const DEFINITIONS_COMMIT: &str = "ecafa9c2c62007667838226068b21ca9ff1c9183";

impl Session {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn write_records(
        &mut self,
        machine: &VerifyMachine,
        definitions: &BTreeMap<String, (Definition, String)>,
        implementations: &[Implementation],
        plans: &BTreeMap<String, Vec<WorkloadPlans>>,
        refused: &[IntakeError],
    ) -> Result<()> {
        let out = self.out.clone();
        let mut rows = VerifyRows::default();
        let source_id = rows.source();
        let environment = records::verify_environment_manifest(machine);
        let environment_digest = records::manifest_digest(&environment)?;
        records::write_manifest(&out.join("manifests/execution-environment.json"), &environment)?;
        let catalog = std::mem::take(&mut self.catalog);
        let samples_per_trial = 10;
        let mut protocols: BTreeMap<String, (Value, String)> = BTreeMap::new();
        let mut operations: BTreeMap<String, (String, String, Value)> = BTreeMap::new();
        for (name, (definition, _)) in definitions {
            let rule = families::rule(definition).to_string();
            if !protocols.contains_key(&rule) {
                let manifest = records::protocol_manifest_v2(&rule, self.args.trials, samples_per_trial);
                let digest = records::manifest_digest(&manifest)?;
                records::write_manifest(&out.join(format!("manifests/protocol-{rule}.json")), &manifest)?;
                protocols.insert(rule.clone(), (manifest, digest));
            }
            let catalog_row = catalog.operations.get(name).map(|(op, _)| op);
            let manifest = match catalog_row {
                Some(row) => row["manifest"].clone(),
                None => records::definition_operation_manifest(definition)?,
            };
            let digest = records::manifest_digest(&manifest)?;
            let id = rows.operation(catalog_row, definition, &manifest)?;
            records::write_manifest(
                &out.join(format!("manifests/operation-{}.json", records::manifest_slug(name))),
                &manifest,
            )?;
            operations.insert(name.clone(), (id, digest, manifest));
        }
        // Implementations.
        let mut implementation_rows: BTreeMap<String, (String, String, String)> = BTreeMap::new();
        for implementation in implementations {
            let (definition, _) = &definitions[&implementation.definition];
            let (operation_id, operation_digest, _) = &operations[&implementation.definition];
            let dtypes: Vec<String> = {
                let mut d: Vec<String> = definition
                    .input_specs()
                    .unwrap_or_default()
                    .iter()
                    .chain(definition.output_specs().unwrap_or_default().iter())
                    .map(|s| match s.dtype {
                        crate::tensor::DType::BF16 => "bf16".to_string(),
                        crate::tensor::DType::F16 => "fp16".to_string(),
                        crate::tensor::DType::F32 => "fp32".to_string(),
                        crate::tensor::DType::F8E4M3 => "fp8_e4m3".to_string(),
                        other => other.definition_name().to_string(),
                    })
                    .collect();
                d.sort();
                d.dedup();
                d
            };
            let info = match &implementation.entry {
                Entry::Solution { solution, .. } => {
                    let artifact = ki_model::jcs::canonicalize(&solution.artifact()).map_err(|e| anyhow!("{e}"))?;
                    let artifact_digest = ki_model::identity::sha256_digest(artifact.as_bytes());
                    let uri = format!("artifacts/{}.json", &artifact_digest[7..]);
                    std::fs::write(out.join(&uri), &artifact)?;
                    rows.artifact(&artifact_digest, artifact.len(), &uri);
                    // What the solution is, from its own fields alone: the file it was read from
                    // is this session's, not the implementation's (the session names it).
                    let mut description = solution.description.clone().unwrap_or_default();
                    description.push_str(&format!(
                        " · FlashInfer-Bench Solution `{}` by {} ({} schema, {}, entry {}::{})",
                        solution.name,
                        solution.author,
                        match solution.schema {
                            crate::solution::Schema::Current => "current",
                            crate::solution::Schema::Legacy => "legacy",
                        },
                        solution.language.as_str(),
                        solution.entry_file,
                        solution.entry_function,
                    ));
                    VerifyImplementation {
                        label: implementation.label(),
                        title: solution.name.clone(),
                        description,
                        language: solution.language.as_str().to_string(),
                        project_slug: "flashinfer-bench-community".into(),
                        project_name: "FlashInfer-Bench community solutions".into(),
                        repository: "https://github.com/flashinfer-ai/flashinfer-bench".into(),
                        version: format!("src.{}", &solution.source_digest[7..19]),
                        callable_path: Some(solution.entry_file.clone()),
                        symbol: solution.entry_function.clone(),
                        authors: vec![solution.author.clone()],
                        source: Some((artifact_digest, uri, artifact.len())),
                        install: None,
                    }
                }
                Entry::Baseline => {
                    let (label, description) = self
                        .descriptions
                        .get(&implementation.key)
                        .cloned()
                        .unwrap_or_else(|| (format!("baseline-{}", definition.op_type), "baseline".into()));
                    let (project_slug, project_name, repository) = family_project(&label);
                    let version = if label.starts_with("flashinfer") {
                        machine.flashinfer.clone().unwrap_or_else(|| "0.5.3".into())
                    } else if label.starts_with("torch") {
                        machine.torch.clone().unwrap_or_default()
                    } else {
                        DEFINITIONS_COMMIT[..12].to_string()
                    };
                    VerifyImplementation {
                        label: label.clone(),
                        title: format!("{label} · {}", definition.name),
                        description: format!("Baseline of {}: {description}", definition.name),
                        language: "python".into(),
                        project_slug: project_slug.into(),
                        project_name: project_name.into(),
                        repository: repository.into(),
                        version: version.clone(),
                        callable_path: None,
                        symbol: description.chars().take(200).collect(),
                        authors: Vec::new(),
                        source: None,
                        install: label.starts_with("flashinfer").then(|| ("flashinfer-python".to_string(), version)),
                    }
                }
            };
            let manifest = records::verify_implementation_manifest(&info, operation_digest, &dtypes);
            let project_id = rows.project(&info.project_slug, &info.project_name, &info.repository);
            let (id, digest, manifest) =
                rows.implementation(&info, manifest, &project_id, operation_id, &catalog.implementations)?;
            records::write_manifest(
                &out.join(format!(
                    "manifests/implementation-{}.json",
                    records::manifest_slug(&format!("{}-{}", info.label, &digest[7..15]))
                )),
                &manifest,
            )?;
            implementation_rows.insert(implementation.key.clone(), (id, digest, info.label.clone()));
        }
        // Runs.
        let mut results = std::mem::take(&mut self.results);
        let agreement = self.agreement.lock().unwrap().clone();
        for r in results.iter_mut() {
            let (definition, _) = &definitions[&r.definition];
            if definition.op_type == "gqa_paged"
                && !definition.inputs.contains_key("qo_indptr")
                && r.verdict.is_record()
            {
                r.reference_agreement = Some(match agreement.get(&(r.workload.clone(), 0)) {
                    Some(v) if v == "agree" => "agrees with the GPU reference (first trial)".into(),
                    Some(v) => v.clone(),
                    None => "not checked (the session ended first)".into(),
                });
            }
        }
        for result in results.iter().filter(|r| r.verdict.is_record()) {
            let (definition, _) = &definitions[&result.definition];
            let (operation_id, operation_digest, _) = &operations[&result.definition];
            let plan = plans[&result.definition].iter().find(|w| w.case.uuid == result.workload);
            let catalog_workload = catalog.operations.get(&result.definition).and_then(|(_, workloads)| {
                workloads.iter().find(|w| {
                    let axes = &w["manifest"]["spec"]["axes"];
                    result.axes.iter().all(|(k, v)| axes.get(k).and_then(Value::as_i64) == Some(*v))
                })
            });
            let workload_manifest = match catalog_workload {
                Some(row) => row["manifest"].clone(),
                None => records::verify_workload_manifest(definition, operation_digest, &result.axes, &result.workload),
            };
            let workload_digest = records::manifest_digest(&workload_manifest)?;
            let workload_id = rows.workload(catalog_workload, operation_id, &workload_manifest)?;
            let short = result.workload.split('-').next().unwrap_or("case").to_string();
            let (implementation_id, implementation_digest, label) =
                implementation_rows[&result.implementation_key].clone();
            let stem = records::manifest_slug(&format!("{label}-{}-{short}", &implementation_digest[7..13]));
            let samples_bytes = serde_json::to_vec(&result.samples)?;
            let samples_uri = format!("samples/{stem}.json");
            std::fs::write(out.join(&samples_uri), &samples_bytes)?;
            let samples_ref = json!({"uri": samples_uri, "digest": records::sha256_of(&samples_bytes)});
            let log_ref = match &result.log {
                Some(text) => {
                    let uri = format!("logs/{stem}.verdict.log");
                    std::fs::write(out.join(&uri), text)?;
                    Some(json!({"uri": uri, "digest": records::sha256_of(text.as_bytes())}))
                }
                None => None,
            };
            let rule = families::rule(definition).to_string();
            let (protocol, protocol_digest) = &protocols[&rule];
            let mut labels: BTreeMap<String, String> = BTreeMap::new();
            labels.insert("verdict".into(), result.verdict.label().to_string());
            if let Verdict::SuspectedRewardHack { check, .. } = &result.verdict {
                labels.insert("refused_by".into(), check.clone());
            }
            if let Verdict::Incorrect { output: Some(o), .. } = &result.verdict {
                labels.insert("failed_output".into(), o.clone());
            }
            labels.insert("input_rule".into(), rule.clone());
            if let Some(p) = plan
                && !p.synthesized.is_empty()
            {
                labels.insert("synthesized_inputs".into(), p.synthesized.join(","));
                if !p.drawn_random.is_empty() {
                    labels.insert("drawn_like_random".into(), p.drawn_random.join(","));
                }
            }
            if let Some(m) = &result.method {
                labels.insert("timing_method".into(), m.clone());
            }
            if let Some(note) = &result.method_note {
                // Label values are at most 200 characters (benchmark-run.v1alpha1).
                labels.insert("timing_method_note".into(), note.chars().take(200).collect());
            }
            if let Some(d) = &result.dps {
                labels.insert("destination_passing".into(), d.clone());
            }
            if let Some(a) = &result.reference_agreement {
                labels.insert("cpu_reference".into(), a.clone());
            }
            labels.insert("session_seed".into(), self.seed.to_string());
            labels.insert("checked_calls".into(), result.checks.to_string());
            let mut latencies = Vec::new();
            if let (Some(method), Some(primary)) = (&result.method, &result.latency) {
                let mut sorted = result.primary_samples.clone();
                sorted.sort_by(f64::total_cmp);
                latencies.push((
                    method.split('+').next().unwrap_or("latency_in_graph").to_string(),
                    primary.clone(),
                    sorted,
                ));
            }
            if let Some(e) = &result.eager {
                latencies.push(("latency_eager".into(), e.clone(), Vec::new()));
            }
            if let Some(g) = &result.graph_replay {
                latencies.push(("latency_graph_replay".into(), g.clone(), Vec::new()));
            }
            let reason = result.verdict.reason();
            let facts = VerifyRunFacts {
                label: &label,
                definition: &result.definition,
                workload_uuid: &result.workload,
                status: result.verdict.status(),
                reason: &reason,
                labels,
                implementation_digest: &implementation_digest,
                workload_digest: &workload_digest,
                protocol_digest,
                environment_digest: &environment_digest,
                worst: &result.worst,
                latencies,
                speed_of_light_percent: result.speed_of_light_percent,
                samples: Some(samples_ref),
                log: log_ref,
            };
            let manifest = records::verify_run_manifest(&facts);
            records::write_manifest(&out.join(format!("manifests/run-{stem}.json")), &manifest)?;
            let summary = format!(
                "CUDA {} · driver {} · {}-{rule}",
                machine.cuda.as_deref().unwrap_or("?"),
                machine.driver.as_deref().unwrap_or("?"),
                records::PROTOCOL_V2_NAME
            );
            let interval = result.latency.as_ref().map(|l| (l.ci95_low, l.ci95_high));
            rows.run(
                &manifest,
                protocol,
                &environment,
                &workload_manifest,
                &implementation_id,
                &workload_id,
                &source_id,
                interval,
                &summary,
            )?;
        }
        rows.write(&out.join("catalog-rows.jsonl"))?;
        self.results = results;
        let command: Vec<String> = std::env::args().collect();
        records::write_manifest(
            &out.join("session.json"),
            &json!({
                "command": command.join(" "), "startedAt": ki_model::utc::now_seconds(), "seconds": self.started.elapsed().as_secs_f64(),
                "seed": self.seed, "machine": machine, "trials": self.args.trials, "timingProtocol": timing_protocol(),
                "protocolDescription": records::PROTOCOL_V2_DESCRIPTION,
                "invalidWorkloads": self.invalid.lock().unwrap().iter().map(|(d, w, r)| json!({"definition": d, "workload": w, "reason": r})).collect::<Vec<_>>(),
                "refusedAtIntake": refused.iter().map(|e| json!({"file": e.file, "pointer": e.pointer, "reason": e.reason})).collect::<Vec<_>>(),
            }),
        )?;
        std::fs::write(out.join("results.md"), self.results_table(machine, refused))?;
        Ok(())
    }

    pub(super) fn results_table(&self, machine: &VerifyMachine, refused: &[IntakeError]) -> String {
        let mut md = String::new();
        md.push_str(&format!(
            "# ki verify on {}\n\nDate (UTC): {}. GPU: {} ({} SMs, {} GiB). Driver {}, CUDA {}, nvcc {}, torch {}, FlashInfer {}. Seed {}. Trials {}.\n\n",
            machine.device,
            ki_model::utc::now_seconds(),
            machine.device,
            machine.sm_count,
            machine.memory_bytes >> 30,
            machine.driver.as_deref().unwrap_or("?"),
            machine.cuda.as_deref().unwrap_or("?"),
            machine.nvcc.as_deref().unwrap_or("?"),
            machine.torch.as_deref().unwrap_or("?"),
            machine.flashinfer.as_deref().unwrap_or("?"),
            self.seed,
            self.args.trials
        ));
        md.push_str(&format!("Command: `{}`\n\n", std::env::args().collect::<Vec<_>>().join(" ")));
        if !refused.is_empty() {
            md.push_str("## Refused at intake (nothing written for them)\n\n");
            for e in refused {
                md.push_str(&format!(
                    "- `{}`: `{}`: {}\n",
                    e.file,
                    if e.pointer.is_empty() { "/" } else { &e.pointer },
                    sanitize(&e.reason)
                ));
            }
            md.push('\n');
        }
        md.push_str("## Runs\n\nLatency: median µs of the primary per-call figure, [bootstrap 95% interval]; SOL = speed-of-light bound (H200 datasheet peaks) ÷ median.\n\n");
        md.push_str("| definition | workload | implementation | verdict | latency µs | 95% interval | method | eager µs | SOL % | reason |\n|---|---|---|---|---|---|---|---|---|---|\n");
        for r in &self.results {
            let us =
                |s: &Option<SampleSummary>| s.as_ref().map_or("-".to_string(), |s| format!("{:.2}", s.median / 1e3));
            md.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                r.definition,
                r.workload.split('-').next().unwrap_or(""),
                r.implementation,
                r.verdict.label(),
                us(&r.latency),
                r.latency.as_ref().map_or("-".into(), |l| format!(
                    "[{:.2}, {:.2}]",
                    l.ci95_low / 1e3,
                    l.ci95_high / 1e3
                )),
                r.method.as_deref().unwrap_or("-"),
                us(&r.eager),
                r.speed_of_light_percent.map_or("-".into(), |p| format!("{p:.1}")),
                sanitize(&r.verdict.reason()).replace('|', "/").chars().take(200).collect::<String>()
            ));
        }
        md
    }
}
