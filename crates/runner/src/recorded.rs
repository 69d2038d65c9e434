//! Runs that earlier sessions already recorded (their `runs.jsonl`), so that a long verification
//! split over several GPU calls resumes where it stopped: a recorded (implementation, workload)
//! pair is not run again, nor is an implementation an earlier session refused as dishonest.
use std::collections::BTreeSet;
use std::io::Read;
use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::Deserialize;

/// The most a runs file may hold (a full coverage run writes a few MB).
const MAX_BYTES: u64 = 256 << 20;

#[derive(Debug, Default)]
pub struct Recorded {
    /// (implementation key, workload uuid) pairs with a final verdict.
    done: BTreeSet<(String, String)>,
    /// Implementation keys refused as dishonest.
    dishonest: BTreeSet<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RunLine {
    implementation_key: String,
    workload: String,
    verdict: VerdictTag,
}

#[derive(Deserialize)]
struct VerdictTag {
    verdict: String,
}

impl Recorded {
    /// Reads each runs file (bounded); a line that is not a run names its file and line.
    pub fn read(paths: &[impl AsRef<Path>]) -> Result<Recorded> {
        let mut recorded = Recorded::default();
        for path in paths {
            let path = path.as_ref();
            let file = std::fs::File::open(path).with_context(|| format!("{}: cannot open", path.display()))?;
            let mut text = String::new();
            file.take(MAX_BYTES + 1)
                .read_to_string(&mut text)
                .with_context(|| format!("{}: not UTF-8 text", path.display()))?;
            if text.len() as u64 > MAX_BYTES {
                bail!("{}: larger than {} MiB", path.display(), MAX_BYTES >> 20);
            }
            recorded.add(&text, &path.display().to_string())?;
        }
        Ok(recorded)
    }

    /// Folds one runs file's text in. A run that did not happen (`not_run`) or that the harness
    /// could not judge (`harness_error`) is run again; every other verdict is final.
    pub fn add(&mut self, text: &str, name: &str) -> Result<()> {
        for (number, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let run: RunLine = serde_json::from_str(line)
                .with_context(|| format!("{name}:{}: not a run of `ki verify`'s runs.jsonl", number + 1))?;
            match run.verdict.verdict.as_str() {
                "not_run" | "harness_error" => {}
                verdict => {
                    if verdict == "suspected_reward_hack" {
                        self.dishonest.insert(run.implementation_key.clone());
                    }
                    self.done.insert((run.implementation_key, run.workload));
                }
            }
        }
        Ok(())
    }

    pub fn is_done(&self, implementation_key: &str, workload: &str) -> bool {
        self.done.contains(&(implementation_key.to_string(), workload.to_string()))
    }

    pub fn refused_as_dishonest(&self, implementation_key: &str) -> bool {
        self.dishonest.contains(implementation_key)
    }

    pub fn len(&self) -> usize {
        self.done.len()
    }

    pub fn is_empty(&self) -> bool {
        self.done.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(key: &str, workload: &str, verdict: &str) -> String {
        format!(
            r#"{{"implementation":"x","implementationKey":"{key}","workload":"{workload}","verdict":{{"verdict":"{verdict}","reason":"r"}}}}"#
        )
    }

    #[test]
    fn final_verdicts_are_done_and_the_rest_runs_again() {
        let text = [
            line("sha256:a", "w1", "passed"),
            line("sha256:a", "w2", "not_run"),
            line("sha256:a", "w3", "harness_error"),
            line("sha256:a", "w4", "timeout"),
            line("baseline:d", "w1", "incorrect"),
        ]
        .join("\n");
        let mut r = Recorded::default();
        r.add(&text, "runs.jsonl").unwrap();
        assert!(r.is_done("sha256:a", "w1"));
        assert!(!r.is_done("sha256:a", "w2"));
        assert!(!r.is_done("sha256:a", "w3"));
        assert!(r.is_done("sha256:a", "w4"));
        assert!(r.is_done("baseline:d", "w1"));
        assert!(!r.is_done("baseline:d", "w2"));
        assert_eq!(r.len(), 3);
        assert!(!r.refused_as_dishonest("sha256:a"));
    }

    #[test]
    fn a_refusal_as_dishonest_stops_the_implementation_everywhere() {
        let mut r = Recorded::default();
        r.add(&line("sha256:b", "w1", "suspected_reward_hack"), "a").unwrap();
        assert!(r.refused_as_dishonest("sha256:b"));
        assert!(!r.refused_as_dishonest("sha256:c"));
    }

    #[test]
    fn a_bad_line_names_its_file_and_line() {
        let mut r = Recorded::default();
        let text = format!("{}\n\n{{\"implementation\": 1}}\n", line("k", "w", "passed"));
        let error = format!("{:#}", r.add(&text, "call2/runs.jsonl").unwrap_err());
        assert!(error.starts_with("call2/runs.jsonl:3: not a run"), "{error}");
    }

    #[test]
    fn reading_names_a_missing_file() {
        let error = format!("{:#}", Recorded::read(&["/nonexistent/runs.jsonl"]).unwrap_err());
        assert!(error.contains("/nonexistent/runs.jsonl: cannot open"), "{error}");
    }
}
