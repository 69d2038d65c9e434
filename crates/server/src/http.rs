//! Cross-cutting HTTP concerns: request ids, security headers, problem bodies that
//! name the request (for every error, axum's own included), HTML error pages for browsers,
//! a deadline per request, and the presented API key.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::problem::Problem;

/// No inline script or style anywhere: scripts and styles come only from this origin.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
    form-action 'self'; frame-ancestors 'none'; base-uri 'none'; connect-src 'self'";

static PROCESS_TAG: LazyLock<String> = LazyLock::new(|| uuid::Uuid::new_v4().simple().to_string()[..8].to_string());
static NEXT_REQUEST: AtomicU64 = AtomicU64::new(1);

#[derive(Debug, Clone)]
pub struct RequestId(pub String);

/// A request's id, unique across the replicas of one deployment in practice (a random tag
/// per process and a counter).
pub fn next_request_id() -> String {
    format!("{}-{:08x}", *PROCESS_TAG, NEXT_REQUEST.fetch_add(1, Ordering::Relaxed))
}

/// Request bodies above this are refused (413) before a handler sees them: the largest
/// legitimate body is a submission bundle, whose manifests are capped at 1 MiB each.
pub const MAX_BODY_BYTES: usize = 2 * 1024 * 1024;

/// The method and path pattern of every route (the route table gives them to [`middleware`]),
/// for a 405's `Allow`.
#[derive(Debug, Clone)]
pub struct RouteMethods(Arc<[(&'static str, &'static str)]>);

impl RouteMethods {
    pub fn new(routes: impl IntoIterator<Item = (&'static str, &'static str)>) -> RouteMethods {
        RouteMethods(routes.into_iter().collect())
    }

    /// The methods served at `path` (`{param}` segments match any one segment).
    fn at(&self, path: &str) -> Vec<&'static str> {
        let segments: Vec<&str> = path.split('/').collect();
        let mut methods: Vec<&'static str> = self
            .0
            .iter()
            .filter(|(_, pattern)| {
                let pattern: Vec<&str> = pattern.split('/').collect();
                pattern.len() == segments.len()
                    && pattern.iter().zip(&segments).all(|(p, s)| (p.starts_with('{') && p.ends_with('}')) || p == s)
            })
            .map(|(method, _)| *method)
            .collect();
        methods.sort_unstable();
        methods.dedup();
        methods
    }
}

/// How long one request may take, its body included: a client trickling a body is cut off.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Longest error text of axum's own (a rejected path, query or body) carried into a problem.
const MAX_REJECTION_BYTES: usize = 4096;

/// Gives every request an id, adds the security headers, and completes problem bodies: a
/// handler's [`Problem`] gets the request's id and path, and every other error (axum's
/// rejections of a path, query, form or body, a wrong method, a body over the limit) becomes
/// a problem too, so that no error goes out as plain text or without a body.
pub async fn middleware(State(routes): State<RouteMethods>, mut request: Request, next: Next) -> Response {
    let id = next_request_id();
    let method = request.method().clone();
    let path = request.uri().path().to_string();
    let wants_html = !path.starts_with("/api/")
        && request
            .headers()
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|accept| accept.contains("text/html"));
    request.extensions_mut().insert(RequestId(id.clone()));
    if method == axum::http::Method::OPTIONS {
        return finish(preflight(), &id, &method);
    }
    let if_none_match = request.headers().get(header::IF_NONE_MATCH).cloned();
    let mut response = match tokio::time::timeout(REQUEST_TIMEOUT, next.run(request)).await {
        Ok(response) => response,
        Err(_) => Problem::new(
            StatusCode::REQUEST_TIMEOUT,
            "request-timeout",
            "Request timeout",
            format!("the request was not answered within {} s (a body sent too slowly?)", REQUEST_TIMEOUT.as_secs()),
        )
        .into_response(),
    };

    let is_error = response.status().is_client_error() || response.status().is_server_error();
    if is_error && response.extensions().get::<Problem>().is_none() {
        let problem = rejection_problem(&routes, &method, &path, response).await;
        response = problem.into_response();
    }
    if let Some(mut problem) = response.extensions_mut().remove::<Problem>() {
        problem.request_id = Some(id.clone());
        problem.instance = Some(path);
        let retry = response.headers().get(header::RETRY_AFTER).cloned();
        let allow = response.headers().get(header::ALLOW).cloned();
        response = if wants_html {
            {
                let (status, page) = crate::pages::error_page(&problem);
                (status, axum::response::Html(page.into_string())).into_response()
            }
        } else {
            problem.into_response()
        };
        response.extensions_mut().remove::<Problem>();
        if let Some(retry) = retry {
            response.headers_mut().insert(header::RETRY_AFTER, retry);
        }
        if let Some(allow) = allow {
            response.headers_mut().insert(header::ALLOW, allow);
        }
    }

    response = markup_escaped(response).await;
    if matches!(method, axum::http::Method::GET | axum::http::Method::HEAD) && response.status() == StatusCode::OK {
        response = with_etag(response, if_none_match.as_ref()).await;
    }
    finish(response, &id, &method)
}

/// Whether a response of this type is markup a person reads (a page, the Atom feed, a
/// Markdown export).
fn is_markup(content_type: &str) -> bool {
    let essence = content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    matches!(essence.as_str(), "text/html" | "application/atom+xml" | "application/xhtml+xml" | "text/markdown")
}

/// A markup answer with every control and bidi character of its text (but the line feed and
/// the tab) written `\uXXXX`, through the one escaper (`ki_model::escape::for_markup`, as
/// `ki` prints): the templates escape HTML, this keeps a title with ESC, BEL or CR, or a
/// right-to-left override, from reaching a page raw, whatever template shows it.
async fn markup_escaped(response: Response) -> Response {
    let markup = response.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(is_markup);
    if !markup {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let bytes = match axum::body::to_bytes(body, MAX_ETAG_BODY_BYTES).await {
        Ok(bytes) => bytes,
        Err(error) => return Problem::internal(format!("cannot read the answer: {error}")).into_response(),
    };
    let text = String::from_utf8_lossy(&bytes);
    match ki_model::escape::for_markup(&text) {
        std::borrow::Cow::Borrowed(_) => Response::from_parts(parts, Body::from(bytes)),
        std::borrow::Cow::Owned(escaped) => {
            parts.headers.remove(header::CONTENT_LENGTH);
            Response::from_parts(parts, Body::from(escaped))
        }
    }
}

/// Reads are open to every origin (CORS, with the headers a client needs exposed); writes are
/// not: a preflight names GET and HEAD only, and no other response allows an origin.
fn preflight() -> Response {
    let mut response = StatusCode::NO_CONTENT.into_response();
    let headers = response.headers_mut();
    headers.insert(header::ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static("GET, HEAD"));
    headers.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, HeaderValue::from_static("accept, if-none-match"));
    headers.insert(header::ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static("86400"));
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    response
}

/// Largest answer given an ETag (bigger ones, such as the export, set their own).
const MAX_ETAG_BODY_BYTES: usize = 64 * 1024 * 1024;

/// A strong ETag (sha256 of the body) on a whole answer, and 304 when the client has it.
async fn with_etag(response: Response, if_none_match: Option<&HeaderValue>) -> Response {
    if response.headers().contains_key(header::ETAG) {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let bytes = match axum::body::to_bytes(body, MAX_ETAG_BODY_BYTES).await {
        Ok(bytes) => bytes,
        Err(error) => return Problem::internal(format!("cannot read the answer: {error}")).into_response(),
    };
    let digest = <sha2::Sha256 as sha2::Digest>::digest(&bytes);
    let etag = format!("\"{}\"", hex::encode(&digest[..16]));
    let Ok(value) = HeaderValue::from_str(&etag) else {
        return Response::from_parts(parts, Body::from(bytes));
    };
    parts.headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    let mut headers = HeaderMap::new();
    if let Some(sent) = if_none_match {
        headers.insert(header::IF_NONE_MATCH, sent.clone());
    }
    if crate::pages::exports::not_modified(&headers, &etag) {
        let mut not_modified = StatusCode::NOT_MODIFIED.into_response();
        not_modified.headers_mut().insert(header::ETAG, value);
        not_modified.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        return not_modified;
    }
    parts.headers.insert(header::ETAG, value);
    Response::from_parts(parts, Body::from(bytes))
}

/// The headers every answer carries.
fn finish(mut response: Response, id: &str, method: &axum::http::Method) -> Response {
    let headers = response.headers_mut();
    if matches!(*method, axum::http::Method::GET | axum::http::Method::HEAD) {
        headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
        headers.insert(
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            HeaderValue::from_static("etag, x-request-id, x-kernelindex-sha256, x-kernelindex-rows"),
        );
    }
    if let Ok(value) = HeaderValue::from_str(id) {
        headers.insert("x-request-id", value);
    }
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("strict-origin-when-cross-origin"));
    headers.insert("permissions-policy", HeaderValue::from_static("camera=(), microphone=(), geolocation=()"));
    headers.insert("cross-origin-opener-policy", HeaderValue::from_static("same-origin"));
    response
}

/// An error response axum made by itself (its text, or nothing) as a problem with the same
/// status, its text as the detail.
async fn rejection_problem(
    routes: &RouteMethods,
    method: &axum::http::Method,
    path: &str,
    response: Response,
) -> Problem {
    let status = response.status();
    let allow = response.headers().get(header::ALLOW).cloned().or_else(|| {
        let methods = routes.at(path);
        (status == StatusCode::METHOD_NOT_ALLOWED && !methods.is_empty())
            .then(|| HeaderValue::from_str(&methods.join(", ").to_ascii_uppercase()).ok())
            .flatten()
    });
    let text = match axum::body::to_bytes(response.into_body(), MAX_REJECTION_BYTES).await {
        Ok(bytes) => String::from_utf8_lossy(&bytes).trim().to_string(),
        Err(_) => String::new(),
    };
    let (slug, detail) = match status {
        StatusCode::METHOD_NOT_ALLOWED => (
            "method-not-allowed",
            format!(
                "{method} is not allowed here; allowed: {}",
                allow.as_ref().and_then(|a| a.to_str().ok()).unwrap_or("none")
            ),
        ),
        StatusCode::PAYLOAD_TOO_LARGE => {
            ("body-too-large", format!("the request body is larger than {} bytes", MAX_BODY_BYTES))
        }
        StatusCode::UNSUPPORTED_MEDIA_TYPE => ("unsupported-media-type", text),
        _ if text.is_empty() => ("error", status.canonical_reason().unwrap_or("error").to_string()),
        _ => (if status.is_client_error() { "bad-request" } else { "internal" }, text),
    };
    let title = status.canonical_reason().unwrap_or("Error");
    let mut problem = Problem::new(status, slug, title, detail);
    if let Some(allow) = allow {
        problem.allow = Some(allow);
    }
    problem
}

/// The router's fallback: an unknown path is a 404 problem.
pub async fn not_found(request: Request<Body>) -> Problem {
    Problem::not_found(format!("no page or endpoint at {}", request.uri().path()))
}

/// The API key from `Authorization: Bearer ki_…` (the scheme in any case, RFC 9110) or
/// `X-Api-Key`.
pub fn presented_key(headers: &HeaderMap) -> Option<String> {
    if let Some(auth) = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok())
        && let Some((scheme, token)) = auth.trim().split_once(' ')
        && scheme.eq_ignore_ascii_case("bearer")
    {
        return Some(token.trim().to_string()).filter(|t| !t.is_empty());
    }
    headers.get("x-api-key").and_then(|v| v.to_str().ok()).map(|v| v.trim().to_string()).filter(|t| !t.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bearer_scheme_is_case_insensitive() {
        let mut headers = HeaderMap::new();
        for value in ["Bearer ki_abc", "bearer ki_abc", "BEARER  ki_abc "] {
            headers.insert(header::AUTHORIZATION, HeaderValue::from_str(value).unwrap());
            assert_eq!(presented_key(&headers).as_deref(), Some("ki_abc"), "{value}");
        }
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static("Basic a2k6eA=="));
        assert_eq!(presented_key(&headers), None);
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer "));
        assert_eq!(presented_key(&headers), None);
    }
}
