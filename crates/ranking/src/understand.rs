//! Plain words read into what people mean (issue 34): `gqa paged decode h200 batch 16`,
//! `rms norm hidden 4096`, `llama 3.1 8b`, `flashinfer h200`. A [`Lexicon`] is built once per
//! read model from the catalog's names (operations, their aliases and families, GPUs, models
//! from the operations' `model:` tags, projects, implementations, languages, axis names);
//! [`understand`] reads a query against it: GPU names and aliases, model names in any spelling,
//! dtypes, loose axes (`hidden 4096` → `hidden_size=4096`, `bs=16` → `batch_size=16`), trust
//! words, projects and implementations become filters; the words left name the operation, each
//! with the common names it stands for (`matmul` finds `gemm`, `attention` finds `gqa` and
//! `mla`). A word none of these know is corrected to the nearest word of the whole lexicon
//! (optimal string alignment distance, `strsim`), or named as matching nothing.
//!
//! Pure and bounded: the grammar of [`crate::query`] caps words, filters and axes, and a phrase
//! is at most [`MAX_PHRASE_WORDS`] words; reading a query costs a few look-ups per word and one
//! pass over the lexicon's words for a word it must correct.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;
use serde_json::Value;

use crate::query::{Filter, SearchFilter, SearchRequest, dtype_short, parse_search};

/// Longest phrase (in words) a GPU or model name is read from.
pub const MAX_PHRASE_WORDS: usize = 5;

/// A longer word is no name the lexicon holds: it is named as matching nothing, unread.
pub const MAX_WORD_CHARS: usize = 64;

/// Words a query reads beyond the grammar's free words: `parse_search` keeps eight, and a
/// phrase such as `llama 3.1 8b` or `hidden 4096` spends several.
pub const MAX_PLAIN_WORDS: usize = 16;

/// The names of one operation, as the lexicon reads them.
#[derive(Debug, Clone, Default)]
pub struct OperationNames<'a> {
    pub name: &'a str,
    pub slug: &'a str,
    pub family: &'a str,
    pub aliases: Vec<&'a str>,
    /// The values of its `model:` tags (`llama-3-1-8b`).
    pub models: Vec<&'a str>,
    /// Its axis names.
    pub axes: Vec<&'a str>,
}

/// What a [`Lexicon`] is built from: the catalog's names.
#[derive(Debug, Clone, Default)]
pub struct LexiconParts<'a> {
    pub operations: Vec<OperationNames<'a>>,
    /// GPU models as runs name them (`NVIDIA H200`).
    pub gpus: Vec<&'a str>,
    /// Projects: name and slug.
    pub projects: Vec<(&'a str, &'a str)>,
    /// Implementation slugs.
    pub implementations: Vec<&'a str>,
    /// Implementation languages (`cuda`, `python`).
    pub languages: Vec<&'a str>,
}

/// A meaning a word of the lexicon has; the order is the order a typo's candidates are preferred in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Operation,
    Gpu,
    Model,
    Dtype,
    Trust,
    Project,
    Implementation,
    Language,
    Axis,
}

/// The dtypes a word may name (their short forms, [`dtype_short`]).
const DTYPES: [&str; 12] =
    ["bf16", "fp16", "fp32", "fp64", "fp8", "fp8_e4m3", "fp8_e5m2", "fp4", "int8", "int4", "int32", "int64"];

/// Words and phrases with the operation words they stand for (each an alternative the search
/// looks for): the common names of operation families.
const SYNONYMS: [(&str, &[&str]); 14] = [
    ("attention", &["attention", "gqa", "mla", "dsa"]),
    ("attn", &["attention", "gqa", "mla", "dsa"]),
    ("matmul", &["gemm", "matmul"]),
    ("gemm", &["gemm", "matmul"]),
    ("mm", &["gemm", "matmul"]),
    ("rms norm", &["rmsnorm", "rms_norm"]),
    ("rms_norm", &["rmsnorm", "rms_norm"]),
    ("rmsnorm", &["rmsnorm", "rms_norm"]),
    ("layer norm", &["layernorm", "layer_norm"]),
    ("layernorm", &["layernorm", "layer_norm"]),
    ("rotary", &["rope", "rotary"]),
    ("convolution", &["conv", "convolution"]),
    ("mixture of experts", &["moe"]),
    ("top k", &["top_k", "topk"]),
];

/// Loose names of axes (`bs=16`, `seqlen 512`), before the prefix rule.
const AXIS_ALIASES: [(&str, &str); 6] = [
    ("bs", "batch_size"),
    ("batch", "batch_size"),
    ("seqlen", "seq_len"),
    ("seq", "seq_len"),
    ("tokens", "num_tokens"),
    ("experts", "num_experts"),
];

const TRUST_WORDS: [&str; 4] = ["reported", "reproducible", "verified", "replicated"];

/// Words of a GPU's name that are not its model (`NVIDIA H200` is `h200`).
const GPU_VENDOR_WORDS: [&str; 6] = ["nvidia", "amd", "instinct", "tesla", "geforce", "intel"];
/// Variants a GPU is sold as, read as the GPU (`H100 SXM` is the H100).
const GPU_VARIANTS: [&str; 8] = ["sxm", "sxm4", "sxm5", "pcie", "nvl", "80gb", "141gb", "gpu"];
/// What follows a model's name in a checkpoint's name (`Llama-3.1-8B-Instruct`).
const MODEL_SUFFIXES: [&str; 7] = ["instruct", "it", "chat", "base", "hf", "fp8", "bf16"];
/// Project names people type for the project's own.
const PROJECT_ALIASES: [(&str, &str); 2] = [("torch", "pytorch"), ("cublas", "pytorch")];

pub use ki_model::search_text::fold;

/// The catalog's vocabulary, built once per read model.
#[derive(Debug, Default)]
pub struct Lexicon {
    /// Folded GPU key (`h200`, `nvidiah200`, `h100sxm`) → the GPU's name.
    gpus: HashMap<String, String>,
    /// Folded model key (`llama318b`) → the tag's value (`llama-3-1-8b`).
    models: BTreeMap<String, String>,
    /// Folded project name or slug → the project's name.
    projects: HashMap<String, String>,
    /// Words of implementation slugs (letters only, 3 or more) → how many implementations.
    implementation_words: HashMap<String, usize>,
    languages: BTreeSet<String>,
    /// Axis name → how many operations have it.
    axes: HashMap<String, usize>,
    /// Words of operation names, slugs, aliases and families (split at anything not a letter
    /// or digit), and the whole names lower-cased.
    operation_words: BTreeSet<String>,
    /// Every single word the lexicon knows, with its kind: what a typo is corrected to.
    words: Vec<(String, Kind)>,
}

impl Lexicon {
    pub fn new(parts: &LexiconParts<'_>) -> Lexicon {
        let mut lexicon = Lexicon::default();
        for gpu in &parts.gpus {
            let lower = gpu.to_lowercase();
            let model: Vec<&str> = lower.split_whitespace().filter(|w| !GPU_VENDOR_WORDS.contains(w)).collect();
            let model = fold(&model.join(" "));
            let mut keys = vec![fold(gpu)];
            if !model.is_empty() {
                keys.push(model.clone());
                keys.extend(GPU_VARIANTS.iter().map(|v| format!("{model}{v}")));
            }
            for key in keys {
                lexicon.gpus.entry(key).or_insert_with(|| gpu.to_string());
            }
        }
        for op in &parts.operations {
            for model in &op.models {
                lexicon.models.entry(fold(model)).or_insert_with(|| model.to_lowercase());
            }
            for axis in &op.axes {
                *lexicon.axes.entry(axis.to_string()).or_default() += 1;
            }
            for name in [op.name, op.slug, op.family].into_iter().chain(op.aliases.iter().copied()) {
                let lower = name.to_lowercase();
                lexicon
                    .operation_words
                    .extend(lower.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_string));
                lexicon.operation_words.insert(lower);
            }
        }
        for (name, slug) in &parts.projects {
            for key in [fold(name), fold(slug)] {
                if !key.is_empty() {
                    lexicon.projects.entry(key).or_insert_with(|| name.to_string());
                }
            }
        }
        for slug in &parts.implementations {
            for word in slug.split(|c: char| !c.is_alphanumeric()) {
                if word.chars().count() >= 3 && word.chars().all(char::is_alphabetic) {
                    *lexicon.implementation_words.entry(word.to_lowercase()).or_default() += 1;
                }
            }
        }
        lexicon.languages = parts.languages.iter().map(|l| l.to_lowercase()).filter(|l| l != "unknown").collect();
        let mut words: BTreeMap<String, Kind> = BTreeMap::new();
        let mut add = |word: &str, kind: Kind| {
            if word.chars().count() >= 3 && !word.chars().all(|c| c.is_ascii_digit()) {
                let have = words.entry(word.to_string()).or_insert(kind);
                *have = (*have).min(kind);
            }
        };
        for word in &lexicon.operation_words {
            if !word.contains(|c: char| !c.is_alphanumeric()) {
                add(word, Kind::Operation);
            }
        }
        for (synonym, _) in SYNONYMS {
            if !synonym.contains(' ') {
                add(synonym, Kind::Operation);
            }
        }
        for key in lexicon.gpus.keys() {
            add(key, Kind::Gpu);
        }
        for model in lexicon.models.values() {
            for word in model.split('-') {
                add(word, Kind::Model);
            }
        }
        for dtype in DTYPES.iter().chain(&["bfloat16", "float16", "float32"]) {
            add(dtype, Kind::Dtype);
        }
        for trust in TRUST_WORDS {
            add(trust, Kind::Trust);
        }
        for key in lexicon.projects.keys() {
            add(key, Kind::Project);
        }
        for word in lexicon.implementation_words.keys() {
            add(word, Kind::Implementation);
        }
        for language in &lexicon.languages {
            add(language, Kind::Language);
        }
        for axis in lexicon.axes.keys() {
            add(axis, Kind::Axis);
            // The loose name too (`hidden` of `hidden_size`), so that `hiden 4096` is corrected.
            if let Some((loose, _)) = axis.split_once('_') {
                add(loose, Kind::Axis);
            }
        }
        for (alias, _) in AXIS_ALIASES {
            add(alias, Kind::Axis);
        }
        lexicon.words = words.into_iter().collect();
        lexicon
    }

    /// The axis a loose name stands for: an alias (`bs`, `batch`: some operations have an axis
    /// `batch`, but people mean `batch_size`), the name itself, or the most common axis that
    /// starts with it and `_` (`hidden` → `hidden_size`). The operation answered may still
    /// spell it otherwise: [`axis_for`] maps it to that operation's own axes.
    pub fn axis_named(&self, name: &str) -> Option<String> {
        let name = name.to_lowercase();
        if let Some((_, axis)) = AXIS_ALIASES.iter().find(|(alias, _)| *alias == name) {
            return Some(axis.to_string());
        }
        if self.axes.contains_key(&name) {
            return Some(name);
        }
        if name.chars().count() < 3 {
            return None;
        }
        let prefix = format!("{name}_");
        self.axes
            .iter()
            .filter(|(axis, _)| axis.starts_with(&prefix))
            .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
            .map(|(axis, _)| axis.clone())
    }

    /// Whether a word is one the operations' names hold (whole, or inside a word of them).
    fn names_operation(&self, word: &str) -> bool {
        self.operation_words.contains(word)
            || (word.chars().count() >= 3 && self.operation_words.iter().any(|w| w.contains(word)))
    }

    /// The GPU a name as people write it stands for (`H200`, `h200`, `NVIDIA H200`, `H100 SXM`,
    /// `h100 80gb hbm3`): the whole name, else its longest run of words that names one GPU.
    pub fn gpu_named(&self, text: &str) -> Option<&str> {
        if let Some(gpu) = self.gpu(&fold(text)) {
            return Some(gpu);
        }
        let words: Vec<String> = text.split_whitespace().map(str::to_lowercase).take(MAX_PLAIN_WORDS).collect();
        (0..words.len()).find_map(|at| phrase(&words, at, |folded, _| self.gpu(folded)).map(|(_, gpu)| gpu))
    }

    /// The GPU a folded phrase names.
    fn gpu(&self, folded: &str) -> Option<&str> {
        self.gpus.get(folded).map(String::as_str)
    }

    /// The model a folded phrase names, exactly or with a checkpoint suffix (`instruct`).
    fn model(&self, folded: &str) -> Option<&str> {
        if let Some(model) = self.models.get(folded) {
            return Some(model);
        }
        MODEL_SUFFIXES.iter().find_map(|suffix| {
            let bare = folded.strip_suffix(suffix)?;
            self.models.get(bare).map(String::as_str)
        })
    }

    /// Whether some model's key starts with this folded word (`llama`, `qwen3`).
    fn model_prefix(&self, folded: &str) -> bool {
        folded.chars().count() >= 4
            && self.models.range(folded.to_string()..).next().is_some_and(|(key, _)| key.starts_with(folded))
    }

    fn project(&self, word: &str) -> Option<&str> {
        let folded = fold(word);
        let folded = PROJECT_ALIASES.iter().find(|(alias, _)| *alias == folded).map_or(folded, |(_, p)| p.to_string());
        self.projects.get(&folded).map(String::as_str)
    }

    /// The nearest word of the lexicon to a word it does not know: at most one edit for a word
    /// of 4 or 5 characters, two from 6 (none under 4); on a tie the kind listed first
    /// ([`Kind`]), then the first in code-point order.
    fn correct(&self, word: &str) -> Option<(&str, Kind)> {
        let length = word.chars().count();
        let most = match length {
            0..=3 => return None,
            4..=5 => 1,
            _ => 2,
        };
        self.words
            .iter()
            .filter(|(candidate, _)| candidate.chars().count().abs_diff(length) <= most)
            .filter_map(|(candidate, kind)| {
                let distance = strsim::osa_distance(word, candidate);
                (distance <= most).then_some((distance, *kind, candidate.as_str()))
            })
            .min()
            .map(|(_, kind, candidate)| (candidate, kind))
    }
}

/// The axis of one operation (its axis names, `axes`) that a query's axis name stands for:
/// the name itself, else the axis its loose part (before the first `_`) or its alias names
/// (`batch_size` → the operation's `batch`, `hidden_size` → its `hidden_dim`); None when the
/// operation has none such.
pub fn axis_for(name: &str, axes: &[&str]) -> Option<String> {
    if axes.contains(&name) {
        return Some(name.to_string());
    }
    let loose = name.split_once('_').map_or(name, |(loose, _)| loose);
    let aliases = AXIS_ALIASES.iter().filter(|(_, axis)| *axis == name).map(|(alias, _)| *alias);
    let names: Vec<&str> = std::iter::once(loose).chain(aliases).collect();
    if let Some(axis) = axes.iter().find(|axis| names.contains(axis)) {
        return Some(axis.to_string());
    }
    let mut prefixed: Vec<&str> =
        axes.iter().copied().filter(|axis| axis.split_once('_').is_some_and(|(head, _)| head == loose)).collect();
    prefixed.sort_by_key(|axis| (axis.len(), *axis));
    prefixed.first().map(|axis| axis.to_string())
}

/// A filter or axis the query was read to ask for, shown as a chip the reader can remove.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Chip {
    /// `gpu`, `model`, `dtype`, `trust`, `project`, `implementation`, `language`, `axis`, or
    /// the name of a `filter:` the query wrote.
    pub kind: String,
    /// What it means, in words (`NVIDIA H200`, `hidden_size = 4096`).
    pub label: String,
    /// What the query said for it.
    pub typed: String,
    /// The query without it.
    pub without: String,
}

/// A query as [`understand`] read it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Understood {
    /// The request the index is asked: the filters and axes the words meant joined to those
    /// written as `filter:value` and `axis=N`; its words are the operation words (the first
    /// alternative of each term) and the words kept as identifiers (run ids, digests, external ids).
    /// Not serialized: a search's answer carries it once, as its own `request`.
    #[serde(skip)]
    pub request: SearchRequest,
    /// The operation words, each with the alternatives it stands for (`matmul`: gemm, matmul).
    pub terms: Vec<Vec<String>>,
    /// Words kept whole to look runs up by (ids, prefixes, digests, external ids).
    pub identifiers: Vec<String>,
    /// Every filter and axis the query asked for.
    pub chips: Vec<Chip>,
    /// Words that matched nothing the index knows, as typed.
    pub unknown: Vec<String>,
    /// Words read as another word: (typed, read as).
    pub corrections: Vec<(String, String)>,
    /// The query with every correction made, when there was one.
    pub corrected: Option<String>,
}

/// What one span of the query's words means.
enum Meaning {
    Filter(Filter, String, String),
    Axis(String, Value),
    Term(Vec<String>),
    Identifier,
    Unknown,
}

/// Whether a word names a run rather than a thing: a digest, an id or id prefix (hex digits and
/// dashes, 8 or more, with a digit), an external id (`submission/555004`).
fn is_identifier(word: &str) -> bool {
    word.starts_with("sha256:")
        || word.contains('/')
        || (word.len() >= 8
            && word.chars().all(|c| c.is_ascii_hexdigit() || c == '-')
            && word.chars().any(|c| c.is_ascii_digit())
            && !word.chars().all(|c| c.is_ascii_digit()))
}

fn number(word: &str) -> Option<Value> {
    if let Ok(i) = word.parse::<i64>() {
        return Some(Value::from(i));
    }
    word.parse::<f64>().ok().filter(|f| f.is_finite()).map(Value::from)
}

/// The span of `words` starting at `at` a GPU, model or synonym phrase takes, longest first.
fn phrase<'a>(words: &[String], at: usize, test: impl Fn(&str, &str) -> Option<&'a str>) -> Option<(usize, &'a str)> {
    let longest = (words.len() - at).min(MAX_PHRASE_WORDS);
    (1..=longest).rev().find_map(|n| {
        let spaced = words[at..at + n].join(" ");
        test(&fold(&spaced), &spaced).map(|found| (n, found))
    })
}

/// One word's meaning when it is read alone (or after its correction).
fn word_meaning(lexicon: &Lexicon, word: &str) -> Option<Meaning> {
    if TRUST_WORDS.contains(&word) {
        return Some(Meaning::Filter(Filter::Trust, word.to_string(), word.to_string()));
    }
    let folded = fold(word);
    if let Some(gpu) = lexicon.gpu(&folded) {
        return Some(Meaning::Filter(Filter::Gpu, gpu.to_lowercase(), gpu.to_string()));
    }
    if let Some(model) = lexicon.model(&folded) {
        return Some(Meaning::Filter(Filter::Model, model.to_string(), model.to_string()));
    }
    if let Some((_, alternatives)) = SYNONYMS.iter().find(|(name, _)| *name == word) {
        return Some(Meaning::Term(alternatives.iter().map(|a| a.to_string()).collect()));
    }
    let short = dtype_short(word);
    if DTYPES.contains(&short.as_str()) && !lexicon.operation_words.contains(word) {
        return Some(Meaning::Filter(Filter::Dtype, short.clone(), short));
    }
    if lexicon.names_operation(word) {
        return Some(Meaning::Term(vec![word.to_string()]));
    }
    if !folded.chars().all(|c| c.is_ascii_digit()) && lexicon.model_prefix(&folded) {
        return Some(Meaning::Filter(Filter::Model, folded.clone(), format!("{folded}…")));
    }
    if let Some(project) = lexicon.project(word) {
        return Some(Meaning::Filter(Filter::Project, project.to_lowercase(), project.to_string()));
    }
    if lexicon.implementation_words.contains_key(word) {
        return Some(Meaning::Filter(Filter::Implementation, word.to_string(), word.to_string()));
    }
    if lexicon.languages.contains(word) {
        return Some(Meaning::Filter(Filter::Language, word.to_string(), word.to_string()));
    }
    None
}

/// Reads a query: the grammar of [`parse_search`] first, then its free words as plain words.
/// Never fails; what it cannot read is named in `unknown` or in the request's notes.
pub fn understand(query: &str, lexicon: &Lexicon) -> Understood {
    let parsed = parse_search(query);
    let mut out = Understood::default();
    // The grammar's cap on free words is this reader's own (MAX_PLAIN_WORDS): its note is not repeated.
    let capped = format!("at most {} words", crate::query::MAX_SEARCH_WORDS);
    let notes = parsed.notes.iter().filter(|n| !n.starts_with(&capped)).cloned().collect();
    let mut request = SearchRequest { notes, ..SearchRequest::default() };
    // The query's parts, each with what it became, so that a chip can give the query without it.
    let parts: Vec<&str> = query.split_whitespace().collect();
    let without = |skip: &[usize]| -> String {
        parts.iter().enumerate().filter(|(i, _)| !skip.contains(i)).map(|(_, p)| *p).collect::<Vec<_>>().join(" ")
    };
    // The free words, with the index of the part each came from.
    let mut free: Vec<(usize, String)> = Vec::new();
    for (at, part) in parts.iter().enumerate() {
        if let Some((name, value)) = part.split_once('=') {
            let Ok(axes) = crate::query::parse_axes(part) else { continue };
            if request.axes.len() >= crate::query::MAX_AXES {
                continue;
            }
            for (axis, value_parsed) in axes {
                let axis = lexicon.axis_named(&axis).unwrap_or(axis);
                out.chips.push(Chip {
                    kind: "axis".into(),
                    label: format!("{axis} = {}", scalar(&value_parsed)),
                    typed: format!("{name}={value}"),
                    without: without(&[at]),
                });
                request.axes.insert(axis, value_parsed);
            }
            continue;
        }
        if let Some((name, value)) = part.split_once(':')
            && !name.eq_ignore_ascii_case("sha256")
        {
            let wanted = value.to_lowercase();
            if let Some(filter) =
                parsed.filters.iter().find(|f| f.filter.name() == name.to_lowercase() && f.value == wanted)
                && request.filters.len() < crate::query::MAX_FILTERS
            {
                request.filters.push(filter.clone());
                out.chips.push(Chip {
                    kind: filter.filter.name().into(),
                    label: value.to_string(),
                    typed: part.to_string(),
                    without: without(&[at]),
                });
            }
            continue;
        }
        if free.len() < MAX_PLAIN_WORDS {
            free.push((at, part.to_lowercase()));
        } else if free.len() == MAX_PLAIN_WORDS {
            request.notes.push(format!("at most {MAX_PLAIN_WORDS} words; the rest are ignored"));
            free.push((at, String::new()));
        }
    }
    free.retain(|(_, w)| !w.is_empty());
    let words: Vec<String> = free.iter().map(|(_, w)| w.clone()).collect();
    let mut corrected_words: Vec<(usize, String)> = Vec::new();
    let mut at = 0;
    while at < words.len() {
        let word = words[at].as_str();
        let (taken, meaning) = read_at(lexicon, &words, at, &mut out, &mut corrected_words, free[at].0);
        let spans: Vec<usize> = free[at..at + taken].iter().map(|(p, _)| *p).collect();
        let typed = parts_text(&parts, &spans);
        match meaning {
            Meaning::Filter(filter, value, label) => {
                let duplicate = request.filters.iter().any(|f| f.filter == filter && f.value == value);
                if !duplicate && request.filters.len() < crate::query::MAX_FILTERS {
                    request.filters.push(SearchFilter { filter, value });
                    out.chips.push(Chip { kind: filter.name().into(), label, typed, without: without(&spans) });
                }
            }
            Meaning::Axis(axis, value) => {
                out.chips.push(Chip {
                    kind: "axis".into(),
                    label: format!("{axis} = {}", scalar(&value)),
                    typed,
                    without: without(&spans),
                });
                request.axes.insert(axis, value);
            }
            Meaning::Term(alternatives) => {
                if !out.terms.contains(&alternatives) {
                    request.words.push(alternatives[0].clone());
                    out.terms.push(alternatives);
                }
            }
            Meaning::Identifier => {
                out.identifiers.push(word.to_string());
                request.words.push(word.to_string());
            }
            Meaning::Unknown => out.unknown.push(typed),
        }
        at += taken;
    }
    if !corrected_words.is_empty() {
        let mut text: Vec<String> = parts.iter().map(|p| p.to_string()).collect();
        for (part, word) in &corrected_words {
            text[*part] = word.clone();
        }
        out.corrected = Some(text.join(" "));
    }
    out.request = request;
    out
}

fn parts_text(parts: &[&str], spans: &[usize]) -> String {
    spans.iter().map(|&i| parts[i]).collect::<Vec<_>>().join(" ")
}

/// What the words from `at` mean, and how many words that takes.
fn read_at(
    lexicon: &Lexicon,
    words: &[String],
    at: usize,
    out: &mut Understood,
    corrected: &mut Vec<(usize, String)>,
    part: usize,
) -> (usize, Meaning) {
    let word = words[at].as_str();
    if is_identifier(word) {
        return (1, Meaning::Identifier);
    }
    // Operators, quotes, brackets: no name holds them, and nothing is guessed from them.
    if word.chars().count() > MAX_WORD_CHARS || !word.chars().all(|c| c.is_alphanumeric() || "_-.+".contains(c)) {
        return (1, Meaning::Unknown);
    }
    // A loose axis: `hidden 4096`, `batch 16`, `bs 16`.
    if let (Some(axis), Some(value)) = (lexicon.axis_named(word), words.get(at + 1).and_then(|w| number(w)))
        && lexicon.gpu(&fold(word)).is_none()
    {
        return (2, Meaning::Axis(axis, value));
    }
    // Phrases: a GPU (`h100 sxm`), a model (`llama 3.1 8b`), a synonym (`rms norm`).
    if let Some((n, gpu)) = phrase(words, at, |folded, _| lexicon.gpu(folded)) {
        return (n, Meaning::Filter(Filter::Gpu, gpu.to_lowercase(), gpu.to_string()));
    }
    if let Some((n, model)) = phrase(words, at, |folded, _| lexicon.model(folded)) {
        return (n, Meaning::Filter(Filter::Model, model.to_string(), model.to_string()));
    }
    let synonym =
        phrase(words, at, |_, spaced| SYNONYMS.iter().find(|(name, _)| *name == spaced).map(|(name, _)| *name));
    if let Some((n, name)) = synonym.filter(|(n, _)| *n > 1) {
        let alternatives = SYNONYMS.iter().find(|(s, _)| *s == name).map_or(&[][..], |(_, a)| *a);
        return (n, Meaning::Term(alternatives.iter().map(|a| a.to_string()).collect()));
    }
    if let Some(meaning) = word_meaning(lexicon, word) {
        return (1, meaning);
    }
    if let Some((fixed, _)) = lexicon.correct(word) {
        let fixed = fixed.to_string();
        // A corrected axis name takes its value as the axis would.
        if let (Some(axis), Some(value)) = (lexicon.axis_named(&fixed), words.get(at + 1).and_then(|w| number(w))) {
            out.corrections.push((word.to_string(), fixed.clone()));
            corrected.push((part, fixed));
            return (2, Meaning::Axis(axis, value));
        }
        if let Some(meaning) = word_meaning(lexicon, &fixed) {
            out.corrections.push((word.to_string(), fixed.clone()));
            corrected.push((part, fixed));
            return (1, meaning);
        }
    }
    // A number no axis took: part of an operation's name when one holds it (`gemm 4096`).
    if number(word).is_some() && lexicon.names_operation(word) {
        return (1, Meaning::Term(vec![word.to_string()]));
    }
    (1, Meaning::Unknown)
}

/// An axis value as a person writes it (`16`, `0.5`, `x`).
fn scalar(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lexicon() -> Lexicon {
        let op = |name: &'static str, family: &'static str, models: Vec<&'static str>, axes: Vec<&'static str>| {
            OperationNames { name, slug: name, family, aliases: vec![], models, axes }
        };
        Lexicon::new(&LexiconParts {
            operations: vec![
                op(
                    "gqa_paged_decode_h32_kv4_d128_ps1",
                    "gqa-paged",
                    vec![],
                    vec!["batch_size", "num_pages", "head_dim"],
                ),
                op("rmsnorm_h4096", "rmsnorm", vec!["llama-3-1-8b"], vec!["batch_size", "hidden_size"]),
                op("gemm_n4096_k4096", "gemm", vec!["llama-3-1-70b"], vec!["m", "n", "k"]),
                op("FP16 matmul", "gemm", vec![], vec!["m", "hidden_dim"]),
                op("moe_topk8", "moe", vec!["qwen3-30b-a3b"], vec!["seq_len", "hidden_size"]),
            ],
            gpus: vec!["NVIDIA H200", "NVIDIA H100", "NVIDIA B200", "AMD Instinct MI300X"],
            projects: vec![("FlashInfer", "flashinfer-library"), ("PyTorch", "pytorch")],
            implementations: vec!["flashinfer-notc-8717bd", "triton-rmsnorm-2", "torch-matmul-cublas-641781"],
            languages: vec!["cuda", "python", "unknown"],
        })
    }

    fn filters(u: &Understood) -> Vec<(String, String)> {
        u.request.filters.iter().map(|f| (f.filter.name().to_string(), f.value.clone())).collect()
    }

    #[test]
    fn gpus_models_dtypes_and_loose_axes_become_filters() {
        let l = lexicon();
        let u = understand("gqa paged decode h200 batch_size=16", &l);
        assert_eq!(u.terms, [vec!["gqa"], vec!["paged"], vec!["decode"]]);
        assert_eq!(filters(&u), [("gpu".to_string(), "nvidia h200".to_string())]);
        assert_eq!(u.request.axes["batch_size"], 16);
        assert!(u.unknown.is_empty() && u.corrected.is_none());

        let u = understand("rms norm hidden 4096 H100 SXM bf16", &l);
        assert_eq!(u.terms, [vec!["rmsnorm", "rms_norm"]]);
        assert_eq!(u.request.axes["hidden_size"], 4096);
        assert_eq!(
            filters(&u),
            [("gpu".to_string(), "nvidia h100".to_string()), ("dtype".to_string(), "bf16".to_string())]
        );
        let gpu = u.chips.iter().find(|c| c.kind == "gpu").unwrap();
        assert_eq!((gpu.label.as_str(), gpu.typed.as_str()), ("NVIDIA H100", "H100 SXM"));
        assert_eq!(gpu.without, "rms norm hidden 4096 bf16");

        for query in ["llama 3.1 8b", "Llama-3.1-8B-Instruct", "LLAMA 3.1 8B instruct"] {
            let u = understand(query, &l);
            assert_eq!(filters(&u), [("model".to_string(), "llama-3-1-8b".to_string())], "{query}");
            assert!(u.terms.is_empty() && u.unknown.is_empty(), "{query}: {u:?}");
        }
        let u = understand("llama", &l);
        assert_eq!(filters(&u), [("model".to_string(), "llama".to_string())]);

        let u = understand("bs=16 batch 32 seq 8", &l);
        assert_eq!(u.request.axes["batch_size"], 32, "the later value wins");
        assert_eq!(u.request.axes["seq_len"], 8);
        assert_eq!(u.chips.iter().filter(|c| c.kind == "axis").count(), 3);
    }

    #[test]
    fn an_axis_is_the_operations_own_spelling() {
        assert_eq!(axis_for("batch_size", &["batch_size", "batch"]).as_deref(), Some("batch_size"));
        assert_eq!(axis_for("batch_size", &["batch", "seq_len"]).as_deref(), Some("batch"));
        assert_eq!(axis_for("batch_size", &["bs", "seq_len"]).as_deref(), Some("bs"));
        assert_eq!(axis_for("hidden_size", &["hidden_dim", "hidden_blocks_x"]).as_deref(), Some("hidden_dim"));
        assert_eq!(axis_for("hidden_size", &["m", "n"]), None);
        assert_eq!(lexicon().axis_named("batch").as_deref(), Some("batch_size"));
        assert_eq!(lexicon().axis_named("hidden").as_deref(), Some("hidden_size"));
    }

    #[test]
    fn common_names_projects_and_trust_words() {
        let l = lexicon();
        let u = understand("attention decode h100", &l);
        assert_eq!(u.terms[0], ["attention", "gqa", "mla", "dsa"]);
        assert_eq!(u.terms[1], ["decode"]);
        let u = understand("matmul", &l);
        assert_eq!(u.terms, [vec!["gemm", "matmul"]]);
        let u = understand("flashinfer h200 verified", &l);
        assert_eq!(
            filters(&u),
            [
                ("project".to_string(), "flashinfer".to_string()),
                ("gpu".to_string(), "nvidia h200".to_string()),
                ("trust".to_string(), "verified".to_string())
            ]
        );
        let u = understand("torch gemm triton cuda", &l);
        assert_eq!(
            filters(&u),
            [
                ("project".to_string(), "pytorch".to_string()),
                ("implementation".to_string(), "triton".to_string()),
                ("language".to_string(), "cuda".to_string())
            ]
        );
    }

    #[test]
    fn typos_are_corrected_against_the_whole_lexicon_and_the_rest_is_named() {
        let l = lexicon();
        let u = understand("rmsnrom h2000 hiden 4096", &l);
        assert_eq!(u.terms, [vec!["rmsnorm", "rms_norm"]]);
        assert_eq!(u.request.axes["hidden_size"], 4096);
        assert_eq!(u.corrected.as_deref(), Some("rmsnorm h200 hidden 4096"));
        assert_eq!(u.corrections.len(), 3);
        let u = understand("gemm zzzzqqq", &l);
        assert_eq!(u.unknown, ["zzzzqqq"]);
        assert_eq!(u.terms, [vec!["gemm", "matmul"]]);
        let u = understand("flashinfr", &l);
        assert_eq!(filters(&u), [("project".to_string(), "flashinfer".to_string())]);
        assert_eq!(u.corrected.as_deref(), Some("flashinfer"));
    }

    #[test]
    fn identifiers_filters_and_odd_input_never_fail() {
        let l = lexicon();
        let u = understand("01a00b1d-572d submission/555004 sha256:abcd gpu:h200 trust:verified", &l);
        assert_eq!(u.identifiers, ["01a00b1d-572d", "submission/555004", "sha256:abcd"]);
        assert_eq!(u.chips.len(), 2);
        assert_eq!(u.chips[0].without, "01a00b1d-572d submission/555004 sha256:abcd trust:verified");
        let u = understand("gemm* NEAR(gqa decode) \"x\"", &l);
        assert_eq!(u.unknown, ["gemm*", "NEAR(gqa", "decode)", "\"x\""], "operators are named, not read");
        assert_eq!(u.terms, Vec::<Vec<String>>::new());
        for query in ["", "   ", "\u{0}\u{7}\u{202e}", &"x".repeat(10_000), &"h200 ".repeat(5000), "= : =: :=", "9 9 9"]
        {
            let u = understand(query, &l);
            assert!(u.terms.len() <= MAX_PLAIN_WORDS && u.chips.len() <= 64, "{}", query.len());
        }
        assert!(understand("", &l).request.is_empty());
    }
}
