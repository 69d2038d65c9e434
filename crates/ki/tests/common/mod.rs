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
