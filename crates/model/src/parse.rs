//! Reading manifest text (YAML 1.2 or JSON, which is YAML 1.2) into JSON values.
//!
//! We drive an event parser ourselves instead of deserializing through serde so that the
//! things the record model forbids are visible: a duplicate mapping key (a serde map keeps the
//! last one silently), aliases (counted, so an alias bomb is refused), and every node's source
//! position (so that a later schema problem can name its line). Plain scalars are resolved with
//! the YAML 1.2 core schema: `yes`/`no`/`on`/`off` and `2026-08-01T12:00:00Z` stay strings.

use std::collections::HashMap;

use saphyr_parser::{Event, Marker, Parser, ScalarStyle, Span, Tag};
use serde_json::{Map, Number, Value};

use crate::problem::{Location, Problem, child_pointer};

/// Inputs above this size are refused before parsing (issue 2: "a document over 1 MiB").
pub const MAX_INPUT_BYTES: usize = 1 << 20;
/// More aliases than this in one document are refused (issue 2).
pub const MAX_ALIASES: usize = 100;
/// Deeper nesting is refused: real manifests nest about 6 levels, and the limit keeps every
/// later recursive walk (validation, normalization, dropping the value) far from the stack's end.
pub const MAX_DEPTH: usize = 64;
/// Cap on nodes built per document, aliases expanded. 100 aliases of aliases can otherwise
/// describe 10^10 nodes in a few hundred bytes.
pub const MAX_NODES: usize = 1 << 20;

/// One YAML document of an input, as JSON.
#[derive(Debug, Clone)]
pub struct ParsedDocument {
    /// 0-based position of the document in its file.
    pub index: usize,
    pub value: Value,
    pub source_map: SourceMap,
}

/// Where each node of a document starts in the source text, by JSON pointer.
#[derive(Debug, Clone, Default)]
pub struct SourceMap {
    positions: HashMap<String, Location>,
}

impl SourceMap {
    /// The position of `pointer`, or of its nearest ancestor that has one (a missing field is
    /// reported at its parent object).
    pub fn locate(&self, pointer: &str) -> Option<Location> {
        let mut p = pointer;
        loop {
            if let Some(l) = self.positions.get(p) {
                return Some(*l);
            }
            match p.rfind('/') {
                Some(i) => p = &p[..i],
                None => return None,
            }
        }
    }
}

/// Parses every document of `bytes`. Any problem anywhere (size, encoding, syntax, duplicate
/// key, too many aliases, a number JSON cannot hold) fails the whole input: a bundle is accepted
/// or refused as one.
pub fn parse_documents(bytes: &[u8]) -> Result<Vec<ParsedDocument>, Vec<Problem>> {
    parse_documents_with(bytes, true)
}

/// [`parse_documents`], optionally without building source maps: recording every node's
/// position is most of the cost of parsing and is only needed to locate problems, so callers
/// parse without it first and again with it only when there is something to report.
pub fn parse_documents_with(bytes: &[u8], record_positions: bool) -> Result<Vec<ParsedDocument>, Vec<Problem>> {
    if bytes.len() > MAX_INPUT_BYTES {
        return Err(vec![Problem::new(
            "",
            format!("input is {} bytes; the limit is {} bytes (1 MiB)", bytes.len(), MAX_INPUT_BYTES),
        )]);
    }
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            let offset = e.valid_up_to();
            let location = location_of_byte(bytes, offset);
            return Err(vec![Problem::new("", format!("input is not valid UTF-8 (byte {offset})")).at(Some(location))]);
        }
    };
    if let Some(problem) = nul_byte_problem(bytes) {
        return Err(vec![problem]);
    }
    parse_text(text, record_positions)
}

/// Like [`parse_documents`], for text already decoded.
pub fn parse_str(text: &str) -> Result<Vec<ParsedDocument>, Vec<Problem>> {
    parse_text(text, true)
}

fn parse_text(text: &str, record_positions: bool) -> Result<Vec<ParsedDocument>, Vec<Problem>> {
    if text.len() > MAX_INPUT_BYTES {
        return Err(vec![Problem::new(
            "",
            format!("input is {} bytes; the limit is {} bytes (1 MiB)", text.len(), MAX_INPUT_BYTES),
        )]);
    }
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut builder = Builder { record_positions, ..Builder::default() };
    let mut parser = Parser::new_from_str(text);
    while let Some(next) = parser.next_event() {
        match next {
            Ok((event, span)) => {
                if let Err(fatal) = builder.on_event(event, span) {
                    builder.problems.push(fatal);
                    break;
                }
            }
            Err(e) => {
                let m = e.marker();
                builder.problems.push(
                    Problem::new("", format!("YAML syntax error: {}", e.info()))
                        .at(Some(location(m)))
                        .in_document(builder.documents.len()),
                );
                break;
            }
        }
    }
    if builder.problems.is_empty() { Ok(builder.documents) } else { Err(builder.problems) }
}

fn location(m: &Marker) -> Location {
    Location { line: m.line(), column: m.col() + 1 }
}

/// The first NUL byte of `bytes`, as a problem: YAML and JSON text never holds one, so the
/// input is binary (or `/dev/zero`) and saying so beats a parser's message about it.
pub fn nul_byte_problem(bytes: &[u8]) -> Option<Problem> {
    let offset = bytes.iter().position(|&byte| byte == 0)?;
    Some(
        Problem::new("", format!("byte {offset} is a NUL byte: a manifest is YAML or JSON text, not binary data"))
            .at(Some(location_of_byte(bytes, offset))),
    )
}

fn location_of_byte(bytes: &[u8], offset: usize) -> Location {
    let before = &bytes[..offset];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let line_start = before.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    Location { line, column: offset - line_start + 1 }
}

/// A collection being built; the pointer is its own, the anchor is 0 when it has none, and a
/// pending key is flagged when it duplicates an earlier one.
enum Frame {
    Sequence {
        items: Vec<Value>,
        pointer: String,
        anchor: usize,
    },
    Mapping {
        entries: Map<String, Value>,
        pending_key: Option<(String, bool)>,
        key_lines: HashMap<String, Location>,
        pointer: String,
        anchor: usize,
    },
}

#[derive(Default)]
struct Builder {
    documents: Vec<ParsedDocument>,
    problems: Vec<Problem>,
    stack: Vec<Frame>,
    root: Option<Value>,
    source_map: SourceMap,
    /// Anchored values with their node counts and depths, so an alias costs what it expands
    /// to and cannot nest a document deeper than [`MAX_DEPTH`].
    anchors: HashMap<usize, Anchored>,
    aliases: usize,
    nodes: usize,
    record_positions: bool,
}

struct Anchored {
    value: Value,
    nodes: usize,
    depth: usize,
}

impl Anchored {
    fn new(value: Value) -> Anchored {
        Anchored { nodes: count_nodes(&value), depth: depth_of(&value), value }
    }
}

/// A node-start problem that stops the parse (the rest of the input cannot be trusted).
type Fatal = Problem;

impl Builder {
    fn document_index(&self) -> usize {
        self.documents.len()
    }

    fn problem(&mut self, pointer: &str, message: String, at: Location) {
        let doc = self.document_index();
        self.problems.push(Problem::new(pointer, message).at(Some(at)).in_document(doc));
    }

    fn fatal(&self, pointer: &str, message: String, at: Location) -> Fatal {
        Problem::new(pointer, message).at(Some(at)).in_document(self.document_index())
    }

    /// Whether the next node is a mapping key.
    fn next_is_key(&self) -> bool {
        matches!(self.stack.last(), Some(Frame::Mapping { pending_key: None, .. }))
    }

    /// The pointer the next node will have, and for mappings whether that node is a key.
    fn next_pointer(&self) -> (String, bool) {
        match self.stack.last() {
            None => (String::new(), false),
            Some(Frame::Sequence { items, pointer, .. }) => (format!("{pointer}/{}", items.len()), false),
            Some(Frame::Mapping { pending_key: None, pointer, .. }) => (pointer.clone(), true),
            Some(Frame::Mapping { pending_key: Some((k, _)), pointer, .. }) => (child_pointer(pointer, k), false),
        }
    }

    fn on_event(&mut self, event: Event<'_>, span: Span) -> Result<(), Fatal> {
        let at = location(&span.start);
        match event {
            Event::StreamStart | Event::StreamEnd | Event::Nothing => {}
            Event::DocumentStart(_) => {
                self.root = None;
                self.source_map = SourceMap::default();
                self.anchors.clear();
                self.aliases = 0;
                self.nodes = 0;
            }
            Event::DocumentEnd => {
                let value = self.root.take().unwrap_or(Value::Null);
                let index = self.documents.len();
                self.documents.push(ParsedDocument { index, value, source_map: std::mem::take(&mut self.source_map) });
            }
            Event::Alias(id) => {
                self.aliases += 1;
                let (pointer, is_key) = self.next_pointer();
                // Aliases are rare and limited to 100, so building their pointer costs nothing.
                if self.aliases > MAX_ALIASES {
                    return Err(self.fatal(&pointer, format!("more than {MAX_ALIASES} aliases in one document"), at));
                }
                if is_key {
                    return Err(self.fatal(&pointer, "an alias cannot be a mapping key".into(), at));
                }
                let Some(anchored) = self.anchors.get(&id) else {
                    return Err(self.fatal(&pointer, "alias of an unknown anchor".into(), at));
                };
                let (value, nodes, depth) = (anchored.value.clone(), anchored.nodes, anchored.depth);
                if self.stack.len() + depth > MAX_DEPTH {
                    return Err(self.fatal(
                        &pointer,
                        format!("alias nests the document deeper than {MAX_DEPTH} levels"),
                        at,
                    ));
                }
                self.count_nodes(nodes, at)?;
                self.complete(value, at, 0);
            }
            Event::Scalar(text, style, anchor, tag) => {
                self.count_nodes(1, at)?;
                if self.next_is_key() {
                    if tag.as_deref().is_some_and(|t| !is_string_tag(t)) {
                        let pointer = self.next_pointer().0;
                        return Err(self.fatal(&pointer, format!("mapping key {text:?} must be a string"), at));
                    }
                    let key = text.into_owned();
                    let mut duplicate = None;
                    let record_positions = self.record_positions;
                    if let Some(Frame::Mapping { entries, pending_key, key_lines, pointer: map_pointer, .. }) =
                        self.stack.last_mut()
                    {
                        // A key's first value is already attached when a second key arrives.
                        if entries.contains_key(&key) {
                            let first =
                                key_lines.get(&key).map(|l| format!(" (first at line {})", l.line)).unwrap_or_default();
                            let message = format!("duplicate mapping key {key:?}{first}");
                            duplicate = Some((child_pointer(map_pointer, &key), message));
                            // Keep parsing (the second value is dropped) so later problems are found too.
                            *pending_key = Some((key, true));
                        } else {
                            if record_positions {
                                key_lines.insert(key.clone(), at);
                            }
                            *pending_key = Some((key, false));
                        }
                    }
                    if let Some((p, message)) = duplicate {
                        self.problem(&p, message, at);
                    }
                    if anchor != 0 {
                        self.anchors.insert(anchor, Anchored::new(Value::String(self.current_key())));
                    }
                    return Ok(());
                }
                let value = match resolve_scalar(&text, style, tag.as_deref()) {
                    Ok(v) => v,
                    Err(message) => {
                        let pointer = self.next_pointer().0;
                        self.problem(&pointer, message, at);
                        Value::Null
                    }
                };
                self.complete(value, at, anchor);
            }
            Event::SequenceStart(anchor, tag) => self.open(false, anchor, tag.as_deref(), at)?,
            Event::MappingStart(anchor, tag) => self.open(true, anchor, tag.as_deref(), at)?,
            Event::SequenceEnd | Event::MappingEnd => {
                let Some(frame) = self.stack.pop() else { return Ok(()) };
                let (value, anchor) = match frame {
                    Frame::Sequence { items, anchor, .. } => (Value::Array(items), anchor),
                    Frame::Mapping { entries, anchor, .. } => (Value::Object(entries), anchor),
                };
                self.attach(value, anchor);
            }
        }
        Ok(())
    }

    fn open(&mut self, mapping: bool, anchor: usize, tag: Option<&Tag>, at: Location) -> Result<(), Fatal> {
        let (pointer, is_key) = self.next_pointer();
        if is_key {
            return Err(self.fatal(&pointer, "mapping keys must be plain strings, not collections".into(), at));
        }
        if self.stack.len() >= MAX_DEPTH {
            return Err(self.fatal(&pointer, format!("nesting deeper than {MAX_DEPTH} levels"), at));
        }
        self.count_nodes(1, at)?;
        if self.record_positions {
            self.source_map.positions.insert(pointer.clone(), at);
        }
        self.check_collection_tag(tag, &pointer, at);
        self.stack.push(if mapping {
            Frame::Mapping { entries: Map::new(), pending_key: None, key_lines: HashMap::new(), pointer, anchor }
        } else {
            Frame::Sequence { items: Vec::new(), pointer, anchor }
        });
        Ok(())
    }

    fn current_key(&self) -> String {
        match self.stack.last() {
            Some(Frame::Mapping { pending_key: Some((k, _)), .. }) => k.clone(),
            _ => String::new(),
        }
    }

    fn check_collection_tag(&mut self, tag: Option<&Tag>, pointer: &str, at: Location) {
        if let Some(t) = tag {
            let allowed = (t.is_yaml_core_schema() && (t.suffix == "map" || t.suffix == "seq"))
                || (t.handle == "!" && t.suffix.is_empty());
            if !allowed {
                self.problem(pointer, format!("unsupported YAML tag {t}"), at);
            }
        }
    }

    fn count_nodes(&mut self, n: usize, at: Location) -> Result<(), Fatal> {
        self.nodes += n;
        if self.nodes > MAX_NODES {
            let pointer = self.next_pointer().0;
            return Err(self.fatal(&pointer, format!("document expands to more than {MAX_NODES} nodes"), at));
        }
        Ok(())
    }

    /// Records a finished scalar or alias value.
    fn complete(&mut self, value: Value, at: Location, anchor: usize) {
        if self.record_positions {
            let (pointer, _) = self.next_pointer();
            self.source_map.positions.insert(pointer, at);
        }
        self.attach(value, anchor);
    }

    /// Hands a finished value to its parent (or makes it the document root).
    fn attach(&mut self, value: Value, anchor: usize) {
        if anchor != 0 {
            self.anchors.insert(anchor, Anchored::new(value.clone()));
        }
        match self.stack.last_mut() {
            None => self.root = Some(value),
            Some(Frame::Sequence { items, .. }) => items.push(value),
            Some(Frame::Mapping { entries, pending_key, .. }) => {
                // A duplicate key was reported already; its second value is dropped.
                if let Some((key, false)) = pending_key.take() {
                    entries.insert(key, value);
                }
            }
        }
    }
}

fn count_nodes(value: &Value) -> usize {
    match value {
        Value::Array(a) => 1 + a.iter().map(count_nodes).sum::<usize>(),
        Value::Object(o) => 1 + o.values().map(count_nodes).sum::<usize>(),
        _ => 1,
    }
}

/// Levels of collections in `value` (a scalar is 0). Values here are at most [`MAX_DEPTH`] deep.
fn depth_of(value: &Value) -> usize {
    match value {
        Value::Array(a) => 1 + a.iter().map(depth_of).max().unwrap_or(0),
        Value::Object(o) => 1 + o.values().map(depth_of).max().unwrap_or(0),
        _ => 0,
    }
}

fn is_string_tag(tag: &Tag) -> bool {
    (tag.is_yaml_core_schema() && tag.suffix == "str") || (tag.handle == "!" && tag.suffix.is_empty())
}

/// Resolves a scalar to JSON with the YAML 1.2 core schema (tags `!!str`, `!!int`, `!!float`,
/// `!!bool`, `!!null` honoured; any other tag refused).
fn resolve_scalar(text: &str, style: ScalarStyle, tag: Option<&Tag>) -> Result<Value, String> {
    if let Some(t) = tag {
        if is_string_tag(t) {
            return Ok(Value::String(text.to_owned()));
        }
        if !t.is_yaml_core_schema() {
            return Err(format!("unsupported YAML tag {t}"));
        }
        let resolved = match t.suffix.as_str() {
            "null" => resolve_null(text),
            "bool" => resolve_bool(text),
            "int" => resolve_int(text),
            "float" => resolve_float(text).or_else(|| resolve_int(text)),
            _ => return Err(format!("unsupported YAML tag {t}")),
        };
        return match resolved {
            Some(v) => v,
            None => Err(format!("{text:?} is not a valid {t}")),
        };
    }
    if style != ScalarStyle::Plain {
        return Ok(Value::String(text.to_owned()));
    }
    if let Some(v) = resolve_null(text).or_else(|| resolve_bool(text)) {
        return v;
    }
    if let Some(v) = resolve_int(text) {
        return v;
    }
    if let Some(v) = resolve_float(text) {
        return v;
    }
    Ok(Value::String(text.to_owned()))
}

fn resolve_null(text: &str) -> Option<Result<Value, String>> {
    matches!(text, "" | "~" | "null" | "Null" | "NULL").then_some(Ok(Value::Null))
}

fn resolve_bool(text: &str) -> Option<Result<Value, String>> {
    match text {
        "true" | "True" | "TRUE" => Some(Ok(Value::Bool(true))),
        "false" | "False" | "FALSE" => Some(Ok(Value::Bool(false))),
        _ => None,
    }
}

/// Core-schema integers: decimal `[-+]?[0-9]+`, octal `0o[0-7]+`, hex `0x[0-9a-fA-F]+`.
/// One too large for 64 bits is an error, never a silently rounded float.
fn resolve_int(text: &str) -> Option<Result<Value, String>> {
    let too_large = || Err(format!("integer {text} is too large to represent exactly"));
    if let Some(oct) = text.strip_prefix("0o") {
        if !oct.is_empty() && oct.bytes().all(|b| (b'0'..=b'7').contains(&b)) {
            return Some(u64::from_str_radix(oct, 8).map(Value::from).or_else(|_| too_large()));
        }
        return None;
    }
    if let Some(hex) = text.strip_prefix("0x") {
        if !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Some(u64::from_str_radix(hex, 16).map(Value::from).or_else(|_| too_large()));
        }
        return None;
    }
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let unsigned = text.strip_prefix('+').unwrap_or(text);
    if unsigned.starts_with('-') {
        Some(unsigned.parse::<i64>().map(Value::from).or_else(|_| too_large()))
    } else {
        Some(unsigned.parse::<u64>().map(Value::from).or_else(|_| too_large()))
    }
}

/// Core-schema floats. JSON has no NaN or infinity, so those are errors here.
fn resolve_float(text: &str) -> Option<Result<Value, String>> {
    let body = text.strip_prefix(['-', '+']).unwrap_or(text);
    if matches!(body, ".inf" | ".Inf" | ".INF") || matches!(text, ".nan" | ".NaN" | ".NAN") {
        return Some(Err(format!("{text} is not a finite number (JSON cannot hold it)")));
    }
    if !is_core_float(body) {
        return None;
    }
    let parsed: f64 = match text.parse() {
        Ok(f) => f,
        Err(_) => return None,
    };
    if !parsed.is_finite() {
        return Some(Err(format!("{text} overflows a 64-bit float")));
    }
    Some(Number::from_f64(parsed).map(Value::Number).ok_or_else(|| format!("{text} is not a finite number")))
}

/// `(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?` without the sign.
fn is_core_float(body: &str) -> bool {
    let (mantissa, exponent) = match body.find(['e', 'E']) {
        Some(i) => (&body[..i], Some(&body[i + 1..])),
        None => (body, None),
    };
    let mantissa_ok = match mantissa.split_once('.') {
        Some((int, frac)) => {
            !(int.is_empty() && frac.is_empty())
                && int.bytes().all(|b| b.is_ascii_digit())
                && frac.bytes().all(|b| b.is_ascii_digit())
        }
        None => !mantissa.is_empty() && mantissa.bytes().all(|b| b.is_ascii_digit()),
    };
    let exponent_ok = match exponent {
        None => true,
        Some(e) => {
            let digits = e.strip_prefix(['-', '+']).unwrap_or(e);
            !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
        }
    };
    mantissa_ok && exponent_ok
}

/// One JSON document from outside (a Solution, a queue input, an API body), read strictly:
/// the one JSON reader for what we take from others. Like [`parse_documents`] it refuses a
/// duplicate object key (serde keeps the last one silently), naming its JSON pointer; it also
/// refuses a NUL byte, trailing text and nesting deeper than [`MAX_DEPTH`]. Unlike it, only
/// JSON is accepted (no YAML), and the size limit is the caller's.
pub fn parse_json(bytes: &[u8]) -> Result<Value, Problem> {
    if let Some(problem) = nul_byte_problem(bytes) {
        return Err(problem);
    }
    let bytes = bytes.strip_prefix("\u{feff}".as_bytes()).unwrap_or(bytes);
    let refused = std::cell::RefCell::new(None);
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let seed = StrictSeed { pointer: String::new(), depth: 0, refused: &refused };
    let value = serde::de::DeserializeSeed::deserialize(seed, &mut deserializer).and_then(|value| {
        deserializer.end()?;
        Ok(value)
    });
    value.map_err(|error| match refused.into_inner() {
        Some(problem) => problem,
        None => Problem::new("", format!("invalid JSON: {error}"))
            .at(Some(Location { line: error.line(), column: error.column() })),
    })
}

/// Builds a value, refusing duplicate keys and excess depth; the problem is left in `refused`
/// (serde's error carries only text) and the parse stopped.
struct StrictSeed<'a> {
    pointer: String,
    depth: usize,
    refused: &'a std::cell::RefCell<Option<Problem>>,
}

impl<'de> serde::de::DeserializeSeed<'de> for StrictSeed<'_> {
    type Value = Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        if self.depth > MAX_DEPTH {
            let problem = Problem::new(self.pointer.clone(), format!("nested deeper than {MAX_DEPTH} levels"));
            *self.refused.borrow_mut() = Some(problem);
            return Err(serde::de::Error::custom("too deep"));
        }
        deserializer.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for StrictSeed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        loop {
            let seed = StrictSeed {
                pointer: format!("{}/{}", self.pointer, items.len()),
                depth: self.depth + 1,
                refused: self.refused,
            };
            match seq.next_element_seed(seed)? {
                Some(item) => items.push(item),
                None => return Ok(Value::Array(items)),
            }
        }
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut entries = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let pointer = child_pointer(&self.pointer, &key);
            if entries.contains_key(&key) {
                let problem = Problem::new(pointer, format!("duplicate key {key:?} (each key may appear once)"));
                *self.refused.borrow_mut() = Some(problem);
                return Err(serde::de::Error::custom("duplicate key"));
            }
            let value = map.next_value_seed(StrictSeed { pointer, depth: self.depth + 1, refused: self.refused })?;
            entries.insert(key, value);
        }
        Ok(Value::Object(entries))
    }
}

#[cfg(test)]
mod strict_json_tests {
    use super::*;

    #[test]
    fn duplicate_keys_are_refused_at_their_pointer_at_any_depth() {
        let problem = parse_json(br#"{"name": "a", "spec": {"x": [{"k": 1, "k": 2}]}}"#).unwrap_err();
        assert_eq!(problem.pointer, "/spec/x/0/k");
        assert!(problem.message.contains("duplicate key"), "{problem}");
        assert!(parse_json(br#"{"a": 1, "a": 1}"#).is_err());
        assert_eq!(parse_json(br#"{"a": [1, 2.5, "x", null, true]}"#).unwrap()["a"][1], 2.5);
        assert!(parse_json(b"{} trailing").is_err());
        assert!(parse_json(b"{\"a\":\0}").is_err());
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        assert!(parse_json(deep.as_bytes()).is_err());
    }
}

/// Largest whole number every JSON reader holds exactly: 2^53 - 1.
pub const MAX_EXACT_WHOLE_NUMBER: u64 = (1 << 53) - 1;

/// A JSON number as a whole number the way JSON Schema's `integer` means it: `13` and `13.0`
/// are the same number (JSON has one number type), `13.5`, a negative number and anything
/// above [`MAX_EXACT_WHOLE_NUMBER`] are not whole numbers here.
pub fn whole_number(number: &Number) -> Option<u64> {
    let whole = match number.as_u64() {
        Some(whole) => whole,
        None => {
            let float = number.as_f64()?;
            if float.fract() != 0.0 || !(0.0..=MAX_EXACT_WHOLE_NUMBER as f64).contains(&float) {
                return None;
            }
            float as u64
        }
    };
    (whole <= MAX_EXACT_WHOLE_NUMBER).then_some(whole)
}

/// Deserializes an optional [`whole_number`] (`limit: 13.0` reads as 13); a string, a
/// fraction or a number out of range is an error naming what was expected.
pub fn optional_whole_number<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: TryFrom<u64>,
{
    use serde::Deserialize;
    let Some(number) = Option::<Number>::deserialize(deserializer)? else { return Ok(None) };
    whole_number(&number)
        .and_then(|whole| T::try_from(whole).ok())
        .map(Some)
        .ok_or_else(|| serde::de::Error::custom(format!("expected a whole number from 0 to 2^53 - 1, got {number}")))
}

#[cfg(test)]
mod whole_number_tests {
    use super::*;

    #[test]
    fn whole_numbers_are_read_as_json_schema_reads_integer() {
        let read = |text: &str| whole_number(&serde_json::from_str::<Number>(text).unwrap());
        assert_eq!(read("13"), Some(13));
        assert_eq!(read("13.0"), Some(13));
        assert_eq!(read("1.3e1"), Some(13));
        assert_eq!(read("9007199254740991"), Some(MAX_EXACT_WHOLE_NUMBER));
        assert_eq!(read("9007199254740992"), None);
        assert_eq!(read("9007199254740993"), None);
        assert_eq!(read("13.5"), None);
        assert_eq!(read("-1"), None);
        assert_eq!(read("-0.0"), Some(0));
        assert_eq!(read("1e300"), None);
    }

    #[derive(serde::Deserialize)]
    struct Limited {
        #[serde(default, deserialize_with = "optional_whole_number")]
        limit: Option<usize>,
    }

    #[test]
    fn an_optional_whole_number_field_takes_13_and_13_0_and_refuses_the_rest() {
        let limit = |text: &str| serde_json::from_str::<Limited>(text).map(|l| l.limit).map_err(|e| e.to_string());
        assert_eq!(limit(r#"{"limit": 13}"#), Ok(Some(13)));
        assert_eq!(limit(r#"{"limit": 13.0}"#), Ok(Some(13)));
        assert_eq!(limit(r#"{"limit": null}"#), Ok(None));
        assert_eq!(limit("{}"), Ok(None));
        assert!(limit(r#"{"limit": 13.5}"#).unwrap_err().contains("expected a whole number"));
        assert!(limit(r#"{"limit": "13"}"#).is_err());
    }
}
