//! The terminal: every line `ki` prints goes through here (the crate denies `print!` and its
//! neighbours elsewhere), so a string from outside — a submission's title, a run's name, an
//! error quoting a file — can never move the cursor, ring the bell, overwrite a line or reorder
//! text. Control characters (C0 but the line feed, DEL, C1) and bidirectional-text controls are
//! shown as `\uXXXX`: that is also JSON's own escape, so JSON output stays valid and means the
//! same once sanitized.
#![allow(clippy::print_stdout, clippy::print_stderr, clippy::disallowed_methods)]

use std::borrow::Cow;
use std::io::Write;

/// `text` with every control and bidi character but the line feed shown as `\uXXXX`: the
/// one escaper, `ki_model::escape::for_terminal` (the server's pages use the same).
pub fn sanitize(text: &str) -> Cow<'_, str> {
    ki_model::escape::for_terminal(text)
}

/// Writes `text` sanitized to standard output, adding a line feed if it lacks one. A failed
/// write (the reader went away) ends nothing here: SIGPIPE does, as for any Unix tool.
pub fn out(text: &str) {
    write_to(&mut std::io::stdout().lock(), text);
}

/// As [`out`], to standard error.
pub fn err(text: &str) {
    write_to(&mut std::io::stderr().lock(), text);
}

/// Whether standard error is a terminal (progress bars are drawn only there).
pub fn stderr_is_terminal() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal()
}

fn write_to(stream: &mut impl Write, text: &str) {
    let clean = sanitize(text);
    let _ = stream.write_all(clean.as_bytes());
    if !clean.ends_with('\n') {
        let _ = stream.write_all(b"\n");
    }
    let _ = stream.flush();
}

/// Shows the warnings the libraries log through `tracing` (a wait for a catalog's write lock,
/// a queue worker's failed claim) on standard error, sanitized like every other line.
pub fn show_library_warnings() {
    let _ = tracing_subscriber::fmt()
        .with_max_level(tracing_subscriber::filter::LevelFilter::WARN)
        .with_writer(|| StandardError)
        .without_time()
        .with_target(false)
        .with_ansi(false)
        .try_init();
}

/// Standard error through [`err`]: the subscriber writes one whole event per call.
struct StandardError;

impl Write for StandardError {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let event = String::from_utf8_lossy(buf);
        // The subscriber writes " WARN message": shown as the CLI's own lines are.
        let event = event.trim_start();
        let line = match event.split_once(' ') {
            Some(("WARN", message)) => format!("warning: {message}"),
            Some(("ERROR", message)) => format!("error: {message}"),
            _ => event.to_string(),
        };
        err(&line);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A line (or block of lines) on standard output, `format!` style, sanitized.
macro_rules! outln {
    () => { $crate::term::out("") };
    ($($arg:tt)*) => { $crate::term::out(&format!($($arg)*)) };
}

/// A line (or block of lines) on standard error, `format!` style, sanitized.
macro_rules! errln {
    ($($arg:tt)*) => { $crate::term::err(&format!($($arg)*)) };
}

pub(crate) use {errln, outln};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_what_a_terminal_obeys_and_keeps_the_rest() {
        assert_eq!(sanitize("plain µs — ✓\nnext"), "plain µs — ✓\nnext");
        assert_eq!(sanitize("a\u{1b}[2Jb\u{7}c\rd\te"), "a\\u001b[2Jb\\u0007c\\u000dd\\u0009e");
        assert_eq!(sanitize("\u{9b}31m\u{7f}"), "\\u009b31m\\u007f");
        assert_eq!(sanitize("abc\u{202e}fed\u{2066}x\u{2069}"), "abc\\u202efed\\u2066x\\u2069");
    }

    #[test]
    fn sanitized_json_is_still_the_same_json() {
        let value = serde_json::json!({ "title": "x\u{9b}y\u{202e}z\u{1b}", "n": 1 });
        let text = serde_json::to_string_pretty(&value).unwrap();
        let clean = sanitize(&text);
        assert!(!clean.chars().any(|c| c != '\n' && ki_model::escape::is_control_or_bidi(c)));
        assert_eq!(serde_json::from_str::<serde_json::Value>(&clean).unwrap(), value);
    }
}
