//! Errors as RFC 9457 problem details (`application/problem+json`), each carrying the
//! request id that the response's `x-request-id` header also holds.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Problem {
    #[serde(rename = "type")]
    pub kind: String,
    pub title: String,
    pub status: u16,
    pub detail: String,
    /// Filled in by the request-id middleware, which knows the id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instance: Option<String>,
    #[serde(rename = "requestId", skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// Per-field problems, e.g. one line per invalid manifest field.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<FieldProblem>,
    #[serde(skip)]
    pub retry_after_s: Option<i64>,
    /// The methods a 405 names in its `Allow` header.
    #[serde(skip)]
    pub allow: Option<HeaderValue>,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct FieldProblem {
    pub pointer: String,
    pub detail: String,
}

impl Problem {
    pub fn new(status: StatusCode, slug: &str, title: &str, detail: impl Into<String>) -> Problem {
        Problem {
            kind: format!("https://kernelindex.dev/problems/{slug}"),
            title: title.to_string(),
            status: status.as_u16(),
            detail: detail.into(),
            instance: None,
            request_id: None,
            errors: Vec::new(),
            retry_after_s: None,
            allow: None,
        }
    }

    pub fn not_found(detail: impl Into<String>) -> Problem {
        Problem::new(StatusCode::NOT_FOUND, "not-found", "Not found", detail)
    }

    pub fn bad_request(detail: impl Into<String>) -> Problem {
        Problem::new(StatusCode::BAD_REQUEST, "bad-request", "Bad request", detail)
    }

    pub fn unprocessable(detail: impl Into<String>, errors: Vec<FieldProblem>) -> Problem {
        let mut p = Problem::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid-input", "Invalid input", detail);
        p.errors = errors;
        p
    }

    pub fn unauthorized(detail: impl Into<String>) -> Problem {
        Problem::new(StatusCode::UNAUTHORIZED, "unauthorized", "API key required", detail)
    }

    pub fn forbidden(detail: impl Into<String>) -> Problem {
        Problem::new(StatusCode::FORBIDDEN, "forbidden", "Key lacks the scope", detail)
    }

    pub fn quota_exceeded(retry_after_s: i64) -> Problem {
        let mut p = Problem::new(
            StatusCode::TOO_MANY_REQUESTS,
            "quota-exceeded",
            "Daily quota exceeded",
            "this API key has used its daily quota of writes; it resets at 00:00 UTC",
        );
        p.retry_after_s = Some(retry_after_s);
        p
    }

    pub fn internal(detail: impl Into<String>) -> Problem {
        Problem::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", "Internal error", detail)
    }

    pub fn status_code(&self) -> StatusCode {
        StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let body = serde_json::to_vec(&self).unwrap_or_else(|_| b"{}".to_vec());
        let mut response = (self.status_code(), body).into_response();
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/problem+json"));
        if let Some(seconds) = self.retry_after_s
            && let Ok(value) = HeaderValue::from_str(&seconds.max(1).to_string())
        {
            headers.insert(header::RETRY_AFTER, value);
        }
        if let Some(allow) = &self.allow {
            headers.insert(header::ALLOW, allow.clone());
        }
        // The middleware adds the request id to the body; it finds the problem here.
        response.extensions_mut().insert(self);
        response
    }
}
