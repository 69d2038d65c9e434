//! Accepting connections: a cap on open connections (in total and per peer), a deadline on
//! reading each request head (which also closes a keep-alive connection left idle), a
//! deadline and a minimum rate on reading each request body, an early 413 for a declared
//! `Content-Length` over the body limit, and problem bodies for the requests hyper refuses
//! before any route sees them.
//!
//! Why not `axum::serve`: it sets no timer, so a client sending one header line a second
//! holds its connection forever, and it has no cap, so thousands of half-open sockets take
//! every descriptor and `/healthz` stops answering. Here a connection holds its place under
//! the cap only while it makes progress: while the server answers one of its requests, or
//! while its request body arrives (a byte within [`Limits::body_stall`]). When the cap (or
//! the peer's share of it) is reached, a new connection takes the place of the oldest one
//! that makes no progress (a socket still trickling its head, an idle keep-alive one, a body
//! that stalled); failing that, of the one reading a body whose bytes came longest ago (a
//! flood of fresh stalled bodies from many peers); only when the server is answering a
//! request on every connection is the newcomer closed.
//!
//! The body is read here, before routing, whole (it is at most [`Limits::max_body_bytes`]):
//! so the connection loop knows when the client is the one being waited for. No tower layer
//! does this: `tower_http`'s body timeout restarts with every frame (a byte every few
//! seconds keeps it alive) and knows nothing of the cap.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use hyper::body::Body as _;

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
    /// Open connections at most from one peer address, and never more than a quarter of
    /// [`Limits::max_connections`] (a connection over it takes the place of one of that
    /// peer's that makes no progress, or is closed). Behind a reverse proxy every client is
    /// one peer: raise the cap accordingly.
    pub max_connections_per_peer: usize,
    /// Largest request body: a declared `Content-Length` over it is answered 413 before the
    /// body is read.
    pub max_body_bytes: usize,
    /// From a request head's end to its body's last byte.
    pub body_read_timeout: Duration,
    /// Bytes a second a body must average once [`Limits::body_rate_grace`] has passed.
    pub min_body_rate: u64,
    /// How long a body may arrive at any pace before the minimum rate applies.
    pub body_rate_grace: Duration,
    /// A body that has sent nothing for this long makes no progress: its connection may give
    /// its place under the cap to a new one.
    pub body_stall: Duration,
}

/// A connection accepted this recently gives way only after every other one that can: its
/// request head is on its way.
const NEW_CONNECTION_GRACE: Duration = Duration::from_millis(100);

/// Descriptors kept free beside the connections (the database pool, files, the listener).
const RESERVED_DESCRIPTORS: usize = 256;

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_connections: default_max_connections(),
            header_read_timeout: Duration::from_secs(10),
            max_headers: 100,
            max_connections_per_peer: default_max_connections() / 4,
            max_body_bytes: crate::http::MAX_BODY_BYTES,
            body_read_timeout: Duration::from_secs(10),
            min_body_rate: 1024,
            body_rate_grace: Duration::from_secs(2),
            body_stall: Duration::from_millis(500),
        }
    }
}

impl Limits {
    /// Connections one peer may hold: its own limit, at most a quarter of the cap, at least 1.
    pub fn per_peer(&self) -> usize {
        self.max_connections_per_peer.min(self.max_connections / 4).max(1)
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

/// The clock progress is read on: milliseconds since the first connection.
static EPOCH: LazyLock<Instant> = LazyLock::new(Instant::now);

fn now_ms() -> u64 {
    EPOCH.elapsed().as_millis() as u64
}

/// One open connection, as the cap sees it.
struct Connection {
    peer: IpAddr,
    /// When it was accepted ([`now_ms`]).
    opened: u64,
    /// Requests being answered on it now (their bodies read whole).
    busy: AtomicUsize,
    /// A request body is being read from the client.
    reading: AtomicBool,
    /// When the body being read last brought bytes ([`now_ms`]).
    last_progress: AtomicU64,
    close: Notify,
}

impl Connection {
    /// Whether it holds its place under the cap: a request being answered, or a body whose
    /// bytes keep coming.
    fn progressing(&self, stall: Duration) -> bool {
        self.busy.load(Ordering::Acquire) > 0
            || (self.reading.load(Ordering::Acquire)
                && now_ms().saturating_sub(self.last_progress.load(Ordering::Acquire)) < stall.as_millis() as u64)
    }

    fn touch(&self) {
        self.last_progress.store(now_ms(), Ordering::Release);
    }
}

#[derive(Default)]
struct Open {
    next: u64,
    /// By age: the first is the oldest.
    connections: BTreeMap<u64, Arc<Connection>>,
    /// Open connections per peer address.
    per_peer: HashMap<IpAddr, usize>,
}

impl Open {
    /// Closes the oldest connection (of `peer`, if given) that makes no progress and is older
    /// than `younger_spared` (a connection just accepted has had no time to send its head);
    /// false when there is none.
    fn evict(&mut self, peer: Option<IpAddr>, stall: Duration, younger_spared: Duration) -> bool {
        let now = now_ms();
        let spared = younger_spared.as_millis() as u64;
        let Some(id) = self
            .connections
            .iter()
            .find(|(_, c)| {
                peer.is_none_or(|p| c.peer == p) && !c.progressing(stall) && now.saturating_sub(c.opened) >= spared
            })
            .map(|(&id, _)| id)
        else {
            return false;
        };
        if let Some(evicted) = self.remove(id) {
            // Stores a permit, so the task closes even if it is not waiting yet.
            evicted.close.notify_one();
        }
        true
    }

    /// When every connection (of `peer`, if given) makes progress: closes the one reading a
    /// body whose bytes came longest ago (a stalled body renewed faster than
    /// [`Limits::body_stall`] still loses to a body that keeps arriving); false when every one
    /// is being answered.
    fn evict_stalest_reader(&mut self, peer: Option<IpAddr>) -> bool {
        let Some(id) = self
            .connections
            .iter()
            .filter(|(_, c)| {
                peer.is_none_or(|p| c.peer == p)
                    && c.busy.load(Ordering::Acquire) == 0
                    && c.reading.load(Ordering::Acquire)
            })
            .min_by_key(|(_, c)| c.last_progress.load(Ordering::Acquire))
            .map(|(&id, _)| id)
        else {
            return false;
        };
        if let Some(evicted) = self.remove(id) {
            evicted.close.notify_one();
        }
        true
    }

    fn remove(&mut self, id: u64) -> Option<Arc<Connection>> {
        let removed = self.connections.remove(&id)?;
        if let Some(count) = self.per_peer.get_mut(&removed.peer) {
            *count -= 1;
            if *count == 0 {
                self.per_peer.remove(&removed.peer);
            }
        }
        Some(removed)
    }
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

    /// Connections open now from `peer`.
    pub fn open_from(&self, peer: IpAddr) -> usize {
        self.lock().per_peer.get(&peer).copied().unwrap_or(0)
    }

    /// Makes room for one more from `peer` under the limits, closing the oldest connection
    /// (of that peer first, when it has its share) that makes no progress if need be; None
    /// when every one that could give way makes progress.
    fn admit(&self, limits: &Limits, peer: IpAddr) -> Option<(u64, Arc<Connection>)> {
        let mut open = self.lock();
        let from_peer = open.per_peer.get(&peer).copied().unwrap_or(0);
        // Who gives way, in order: a connection that makes no progress (not one just
        // accepted), the body that stalled longest, then one just accepted.
        let make_room = |open: &mut Open, peer: Option<IpAddr>| {
            open.evict(peer, limits.body_stall, NEW_CONNECTION_GRACE)
                || open.evict_stalest_reader(peer)
                || open.evict(peer, limits.body_stall, Duration::ZERO)
        };
        if from_peer >= limits.per_peer() && !make_room(&mut open, Some(peer)) {
            return None;
        }
        if open.connections.len() >= limits.max_connections && !make_room(&mut open, None) {
            return None;
        }
        let id = open.next;
        open.next += 1;
        let connection = Arc::new(Connection {
            peer,
            opened: now_ms(),
            busy: AtomicUsize::new(0),
            reading: AtomicBool::new(false),
            last_progress: AtomicU64::new(now_ms()),
            close: Notify::new(),
        });
        open.connections.insert(id, connection.clone());
        *open.per_peer.entry(peer).or_default() += 1;
        Some((id, connection))
    }

    fn remove(&self, id: u64) {
        self.lock().remove(id);
    }
}

/// Marks a connection as reading a request body until dropped.
struct Reading(Arc<Connection>);

impl Reading {
    fn new(connection: &Arc<Connection>) -> Reading {
        connection.touch();
        connection.reading.store(true, Ordering::Release);
        Reading(connection.clone())
    }
}

impl Drop for Reading {
    fn drop(&mut self) {
        self.0.reading.store(false, Ordering::Release);
    }
}

/// A refusal answered before routing, closing the connection (its body is left unread).
fn refuse(status: StatusCode, slug: &str, detail: String) -> Response {
    let title = status.canonical_reason().unwrap_or("Error");
    let mut problem = crate::problem::Problem::new(status, slug, title, detail);
    problem.request_id = Some(crate::http::next_request_id());
    let mut response = problem.into_response();
    response.headers_mut().insert(header::CONNECTION, header::HeaderValue::from_static("close"));
    response
}

/// The request with its body read whole, under the limits; or the refusal to answer with.
async fn read_body(
    request: hyper::Request<Incoming>,
    connection: &Arc<Connection>,
    limits: &Limits,
) -> Result<axum::extract::Request, Response> {
    let too_large = || {
        refuse(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body-too-large",
            format!("the request body is larger than {} bytes", limits.max_body_bytes),
        )
    };
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|length| length > limits.max_body_bytes as u64) {
        return Err(too_large());
    }
    let (parts, mut body) = request.into_parts();
    if body.is_end_stream() {
        return Ok(axum::extract::Request::from_parts(parts, axum::body::Body::empty()));
    }
    let _reading = Reading::new(connection);
    let started = tokio::time::Instant::now();
    let deadline = tokio::time::sleep_until(started + limits.body_read_timeout);
    let mut deadline = std::pin::pin!(deadline);
    let mut check = tokio::time::interval_at(started + limits.body_rate_grace, Duration::from_millis(250));
    let mut bytes: Vec<u8> = Vec::with_capacity(declared.unwrap_or(0).min(64 * 1024) as usize);
    loop {
        let frame = tokio::select! {
            frame = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)) => frame,
            _ = &mut deadline => {
                return Err(refuse(
                    StatusCode::REQUEST_TIMEOUT,
                    "body-timeout",
                    format!("the request body did not arrive within {} s", limits.body_read_timeout.as_secs_f64()),
                ));
            }
            _ = check.tick() => {
                let paced = started.elapsed().saturating_sub(limits.body_rate_grace).as_secs_f64();
                if (bytes.len() as f64) < limits.min_body_rate as f64 * paced {
                    return Err(refuse(
                        StatusCode::REQUEST_TIMEOUT,
                        "body-too-slow",
                        format!("the request body arrived slower than {} bytes a second", limits.min_body_rate),
                    ));
                }
                continue;
            }
        };
        match frame {
            None => break,
            Some(Err(error)) => {
                return Err(refuse(
                    StatusCode::BAD_REQUEST,
                    "bad-body",
                    format!("the request body could not be read: {error}"),
                ));
            }
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    if bytes.len() + data.len() > limits.max_body_bytes {
                        return Err(too_large());
                    }
                    bytes.extend_from_slice(&data);
                    connection.touch();
                }
            }
        }
    }
    Ok(axum::extract::Request::from_parts(parts, axum::body::Body::from(bytes)))
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
        let (stream, peer) = tokio::select! {
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
        let Some((id, connection)) = tracker.admit(&limits, peer.ip().to_canonical()) else {
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
                let (router, counted) = (router.clone(), counted.clone());
                async move {
                    let request = match read_body(request, &counted, &limits).await {
                        Ok(request) => request,
                        Err(refusal) => return Ok(refusal),
                    };
                    let busy = Busy::new(&counted);
                    let response = router.oneshot(request).await;
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
