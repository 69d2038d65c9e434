//! Helpers shared by the ki integration tests that talk to `ki serve`.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Server {
    child: Child,
    pub addr: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn ki() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ki"))
}

/// The URL of a SQLite catalog `file` in `dir` holding the bundled snapshot as a first start of
/// `ki` leaves it: a copy of one the binary under test imported once per build of it (named by
/// its size and time, in the target's scratch folder), since that import takes seconds. Tests of
/// the first start itself begin from an empty file instead.
pub fn bundled_sqlite(dir: &Path, file: &str) -> String {
    let binary = std::fs::metadata(env!("CARGO_BIN_EXE_ki")).unwrap();
    let stamp = binary.modified().unwrap().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let template =
        std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("ki-bundled-{stamp}-{}.db", binary.len()));
    if !template.exists() {
        let scratch = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let made = scratch.path().join("catalog.db");
        let output = ki()
            .args(["runs", "--limit", "1", "--json", "--database", &format!("sqlite://{}", made.display())])
            .env_remove("KI_DATABASE_URL")
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        assert!(!scratch.path().join("catalog.db-wal").exists(), "the template is one file");
        // Processes that make it at once each rename a whole file into place.
        std::fs::rename(&made, &template).unwrap();
    }
    let path = dir.join(file);
    std::fs::copy(&template, &path).unwrap();
    format!("sqlite://{}", path.display())
}

/// A minimal HTTP/1.1 exchange (Connection: close); returns status, headers and body.
pub fn http(
    addr: &str,
    method: &str,
    path: &str,
    content_type: &str,
    body: &str,
) -> std::io::Result<(u16, String, String)> {
    http_with_key(addr, method, path, content_type, None, body)
}

/// As [`http`], sending `key` as `Authorization: Bearer KEY` when given.
pub fn http_with_key(
    addr: &str,
    method: &str,
    path: &str,
    content_type: &str,
    key: Option<&str>,
    body: &str,
) -> std::io::Result<(u16, String, String)> {
    let mut stream = TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let authorization = key.map(|key| format!("Authorization: Bearer {key}\r\n")).unwrap_or_default();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{authorization}Content-Type: {content_type}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, rest) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    Ok((status, head.to_string(), rest.to_string()))
}

/// Starts `ki serve` on `database` (state under `dir`) on a free loopback port and waits for
/// /healthz (the first start imports the bundled snapshot into an empty catalog).
pub fn start_server(dir: &Path, database: &str) -> Server {
    start_server_with(dir, database, &[])
}

/// As [`start_server`], with more arguments for `ki serve` (e.g. `--base-url`).
pub fn start_server_with(dir: &Path, database: &str, extra: &[&str]) -> Server {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let addr = format!("127.0.0.1:{port}");
    let child = ki()
        .args(["serve", "--database", database])
        .args(["--addr", &addr, "--state", &dir.join("state").display().to_string()])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("ki serve starts");
    let server = Server { child, addr };
    let deadline = Instant::now() + Duration::from_secs(180);
    while Instant::now() < deadline {
        if let Ok((200, _, _)) = http(&server.addr, "GET", "/healthz", "text/plain", "") {
            return server;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    panic!("ki serve did not answer /healthz within 180 s");
}
