//! The GPU work: per definition a judge computes the references, then each implementation runs in a
//! fresh solution worker, one workload request at a time, its checks relayed to the judge; the Rust
//! CPU reference recomputes gqa decode trials beside it.
use super::*;

/// The Rust CPU reference of gqa paged decode, recomputing every trial the judge dumped.
pub struct CrossCheck {
    sender: Option<std::sync::mpsc::Sender<(Definition, String, usize, PathBuf)>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl CrossCheck {
    pub(super) fn start(results: Arc<Mutex<BTreeMap<(String, usize), String>>>) -> CrossCheck {
        let (sender, receiver) = std::sync::mpsc::channel::<(Definition, String, usize, PathBuf)>();
        let thread = std::thread::spawn(move || {
            for (definition, workload, trial, path) in receiver {
                let verdict = cross_check_one(&definition, &path);
                std::fs::remove_file(&path).ok();
                results.lock().unwrap().insert((workload, trial), verdict);
            }
        });
        CrossCheck { sender: Some(sender), thread: Some(thread) }
    }

    pub(super) fn submit(&self, definition: &Definition, workload: &str, trial: usize, path: PathBuf) {
        if let Some(s) = &self.sender {
            let _ = s.send((definition.clone(), workload.to_string(), trial, path));
        }
    }

    /// Stops taking work; waits at most `limit` for what is queued (the rest stays unchecked).
    pub(super) fn finish(mut self, limit: Duration) {
        self.sender.take();
        let deadline = Instant::now() + limit;
        if let Some(t) = self.thread.take() {
            while !t.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(100));
            }
            if t.is_finished() {
                let _ = t.join();
            }
        }
    }
}

/// "agree" when the CPU reference passes flashinfer_bench_eval against the GPU reference on every
/// output, else why not.
pub(super) fn cross_check_one(definition: &Definition, path: &Path) -> String {
    let set = match crate::tensor::TensorSet::read(path) {
        Ok(s) => s,
        Err(e) => return format!("unreadable: {e}"),
    };
    let cpu = match crate::reference::run_definition_reference(definition, &set, &path.display().to_string()) {
        Ok(o) => o,
        Err(e) => return format!("CPU reference failed: {e}"),
    };
    let mut worst = String::from("agree");
    for spec in definition.output_specs().unwrap_or_default() {
        let (Some(c), Some(g)) = (cpu.get(&spec.name), set.get(&format!("reference.{}", spec.name))) else {
            return format!("output {} missing", spec.name);
        };
        match crate::compare::compare_tensors(&spec.name, g, c, crate::compare::Tolerance::FLASHINFER_BENCH_DEFAULT) {
            Ok(cmp) if cmp.flashinfer_bench_pass => {}
            Ok(cmp) => {
                worst = format!(
                    "disagree on {}: max abs {:.3e}, matched {:.4}",
                    cmp.name, cmp.max_abs_error, cmp.matched_ratio
                )
            }
            Err(e) => worst = format!("disagree: {e}"),
        }
    }
    worst
}

impl Session {
    pub(super) fn spawn_judge(&self) -> Result<Worker> {
        let log = self.out.join("logs").join(format!("judge-{}.log", self.started.elapsed().as_millis()));
        Worker::spawn(&self.args.python, &["-u", &self.py("ki_judge.py")], &self.env, &log, "judge")
    }

    pub(super) fn spawn_solution_worker(&self, label: &str) -> Result<Worker> {
        let log = self.out.join("logs").join(format!(
            "{}.{}.log",
            records::manifest_slug(label),
            self.started.elapsed().as_millis()
        ));
        let script = self.py("ki_solution.py");
        let mut env = self.env.clone();
        env.push(("KI_MEMORY_FRACTION".into(), "0.85".into()));
        Worker::spawn(&self.args.python, &["-u", &script], &env, &log, label)
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn run_definition(
        &mut self,
        definition: &Definition,
        text: &str,
        plans: &[WorkloadPlans],
        implementations: &[Implementation],
        board: &BuildBoard,
        machine: &Arc<Mutex<VerifyMachine>>,
        cross_check: &CrossCheck,
    ) -> Result<()> {
        if self.out_of_time() {
            for i in implementations {
                self.not_run(i, definition, plans, "the session's deadline passed before this definition");
            }
            return Ok(());
        }
        say!(
            "== [{:.0}s] {} ({} workloads, {} implementations)",
            self.started.elapsed().as_secs_f64(),
            definition.name,
            plans.len(),
            implementations.len()
        );
        // A judge started ahead (during the previous definition) when there is one.
        let mut judge = match self.spare_judge.take() {
            Some(j) => j,
            None => self.spawn_judge()?,
        };
        self.spare_judge = self.spawn_judge().ok();
        let hello: JudgeHello = decode(
            &expect_ok(judge.request(&json!({"op": "hello"}), Duration::from_secs(120)), "judge hello")?,
            "judge hello",
        )?;
        {
            let mut m = machine.lock().unwrap();
            if m.device.is_empty() {
                let e = hello.environment;
                m.device = e.device;
                m.capability = e.capability;
                m.sm_count = e.sm_count;
                m.memory_bytes = e.memory_bytes;
                m.l2_bytes = e.l2_bytes;
                m.cuda = e.torch_cuda;
                m.torch = e.torch;
                m.flashinfer = e.flashinfer;
            }
        }
        expect_ok(
            judge.request(&json!({"op": "definition", "json": text}), Duration::from_secs(60)),
            "judge definition",
        )?;
        // References for every (workload, trial), computed once and shared by every implementation.
        let dump = definition.op_type == "gqa_paged" && !definition.inputs.contains_key("qo_indptr");
        let started = Instant::now();
        let mut reference_failed: BTreeMap<String, String> = BTreeMap::new();
        for w in plans.iter().filter(|w| implementations.iter().any(|i| i.runs_on(w))) {
            for t in &w.trials {
                let trial = t.json["trial"].as_u64().unwrap_or(0) as usize;
                let path = self.scratch.join(format!("xcheck-{}-{trial}.safetensors", w.case.uuid));
                let mut job = json!({"op": "reference", "plan": t.json});
                // The CPU reference recomputes the first trial of every workload (each run's first).
                let dump = dump && trial == 0;
                if dump {
                    job["dump"] = json!(path.display().to_string());
                }
                match judge.request(&job, Duration::from_secs(self.args.timeout.max(120))) {
                    Reply::Line(v) => {
                        let status = Status::of(&v);
                        if !status.ok {
                            reference_failed.insert(w.case.uuid.clone(), status.why().to_string());
                            continue;
                        }
                        let reply = match decode::<ReferenceReply>(&v, "judge reference") {
                            Ok(reply) => reply,
                            Err(error) => {
                                reference_failed.insert(w.case.uuid.clone(), error.to_string());
                                continue;
                            }
                        };
                        if let (Some(work), Some(routing)) = (t.expert_work, reply.routing) {
                            let _ = t.routed.set(work.routed(routing.local_experts, routing.local_assignments));
                        }
                        if dump {
                            cross_check.submit(definition, &w.case.uuid, trial, path);
                        }
                    }
                    other => bail!("the judge failed on workload {}: {other:?}", w.case.uuid),
                }
            }
        }
        say!("references of {}: {:.1} s", definition.name, started.elapsed().as_secs_f64());
        let mut next: Option<Result<Worker>> = None;
        for (position, implementation) in implementations.iter().enumerate() {
            let worker = match next.take() {
                Some(w) => w,
                None => self.spawn_solution_worker(&implementation.label()),
            };
            // The next implementation's worker starts (imports, CUDA, warm-up) while this one runs.
            if let Some(following) = implementations.get(position + 1) {
                next = Some(self.spawn_solution_worker(&following.label()));
            }
            self.run_implementation(definition, plans, implementation, worker, &mut judge, board, &reference_failed);
        }
        drop(next);
        judge.kill();
        Ok(())
    }

    pub(super) fn not_run(
        &mut self,
        implementation: &Implementation,
        definition: &Definition,
        plans: &[WorkloadPlans],
        reason: &str,
    ) {
        for w in plans.iter().filter(|w| implementation.runs_on(w)) {
            let verdict = Verdict::NotRun { reason: reason.to_string() };
            self.record(implementation, definition, w, verdict, None, None, String::new());
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn run_implementation(
        &mut self,
        definition: &Definition,
        plans: &[WorkloadPlans],
        implementation: &Implementation,
        worker: Result<Worker>,
        judge: &mut Worker,
        board: &BuildBoard,
        reference_failed: &BTreeMap<String, String>,
    ) {
        let all_plans = plans;
        let plans: Vec<&WorkloadPlans> = all_plans.iter().filter(|w| implementation.runs_on(w)).collect();
        let label = implementation.label();
        let needs_build = match &implementation.entry {
            Entry::Baseline => true,
            Entry::Solution { solution, .. } => solution.language.is_compiled(),
        };
        let mut so_path = None;
        if needs_build {
            match self.wait_built(board, &implementation.key) {
                None => {
                    return self.not_run(
                        implementation,
                        definition,
                        all_plans,
                        "the session's deadline passed during its build",
                    );
                }
                Some(Built::Failed { verdict, log }) => {
                    for &w in &plans {
                        self.record(implementation, definition, w, verdict.clone(), None, None, log.clone());
                    }
                    return;
                }
                Some(Built::Ready { so_path: p }) => so_path = p,
            }
        }
        let definition_json: Value = serde_json::to_value(DefinitionView::of(definition)).unwrap_or(Value::Null);
        let load_job = match &implementation.entry {
            Entry::Baseline => json!({"op": "load", "kind": "baseline", "definition": definition_json}),
            Entry::Solution { solution, .. } => {
                let dir = self.scratch.join("sources").join(solution.source_digest.trim_start_matches("sha256:"));
                if let Err(e) = solution.write_sources(&dir) {
                    let verdict = Verdict::RuntimeError { reason: format!("writing its sources: {e}") };
                    for &w in &plans {
                        self.record(implementation, definition, w, verdict.clone(), None, None, String::new());
                    }
                    return;
                }
                json!({
                    "op": "load", "kind": if solution.language.is_compiled() { "torch_ext" } else { "python" },
                    "dir": dir.display().to_string(), "entry_file": solution.entry_file, "function": solution.entry_function,
                    "so_path": so_path, "module_name": build_module_name(&solution.source_digest),
                    "dps": solution.destination_passing_style, "definition": definition_json,
                })
            }
        };
        // The worker in hand, and why the last one asked for could not be started.
        let (mut worker, mut spawn_error) = match worker {
            Ok(worker) => (Some(worker), None),
            Err(error) => (None, Some(format!("{error:#}"))),
        };
        let mut crashes = 0;
        let mut timeouts = 0;
        let mut dps_note: Option<String> = None;
        let mut label_override: Option<String> = None;
        let mut stop: Option<String> = None;
        // Set once a worker of this solution died while capturing a graph (a callable that
        // synchronizes inside and exits when that fails under capture): from then on its calls are
        // not captured, and the workload it died on is run again, timed by CUPTI.
        let mut graph = true;
        // The worker (by pid) that has loaded this solution: a fresh one loads it first.
        let mut loaded: Option<u32> = None;
        let mut queue: std::collections::VecDeque<&WorkloadPlans> = plans.iter().copied().collect();
        while let Some(w) = queue.pop_front() {
            if let Some(reason) = &stop {
                self.record(
                    implementation,
                    definition,
                    w,
                    Verdict::NotRun { reason: reason.clone() },
                    None,
                    None,
                    String::new(),
                );
                continue;
            }
            if self.out_of_time() {
                stop = Some("the session's deadline passed".into());
                self.record(
                    implementation,
                    definition,
                    w,
                    Verdict::NotRun { reason: "the session's deadline passed".into() },
                    None,
                    None,
                    String::new(),
                );
                continue;
            }
            if let Some(reason) = reference_failed.get(&w.case.uuid) {
                let v =
                    Verdict::NotRun { reason: format!("the definition's reference failed on this workload: {reason}") };
                self.record(implementation, definition, w, v, None, None, String::new());
                continue;
            }
            // A worker for this workload: the one in hand, else a fresh one (after a crash).
            if worker.is_none() {
                if crashes >= 3 {
                    stop = Some("three worker processes of this solution ended abnormally".into());
                    self.record(
                        implementation,
                        definition,
                        w,
                        Verdict::NotRun { reason: stop.clone().unwrap() },
                        None,
                        None,
                        String::new(),
                    );
                    continue;
                }
                match self.spawn_solution_worker(&label) {
                    Ok(started) => worker = Some(started),
                    Err(error) => spawn_error = Some(format!("{error:#}")),
                }
            }
            let Some(mut current) = worker.take() else {
                let why = spawn_error.take().unwrap_or_default();
                let reason = format!("its worker process could not be started: {why}");
                self.record(
                    implementation,
                    definition,
                    w,
                    Verdict::RuntimeError { reason: reason.clone() },
                    None,
                    None,
                    String::new(),
                );
                stop = Some(reason);
                continue;
            };
            // Load on first use of this worker.
            if loaded != Some(current.pid()) {
                let failed = match current.request(&load_job, Duration::from_secs(600)) {
                    Reply::Line(v) => match (Status::of(&v), decode::<Loaded>(&v, "the solution's load")) {
                        (status, Ok(info)) if status.ok => {
                            loaded = Some(current.pid());
                            dps_note = info.dps_reason.or(dps_note);
                            label_override = info.label.or(label_override);
                            if let Some(d) = info.description {
                                self.descriptions.insert(
                                    implementation.key.clone(),
                                    (label_override.clone().unwrap_or_default(), d),
                                );
                            }
                            None
                        }
                        (status, Ok(_)) => Some((status.verdict(), dps_note.clone(), log_tail(&current.log, 2000))),
                        (_, Err(error)) => Some((
                            Verdict::HarnessError { reason: format!("{error:#}") },
                            None,
                            log_tail(&current.log, 2000),
                        )),
                    },
                    Reply::Timeout(d) => {
                        current.kill();
                        Some((
                            Verdict::Timeout { seconds: d.as_secs(), reason: "loading the solution".into() },
                            None,
                            String::new(),
                        ))
                    }
                    Reply::Ended(why) => Some((
                        Verdict::RuntimeError { reason: format!("the worker ended while loading the solution: {why}") },
                        None,
                        String::new(),
                    )),
                };
                if let Some((verdict, dps, log)) = failed {
                    for &w2 in &plans {
                        self.record(implementation, definition, w2, verdict.clone(), None, dps.clone(), log.clone());
                    }
                    return;
                }
            }
            let outcome = self.run_workload(&mut current, judge, w, graph);
            if let (WorkloadOutcome::EndedCapturing(why), true) = (&outcome, graph) {
                say!(
                    "  {label} {}: the worker ended while capturing a graph ({}); run again without the graph method",
                    w.case.uuid.chars().take(8).collect::<String>(),
                    why.chars().take(200).collect::<String>()
                );
                graph = false;
                judge.request(&json!({"op": "close", "exchange": current.pid().to_string()}), Duration::from_secs(30));
                current.kill();
                queue.push_front(w);
                continue;
            }
            let (v, finished, keep) = match outcome {
                WorkloadOutcome::Final(finished) => {
                    let mut v = finished.answer.status.verdict();
                    if let Verdict::Incorrect { output, .. } = &mut v {
                        output.clone_from(&finished.answer.output);
                    }
                    let keep = !finished.answer.status.fatal;
                    (v, Some(finished), keep)
                }
                WorkloadOutcome::Unreadable(error) => (Verdict::HarnessError { reason: error }, None, false),
                WorkloadOutcome::Timeout(d) => {
                    current.kill();
                    let reason = "the workload request (build excluded) did not finish".into();
                    (Verdict::Timeout { seconds: d.as_secs(), reason }, None, false)
                }
                WorkloadOutcome::Ended(why) | WorkloadOutcome::EndedCapturing(why) => {
                    (Verdict::RuntimeError { reason: format!("the worker process ended: {why}") }, None, false)
                }
            };
            let log = if v == Verdict::Passed { String::new() } else { log_tail(&current.log, 2000) };
            let hack = matches!(v, Verdict::SuspectedRewardHack { .. });
            if matches!(v, Verdict::Timeout { .. }) {
                timeouts += 1;
            }
            if !keep {
                crashes += 1;
                judge.request(&json!({"op": "close", "exchange": current.pid().to_string()}), Duration::from_secs(30));
                current.kill();
            } else {
                worker = Some(current);
            }
            self.record(implementation, definition, w, v, finished.as_deref(), dps_note.clone(), log);
            if hack {
                stop = Some(format!("refused as dishonest on workload {}", w.case.uuid));
            } else if timeouts >= 2 {
                stop = Some(format!("timed out on two workloads (the last {})", w.case.uuid));
            }
        }
        if let Some(mut w) = worker {
            judge.request(&json!({"op": "close", "exchange": w.pid().to_string()}), Duration::from_secs(30));
            w.kill();
        }
    }

    /// One workload request: relays the worker's checks to the judge until the final answer.
    pub(super) fn run_workload(
        &mut self,
        worker: &mut Worker,
        judge: &mut Worker,
        plans: &WorkloadPlans,
        graph: bool,
    ) -> WorkloadOutcome {
        let mut protocol = timing_protocol();
        protocol["graph"] = json!(graph);
        let job = json!({"op": "workload", "trials": plans.trials.iter().map(|t| t.json.clone()).collect::<Vec<_>>(), "protocol": protocol});
        let started = Instant::now();
        let deadline = started + Duration::from_secs(self.args.timeout);
        if let Err(e) = worker.send(&job) {
            return WorkloadOutcome::Ended(format!("{e:#}"));
        }
        let exchange = worker.pid().to_string();
        let mut worst: BTreeMap<String, OutputComparison> = BTreeMap::new();
        // The seeds of the calls this runner itself asked the judge about (the ledger's other side).
        let mut relayed: Vec<u64> = Vec::new();
        // Between the worker's "capture" and "captured" lines.
        let mut capturing = false;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match worker.receive(left) {
                Reply::Timeout(_) => return WorkloadOutcome::Timeout(Duration::from_secs(self.args.timeout)),
                Reply::Ended(why) if capturing => return WorkloadOutcome::EndedCapturing(why),
                Reply::Ended(why) => return WorkloadOutcome::Ended(why),
                Reply::Line(line) => match decode::<WorkloadLine>(&line, "a workload request") {
                    Err(error) => return WorkloadOutcome::Unreadable(format!("{error:#}")),
                    Ok(WorkloadLine::Stage { stage }) => capturing = stage == Stage::Capture,
                    Ok(WorkloadLine::Final(answer)) => {
                        return WorkloadOutcome::Final(Box::new(Finished {
                            answer: *answer,
                            worst: worst.into_values().collect(),
                            relayed,
                            seconds: started.elapsed().as_secs_f64(),
                        }));
                    }
                    Ok(WorkloadLine::Check { check }) => {
                        relayed.extend(check.seeds());
                        let answer = self.judge_check(judge, &exchange, &check, &mut worst);
                        if worker.send(&answer).is_err() {
                            return WorkloadOutcome::Ended("the worker closed its input".into());
                        }
                    }
                },
            }
        }
    }

    pub(super) fn judge_check(
        &self,
        judge: &mut Worker,
        exchange: &str,
        check: &CheckRequest,
        worst: &mut BTreeMap<String, OutputComparison>,
    ) -> Value {
        if let Some(announce) = &check.exchange {
            let open = json!({"op": "open", "exchange": exchange, "handle": announce.handle, "bytes": announce.bytes});
            if let Err(e) = expect_ok(judge.request(&open, Duration::from_secs(60)), "judge open") {
                return json!({"pass": false, "harness_error": true, "reason": format!("the judge could not map the outputs: {e:#}")});
            }
        }
        let compare = json!({"op": "compare", "exchange": exchange, "workload": check.workload, "trial": check.trial, "calls": check.calls, "atol": 1e-2, "rtol": 1e-2});
        let reply = match expect_ok(judge.request(&compare, Duration::from_secs(120)), "judge compare")
            .and_then(|line| decode::<JudgeComparison>(&line, "judge compare"))
        {
            Ok(r) => r,
            Err(e) => {
                return json!({"pass": false, "harness_error": true, "reason": format!("the judge failed: {e:#}")});
            }
        };
        // A probe's failure is the worker's to interpret (a replay that shows the work escaped the
        // capture): its figures join the published worst case only when it passes.
        let probe = check.probe;
        let mut seen = Vec::new();
        let mut failure = None;
        'calls: for call in &reply.calls {
            for out in &call.outputs {
                let cmp = match out {
                    OutputResult::Mismatch { name, mismatch, kind } => {
                        let status = match kind {
                            MismatchKind::Dtype => "incorrect_dtype",
                            MismatchKind::Shape => "incorrect_shape",
                        };
                        return json!({"pass": false, "verdict": status, "output": name, "reason": format!("output {name}: {mismatch} ({})", call.label)});
                    }
                    OutputResult::Compared(cmp) => cmp.clone(),
                };
                if !cmp.flashinfer_bench_pass {
                    failure = Some(
                        json!({"pass": false, "verdict": "incorrect_numerical", "output": cmp.name, "reason": format!(
                        "output {} ({}, trial {}): max abs error {:.3e}, max rel error {:.3e}, matched {:.4} of {} elements, {} non-finite",
                        cmp.name, call.label, check.trial, cmp.max_abs_error, cmp.max_rel_error, cmp.matched_ratio, cmp.elements, cmp.non_finite_mismatches)}),
                    );
                    seen.push(cmp);
                    break 'calls;
                }
                seen.push(cmp);
            }
        }
        if failure.is_none() || !probe {
            for cmp in seen {
                fold_worst(worst, cmp);
            }
        }
        if let Some(failure) = failure {
            return failure;
        }
        json!({"pass": true})
    }

    /// A passed answer held to the harness's own rules: the seed ledger (every timed call on values
    /// of its own, the checks among them) and the consistency of its figures. Ok(Some(why)) when
    /// the CUPTI figure is to be published in place of the in-graph one.
    pub(super) fn harness_rules(
        &self,
        answer: &Finished,
        plans: &WorkloadPlans,
        trials: &[Trial],
        primary: &[f64],
        in_graph_trials: usize,
    ) -> Result<Option<String>, Verdict> {
        use crate::consistency::{self, Figures, Finding, Ledger, Method};
        let reported = answer.answer.seeds.as_ref();
        let ledger = Ledger {
            timed: reported.map(|s| s.timed.clone()).unwrap_or_default(),
            checked: reported.map(|s| s.checked.clone()).unwrap_or_default(),
        };
        let relayed = &answer.relayed;
        let plan_seeds: Vec<u64> = plans.trials.iter().filter_map(|t| t.json["seed"].as_u64()).collect();
        if let Err(breach) = consistency::check_ledger(&ledger, relayed, &plan_seeds, trials.len()) {
            return Err(Verdict::HarnessError {
                reason: format!("the input-value rule cannot be vouched for: {breach}"),
            });
        }
        let cupti = samples(trials, Figure::Cupti);
        let method = if in_graph_trials == trials.len() { Method::InGraph } else { Method::Cupti };
        let spread = match method {
            Method::InGraph if !primary.is_empty() => {
                let mut sorted = primary.to_vec();
                sorted.sort_by(f64::total_cmp);
                crate::stats::quantile_sorted(&sorted, 0.9) - crate::stats::quantile_sorted(&sorted, 0.1)
            }
            _ => 0.0,
        };
        let figures = Figures {
            method,
            primary: median(primary),
            primary_spread: spread,
            eager: median(&samples(trials, Figure::Eager)),
            cupti: (!cupti.is_empty()).then(|| median(&cupti)),
            activities: median(&samples(trials, Figure::KernelsPerCall)),
            launch_overhead: answer.answer.launch_overhead_ns.unwrap_or(0.0),
            // Without probes nothing is taken off for a synchronization (the stricter floor).
            sync_overhead: Some(samples(trials, Figure::SyncProbe))
                .filter(|p| !p.is_empty())
                .map_or(0.0, |p| median(&p)),
        };
        match consistency::judge_figures(&figures) {
            Finding::Consistent => Ok(None),
            Finding::PublishCupti(why) => Ok(Some(why)),
            Finding::Unmeasurable(reason) => Err(Verdict::Unmeasurable { reason }),
            Finding::GraphDivergence(reason) => {
                Err(Verdict::SuspectedRewardHack { check: "graph_divergence".into(), reason })
            }
        }
    }
}

/// A workload request answered, with what the runner saw on the way.
pub(super) struct Finished {
    pub answer: WorkloadAnswer,
    /// The worst comparison of each output over the checks the runner relayed.
    pub worst: Vec<OutputComparison>,
    /// The seeds of the calls the runner itself asked the judge about (the ledger's other side).
    pub relayed: Vec<u64>,
    /// The request's wall time (build excluded).
    pub seconds: f64,
}

pub(super) enum WorkloadOutcome {
    Final(Box<Finished>),
    /// A line that is not the protocol's: the harness's fault, never the solution's.
    Unreadable(String),
    Timeout(Duration),
    Ended(String),
    /// The worker ended while capturing a graph of the solution's calls.
    EndedCapturing(String),
}

pub(super) fn expect_ok(reply: Reply, what: &str) -> Result<Value> {
    match reply {
        Reply::Line(v) => {
            let status = Status::of(&v);
            if !status.ok {
                bail!("{what}: {}", status.why());
            }
            Ok(v)
        }
        Reply::Timeout(d) => bail!("{what}: no answer in {} s", d.as_secs()),
        Reply::Ended(why) => bail!("{what}: the process ended: {why}"),
    }
}

/// The part of a definition the workers need.
#[derive(serde::Serialize)]
pub(super) struct DefinitionView<'a> {
    name: &'a str,
    op_type: &'a str,
    axes: BTreeMap<&'a str, Value>,
    inputs: &'a Map<String, Value>,
    outputs: &'a Map<String, Value>,
    reference: &'a str,
}

impl<'a> DefinitionView<'a> {
    pub(super) fn of(d: &'a Definition) -> DefinitionView<'a> {
        DefinitionView {
            name: &d.name,
            op_type: &d.op_type,
            axes: d.axes.iter().map(|(k, a)| (k.as_str(), json!({"type": a.kind, "value": a.value}))).collect(),
            inputs: &d.inputs,
            outputs: &d.outputs,
            reference: &d.reference,
        }
    }
}

/// Folds one output's comparison into the worst case seen for that output.
pub(super) fn fold_worst(worst: &mut BTreeMap<String, OutputComparison>, cmp: OutputComparison) {
    match worst.get_mut(&cmp.name) {
        Some(entry) => entry.fold_worst(&cmp),
        None => {
            worst.insert(cmp.name.clone(), cmp);
        }
    }
}
