//! The HTTP client of a running `ki serve` (`--api URL`): JSON documents of `/api/v1/…`,
//! with a deadline on every exchange, a bound on every answer, and errors that name the URL.

use std::time::Duration;

use anyhow::{Context, anyhow, bail};
use serde_json::Value;
use url::Url;

/// The longest answer read; the largest document the API sends (a page of 200 runs) is far
/// below it.
pub const MAX_RESPONSE_BYTES: u64 = 32 * 1024 * 1024;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// For the whole exchange: connecting, sending, and reading the answer to its end.
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(60);

/// A running index, known by its base URL (`http://host:port`, or under a path prefix).
#[derive(Clone)]
pub struct ApiClient {
    base: Url,
    agent: ureq::Agent,
}

impl ApiClient {
    /// Checks the URL (http or https, a host, no query or credentials) before anything is sent.
    pub fn new(base: &str) -> anyhow::Result<ApiClient> {
        let mut url = Url::parse(base.trim()).with_context(|| format!("--api {base:?} is not a URL"))?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
            bail!("--api {base:?}: give an http:// or https:// URL with a host");
        }
        if !url.username().is_empty() || url.password().is_some() || url.query().is_some() || url.fragment().is_some() {
            bail!("--api {base:?}: give the index's base URL only (no credentials, query or fragment)");
        }
        // `join` below treats the last segment as a directory only with a trailing slash.
        if !url.path().ends_with('/') {
            let path = format!("{}/", url.path());
            url.set_path(&path);
        }
        let agent = ureq::Agent::config_builder()
            .timeout_connect(Some(CONNECT_TIMEOUT))
            .timeout_global(Some(EXCHANGE_TIMEOUT))
            .http_status_as_error(false)
            .user_agent(concat!("ki/", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        Ok(ApiClient { base: url, agent })
    }

    /// `api/v1/` + `segments` (each percent-encoded as one path segment) + `query`.
    pub fn url(&self, segments: &[&str], query: &[(&str, &str)]) -> Url {
        let mut url = self.base.join("api/v1/").expect("a relative path joins any http URL");
        {
            let mut path = url.path_segments_mut().expect("an http URL has a path");
            path.pop_if_empty();
            path.extend(segments);
        }
        if !query.is_empty() {
            url.query_pairs_mut().extend_pairs(query);
        }
        url
    }

    pub fn get(&self, segments: &[&str], query: &[(&str, &str)]) -> anyhow::Result<Value> {
        let url = self.url(segments, query);
        let response = self.agent.get(url.as_str()).header("Accept", "application/json").call();
        answer(&url, "GET", response)
    }

    pub fn post(&self, segments: &[&str], body: &Value) -> anyhow::Result<Value> {
        let url = self.url(segments, &[]);
        let bytes = serde_json::to_vec(body)?;
        let response = self
            .agent
            .post(url.as_str())
            .header("Accept", "application/json")
            .header("Content-Type", "application/json")
            .send(&bytes[..]);
        answer(&url, "POST", response)
    }
}

/// The JSON document of a 2xx answer; otherwise the problem's own words (RFC 9457 `detail`),
/// which are the words the command prints when it reads a catalog itself.
fn answer(
    url: &Url,
    method: &str,
    response: Result<ureq::http::Response<ureq::Body>, ureq::Error>,
) -> anyhow::Result<Value> {
    let mut response = response.map_err(|error| anyhow!("{method} {url}: {error}"))?;
    let status = response.status();
    let body = response
        .body_mut()
        .with_config()
        .limit(MAX_RESPONSE_BYTES)
        .read_to_vec()
        .map_err(|error| anyhow!("{method} {url}: cannot read the answer: {error}"))?;
    let document: Result<Value, _> = serde_json::from_slice(&body);
    if status.is_success() {
        return document.map_err(|error| anyhow!("{method} {url}: the answer is not JSON: {error}"));
    }
    match document.ok().as_ref().and_then(|problem| problem.get("detail")).and_then(Value::as_str) {
        Some(detail) => bail!("{detail} ({method} {url}: HTTP {})", status.as_u16()),
        None => bail!("{method} {url}: HTTP {status}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_keep_a_path_prefix_and_encode_segments() {
        let client = ApiClient::new("http://127.0.0.1:8080/index").unwrap();
        let url = client.url(&["runs", "a/b?c"], &[("q", "x y&z")]);
        assert_eq!(url.as_str(), "http://127.0.0.1:8080/index/api/v1/runs/a%2Fb%3Fc?q=x+y%26z");
        let client = ApiClient::new("https://example.org/").unwrap();
        assert_eq!(client.url(&["search"], &[]).as_str(), "https://example.org/api/v1/search");
    }

    #[test]
    fn refuses_what_is_not_an_index_url() {
        for bad in ["ftp://x", "not a url", "http://user:pw@host/", "http://host/?q=1", "file:///tmp"] {
            assert!(ApiClient::new(bad).is_err(), "{bad}");
        }
    }
}
