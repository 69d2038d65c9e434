//! Builds (CUDA solutions, by torch's extension builder) and warm-ups (the baselines' FlashInfer JIT)
//! on `--jobs` threads, before and beside the GPU work, each with its own time limit.
use super::*;

impl Session {
    pub(super) fn build_dir(&self, key: &str) -> PathBuf {
        let base = self.args.build_cache.clone().unwrap_or_else(|| self.scratch.join("builds"));
        // The architecture is part of the key: a cache carried to another GPU is not reused.
        base.join(format!(
            "sm{}-{}",
            self.arch.replace('.', ""),
            key.trim_start_matches("sha256:").chars().take(24).collect::<String>()
        ))
    }

    /// Builds (CUDA solutions) and warm-ups (baselines: FlashInfer's JIT) on `--jobs` threads.
    pub(super) fn start_builds(
        &self,
        jobs: Vec<(Implementation, Option<Value>)>,
        definitions: &BTreeMap<String, (Definition, String)>,
        board: BuildBoard,
    ) -> std::thread::JoinHandle<()> {
        let queue = Arc::new(Mutex::new(jobs.into_iter().collect::<std::collections::VecDeque<_>>()));
        let defs: Arc<BTreeMap<String, Value>> = Arc::new(
            definitions
                .iter()
                .map(|(k, (_, text))| (k.clone(), serde_json::from_str(text).unwrap_or(Value::Null)))
                .collect(),
        );
        let python = self.args.python.clone();
        let env = self.env.clone();
        let logs = self.out.join("logs");
        let build_script = self.py("ki_build.py");
        let solution_script = self.py("ki_solution.py");
        let timeout = Duration::from_secs(self.args.build_timeout);
        let build_dirs: BTreeMap<String, PathBuf> =
            queue.lock().unwrap().iter().map(|(i, _)| (i.key.clone(), self.build_dir(&i.key))).collect();
        let threads = self.args.jobs.max(1);
        let pch_dir = self.args.build_cache.clone().unwrap_or_else(|| self.scratch.join("builds")).join("pch");
        {
            // The precompiled torch header, on a thread of its own: builds use it once it exists.
            let (python, env, script, dir, log) =
                (python.clone(), env.clone(), build_script.clone(), pch_dir.clone(), logs.join("pch.build.log"));
            std::thread::spawn(move || {
                let dir_text = dir.display().to_string();
                if let Ok(mut w) = Worker::spawn(&python, &[&script, "--pch", &dir_text], &env, &log, "pch") {
                    crate::worker::register(w.pid());
                    let reply = w.receive(Duration::from_secs(300));
                    say!(
                        "precompiled torch header: {}",
                        if matches!(&reply, Reply::Line(v) if Status::of(v).ok) { "ready" } else { "not made" }
                    );
                    crate::worker::unregister(w.pid());
                }
            });
        }
        std::thread::spawn(move || {
            let handles: Vec<_> = (0..threads)
                .map(|_| {
                    let pch = pch_dir.clone();
                    let (queue, board, defs, python, env, logs, build_script, solution_script, build_dirs) = (
                        queue.clone(),
                        board.clone(),
                        defs.clone(),
                        python.clone(),
                        env.clone(),
                        logs.clone(),
                        build_script.clone(),
                        solution_script.clone(),
                        build_dirs.clone(),
                    );
                    std::thread::spawn(move || {
                        loop {
                            let Some((implementation, plan)) = queue.lock().unwrap().pop_front() else { return };
                            let started = Instant::now();
                            let label = implementation.label();
                            let log = logs.join(format!("{}.build.log", records::manifest_slug(&label)));
                            let result = match &implementation.entry {
                                Entry::Solution { solution, .. } => build_one(
                                    &python,
                                    &env,
                                    &build_script,
                                    solution,
                                    &build_dirs[&implementation.key],
                                    &pch,
                                    &log,
                                    timeout,
                                ),
                                Entry::Baseline => warm_baseline(
                                    &python,
                                    &env,
                                    &solution_script,
                                    &defs[&implementation.definition],
                                    plan,
                                    &log,
                                    timeout,
                                ),
                            };
                            say!(
                                "build {label}: {} in {:.0} s",
                                if matches!(result, Built::Ready { .. }) { "ready" } else { "FAILED" },
                                started.elapsed().as_secs_f64()
                            );
                            let (lock, cvar) = &*board;
                            lock.lock().unwrap().insert(implementation.key.clone(), result);
                            cvar.notify_all();
                        }
                    })
                })
                .collect();
            for h in handles {
                let _ = h.join();
            }
        })
    }

    pub(super) fn wait_built(&self, board: &BuildBoard, key: &str) -> Option<Built> {
        let (lock, cvar) = &**board;
        let mut map = lock.lock().unwrap();
        loop {
            if let Some(b) = map.get(key) {
                return Some(b.clone());
            }
            let wait = self.left().unwrap_or(Duration::from_secs(3600)).min(Duration::from_secs(5));
            if self.out_of_time() {
                return None;
            }
            map = cvar.wait_timeout(map, wait).unwrap().0;
        }
    }
}

pub(super) fn build_module_name(digest: &str) -> String {
    format!("ki_solution_{}", digest.trim_start_matches("sha256:").chars().take(16).collect::<String>())
}

#[allow(clippy::too_many_arguments)]
pub(super) fn build_one(
    python: &str,
    env: &[(String, String)],
    script: &str,
    solution: &Solution,
    dir: &Path,
    pch_dir: &Path,
    log: &Path,
    timeout: Duration,
) -> Built {
    let source_dir = dir.join("src");
    if let Err(e) = solution.write_sources(&source_dir) {
        return Built::Failed {
            verdict: Verdict::RuntimeError { reason: format!("writing the sources: {e}") },
            log: String::new(),
        };
    }
    let name = build_module_name(&solution.source_digest);
    let build_dir = dir.join("build");
    let args = [
        script,
        &source_dir.display().to_string(),
        &build_dir.display().to_string(),
        &name,
        &pch_dir.display().to_string(),
    ];
    let args: Vec<&str> = args.iter().map(|s| s.as_ref()).collect();
    let mut worker = match Worker::spawn(python, &args, env, log, "build") {
        Ok(w) => w,
        Err(e) => {
            return Built::Failed { verdict: Verdict::RuntimeError { reason: format!("{e:#}") }, log: String::new() };
        }
    };
    crate::worker::register(worker.pid());
    let reply = worker.receive(timeout);
    crate::worker::unregister(worker.pid());
    match reply {
        Reply::Line(v) => match decode::<BuildReply>(&v, "the build") {
            Ok(BuildReply { ok: true, so_path, .. }) => Built::Ready { so_path },
            Ok(BuildReply { log: text, .. }) => {
                let text = text.unwrap_or_default();
                let _ = std::fs::write(log.with_extension("compiler.log"), &text);
                Built::Failed {
                    verdict: Verdict::CompileError { first_lines: first_error_lines(&text, 6) },
                    log: text.chars().rev().take(4000).collect::<String>().chars().rev().collect(),
                }
            }
            Err(error) => Built::Failed {
                verdict: Verdict::HarnessError { reason: format!("{error:#}") },
                log: log_tail(log, 2000),
            },
        },
        Reply::Timeout(d) => {
            worker.kill();
            Built::Failed {
                verdict: Verdict::Timeout { seconds: d.as_secs(), reason: "the build".into() },
                log: log_tail(log, 2000),
            }
        }
        Reply::Ended(why) => {
            Built::Failed { verdict: Verdict::CompileError { first_lines: first_error_lines(&why, 6) }, log: why }
        }
    }
}

/// A baseline's warm-up: FlashInfer compiles its kernels for this definition (JIT) on a small plan.
pub(super) fn warm_baseline(
    python: &str,
    env: &[(String, String)],
    script: &str,
    definition: &Value,
    plan: Option<Value>,
    log: &Path,
    timeout: Duration,
) -> Built {
    let Some(plan) = plan else { return Built::Ready { so_path: None } };
    let mut worker = match Worker::spawn(python, &["-u", script], env, log, "warm") {
        Ok(w) => w,
        Err(e) => {
            return Built::Failed { verdict: Verdict::RuntimeError { reason: format!("{e:#}") }, log: String::new() };
        }
    };
    crate::worker::register(worker.pid());
    let load = json!({"op": "load", "kind": "baseline", "definition": definition});
    let answered = expect_ok(worker.request(&load, timeout), "loading the baseline")
        .and_then(|_| expect_ok(worker.request(&json!({"op": "warm", "plan": plan}), timeout), "warming the baseline"));
    match answered {
        Ok(_) => Built::Ready { so_path: None },
        Err(error) => {
            Built::Failed { verdict: Verdict::RuntimeError { reason: format!("{error:#}") }, log: log_tail(log, 2000) }
        }
    }
}
