//! The verdict of one (implementation, workload) run of `ki verify`, and how it is published: a
//! BenchmarkRun `status` (the schema's values), a one-line reason and labels for the pages.
use serde::Serialize;

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    /// Every checked output of every trial matched the reference; timed.
    Passed,
    /// An output differs from the reference (status incorrect_numerical / _shape / _dtype).
    Incorrect {
        status: String,
        output: Option<String>,
        reason: String,
    },
    /// The build failed; `first_lines` are the compiler's first error lines.
    CompileError {
        first_lines: String,
    },
    RuntimeError {
        reason: String,
    },
    Timeout {
        seconds: u64,
        reason: String,
    },
    /// Refused as dishonest: `check` names the check that caught it.
    SuspectedRewardHack {
        check: String,
        reason: String,
    },
    /// The harness could not measure the run (its figures contradict each other): never the
    /// solution's fault, never a pass (status incomplete_evidence).
    Unmeasurable {
        reason: String,
    },
    /// A harness part failed (the judge, a record that could not be read): never the solution's
    /// fault, never a pass (status incomplete_evidence).
    HarnessError {
        reason: String,
    },
    /// Not run in this session (the session's deadline, or the solution was already refused);
    /// not a catalog record.
    NotRun {
        reason: String,
    },
}

impl Verdict {
    /// The BenchmarkRun status.
    pub fn status(&self) -> &str {
        match self {
            Verdict::Passed => "passed",
            Verdict::Incorrect { status, .. } => status,
            Verdict::CompileError { .. } => "compile_error",
            Verdict::RuntimeError { .. } => "runtime_error",
            Verdict::Timeout { .. } => "timeout",
            Verdict::SuspectedRewardHack { .. } => "suspected_reward_hack",
            Verdict::Unmeasurable { .. } | Verdict::HarnessError { .. } => "incomplete_evidence",
            Verdict::NotRun { .. } => "not_run",
        }
    }

    /// Why, in one line (empty for a pass).
    pub fn reason(&self) -> String {
        match self {
            Verdict::Passed => String::new(),
            Verdict::Incorrect { reason, .. } => reason.clone(),
            Verdict::CompileError { first_lines } => format!("compile error: {first_lines}"),
            Verdict::RuntimeError { reason } => reason.clone(),
            Verdict::Timeout { seconds, reason } => format!("no answer within {seconds} s: {reason}"),
            Verdict::SuspectedRewardHack { check, reason } => format!("refused ({check}): {reason}"),
            Verdict::Unmeasurable { reason } => format!("unmeasurable (harness, not the solution): {reason}"),
            Verdict::HarnessError { reason } => format!("harness error (not the solution's): {reason}"),
            Verdict::NotRun { reason } => reason.clone(),
        }
    }

    /// What the records' `verdict` label says: the status, except for the harness's own verdicts.
    pub fn label(&self) -> &str {
        match self {
            Verdict::Unmeasurable { .. } => "unmeasurable",
            Verdict::HarnessError { .. } => "harness_error",
            other => other.status(),
        }
    }

    /// The harness failed, not the solution.
    pub fn is_harness(&self) -> bool {
        matches!(self, Verdict::Unmeasurable { .. } | Verdict::HarnessError { .. })
    }

    pub fn is_record(&self) -> bool {
        !matches!(self, Verdict::NotRun { .. })
    }

    /// From a worker's status string and reason.
    pub fn from_worker(status: &str, reason: &str, check: Option<&str>) -> Verdict {
        let reason = reason.to_string();
        match status {
            "passed" => Verdict::Passed,
            "incorrect_numerical" | "incorrect_shape" | "incorrect_dtype" => {
                Verdict::Incorrect { status: status.to_string(), output: None, reason }
            }
            "compile_error" => Verdict::CompileError { first_lines: reason },
            "harness_error" => Verdict::HarnessError { reason },
            "suspected_reward_hack" => {
                Verdict::SuspectedRewardHack { check: check.unwrap_or("unnamed").to_string(), reason }
            }
            _ => Verdict::RuntimeError { reason },
        }
    }
}

/// The compiler's first error lines from a build log: lines naming an error first, else the tail.
pub fn first_error_lines(log: &str, lines: usize) -> String {
    let errors: Vec<&str> = log
        .lines()
        .map(str::trim)
        .filter(|l| l.contains("error") && !l.starts_with("ninja: build stopped") && !l.is_empty())
        .take(lines)
        .collect();
    let picked = if errors.is_empty() {
        let all: Vec<&str> = log.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
        all[all.len().saturating_sub(lines)..].to_vec()
    } else {
        errors
    };
    crate::worker::sanitize(&picked.join(" | ")).chars().take(1200).collect()
}

#[cfg(test)]
mod tests {
    use super::Verdict;

    #[test]
    fn harness_verdicts_are_incomplete_evidence_labelled_as_the_harness_and_never_a_pass() {
        let unmeasurable = Verdict::Unmeasurable { reason: "CUPTI saw 1.5 µs, eager 150 µs".into() };
        let harness = Verdict::from_worker("harness_error", "the judge failed", None);
        for (verdict, label) in [(&unmeasurable, "unmeasurable"), (&harness, "harness_error")] {
            assert_eq!(verdict.status(), "incomplete_evidence");
            assert_eq!(verdict.label(), label);
            assert!(verdict.is_harness() && verdict.is_record());
            assert_ne!(*verdict, Verdict::Passed);
            assert!(verdict.reason().contains("not the solution"), "{}", verdict.reason());
        }
        let json = serde_json::to_value(&unmeasurable).unwrap();
        assert_eq!(json["verdict"], "unmeasurable");
    }

    #[test]
    fn the_solutions_verdicts_keep_their_status_as_label() {
        let refused = Verdict::from_worker("suspected_reward_hack", "graph skipped work", Some("graph_divergence"));
        assert_eq!((refused.status(), refused.label()), ("suspected_reward_hack", "suspected_reward_hack"));
        assert!(refused.reason().contains("graph_divergence"));
        let wrong = Verdict::from_worker("incorrect_numerical", "max abs 3e2", None);
        assert_eq!(wrong.label(), "incorrect_numerical");
        assert!(!wrong.is_harness());
        assert_eq!(Verdict::from_worker("passed", "", None), Verdict::Passed);
        assert!(!Verdict::NotRun { reason: "deadline".into() }.is_record());
    }
}
