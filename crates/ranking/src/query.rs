//! What a person types into the search box and the resolve form, read into what the index
//! is asked. Pure and bounded (words, filters, axes and dtypes are capped), so that the web can
//! hand it any text; fuzzed (`fuzz/fuzz_targets/search_query.rs`, `resolve_query.rs`).
//!
//! The search grammar (documented on `/docs`, shared by `/`, `/api/v1/search` and `ki search`):
//! free words, `filter:value` for the [`Filter`]s, and `axis=N` for a workload's axes, e.g.
//! `gqa decode gpu:h200 batch_size=16`. A `sha256:…` digest is a word, not a filter.

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

/// Filters a search carries at most; more are ignored.
pub const MAX_FILTERS: usize = 16;

/// A `name:value` part of a search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Filter {
    /// The GPU model (`gpu:h200` matches "NVIDIA H200").
    Gpu,
    /// A workload dtype (`dtype:bfloat16`).
    Dtype,
    /// The GPU architecture (`arch:sm_90`).
    Arch,
    /// A model the operation is used by (`model:llama-3-1-8b`, from the definitions' tags).
    Model,
    /// The operation family (`family:gqa-paged-attention`).
    Family,
    /// The source a run came from (`source:flashinfer-bench`).
    Source,
    /// Least evidence: `reported`, `reproducible`, `verified` or `replicated`.
    Trust,
    /// The implementation's licence expression (`license:apache-2.0`).
    License,
    /// The implementation's language (`language:cuda`).
    Language,
    /// Whether the implementation can be installed (`installable:yes`).
    Installable,
    /// The implementation's project, by name or slug (`project:flashinfer`).
    Project,
    /// A word of the implementation's slug (`implementation:triton`).
    Implementation,
}

impl Filter {
    pub const ALL: [Filter; 12] = [
        Filter::Gpu,
        Filter::Dtype,
        Filter::Arch,
        Filter::Model,
        Filter::Family,
        Filter::Source,
        Filter::Trust,
        Filter::License,
        Filter::Language,
        Filter::Installable,
        Filter::Project,
        Filter::Implementation,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Filter::Gpu => "gpu",
            Filter::Dtype => "dtype",
            Filter::Arch => "arch",
            Filter::Model => "model",
            Filter::Family => "family",
            Filter::Source => "source",
            Filter::Trust => "trust",
            Filter::License => "license",
            Filter::Language => "language",
            Filter::Installable => "installable",
            Filter::Project => "project",
            Filter::Implementation => "implementation",
        }
    }

    fn named(name: &str) -> Option<Filter> {
        let name = name.to_lowercase();
        Filter::ALL.into_iter().find(|f| f.name() == name || (name == "licence" && *f == Filter::License))
    }
}

/// One `filter:value` of a search; the value is lower-cased.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct SearchFilter {
    pub filter: Filter,
    pub value: String,
}

/// A search as the index reads it.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, schemars::JsonSchema)]
pub struct SearchRequest {
    /// Free words, lower-cased.
    pub words: Vec<String>,
    pub filters: Vec<SearchFilter>,
    /// `axis=N` parts, typed as [`parse_axes`] types them.
    pub axes: BTreeMap<String, Value>,
    /// What was not understood or was ignored, in words.
    pub notes: Vec<String>,
}

impl SearchRequest {
    /// The values given for one filter.
    pub fn values(&self, filter: Filter) -> impl Iterator<Item = &str> {
        self.filters.iter().filter(move |f| f.filter == filter).map(|f| f.value.as_str())
    }

    pub fn is_empty(&self) -> bool {
        self.words.is_empty() && self.filters.is_empty() && self.axes.is_empty()
    }
}

/// Reads a search in the grammar above. Never fails: what it cannot use becomes a note.
pub fn parse_search(query: &str) -> SearchRequest {
    let mut request = SearchRequest::default();
    for part in query.split_whitespace() {
        if let Some((name, value)) = part.split_once('=') {
            match parse_axes(part) {
                Ok(axes) if request.axes.len() < MAX_AXES => request.axes.extend(axes),
                Ok(_) => request.notes.push(format!("at most {MAX_AXES} axes; {name} ignored")),
                Err(_) => request.notes.push(format!("{part:?} is not axis=value ({name:?}, {value:?})")),
            }
            continue;
        }
        if let Some((name, value)) = part.split_once(':')
            && !name.eq_ignore_ascii_case("sha256")
        {
            match Filter::named(name) {
                Some(_) if value.is_empty() => request.notes.push(format!("{name}: needs a value")),
                Some(filter) if request.filters.len() < MAX_FILTERS => {
                    request.filters.push(SearchFilter { filter, value: value.to_lowercase() })
                }
                Some(_) => request.notes.push(format!("at most {MAX_FILTERS} filters; {part} ignored")),
                None => {
                    let known: Vec<&str> = Filter::ALL.iter().map(|f| f.name()).collect();
                    request.notes.push(format!("{name}: is not a filter (filters: {})", known.join(", ")));
                }
            }
            continue;
        }
        if request.words.len() < MAX_SEARCH_WORDS {
            request.words.push(part.to_lowercase());
        } else {
            request.notes.push(format!("at most {MAX_SEARCH_WORDS} words; {part:?} ignored"));
        }
    }
    request
}

/// A dtype's short name (`bfloat16` and `bf16` are one), lower-cased, for comparing dtypes.
pub fn dtype_short(name: &str) -> String {
    let name = name.trim().to_lowercase();
    let short = match name.as_str() {
        "bfloat16" => "bf16",
        "float16" | "half" | "f16" => "fp16",
        "float32" | "float" | "f32" => "fp32",
        "float64" | "double" | "f64" => "fp64",
        "float8_e4m3fn" | "float8_e4m3" | "e4m3" => "fp8_e4m3",
        "float8_e5m2" | "e5m2" => "fp8_e5m2",
        other => other,
    };
    short.to_string()
}

/// Longest word [`edit_distance_within`] compares; a longer one is never within reach.
pub const MAX_EDIT_WORD_CHARS: usize = 64;

/// The number of single-character edits (insert, delete, substitute) between `a` and `b`, when
/// it is at most `most`; None when it is more, or when either word is longer than
/// [`MAX_EDIT_WORD_CHARS`]. Allocates nothing and stops as soon as every path costs more, so a
/// typo is checked against a whole vocabulary quickly.
pub fn edit_distance_within(a: &str, b: &str, most: usize) -> Option<usize> {
    let (a_chars, b_chars) = (a.chars().count(), b.chars().count());
    if a_chars.abs_diff(b_chars) > most || a_chars > MAX_EDIT_WORD_CHARS || b_chars > MAX_EDIT_WORD_CHARS {
        return None;
    }
    let mut previous = [0usize; MAX_EDIT_WORD_CHARS + 1];
    let mut current = [0usize; MAX_EDIT_WORD_CHARS + 1];
    for (j, cell) in previous.iter_mut().enumerate().take(b_chars + 1) {
        *cell = j;
    }
    for (i, ca) in a.chars().enumerate() {
        current[0] = i + 1;
        let mut least = current[0];
        for (j, cb) in b.chars().enumerate() {
            current[j + 1] = (previous[j] + usize::from(ca != cb)).min(previous[j + 1] + 1).min(current[j] + 1);
            least = least.min(current[j + 1]);
        }
        if least > most {
            return None;
        }
        std::mem::swap(&mut previous, &mut current);
    }
    Some(previous[b_chars]).filter(|&d| d <= most)
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
    fn the_search_grammar_reads_words_filters_and_axes() {
        let request = parse_search("gqa decode GPU:H200 batch_size=16 trust:verified sha256:abcd colour:red dtype:");
        assert_eq!(request.words, ["gqa", "decode", "sha256:abcd"]);
        assert_eq!(request.values(Filter::Gpu).collect::<Vec<_>>(), ["h200"]);
        assert_eq!(request.values(Filter::Trust).collect::<Vec<_>>(), ["verified"]);
        assert_eq!(request.axes["batch_size"], json!(16));
        assert_eq!(request.notes.len(), 2, "{:?}", request.notes);
        assert!(request.notes[0].starts_with("colour: is not a filter (filters: gpu, dtype, arch"));
        assert_eq!(request.notes[1], "dtype: needs a value");
        let request = parse_search("gemm n=4096 k=4096 gpu:b200 licence:mit");
        assert_eq!(request.axes.len(), 2);
        assert_eq!(request.values(Filter::License).collect::<Vec<_>>(), ["mit"]);
        assert!(parse_search("  ").is_empty());
        assert!(parse_search("a=").notes[0].contains("is not axis=value"));
        let many = parse_search(&"w ".repeat(100));
        assert_eq!(many.words.len(), MAX_SEARCH_WORDS);
        assert_eq!(parse_search(&"gpu:x ".repeat(40)).filters.len(), MAX_FILTERS);
    }

    #[test]
    fn dtype_names_have_one_short_form() {
        assert_eq!(dtype_short("BFloat16"), dtype_short("bf16"));
        assert_eq!(dtype_short("float16"), "fp16");
        assert_eq!(dtype_short("int32"), "int32");
    }

    #[test]
    fn edit_distance_counts_single_character_edits() {
        assert_eq!(edit_distance_within("rmsnrom", "rmsnorm", 2), Some(2));
        assert_eq!(edit_distance_within("rmsnrom", "rmsnorm", 1), None);
        assert_eq!(edit_distance_within("gema", "gemm", 2), Some(1));
        assert_eq!(edit_distance_within("", "abc", 3), Some(3));
        assert_eq!(edit_distance_within("", "abc", 2), None);
        assert_eq!(edit_distance_within("µs", "us", 2), Some(1));
        assert_eq!(edit_distance_within("kitten", "sitting", 3), Some(3));
        assert_eq!(edit_distance_within("decode", "decode", 0), Some(0));
        let long = "a".repeat(MAX_EDIT_WORD_CHARS + 1);
        assert_eq!(edit_distance_within(&long, &long, 2), None);
    }

    #[test]
    fn dtypes_are_split_and_capped() {
        assert_eq!(parse_dtypes("bfloat16, float32,,int8"), ["bfloat16", "float32", "int8"]);
        assert_eq!(parse_dtypes(&"x,".repeat(50)).len(), MAX_DTYPES);
    }
}
