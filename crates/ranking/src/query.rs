//! What a person types into the search box and the resolve form, read into what the index
//! is asked. Pure and bounded (words, axes and dtypes are capped), so that the web can hand
//! it any text; fuzzed (`fuzz/fuzz_targets/search_query.rs`, `resolve_query.rs`).

use std::collections::BTreeMap;

use serde_json::{Value, json};

/// Words of a search beyond these are ignored.
pub const MAX_SEARCH_WORDS: usize = 8;
/// A resolve request names at most this many axes.
pub const MAX_AXES: usize = 32;
/// A resolve request names at most this many dtypes; more are ignored.
pub const MAX_DTYPES: usize = 16;

/// The words of a search query, lower-cased: an entry matches when its text holds every one.
pub fn search_words(query: &str) -> Vec<String> {
    query.split_whitespace().map(str::to_lowercase).take(MAX_SEARCH_WORDS).collect()
}

/// Parses "batch_size=16, num_pages=1070" (commas, semicolons or whitespace between): an
/// integer value is a JSON integer, another finite number a JSON number, anything else text.
pub fn parse_axes(text: &str) -> Result<BTreeMap<String, Value>, String> {
    let mut axes = BTreeMap::new();
    for part in text.split([',', ';', '\n', ' ', '\t', '\r']).map(str::trim).filter(|p| !p.is_empty()) {
        let (name, value) = part.split_once('=').ok_or_else(|| format!("{part:?} is not name=value"))?;
        let (name, value) = (name.trim(), value.trim());
        if name.is_empty() || value.is_empty() {
            return Err(format!("{part:?} is not name=value"));
        }
        let parsed = if let Ok(i) = value.parse::<i64>() {
            json!(i)
        } else if let Ok(f) = value.parse::<f64>() {
            if f.is_finite() { json!(f) } else { json!(value) }
        } else {
            json!(value)
        };
        axes.insert(name.to_string(), parsed);
        if axes.len() > MAX_AXES {
            return Err(format!("at most {MAX_AXES} axes"));
        }
    }
    Ok(axes)
}

/// The dtypes of "bfloat16, float32" (commas or spaces between), at most [`MAX_DTYPES`].
pub fn parse_dtypes(text: &str) -> Vec<String> {
    text.split([',', ' ']).map(str::trim).filter(|d| !d.is_empty()).map(str::to_string).take(MAX_DTYPES).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_words_are_lower_case_and_capped() {
        assert_eq!(search_words("  GQA\tPaged\n decode "), ["gqa", "paged", "decode"]);
        assert_eq!(search_words(""), Vec::<String>::new());
        assert_eq!(search_words(&"w ".repeat(100)).len(), MAX_SEARCH_WORDS);
    }

    #[test]
    fn axes_are_typed_and_junk_is_named() {
        let axes = parse_axes("batch_size=16, num_pages=1070; ratio=0.5 name=x big=1e400 neg=-3").unwrap();
        assert_eq!(axes["batch_size"], json!(16));
        assert_eq!(axes["ratio"], json!(0.5));
        assert_eq!(axes["name"], json!("x"));
        assert_eq!(axes["big"], json!("1e400"), "an infinite number stays text");
        assert_eq!(axes["neg"], json!(-3));
        assert_eq!(parse_axes("  ").unwrap(), BTreeMap::new());
        assert_eq!(parse_axes("batch_size").unwrap_err(), "\"batch_size\" is not name=value");
        assert_eq!(parse_axes("=3").unwrap_err(), "\"=3\" is not name=value");
        let many: String = (0..40).map(|i| format!("a{i}=1 ")).collect();
        assert_eq!(parse_axes(&many).unwrap_err(), "at most 32 axes");
    }

    #[test]
    fn dtypes_are_split_and_capped() {
        assert_eq!(parse_dtypes("bfloat16, float32,,int8"), ["bfloat16", "float32", "int8"]);
        assert_eq!(parse_dtypes(&"x,".repeat(50)).len(), MAX_DTYPES);
    }
}
