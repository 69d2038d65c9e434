//! Feeds arbitrary text to the resolve form's parsers (`GET /resolve?operation=…&axes=…`) and
//! arbitrary JSON to the resolve API's request type (`POST /api/v1/resolve/kernel`), and asks
//! ranking-v1 over the bundled public catalog (data/) each request that parses. The input is
//! `OPERATION\nAXES\nDTYPES\nHARDWARE`, or a JSON request. A panic, abort or timeout is a
//! finding; so are more axes or dtypes than the caps, a non-finite number, an empty error,
//! or an answer that does not serialize.
#![no_main]

use ki_ranking::ResolveRequest;
use ki_ranking::query::{MAX_AXES, MAX_DTYPES, parse_axes, parse_dtypes};
use libfuzzer_sys::fuzz_target;

#[path = "bundled_index.rs"]
mod bundled_index;
use bundled_index::INDEX;

fn ask(request: &ResolveRequest) {
    let answer = INDEX.resolve(request);
    serde_json::to_vec(&answer).expect("an answer serializes");
}

fuzz_target!(|data: &[u8]| {
    if let Ok(request) = serde_json::from_slice::<ResolveRequest>(data) {
        ask(&request);
        return;
    }
    let text = String::from_utf8_lossy(data);
    let mut fields = text.splitn(4, '\n');
    let operation = fields.next().unwrap_or("").trim().to_string();
    let axes = match parse_axes(fields.next().unwrap_or("")) {
        Ok(axes) => axes,
        Err(message) => {
            assert!(!message.is_empty());
            return;
        }
    };
    assert!(axes.len() <= MAX_AXES);
    for (name, value) in &axes {
        assert!(!name.is_empty() && !name.contains(['=', ',', ';', ' ', '\t', '\n', '\r']), "{name:?}");
        assert!(value.is_string() || value.as_f64().is_some_and(f64::is_finite), "{value}");
    }
    let dtypes = parse_dtypes(fields.next().unwrap_or(""));
    assert!(dtypes.len() <= MAX_DTYPES && dtypes.iter().all(|d| !d.is_empty()));
    let hardware = fields.next().map(|h| h.trim().to_string()).filter(|h| !h.is_empty());
    ask(&ResolveRequest { operation, axes, dtypes, hardware, framework: None, limit: None });
});
