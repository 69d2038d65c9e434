//! `ki catalog verify` as a user runs it: the shared export verifies clean, and an
//! altered row, a truncated stream, an invalid JSON line and an unknown table each
//! give a non-zero exit and a message naming what is wrong and where.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn shared_export() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/catalog-2026-08-16-0022af0b.jsonl.zst")
}

fn ki_verify(path: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ki")).args(["catalog", "verify"]).arg(path).output().expect("ki runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A fresh scratch directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("catalog_verify").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn shared_lines() -> Vec<String> {
    let compressed = std::fs::read(shared_export()).unwrap();
    let plain = zstd::decode_all(compressed.as_slice()).unwrap();
    String::from_utf8(plain).unwrap().lines().map(str::to_string).collect()
}

#[test]
fn the_shared_export_verifies_clean() {
    let output = ki_verify(&shared_export());
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "stdout:\n{stdout}\nstderr:\n{}", text(&output.stderr));
    // Piped output carries no progress bar.
    assert!(!stdout.contains('\u{1b}') && !text(&output.stderr).contains('\u{1b}'));
    let field_lines: Vec<&str> =
        stdout.lines().filter(|l| l.contains('.') && l.split_whitespace().count() >= 3).collect();
    assert!(field_lines.iter().any(|l| l.starts_with("benchmark_runs.comparisonKey")), "{stdout}");
    assert!(field_lines.iter().any(|l| l.starts_with("serving_runs.cohortKey")), "{stdout}");
    for line in field_lines.iter().filter(|l| l.ends_with(char::is_numeric)) {
        assert_eq!(line.split_whitespace().last(), Some("0"), "{line}");
    }
    assert!(stdout.contains("40795 rows"), "{stdout}");
    assert!(stdout.contains(" 0 mismatches"), "{stdout}");
    assert!(stdout.contains("2948 stored, 2948 recomputed, 1828 of 1828 comparison groups match"), "{stdout}");
}

#[test]
fn a_missing_record_event_is_reported_and_exits_1() {
    // Every digest still holds, but the ledger lost one event: only the ledger check sees it.
    let mut lines = shared_lines();
    let index = lines.iter().position(|l| l.starts_with(r#"{"table":"record_events""#)).unwrap();
    lines.remove(index);
    let path = scratch("ledger").join("missing-event.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let output = ki_verify(&path);
    let stdout = text(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "stdout:\n{stdout}");
    assert!(stdout.contains(" 0 mismatches"), "{stdout}");
    assert!(stdout.contains("2947 stored, 2948 recomputed"), "{stdout}");
    assert!(stdout.contains("1 comparison groups differ"), "{stdout}");
}

#[test]
fn an_altered_digest_is_reported_with_its_line_and_exit_1() {
    let mut lines = shared_lines();
    let index = lines.iter().position(|l| l.starts_with(r#"{"table":"implementations""#)).unwrap();
    let start =
        lines[index].find(r#""implementationDigest":"sha256:"#).unwrap() + r#""implementationDigest":"sha256:"#.len();
    let original = lines[index][start..start + 64].to_string();
    let forged = original.chars().rev().collect::<String>();
    lines[index].replace_range(start..start + 64, &forged);
    let path = scratch("altered").join("altered.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();

    let output = ki_verify(&path);
    let stdout = text(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    let line_number = index + 1;
    let report_line = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("implementations.implementationDigest:"))
        .unwrap_or_else(|| panic!("no first-mismatch line in:\n{stdout}"));
    assert!(report_line.contains(&format!("line {line_number} ")), "{report_line}");
    assert!(report_line.contains(&format!("stored sha256:{forged}")), "{report_line}");
    assert!(report_line.contains(&format!("recomputed sha256:{original}")), "{report_line}");
}

#[test]
fn a_truncated_zstd_stream_fails_naming_the_file() {
    let bytes = std::fs::read(shared_export()).unwrap();
    let path = scratch("truncated").join("cut.jsonl.zst");
    std::fs::write(&path, &bytes[..bytes.len() * 2 / 3]).unwrap();
    let output = ki_verify(&path);
    let stderr = text(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains(&path.display().to_string()), "{stderr}");
    // A cut inside a frame reads as a zstd error; a cut at a line end could leave a
    // partial last line, which reads as invalid JSON on that line. Both name the line.
    assert!(stderr.contains("zstd") || stderr.contains("invalid JSON"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn an_invalid_json_line_fails_naming_its_number() {
    let mut lines: Vec<String> = shared_lines().into_iter().take(10).collect();
    lines[6] = lines[6].replacen("{", "{,", 1);
    let path = scratch("invalid").join("invalid.jsonl");
    std::fs::write(&path, lines.join("\n")).unwrap();
    let output = ki_verify(&path);
    let stderr = text(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains(&format!("{}:7: invalid JSON", path.display())), "{stderr}");
}

#[test]
fn an_unknown_table_fails_naming_it() {
    let mut lines: Vec<String> = shared_lines().into_iter().take(5).collect();
    lines.push(r#"{"table":"account_sessions","row":{"id":"x"}}"#.to_string());
    let path = scratch("unknown").join("unknown.jsonl");
    std::fs::write(&path, lines.join("\n")).unwrap();
    let output = ki_verify(&path);
    let stderr = text(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains(&format!("{}:6: unknown table \"account_sessions\"", path.display())), "{stderr}");
}

/// The largest resident size any child of this test process reached, in MiB.
/// Runs `ki catalog verify` on `path`: whether it succeeded, its stdout and stderr, and its own peak
/// resident memory in MiB, from wait4's account of that one child (RUSAGE_CHILDREN would be the peak
/// of every child this test binary has reaped, whichever test started it).
#[expect(
    clippy::zombie_processes,
    reason = "the child is reaped by wait4, which Child::wait cannot replace (its rusage)"
)]
fn ki_verify_with_peak(path: &Path) -> (bool, String, String, u64) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ki"))
        .args(["catalog", "verify"])
        .arg(path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ki runs");
    let mut stderr = child.stderr.take().expect("piped");
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let mut out = String::new();
    let _ = child.stdout.take().expect("piped").read_to_string(&mut out);
    let errors = errors.join().expect("the stderr reader ends");
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: wait4 only writes the status and the struct it is given; the child is ours and not yet reaped.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(reaped, pid, "wait4 reaps the verify");
    let succeeded = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
    (succeeded, out, errors, usage.ru_maxrss as u64 / 1024)
}

/// `ki catalog verify` streams: the export's lines are verified a chunk at a time and only the
/// verifier's facts and the ranking's compact rows (for the ledger) are kept. 20,000 generated
/// runs took 529 MiB when the whole export was held as parsed JSON (README, 2026-12-01); 217
/// MiB streamed (2026-12-04; 5,000 runs 137 MiB, 40,000 runs 254 MiB: about 3.4 KB a run
/// beyond a fixed ~120 MiB, which the compact rows still grow by).
#[test]
fn verifying_a_generated_export_keeps_memory_bounded() {
    let dir = scratch("bounded");
    let path = dir.join("generated.jsonl.zst");
    let generated = Command::new(env!("CARGO_BIN_EXE_ki"))
        .args(["catalog", "generate", "--runs", "20000", "--seed", "1", "--out"])
        .arg(&path)
        .output()
        .expect("ki runs");
    assert!(generated.status.success(), "{}", text(&generated.stderr));
    let (succeeded, out, errors, peak) = ki_verify_with_peak(&path);
    assert!(succeeded, "{out}{errors}");
    assert!(out.contains("0 mismatches"), "{out}");
    // Holding the 20,000 runs' compact rows alone takes more than this: a smaller figure is a broken measurement.
    assert!(peak > 50, "the verify's own peak reads {peak} MiB");
    assert!(peak <= 300, "ki catalog verify of 20,000 runs peaked at {peak} MiB resident");
}
