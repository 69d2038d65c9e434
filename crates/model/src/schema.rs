//! Checking a manifest against the 13 published kernelindex.dev/v1alpha1 JSON Schemas.
//!
//! The schemas are embedded verbatim (`src/schemas/`, copied from the public registry) and
//! interpreted here, so the check is exactly as strict as the published contract and reports
//! every problem with its JSON pointer, where serde would stop at the first. Only the keywords
//! those schemas use are supported; a schema using another keyword fails a test, not silently.
//! The typed records in [`crate::records`] are then read from the checked value.

use std::collections::HashMap;
use std::sync::OnceLock;

use regex::Regex;
use serde_json::Value;

use crate::problem::{Problem, child_pointer};
use crate::records::Kind;

/// The schema text of `kind`, as published.
pub fn schema_text(kind: Kind) -> &'static str {
    match kind {
        Kind::OperationSpec => include_str!("schemas/operation-spec.v1alpha1.schema.json"),
        Kind::WorkloadCase => include_str!("schemas/workload-case.v1alpha1.schema.json"),
        Kind::WorkloadSuite => include_str!("schemas/workload-suite.v1alpha1.schema.json"),
        Kind::SoftwareProject => include_str!("schemas/software-project.v1alpha1.schema.json"),
        Kind::ImplementationRevision => include_str!("schemas/implementation-revision.v1alpha1.schema.json"),
        Kind::BenchmarkProtocol => include_str!("schemas/benchmark-protocol.v1alpha1.schema.json"),
        Kind::ExecutionEnvironment => include_str!("schemas/execution-environment.v1alpha1.schema.json"),
        Kind::BenchmarkRun => include_str!("schemas/benchmark-run.v1alpha1.schema.json"),
        Kind::ModelRevision => include_str!("schemas/model-revision.v1alpha1.schema.json"),
        Kind::ServingStackRevision => include_str!("schemas/serving-stack-revision.v1alpha1.schema.json"),
        Kind::ServingConfiguration => include_str!("schemas/serving-configuration.v1alpha1.schema.json"),
        Kind::ServingWorkload => include_str!("schemas/serving-workload.v1alpha1.schema.json"),
        Kind::ServingRun => include_str!("schemas/serving-run.v1alpha1.schema.json"),
    }
}

/// Keywords the interpreter understands; anything else in a schema is a bug in this module.
pub const SUPPORTED_KEYWORDS: &[&str] = &[
    "$comment",
    "$id",
    "$schema",
    "title",
    "type",
    "properties",
    "required",
    "additionalProperties",
    "propertyNames",
    "items",
    "prefixItems",
    "anyOf",
    "const",
    "enum",
    "pattern",
    "format",
    "maxLength",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "minItems",
    "maxItems",
];

/// A schema node compiled once: properties in a small vector (a dozen at most, so a scan beats
/// hashing) and patterns as ready regexes.
struct Node {
    type_name: Option<String>,
    any_of: Vec<Node>,
    constant: Option<Value>,
    allowed: Option<Vec<Value>>,
    pattern: Option<(String, Regex)>,
    max_length: Option<u64>,
    minimum: Option<Value>,
    maximum: Option<Value>,
    exclusive_minimum: Option<Value>,
    min_items: Option<u64>,
    max_items: Option<u64>,
    items: Option<Box<Node>>,
    prefix_items: Option<Vec<Node>>,
    properties: Vec<(String, Node)>,
    required: Vec<String>,
    extra_properties: Extra,
    key_pattern: Option<(String, Regex)>,
}

enum Extra {
    Allowed,
    Forbidden,
    Schema(Box<Node>),
}

impl Node {
    fn compile(schema: &Value) -> Node {
        let rules = schema.as_object();
        let get = |k: &str| rules.and_then(|r| r.get(k));
        let pattern_of = |v: Option<&Value>| v.and_then(Value::as_str).map(|p| (p.to_owned(), compile_ecma_pattern(p)));
        Node {
            type_name: get("type").and_then(Value::as_str).map(str::to_owned),
            any_of: get("anyOf")
                .and_then(Value::as_array)
                .map(|b| b.iter().map(Node::compile).collect())
                .unwrap_or_default(),
            constant: get("const").cloned(),
            allowed: get("enum").and_then(Value::as_array).cloned(),
            pattern: pattern_of(get("pattern")),
            max_length: get("maxLength").and_then(Value::as_u64),
            minimum: get("minimum").cloned(),
            maximum: get("maximum").cloned(),
            exclusive_minimum: get("exclusiveMinimum").cloned(),
            min_items: get("minItems").and_then(Value::as_u64),
            max_items: get("maxItems").and_then(Value::as_u64),
            items: get("items").map(|i| Box::new(Node::compile(i))),
            prefix_items: get("prefixItems").and_then(Value::as_array).map(|p| p.iter().map(Node::compile).collect()),
            properties: get("properties")
                .and_then(Value::as_object)
                .map(|p| p.iter().map(|(k, v)| (k.clone(), Node::compile(v))).collect())
                .unwrap_or_default(),
            required: get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).map(str::to_owned).collect())
                .unwrap_or_default(),
            extra_properties: match get("additionalProperties") {
                Some(Value::Bool(false)) => Extra::Forbidden,
                Some(extra @ Value::Object(_)) => Extra::Schema(Box::new(Node::compile(extra))),
                _ => Extra::Allowed,
            },
            key_pattern: pattern_of(get("propertyNames").and_then(|n| n.get("pattern"))),
        }
    }

    fn property(&self, name: &str) -> Option<&Node> {
        self.properties.iter().find(|(k, _)| k == name).map(|(_, n)| n)
    }
}

struct Compiled {
    schemas: HashMap<Kind, Value>,
    nodes: HashMap<Kind, Node>,
}

fn compiled() -> &'static Compiled {
    static COMPILED: OnceLock<Compiled> = OnceLock::new();
    COMPILED.get_or_init(|| {
        let mut schemas = HashMap::new();
        let mut nodes = HashMap::new();
        for kind in Kind::ALL {
            // The embedded files are part of this crate; a parse failure is a build defect that
            // the crate's tests catch, so failing loudly here is right.
            let schema: Value = serde_json::from_str(schema_text(kind)).expect("embedded schema is JSON");
            nodes.insert(kind, Node::compile(&schema));
            schemas.insert(kind, schema);
        }
        Compiled { schemas, nodes }
    })
}

/// The parsed schema of `kind`.
pub fn schema(kind: Kind) -> &'static Value {
    &compiled().schemas[&kind]
}

/// The schemas' patterns are ECMAScript regexes, where `\d` is ASCII only; the `regex` crate's
/// `\d` is any Unicode digit, so it is spelled out.
fn compile_ecma_pattern(pattern: &str) -> Regex {
    let rust = pattern.replace("\\d", "[0-9]");
    Regex::new(&rust).expect("embedded schema pattern compiles")
}

/// Checks `value` (a whole manifest) against its kind's schema; returns every problem found.
pub fn check_manifest(value: &Value) -> Vec<Problem> {
    let Some(object) = value.as_object() else {
        return vec![Problem::new("", format!("a manifest must be a mapping, got {}", describe(value)))];
    };
    let kind = match object.get("kind") {
        None => return vec![Problem::new("/kind", "required field is missing")],
        Some(Value::String(name)) => match Kind::from_name(name) {
            Some(k) => k,
            None => {
                return vec![Problem::new(
                    "/kind",
                    format!("unknown kind {name:?}; expected one of {}", Kind::ALL.map(|k| k.name()).join(", ")),
                )];
            }
        },
        Some(other) => return vec![Problem::new("/kind", format!("expected string, got {}", describe(other)))],
    };
    let mut problems = Vec::new();
    check_at(&compiled().nodes[&kind], value, &Path::Root(""), &mut problems);
    problems
}

/// Where a value is, built as a chain on the stack; the pointer text is only written out when
/// there is a problem to report (formatting one per node was most of the checking time).
enum Path<'a> {
    Root(&'a str),
    Key(&'a Path<'a>, &'a str),
    Index(&'a Path<'a>, usize),
}

impl Path<'_> {
    fn pointer(&self) -> String {
        match self {
            Path::Root(p) => (*p).to_owned(),
            Path::Key(parent, key) => child_pointer(&parent.pointer(), key),
            Path::Index(parent, i) => format!("{}/{i}", parent.pointer()),
        }
    }
}

fn check_at(node: &Node, value: &Value, path: &Path<'_>, out: &mut Vec<Problem>) {
    if !node.any_of.is_empty() {
        let mut reasons = Vec::new();
        for branch in &node.any_of {
            let mut branch_problems = Vec::new();
            check_at(branch, value, path, &mut branch_problems);
            if branch_problems.is_empty() {
                return;
            }
            reasons.extend(branch_problems.into_iter().map(|p| p.message));
        }
        out.push(Problem::new(path.pointer(), format!("matches no allowed form: {}", reasons.join("; or "))));
        return;
    }

    if let Some(expected) = &node.type_name
        && !has_type(value, expected)
    {
        out.push(Problem::new(path.pointer(), format!("expected {expected}, got {}", describe(value))));
        return;
    }
    if let Some(constant) = &node.constant
        && value != constant
    {
        out.push(Problem::new(path.pointer(), format!("must be {constant}, got {}", describe(value))));
    }
    if let Some(allowed) = &node.allowed
        && !allowed.contains(value)
    {
        let list: Vec<String> = allowed.iter().map(Value::to_string).collect();
        out.push(Problem::new(path.pointer(), format!("must be one of {}, got {}", list.join(", "), describe(value))));
    }

    match value {
        Value::String(s) => {
            if let Some(max) = node.max_length {
                // The published validator (Zod) measures JavaScript string length: UTF-16 units.
                // Bytes bound UTF-16 units from above, so short strings skip the count.
                if s.len() as u64 > max {
                    let length = s.encode_utf16().count() as u64;
                    if length > max {
                        out.push(Problem::new(
                            path.pointer(),
                            format!("string is {length} characters long; the limit is {max}"),
                        ));
                    }
                }
            }
            if let Some((text, regex)) = &node.pattern
                && !regex.is_match(s)
            {
                out.push(Problem::new(
                    path.pointer(),
                    format!("{} does not match {}", preview(s), pattern_meaning(text)),
                ));
            }
        }
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(f64::NAN);
            fn bound(b: &Option<Value>) -> Option<(f64, &Value)> {
                b.as_ref().and_then(|v| v.as_f64().map(|f| (f, v)))
            }
            if let Some((min, shown)) = bound(&node.minimum)
                && x < min
            {
                out.push(Problem::new(path.pointer(), format!("{n} is less than the minimum {shown}")));
            }
            if let Some((max, shown)) = bound(&node.maximum)
                && x > max
            {
                out.push(Problem::new(path.pointer(), format!("{n} is greater than the maximum {shown}")));
            }
            if let Some((min, shown)) = bound(&node.exclusive_minimum)
                && x <= min
            {
                out.push(Problem::new(path.pointer(), format!("{n} must be greater than {shown}")));
            }
        }
        Value::Array(items) => {
            if let Some(min) = node.min_items
                && (items.len() as u64) < min
            {
                out.push(Problem::new(path.pointer(), format!("needs at least {min} items, has {}", items.len())));
            }
            if let Some(max) = node.max_items
                && items.len() as u64 > max
            {
                out.push(Problem::new(path.pointer(), format!("allows at most {max} items, has {}", items.len())));
            }
            if let Some(prefix) = &node.prefix_items {
                // Generated from a Zod tuple, which requires exactly this many items; the JSON
                // Schema export dropped that bound, so it is restored here.
                if node.items.is_none() && items.len() != prefix.len() {
                    out.push(Problem::new(
                        path.pointer(),
                        format!("must have exactly {} items, has {}", prefix.len(), items.len()),
                    ));
                }
            }
            for (i, item) in items.iter().enumerate() {
                let item_path = Path::Index(path, i);
                match node.prefix_items.as_ref().and_then(|p| p.get(i)) {
                    Some(item_node) => check_at(item_node, item, &item_path, out),
                    None => {
                        if let Some(item_node) = &node.items {
                            check_at(item_node, item, &item_path, out);
                        }
                    }
                }
            }
        }
        Value::Object(map) => {
            for name in &node.required {
                if !map.contains_key(name) {
                    out.push(Problem::new(child_pointer(&path.pointer(), name), "required field is missing"));
                }
            }
            for (key, child) in map {
                let child_path = Path::Key(path, key);
                if let Some((text, regex)) = &node.key_pattern
                    && !regex.is_match(key)
                {
                    out.push(Problem::new(
                        child_path.pointer(),
                        format!("key {} does not match {}", preview(key), pattern_meaning(text)),
                    ));
                }
                if let Some(property_node) = node.property(key) {
                    check_at(property_node, child, &child_path, out);
                    continue;
                }
                match &node.extra_properties {
                    Extra::Forbidden => {
                        let allowed: Vec<&str> = node.properties.iter().map(|(k, _)| k.as_str()).collect();
                        out.push(Problem::new(
                            child_path.pointer(),
                            format!("unknown field {key:?}; allowed fields: {}", allowed.join(", ")),
                        ));
                    }
                    Extra::Schema(extra) => check_at(extra, child, &child_path, out),
                    Extra::Allowed => {}
                }
            }
        }
        _ => {}
    }
}

fn has_type(value: &Value, expected: &str) -> bool {
    match expected {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        "number" => value.is_number(),
        // JSON Schema (and Zod's `.int()`) accept 2048.0 as an integer.
        "integer" => match value {
            Value::Number(n) => n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0),
            _ => false,
        },
        _ => false,
    }
}

/// What a value is, briefly, for messages.
pub fn describe(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("boolean {b}"),
        Value::Number(n) => format!("number {n}"),
        Value::String(s) => format!("string {}", preview(s)),
        Value::Array(a) => format!("array of {} items", a.len()),
        Value::Object(_) => "mapping".into(),
    }
}

fn preview(s: &str) -> String {
    const LIMIT: usize = 60;
    if s.chars().count() <= LIMIT {
        format!("{s:?}")
    } else {
        let head: String = s.chars().take(LIMIT).collect();
        format!("{head:?}…")
    }
}

/// Names the common patterns in words; others are quoted.
fn pattern_meaning(pattern: &str) -> String {
    match pattern {
        "^sha256:[0-9a-f]{64}$" => "the digest form sha256:<64 lowercase hex>".into(),
        "^[0-9a-f]{40}$" => "a 40-character lowercase hex commit".into(),
        "^[a-z][a-z0-9_]*$" => "an identifier (lowercase letter, then a-z, 0-9, _)".into(),
        "^[a-z0-9][a-z0-9._-]*$" => "a name (lowercase a-z, 0-9, then . _ -)".into(),
        "^[a-z0-9][a-z0-9-]*$" => "a slug (lowercase a-z, 0-9, -)".into(),
        p if p.contains("(ns|us|µs|ms|s)") => "a duration such as \"8120 ns\", \"8.12 us\" or \"0.008 ms\"".into(),
        p if p.contains("T(?:") => {
            "a UTC timestamp such as 2026-08-01T12:00:00Z (offsets other than Z are not allowed)".into()
        }
        p => format!("the pattern {p}"),
    }
}
