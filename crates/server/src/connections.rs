//! Accepting connections: a cap on open connections, a deadline on reading each request head
//! (which also closes a keep-alive connection left idle), and problem bodies for the requests
//! hyper refuses before any route sees them.
//!
//! Why not `axum::serve`: it sets no timer, so a client sending one header line a second
//! holds its connection forever, and it has no cap, so thousands of half-open sockets take
//! every descriptor and `/healthz` stops answering. Here, when the cap is reached a new
//! connection takes the place of the oldest one that has no request in progress (a socket
//! still trickling its head, or an idle keep-alive one); only when every connection is busy
//! is the newcomer closed.

use std::collections::BTreeMap;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::Notify;
use tower::ServiceExt;

/// What the accept loop allows a client.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Open connections at most.
    pub max_connections: usize,
    /// From when the server starts reading a request head (a new connection, or a kept-alive
    /// one after its last response) to the head's last byte.
    pub header_read_timeout: Duration,
    /// Most header lines in one request.
    pub max_headers: usize,
}

/// Descriptors kept free beside the connections (the database pool, files, the listener).
const RESERVED_DESCRIPTORS: usize = 256;

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_connections: default_max_connections(),
            header_read_timeout: Duration::from_secs(10),
            max_headers: 100,
        }
    }
}

/// 4,096, or fewer when the process may open fewer descriptors than that and a reserve.
pub fn default_max_connections() -> usize {
    let descriptors = std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|limits| {
            let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
            line.split_whitespace().nth(3)?.parse::<usize>().ok()
        })
        .unwrap_or(1024);
    descriptors.saturating_sub(RESERVED_DESCRIPTORS).clamp(16, 4096)
}

/// One open connection, as the cap sees it.
struct Connection {
    /// Requests being answered on it now.
    busy: AtomicUsize,
    close: Notify,
}

#[derive(Default)]
struct Open {
    next: u64,
    /// By age: the first is the oldest.
    connections: BTreeMap<u64, Arc<Connection>>,
}

/// The open connections, shared by the accept loop and every connection's task.
#[derive(Clone, Default)]
pub struct Tracker {
    open: Arc<Mutex<Open>>,
}

impl Tracker {
    /// Connections open now.
    pub fn open(&self) -> usize {
        self.lock().connections.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Open> {
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Makes room for one more under `cap`, closing the oldest connection with no request in
    /// progress if need be; None when every open connection is busy.
    fn admit(&self, cap: usize) -> Option<(u64, Arc<Connection>)> {
        let mut open = self.lock();
        if open.connections.len() >= cap {
            let idle = open.connections.iter().find(|(_, c)| c.busy.load(Ordering::Acquire) == 0).map(|(&id, _)| id)?;
            if let Some(evicted) = open.connections.remove(&idle) {
                // Stores a permit, so the task closes even if it is not waiting yet.
                evicted.close.notify_one();
            }
        }
        let id = open.next;
        open.next += 1;
        let connection = Arc::new(Connection { busy: AtomicUsize::new(0), close: Notify::new() });
        open.connections.insert(id, connection.clone());
        Some((id, connection))
    }

    fn remove(&self, id: u64) {
        self.lock().connections.remove(&id);
    }
}

struct Busy(Arc<Connection>);

impl Busy {
    fn new(connection: &Arc<Connection>) -> Busy {
        connection.busy.fetch_add(1, Ordering::AcqRel);
        Busy(connection.clone())
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.busy.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Serves `router` on `listener` under `limits` until `shutdown` completes; then stops
/// accepting and lets the requests in progress finish.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    tracker: Tracker,
    shutdown: impl std::future::Future<Output = ()>,
) {
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .max_headers(limits.max_headers)
        // Whole responses in one buffer, so that [`ProblemOnRefusal`] sees a refusal's head whole.
        .writev(false);
    let builder = Arc::new(builder);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of descriptors or a connection reset before it was accepted: wait a little.
                    eprintln!("ki serve: accept failed: {error}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        let Some((id, connection)) = tracker.admit(limits.max_connections) else {
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let router = router.clone();
        let builder = builder.clone();
        let tracker = tracker.clone();
        tokio::spawn(async move {
            let counted = connection.clone();
            let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
                let busy = Busy::new(&counted);
                let answer = router.clone().oneshot(request.map(axum::body::Body::new));
                async move {
                    let response = answer.await;
                    drop(busy);
                    response
                }
            });
            let io = ProblemOnRefusal::new(TokioIo::new(stream));
            let served = builder.serve_connection(io, service);
            tokio::select! {
                _ = served => {}
                _ = connection.close.notified() => {}
            }
            tracker.remove(id);
        });
    }
}

/// Gives the responses hyper writes by itself (400 for a malformed head, 414, 431) the
/// problem body every other error has. They are the only 4xx responses with an empty body:
/// every response of the router's carries one (see [`crate::http::middleware`]).
pub struct ProblemOnRefusal<T> {
    inner: T,
    /// Bytes still to write in place of what hyper wrote.
    pending: Vec<u8>,
    written: usize,
}

impl<T> ProblemOnRefusal<T> {
    pub fn new(inner: T) -> ProblemOnRefusal<T> {
        ProblemOnRefusal { inner, pending: Vec::new(), written: 0 }
    }
}

/// The status of a response head hyper wrote for a request it refused, if `buf` is one.
fn refusal_status(buf: &[u8]) -> Option<u16> {
    let head = buf.strip_prefix(b"HTTP/1.1 4")?;
    let end = buf.windows(4).position(|w| w == b"\r\n\r\n")?;
    if end + 4 != buf.len() {
        return None;
    }
    let text = std::str::from_utf8(&buf[..end]).ok()?.to_ascii_lowercase();
    if !text.split("\r\n").any(|line| line == "content-length: 0") {
        return None;
    }
    let digits = std::str::from_utf8(head.get(..2)?).ok()?;
    Some(400 + digits.parse::<u16>().ok()?)
}

fn refusal_response(status: u16) -> Vec<u8> {
    let code = axum::http::StatusCode::from_u16(status).unwrap_or(axum::http::StatusCode::BAD_REQUEST);
    let detail = match status {
        414 => "the request target is too long".to_string(),
        431 => "the request's header fields are too large or too many".to_string(),
        _ => "the request could not be read as HTTP/1.1 (malformed request line or header)".to_string(),
    };
    let mut problem = crate::problem::Problem::new(code, "malformed-request", "Malformed request", detail);
    problem.request_id = Some(crate::http::next_request_id());
    let body = serde_json::to_vec(&problem).unwrap_or_default();
    let mut out = format!(
        "HTTP/1.1 {} {}\r\ncontent-type: application/problem+json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        code.as_u16(),
        code.canonical_reason().unwrap_or(""),
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(&body);
    out
}

impl<T: hyper::rt::Write + Unpin> ProblemOnRefusal<T> {
    fn drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.written < self.pending.len() {
            let n = std::task::ready!(Pin::new(&mut self.inner).poll_write(cx, &self.pending[self.written..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.written += n;
        }
        Poll::Ready(Ok(()))
    }
}

impl<T: hyper::rt::Read + Unpin> hyper::rt::Read for ProblemOnRefusal<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: hyper::rt::Write + Unpin> hyper::rt::Write for ProblemOnRefusal<T> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        std::task::ready!(self.drain(cx))?;
        if let Some(status) = refusal_status(buf) {
            self.pending = refusal_response(status);
            self.written = 0;
            // Taken whole; written out by this and the following polls.
            let _ = self.drain(cx)?;
            return Poll::Ready(Ok(buf.len()));
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        std::task::ready!(self.drain(cx))?;
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        std::task::ready!(self.drain(cx))?;
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_bodyless_client_errors_are_refusals() {
        assert_eq!(
            refusal_status(b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\ndate: x\r\n\r\n"),
            Some(431)
        );
        assert_eq!(refusal_status(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n"), Some(400));
        assert_eq!(refusal_status(b"HTTP/1.1 404 Not Found\r\ncontent-length: 120\r\n\r\n"), None);
        assert_eq!(refusal_status(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n"), None);
        assert_eq!(refusal_status(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n{}"), None);
    }
}
