//! Cross-cutting HTTP concerns: request ids, security headers, problem bodies that
//! name the request, HTML error pages for browsers, and small parsing helpers.

use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, header};
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

/// Gives every request an id, adds the security headers, and completes problem bodies.
pub async fn middleware(mut request: Request, next: Next) -> Response {
    let id = format!("{}-{:08x}", *PROCESS_TAG, NEXT_REQUEST.fetch_add(1, Ordering::Relaxed));
    let path = request.uri().path().to_string();
    let wants_html = !path.starts_with("/api/")
        && request
            .headers()
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|accept| accept.contains("text/html"));
    request.extensions_mut().insert(RequestId(id.clone()));
    let mut response = next.run(request).await;

    if let Some(mut problem) = response.extensions_mut().remove::<Problem>() {
        problem.request_id = Some(id.clone());
        problem.instance = Some(path);
        let retry = response.headers().get(header::RETRY_AFTER).cloned();
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
    }

    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&id) {
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

/// The router's fallback: an unknown path is a 404 problem.
pub async fn not_found(request: Request<Body>) -> Problem {
    Problem::not_found(format!("no page or endpoint at {}", request.uri().path()))
}

/// The API key from `Authorization: Bearer ki_…` or `X-Api-Key`.
pub fn presented_key(headers: &HeaderMap) -> Option<String> {
    if let Some(auth) = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok())
        && let Some(token) = auth.strip_prefix("Bearer ")
    {
        return Some(token.trim().to_string());
    }
    headers.get("x-api-key").and_then(|v| v.to_str().ok()).map(|v| v.trim().to_string())
}

/// Decodes an `application/x-www-form-urlencoded` string into pairs, keeping repeats
/// (`run=a&run=b`), which serde's flat maps cannot.
pub fn parse_pairs(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|part| !part.is_empty())
        .take(200)
        .map(|part| {
            let (key, value) = part.split_once('=').unwrap_or((part, ""));
            (percent_decode(key), percent_decode(value))
        })
        .collect()
}

pub fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok().and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_pairs_keep_repeats_and_decode() {
        let pairs = parse_pairs("run=a%2Fb&run=c+d&x=%zz&y=%4");
        assert_eq!(pairs[0], ("run".into(), "a/b".into()));
        assert_eq!(pairs[1], ("run".into(), "c d".into()));
        assert_eq!(pairs[2], ("x".into(), "%zz".into()));
        assert_eq!(pairs[3], ("y".into(), "%4".into()));
    }
}
