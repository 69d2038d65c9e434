//! Worker processes of `ki verify` (the judge, solution workers, builders): each in its own process
//! group, spoken to in JSON lines, every answer awaited with a deadline. A worker that hangs is
//! killed with its whole group; one that dies (a segfault, an abort, a CUDA context it broke) is
//! seen as an ended stream, with its exit status and the tail of its log.
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::Value;

/// The largest line a worker may send (a reply carries at most a few thousand samples).
const MAX_LINE_BYTES: u64 = 64 << 20;

pub struct Worker {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Option<String>>,
    pub log: PathBuf,
    pub started: Instant,
    pub label: String,
}

/// What came back, or why nothing did.
#[derive(Debug)]
pub enum Reply {
    Line(Value),
    Timeout(Duration),
    Ended(String),
}

impl Worker {
    /// Starts `program args...` with stderr into `log` (created), in a process group of its own.
    pub fn spawn(program: &str, args: &[&str], env: &[(String, String)], log: &Path, label: &str) -> Result<Worker> {
        let log_file = std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
        let mut command = Command::new(program);
        command.args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::from(log_file)).process_group(0);
        for (k, v) in env {
            command.env(k, v);
        }
        let mut child = command.spawn().with_context(|| format!("starting `{program}` for {label}"))?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("piped stdout");
        let (sender, lines) = channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout.take(u64::MAX));
            loop {
                let mut line = String::new();
                match reader.by_ref().take(MAX_LINE_BYTES).read_line(&mut line) {
                    Ok(0) | Err(_) => {
                        let _ = sender.send(None);
                        return;
                    }
                    Ok(_) => {
                        if sender.send(Some(line)).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        Ok(Worker { child, stdin, lines, log: log.to_path_buf(), started: Instant::now(), label: label.to_string() })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn send(&mut self, job: &Value) -> Result<()> {
        let stdin = self.stdin.as_mut().context("the worker's input is closed")?;
        writeln!(stdin, "{job}").context("writing to the worker")?;
        stdin.flush().context("writing to the worker")
    }

    /// The next JSON line, waiting at most `timeout`. Lines that are not JSON objects are skipped.
    pub fn receive(&mut self, timeout: Duration) -> Reply {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(Some(line)) => {
                    if let Ok(value @ Value::Object(_)) = serde_json::from_str::<Value>(line.trim()) {
                        return Reply::Line(value);
                    }
                }
                Ok(None) | Err(RecvTimeoutError::Disconnected) => return Reply::Ended(self.ended()),
                Err(RecvTimeoutError::Timeout) => return Reply::Timeout(timeout),
            }
        }
    }

    /// Sends a job and waits for its reply.
    pub fn request(&mut self, job: &Value, timeout: Duration) -> Reply {
        if let Err(error) = self.send(job) {
            return Reply::Ended(format!("{error:#}; {}", self.ended()));
        }
        self.receive(timeout)
    }

    /// How the process ended, with the tail of its log.
    fn ended(&mut self) -> String {
        let status = match self.child.wait_timeout_ms(2000) {
            Some(status) => match (status.code(), status.signal()) {
                (Some(code), _) => format!("exited with status {code}"),
                (None, Some(signal)) => format!("killed by signal {signal} ({})", signal_name(signal)),
                _ => "ended".to_string(),
            },
            None => "stopped answering".to_string(),
        };
        let tail = log_tail(&self.log, 1500);
        if tail.is_empty() { status } else { format!("{status}; its last output: {tail}") }
    }

    /// Kills the worker's whole process group and reaps it.
    pub fn kill(&mut self) {
        self.stdin.take();
        let pid = self.child.id() as i32;
        // SAFETY: signals a process group this worker created (process_group(0) at spawn).
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.kill();
    }
}

trait WaitTimeout {
    fn wait_timeout_ms(&mut self, ms: u64) -> Option<std::process::ExitStatus>;
}

impl WaitTimeout for Child {
    fn wait_timeout_ms(&mut self, ms: u64) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + Duration::from_millis(ms);
        loop {
            if let Ok(Some(status)) = self.try_wait() {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn signal_name(signal: i32) -> &'static str {
    match signal {
        libc::SIGSEGV => "SIGSEGV, a segmentation fault",
        libc::SIGABRT => "SIGABRT, an abort",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGILL => "SIGILL",
        libc::SIGKILL => "SIGKILL",
        _ => "a signal",
    }
}

/// The last `bytes` of a log, on one line, control characters replaced (safe for terminals).
pub fn log_tail(path: &Path, bytes: usize) -> String {
    let text = std::fs::read(path).unwrap_or_default();
    let start = text.len().saturating_sub(bytes);
    sanitize(&String::from_utf8_lossy(&text[start..]))
}

/// One line for a terminal or a table, whatever a worker or a solution wrote.
pub fn sanitize(text: &str) -> String {
    // Whitespace (line breaks included) becomes one space; every other control and every bidi
    // character is escaped by the one escaper (ki_model::escape), as `ki` does for its own lines.
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    ki_model::escape::for_terminal_line(&line).into_owned()
}

/// Process groups of builds still running, killed when the session ends (`kill_registered`).
static REGISTERED: std::sync::Mutex<Vec<i32>> = std::sync::Mutex::new(Vec::new());

pub fn register(pid: u32) {
    REGISTERED.lock().unwrap().push(pid as i32);
}

pub fn unregister(pid: u32) {
    REGISTERED.lock().unwrap().retain(|&p| p != pid as i32);
}

pub fn kill_registered() {
    for pid in REGISTERED.lock().unwrap().drain(..) {
        // SAFETY: signals a process group this session created.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::sanitize;

    #[test]
    fn one_line_with_controls_and_bidi_escaped() {
        assert_eq!(sanitize("a\n  b\tc\r\n"), "a b c");
        let shown = sanitize("ok\u{1b}[31mred\u{7} \u{202e}evil\u{2066}");
        assert!(
            !shown.chars().any(|c| c.is_control()
                || ('\u{202a}'..='\u{202e}').contains(&c)
                || ('\u{2066}'..='\u{2069}').contains(&c)),
            "{shown}"
        );
        assert!(shown.starts_with("ok") && shown.contains("red") && shown.contains("evil"), "{shown}");
    }
}
