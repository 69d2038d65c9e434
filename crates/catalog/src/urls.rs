//! URLs from outside, read by the `url` crate (the WHATWG URL Standard, as browsers read
//! them): a database URL shown without its password, and an attestation's evidence link,
//! checked before it is stored and linked from a run's page.

use url::Url;

/// The URL without its password (in the user-info or a `password=` query parameter, which
/// sqlx also reads), for messages. A URL that does not parse is shown as its scheme only
/// when it could hold a password, since where its password ends cannot be known.
pub fn redact(text: &str) -> String {
    let Ok(mut url) = Url::parse(text) else {
        return match text.split_once("://") {
            Some((scheme, rest)) if rest.contains('@') || rest.contains("password") => format!("{scheme}://***"),
            _ => text.to_string(),
        };
    };
    let mut changed = false;
    if url.password().is_some() {
        // Fails only for URLs that cannot have a password, and this one has one.
        let _ = url.set_password(Some("***"));
        changed = true;
    }
    if url.query_pairs().any(|(key, _)| key == "password") {
        let pairs: Vec<(String, String)> = url
            .query_pairs()
            .map(|(key, value)| {
                let value = if key == "password" { "***".to_string() } else { value.into_owned() };
                (key.into_owned(), value)
            })
            .collect();
        url.query_pairs_mut().clear().extend_pairs(pairs);
        changed = true;
    }
    // Untouched text stays as given (the parser would also normalize what it need not).
    if changed { url.into() } else { text.to_string() }
}

/// The longest evidence URL accepted.
pub const MAX_EVIDENCE_URL_BYTES: usize = 2000;

/// The shape of an evidence URL, which the API's schema publishes and [`evidence_url`]
/// enforces besides its other checks (so what the schema allows is what is taken): https, a
/// host of letters, digits and hyphens whose last label starts with a letter (never read as
/// an IP address), an optional port (0 to 65535), then an optional path, query and fragment
/// of RFC 3986's unreserved and sub-delimiter characters and percent escapes.
macro_rules! evidence_url_shape {
    () => {
        r"[Hh][Tt][Tt][Pp][Ss]://([A-Za-z0-9-]+\.)*[A-Za-z][A-Za-z0-9-]*(:([0-9]{1,4}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?(/[A-Za-z0-9._~!$&'()*+,;=:@%/-]*)?(\?[A-Za-z0-9._~!$&'()*+,;=:@%/?-]*)?(#[A-Za-z0-9._~!$&'()*+,;=:@%/?-]*)?"
    };
}

/// [`evidence_url`]'s shape as a whole-text pattern (the API's JSON schema).
pub const EVIDENCE_URL_PATTERN: &str = concat!("^", evidence_url_shape!(), "$");
/// The same, or empty (an HTML form's field left blank).
pub const EVIDENCE_URL_OR_EMPTY_PATTERN: &str = concat!("^(", evidence_url_shape!(), ")?$");

fn evidence_url_shape() -> &'static regex::Regex {
    static SHAPE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    SHAPE.get_or_init(|| regex::Regex::new(EVIDENCE_URL_PATTERN).expect("the pattern is valid"))
}

/// An evidence link as it is stored and linked: an `https` URL with a host and no user-info,
/// in the parser's normal form (an IDN host in punycode, a percent-encoded host decoded), so
/// what the page shows is where the link goes. Refused, with the reason: anything longer than
/// [`MAX_EVIDENCE_URL_BYTES`], whitespace or control characters (which browsers drop, so
/// `java\tscript:` would be `javascript:`), a backslash (which browsers read as `/`), quotes
/// or angle brackets, another scheme, a user name or password (`https://good@evil`).
pub fn evidence_url(text: &str) -> Result<String, String> {
    if text.len() > MAX_EVIDENCE_URL_BYTES {
        return Err(format!("longer than {MAX_EVIDENCE_URL_BYTES} bytes"));
    }
    if let Some(bad) = text.chars().find(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("holds whitespace or a control character ({:?})", bad));
    }
    if let Some(bad) = text.chars().find(|c| matches!(c, '\\' | '"' | '<' | '>' | '`')) {
        return Err(format!("holds {bad:?}, which browsers read in more than one way"));
    }
    let url = Url::parse(text).map_err(|error| format!("not a URL: {error}"))?;
    if url.scheme() != "https" {
        return Err(format!("must be an https URL, not {}:", url.scheme()));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("must not name a user or password before the host".to_string());
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err("has no host".to_string());
    }
    if !evidence_url_shape().is_match(text) {
        return Err("not of the published shape: https://, a host name (no IP address), an optional port, path, query and fragment of URL characters".to_string());
    }
    Ok(url.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_hidden_and_everything_else_kept() {
        assert_eq!(redact("postgres://reader:secret@127.0.0.1:1/catalog"), "postgres://reader:***@127.0.0.1:1/catalog");
        assert_eq!(redact("postgres://reader@host/db"), "postgres://reader@host/db");
        assert_eq!(redact("sqlite://kernelindex.db"), "sqlite://kernelindex.db");
        assert_eq!(redact("sqlite:///tmp/a b/kernelindex.db"), "sqlite:///tmp/a b/kernelindex.db");
        // A password with an encoded '@' or ':' inside.
        assert_eq!(redact("postgres://u:p%40ss%3Aw@host/db"), "postgres://u:***@host/db");
        // A password in the query (sqlx reads `password=`), the rest of the query kept.
        assert_eq!(
            redact("postgres://host/db?user=u&password=secret&options=-c%20search_path%3Ds"),
            "postgres://host/db?user=u&password=***&options=-c+search_path%3Ds"
        );
        // Unparseable (a bad port): the scheme only, since the password cannot be delimited.
        assert_eq!(redact("postgres://u:secret@host:99999/db"), "postgres://***");
        assert_eq!(redact("mysql://localhost/x"), "mysql://localhost/x");
        assert!(!redact("postgres://u:se@cret@host/db").contains("se@cret"));
    }

    #[test]
    fn good_evidence_urls_are_kept_in_normal_form() {
        assert_eq!(evidence_url("https://example.org/run/1").unwrap(), "https://example.org/run/1");
        assert_eq!(evidence_url("https://example.org").unwrap(), "https://example.org/");
        assert_eq!(evidence_url("https://example.org:8443/a?b=c#d").unwrap(), "https://example.org:8443/a?b=c#d");
        assert_eq!(evidence_url("HTTPS://Example.ORG/Path").unwrap(), "https://example.org/Path");
        // The default port is dropped; dot segments resolved.
        assert_eq!(evidence_url("https://example.org:443/a/../b").unwrap(), "https://example.org/b");
        assert_eq!(
            evidence_url("https://github.com/o/r/pull/221#issuecomment-1?x=%20").unwrap(),
            "https://github.com/o/r/pull/221#issuecomment-1?x=%20"
        );
    }

    /// Found by Schemathesis: `https://q*` parsed (a `*` in a host) though the published
    /// pattern refuses it. The shape is now checked too, so the two agree.
    #[test]
    fn what_the_published_pattern_refuses_is_refused() {
        let pattern = regex::Regex::new(EVIDENCE_URL_PATTERN).unwrap();
        for text in [
            "https://q*",
            "https://127.0.0.1/x",
            "https://a.b:65536/",
            "https://a.1/",
            "https://a/b c",
            "https://a/{x}",
        ] {
            assert!(!pattern.is_match(text), "{text}");
            assert!(evidence_url(text).is_err(), "{text}");
        }
        for text in ["https://q", "https://a-b.example:8443/p/q?x=1&y=%41#f", "HTTPS://Example.ORG/Path"] {
            assert!(pattern.is_match(text), "{text}");
            assert!(evidence_url(text).is_ok(), "{text}");
        }
        let blank_or_url = regex::Regex::new(EVIDENCE_URL_OR_EMPTY_PATTERN).unwrap();
        assert!(
            blank_or_url.is_match("") && blank_or_url.is_match("https://q") && !blank_or_url.is_match("https://q*")
        );
    }

    #[test]
    fn hostile_evidence_urls_are_refused_or_defused() {
        let refused = |text: &str, reason: &str| {
            let error = evidence_url(text).expect_err(text);
            assert!(error.contains(reason), "{text}: {error}");
        };
        // Schemes that run code or carry data, or are not https.
        refused("javascript:alert(1)", "must be an https URL");
        refused("JavaScript:alert(1)//https://", "must be an https URL");
        refused("data:text/html,<script>alert(1)</script>", "holds '<'");
        refused("data:text/html;base64,PHNjcmlwdD4=", "must be an https URL");
        refused("http://example.org", "must be an https URL");
        refused("ftp://example.org/x", "must be an https URL");
        refused("file:///etc/passwd", "must be an https URL");
        refused("vbscript:msgbox", "must be an https URL");
        // Characters browsers drop or reinterpret.
        refused("java\tscript:alert(1)", "whitespace or a control character");
        refused(" https://example.org", "whitespace");
        refused("https://example.org/\n", "control character");
        refused("https://exa\u{0}mple.org", "control character");
        refused("https://example.org/\u{2028}", "whitespace");
        refused("https://evil.example\\@good.example/", "holds '\\\\'");
        refused("https:\\\\evil.example", "holds '\\\\'");
        refused("https://example.org/\"onmouseover=\"alert(1)", "holds '\"'");
        refused("https://example.org/`x`", "holds '`'");
        // User-info: the host is what follows the '@'.
        refused("https://good.example@evil.example/", "must not name a user or password");
        refused("https://good.example:pw@evil.example/", "must not name a user or password");
        refused("https://%40@evil.example/", "must not name a user or password");
        // No host, or one that is not a host.
        refused("https://", "not a URL");
        refused("https://exa%20mple.org/", "not a URL");
        refused("https://[::1/", "not a URL");
        refused("not a url", "whitespace");
        refused("example.org/run", "not a URL");
        refused(&format!("https://example.org/{}", "a".repeat(MAX_EVIDENCE_URL_BYTES)), "longer than 2000 bytes");
        // Outside the published shape, however a parser would normalize them (an empty user,
        // a third slash, an escaped or non-ASCII host: a Cyrillic 'а' in "pаypal" is a
        // look-alike; a hexadecimal IP address).
        for text in [
            "https://:@evil.example/",
            "https:///evil.example/x",
            "https://%65xample.org/",
            "https://exämple.org/",
            "https://p\u{430}ypal.com/",
            "https://example.org/ä?q=ü",
            "https://0x7f.1/",
        ] {
            refused(text, "not of the published shape");
        }
        assert_eq!(evidence_url("https://example.org/%3Cscript%3E").unwrap(), "https://example.org/%3Cscript%3E");
    }
}
