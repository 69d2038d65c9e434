//! Runs that earlier sessions already recorded (their `runs.jsonl`), so that a long verification
//! split over several GPU calls resumes where it stopped: a recorded (implementation, workload)
//! pair is not run again, nor is an implementation an earlier session refused as dishonest.
//! Records are of one card: the `session.json` beside a runs file names the card it ran on, and a
//! session on another card refuses to skip its runs (an H100's result does not stand for an H200).
use std::collections::BTreeSet;
use std::io::Read;
use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::Deserialize;

/// The most a runs file may hold (a full coverage run writes a few MB).
const MAX_BYTES: u64 = 256 << 20;
/// The most a session.json may hold (its invalid-workload list makes it a few KB).
const MAX_SESSION_BYTES: u64 = 16 << 20;

#[derive(Debug, Default)]
pub struct Recorded {
    /// (implementation key, workload uuid) pairs with a final verdict.
    done: BTreeSet<(String, String)>,
    /// Implementation keys refused as dishonest.
    dishonest: BTreeSet<String>,
    /// Each runs file and the card its session.json names (None: no session.json beside it).
    cards: Vec<(String, Option<String>)>,
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
            let text = read_bounded(file, path, MAX_BYTES)?;
            recorded.add(&text, &path.display().to_string())?;
            recorded.cards.push((path.display().to_string(), session_card(path)?));
        }
        Ok(recorded)
    }

    /// Err when a runs file was recorded on another card than `here` (nvidia-smi's name of this
    /// one; None when it cannot be told, as on a machine without a GPU).
    pub fn check_card(&self, here: Option<&str>) -> Result<()> {
        let Some(here) = here else { return Ok(()) };
        for (file, card) in &self.cards {
            match card {
                Some(card) if card != here => bail!(
                    "{file}: recorded on {card}, and this machine's card is {here}: a result of one card does not \
                     stand for another; pass only runs of this card to --skip-recorded"
                ),
                Some(_) => {}
                None => {
                    say!("{file}: no session.json beside it names its card; its runs are taken as this card's")
                }
            }
        }
        Ok(())
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

/// A text file's contents, refused past `max` bytes.
fn read_bounded(file: std::fs::File, path: &Path, max: u64) -> Result<String> {
    let mut text = String::new();
    file.take(max + 1).read_to_string(&mut text).with_context(|| format!("{}: not UTF-8 text", path.display()))?;
    if text.len() as u64 > max {
        bail!("{}: larger than {} MiB", path.display(), max >> 20);
    }
    Ok(text)
}

/// The card named by the session.json beside a runs file (`machine.device`), if there is one.
fn session_card(runs: &Path) -> Result<Option<String>> {
    let path = runs.with_file_name("session.json");
    let Ok(file) = std::fs::File::open(&path) else { return Ok(None) };
    let text = read_bounded(file, &path, MAX_SESSION_BYTES)?;
    let session: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{}: not a `ki verify` session.json", path.display()))?;
    match session.pointer("/machine/device") {
        Some(serde_json::Value::String(card)) => Ok(Some(card.clone())),
        _ => bail!("{}: /machine/device is not a string: not a `ki verify` session.json", path.display()),
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
    fn runs_of_another_card_are_refused_and_a_bad_session_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let runs = dir.path().join("runs.jsonl");
        std::fs::write(&runs, line("sha256:a", "w1", "passed")).unwrap();
        // No session.json: taken as this card's.
        Recorded::read(&[&runs]).unwrap().check_card(Some("NVIDIA H200")).unwrap();
        std::fs::write(dir.path().join("session.json"), r#"{"machine":{"device":"NVIDIA H100 80GB HBM3"}}"#).unwrap();
        let recorded = Recorded::read(&[&runs]).unwrap();
        recorded.check_card(Some("NVIDIA H100 80GB HBM3")).unwrap();
        recorded.check_card(None).unwrap();
        let error = recorded.check_card(Some("NVIDIA H200")).unwrap_err().to_string();
        assert!(error.contains("recorded on NVIDIA H100 80GB HBM3") && error.contains("NVIDIA H200"), "{error}");
        std::fs::write(dir.path().join("session.json"), r#"{"machine":{}}"#).unwrap();
        let error = format!("{:#}", Recorded::read(&[&runs]).unwrap_err());
        assert!(error.contains("session.json") && error.contains("/machine/device"), "{error}");
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
