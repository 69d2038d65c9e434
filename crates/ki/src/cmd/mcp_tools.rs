//! The tools `ki mcp` offers: names, descriptions, input schemas and output schemas (JSON
//! Schema 2020-12) of the `/api/v1` documents they answer with, and the checks of their
//! arguments.

use anyhow::bail;
use serde_json::{Map, Value, json};

pub const TOOL_NAMES: [&str; 7] =
    ["search", "resolve", "show_run", "compare", "records_since", "list_runs", "verification_status"];

/// Shared definitions every output schema carries (each schema is its own document).
fn definitions() -> Value {
    let text = json!({ "type": "string" });
    let text_or_null = json!({ "type": ["string", "null"] });
    let number_or_null = json!({ "type": ["number", "null"] });
    json!({
        "link": {
            "type": "object",
            "required": ["label", "href"],
            "properties": { "label": text, "href": text },
        },
        "field": {
            "type": "object",
            "required": ["label", "value"],
            "properties": { "label": text, "value": text, "href": text, "code": { "type": "boolean" } },
        },
        "trust": { "enum": ["reported", "reproducible", "verified", "replicated"] },
        // A run as the ranking lists it (resolve, compare).
        "rankedRun": {
            "type": "object",
            "required": ["runId", "runDigest", "rank", "eligible", "ineligibility", "implementation", "project",
                "operation", "value", "unit", "trust", "deployable", "observedAt", "comparisonKey"],
            "properties": {
                "runId": text, "runDigest": text,
                "rank": { "type": ["integer", "null"], "minimum": 1 },
                "eligible": { "type": "boolean" },
                "ineligibility": { "type": "array", "items": text },
                "implementation": text, "implementationTitle": text_or_null, "project": text, "operation": text,
                "source": text_or_null, "hardware": text_or_null, "metric": text_or_null, "statistic": text_or_null,
                "value": number_or_null, "unit": text_or_null,
                "trust": { "$ref": "#/$defs/trust" },
                "deployable": { "type": "boolean" },
                "observedAt": text, "comparisonKey": text,
                "referenceSpeedup": number_or_null, "baselineSpeedup": number_or_null,
            },
        },
        "rankedRunOrNull": { "anyOf": [{ "type": "null" }, { "$ref": "#/$defs/rankedRun" }] },
        // A run as the web lists it (dossier, records).
        "listedRun": {
            "type": "object",
            "required": ["id", "shortId", "digest", "title", "implementation", "project", "hardware", "status",
                "value", "unit", "display", "statistic", "rank", "trust", "observedAt", "href"],
            "properties": {
                "id": text, "shortId": text, "digest": text, "title": text, "implementation": text,
                "project": text, "hardware": text, "status": text, "value": number_or_null, "unit": text,
                "display": text, "statistic": text, "rank": { "type": ["integer", "null"] },
                "trust": { "$ref": "#/$defs/trust" }, "observedAt": text, "href": text,
            },
        },
        "cohort": {
            "type": "object",
            "required": ["comparisonKey", "profile", "direction", "workloadId", "workloadDigest", "axes", "dtypes",
                "runs", "eligibleRuns", "fastest", "bestVerified", "bestDeployable"],
            "properties": {
                "comparisonKey": text,
                "profile": { "enum": ["source_native", "strict_exact"] },
                "direction": { "enum": ["lower_is_better", "higher_is_better"] },
                "workloadId": text, "workloadDigest": text,
                "axes": { "type": "object" },
                "dtypes": { "type": "array", "items": text },
                "hardware": text_or_null, "environment": text_or_null, "protocol": text_or_null,
                "metric": text_or_null, "statistic": text_or_null, "unit": text_or_null,
                "runs": { "type": "integer", "minimum": 0 },
                "eligibleRuns": { "type": "integer", "minimum": 0 },
                "fastest": { "type": "array", "items": { "$ref": "#/$defs/rankedRun" } },
                "bestVerified": { "$ref": "#/$defs/rankedRunOrNull" },
                "bestDeployable": { "$ref": "#/$defs/rankedRunOrNull" },
                "baseline": { "$ref": "#/$defs/rankedRunOrNull" },
                "caveats": { "type": "array", "items": { "type": "object", "required": ["kind", "message"],
                    "properties": {
                        "kind": { "enum": ["no_verified", "reported_only", "not_deployable", "no_deployable", "stale"] },
                        "message": text, "runId": text_or_null,
                    } } },
            },
        },
        "resolveResponse": {
            "type": "object",
            "required": ["request", "mode", "operation", "cohorts", "omittedCohorts", "nearest", "notes"],
            "properties": {
                "request": { "type": "object", "required": ["operation"] },
                "mode": { "enum": ["exact", "chooser", "browse", "none"] },
                "operation": {
                    "anyOf": [{ "type": "null" }, {
                        "type": "object",
                        "required": ["id", "name", "slug"],
                        "properties": { "id": text, "name": text, "slug": text },
                    }],
                },
                "cohorts": { "type": "array", "items": { "$ref": "#/$defs/cohort" } },
                "omittedCohorts": { "type": "integer", "minimum": 0 },
                "nearest": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["axis", "side", "requested", "measured", "differs", "cohorts"],
                        "properties": {
                            "axis": text,
                            "differs": { "type": "array", "items": {
                                "type": "object", "required": ["axis", "asked", "measured"], "properties": { "axis": text } } },
                            "side": { "enum": ["below", "above"] },
                            "cohorts": { "type": "array", "items": { "$ref": "#/$defs/cohort" } },
                        },
                    },
                },
                "notes": { "type": "array", "items": text },
                "readAs": { "type": "array", "items": {
                    "type": "object", "required": ["field", "given", "read"],
                    "properties": { "field": text, "given": text, "read": text } } },
            },
        },
        "recordEvent": {
            "type": "object",
            "required": ["at", "cause", "operation", "holder", "previous", "previousDisplay", "comparisonKey"],
            "properties": {
                "at": text, "cause": text,
                "operation": { "anyOf": [{ "type": "null" }, { "$ref": "#/$defs/link" }] },
                "holder": { "anyOf": [{ "type": "null" }, { "$ref": "#/$defs/listedRun" }] },
                "previous": { "anyOf": [{ "type": "null" }, { "$ref": "#/$defs/link" }] },
                "previousDisplay": text_or_null,
                "workload": text_or_null,
                "gpu": { "anyOf": [{ "type": "null" }, { "$ref": "#/$defs/link" }] },
                "comparisonKey": text,
            },
        },
    })
}

/// An output schema: `body` (an object schema) with the shared definitions.
fn output(body: Value) -> Value {
    let mut schema = body;
    schema["$defs"] = definitions();
    schema
}

fn fields_list() -> Value {
    json!({ "type": "array", "items": { "$ref": "#/$defs/field" } })
}

fn tool(name: &str, title: &str, description: &str, input: Value, output_schema: Value) -> Value {
    json!({
        "name": name,
        "title": title,
        "description": description,
        "inputSchema": input,
        "outputSchema": output(output_schema),
        "annotations": { "readOnlyHint": true, "idempotentHint": true, "openWorldHint": false },
    })
}

/// The input schema of one workload to resolve (a `ResolveRequest`).
fn workload_schema() -> Value {
    json!({
        "type": "object",
        "required": ["operation"],
        "additionalProperties": false,
        "properties": {
            "operation": { "type": "string", "minLength": 1, "maxLength": 200,
                "description": "Operation name, slug or alias, or words the search reads (\"gqa paged decode\", \"rms norm\")." },
            "axes": { "type": "object", "description": "Axis values of the workload, e.g. {\"batch_size\": 16}.",
                "additionalProperties": { "type": ["number", "string", "boolean"] } },
            "dtypes": { "type": "array", "items": { "type": "string" }, "description": "Dtypes the workload uses." },
            "hardware": { "type": "string", "description": "Hardware model, e.g. \"NVIDIA H200\", \"H200\" or \"H100 SXM\"." },
            "framework": { "type": "string", "description": "Framework, e.g. \"pytorch\"." },
        },
    })
}

/// Every tool, in a fixed order.
pub fn tools() -> Vec<Value> {
    let run_reference = json!({ "type": "string", "minLength": 1, "maxLength": 200,
        "description": "Run id, run digest (sha256:…), or a unique prefix of either (8+ characters)." });
    let mut resolve_input = workload_schema();
    resolve_input["required"] = json!([]);
    resolve_input["properties"]["requests"] = json!({
        "type": "array", "minItems": 1, "maxItems": 20, "items": workload_schema(),
        "description": "A batch of 1 to 20 workloads, instead of one.",
    });
    resolve_input["oneOf"] = json!([{ "required": ["operation"] }, { "required": ["requests"] }]);
    vec![
        tool(
            "search",
            "Search the index",
            "The search grammar of /docs#search: words, filters (gpu:h200 dtype:bf16 arch:sm_90 model: family: source: \
             trust:verified license: language: installable:yes) and axes (batch_size=16). Answers with the ranked answer \
             for the best-matching operation, runs named by id, digest or external id, and matches with run counts and GPUs.",
            json!({
                "type": "object", "required": ["query"], "additionalProperties": false,
                "properties": { "query": { "type": "string", "minLength": 1, "maxLength": 200 } },
            }),
            json!({
                "type": "object", "required": ["query", "results"],
                "properties": {
                    "query": { "type": "string" },
                    "results": { "type": "array", "items": {
                        "type": "object", "required": ["kind", "label", "detail", "href"],
                        "properties": {
                            "kind": { "enum": ["operation", "implementation", "project", "hardware"] },
                            "label": { "type": "string" }, "detail": { "type": "string" }, "href": { "type": "string" },
                        },
                    } },
                },
            }),
        ),
        tool(
            "resolve",
            "Fastest kernels for a workload",
            "The fastest compatible runs for an exact workload (ranking-v1), ranked inside each comparison group, \
             with the best verified and best deployable run; nearest measured cases when it was never measured. \
             One workload, or `requests` with up to 20; the answers come in request order.",
            resolve_input,
            json!({
                "type": "object", "required": ["responses"],
                "properties": { "responses": { "type": "array", "items": { "$ref": "#/$defs/resolveResponse" } } },
            }),
        ),
        tool(
            "show_run",
            "One run in full",
            "A run's dossier: measurement and rank in its comparison group, banners (retracted, superseded, stale), \
             identity, evidence level, workload, protocol, environment, artifacts, attestations, canonical manifest.",
            json!({ "type": "object", "required": ["run"], "additionalProperties": false,
                "properties": { "run": run_reference } }),
            json!({
                "type": "object",
                "required": ["id", "shortId", "digest", "title", "status", "evidenceLevel", "deployability", "banners",
                    "primary", "identity", "correctness", "workload", "measurements", "protocol", "environment",
                    "artifacts", "attestations", "manifest", "citation", "implementation", "project"],
                "properties": {
                    "id": { "type": "string" }, "shortId": { "type": "string" }, "digest": { "type": "string" },
                    "title": { "type": "string" }, "status": { "type": "string" },
                    "evidenceLevel": { "$ref": "#/$defs/trust" },
                    "deployability": { "type": "object", "required": ["deployable", "reasons"],
                        "properties": { "deployable": { "type": "boolean" },
                            "reasons": { "type": "array", "items": { "type": "string" } } } },
                    "banners": { "type": "array", "items": { "type": "object", "required": ["kind", "message"],
                        "properties": { "kind": { "enum": ["retracted", "superseded", "stale"] },
                            "message": { "type": "string" } } } },
                    "primary": { "type": "object",
                        "required": ["metric", "statistic", "value", "unit", "display", "rank", "groupSize", "profile",
                            "observedAt", "ineligibleReasons", "leader"],
                        "properties": {
                            "value": { "type": ["number", "null"] }, "display": { "type": "string" },
                            "rank": { "type": ["integer", "null"] }, "groupSize": { "type": "integer" },
                            "ineligibleReasons": { "type": "array", "items": { "type": "string" } },
                            "leader": { "anyOf": [{ "type": "null" }, { "$ref": "#/$defs/listedRun" }] },
                        } },
                    "identity": fields_list(), "correctness": fields_list(),
                    "workload": { "type": "object", "required": ["axes", "constants", "tensors", "digest"],
                        "properties": { "axes": fields_list(), "constants": fields_list() } },
                    "measurements": { "type": "array", "items": { "type": "object",
                        "required": ["metric", "statistic", "value", "unit", "display"],
                        "properties": { "value": { "type": "number" } } } },
                    "protocol": fields_list(), "environment": fields_list(),
                    "artifacts": { "type": "array" }, "attestations": { "type": "array" },
                    "manifest": { "type": "object" },
                    "citation": { "type": "object", "required": ["permalink", "digest", "text"] },
                    "implementation": { "$ref": "#/$defs/link" }, "project": { "$ref": "#/$defs/link" },
                },
            }),
        ),
        tool(
            "compare",
            "Compare runs",
            "2 to 8 runs side by side, fastest first: value, interval, rank, trust, each run's value over #1's \
             and over the best of its own comparison group, the comparison-key parts and workload axes that differ.",
            json!({ "type": "object", "required": ["runs"], "additionalProperties": false,
                "properties": { "runs": { "type": "array", "minItems": 2, "maxItems": 8, "items": run_reference } } }),
            json!({
                "type": "object", "required": ["runs", "sameComparisonGroup", "differingAxes"],
                "properties": {
                    "runs": { "type": "array", "items": { "type": "object",
                        "required": ["summary", "axes", "relativeToBestInGroup"],
                        "properties": { "summary": { "$ref": "#/$defs/rankedRun" }, "axes": { "type": "object" },
                            "environment": { "type": ["string", "null"] },
                            "relativeToBestInGroup": { "type": ["number", "null"] },
                            "relativeToFirst": { "type": ["number", "null"] },
                            "interval": { "anyOf": [{ "type": "null" },
                                { "type": "array", "items": { "type": "number" }, "minItems": 2, "maxItems": 2 }] } } } },
                    "sameComparisonGroup": { "type": "boolean" },
                    "differingAxes": { "type": "array", "items": { "type": "string" } },
                    "differingKeys": { "type": "array", "items": { "enum": ["operation", "workload", "protocol",
                        "environment", "gpu", "correctness_rule", "metric"] } },
                },
            }),
        ),
        tool(
            "records_since",
            "New records since a time",
            "Record events at or after a time, newest first: which run took the record of its comparison group, \
             and whose it was. At most 1,000 listed; `omitted` counts the rest.",
            json!({ "type": "object", "required": ["since"], "additionalProperties": false,
                "properties": { "since": { "type": "string", "minLength": 1, "maxLength": 64,
                    "description": "RFC 3339 time (2026-08-01T00:00:00Z), or a date meaning its midnight UTC." } } }),
            json!({
                "type": "object", "required": ["since", "records", "omitted"],
                "properties": {
                    "since": { "type": "string" },
                    "records": { "type": "array", "items": { "$ref": "#/$defs/recordEvent" } },
                    "omitted": { "type": "integer", "minimum": 0 },
                },
            }),
        ),
        json!({
            "name": "list_runs",
            "title": "List runs",
            "description": "Every run, filtered (each filter given must match), ordered by id, a page at a time: \
                pass `nextCursor` back as `cursor` for the next page.",
            "inputSchema": {
                "type": "object", "additionalProperties": false,
                "properties": {
                    "operation": { "type": "string", "maxLength": 300, "description": "An operation's name, slug or alias." },
                    "workload": { "type": "string", "maxLength": 300, "description": "A workload's id or digest." },
                    "hardware": { "type": "string", "maxLength": 300, "description": "A hardware model, ignoring case." },
                    "evidence": { "enum": ["reported", "reproducible", "verified", "replicated"] },
                    "source": { "type": "string", "maxLength": 300, "description": "A source's slug, name or id." },
                    "implementation": { "type": "string", "maxLength": 300, "description": "An implementation's slug or id." },
                    "status": { "type": "string", "maxLength": 300, "description": "The run's recorded status (passed, …)." },
                    "cursor": { "type": "string", "pattern": "^[0-9a-f]+$", "description": "nextCursor of the previous page." },
                    "limit": { "type": "integer", "minimum": 1, "maximum": 1000, "description": "Runs per page (default 100)." },
                },
            },
            // From the type the list is made of, so the schema cannot drift from the answer.
            "outputSchema": serde_json::to_value(schemars::schema_for!(ki_ranking::feed::RunPage)).unwrap_or_default(),
            "annotations": { "readOnlyHint": true, "idempotentHint": true, "openWorldHint": false },
        }),
        tool(
            "verification_status",
            "A verification job",
            "A job of the verification queue (by id or sha256: key): its state, verdict, published runs, \
             attempts and the workers that made them.",
            json!({ "type": "object", "required": ["job"], "additionalProperties": false,
                "properties": { "job": { "type": "string", "minLength": 1, "maxLength": 200 } } }),
            json!({
                "type": "object", "required": ["job", "attempts", "workers"],
                "properties": {
                    "job": { "type": "object", "required": ["id", "key", "state", "attempts", "enqueuedAt"],
                        "properties": { "id": { "type": "string" }, "key": { "type": "string" },
                            "state": { "type": "string" }, "attempts": { "type": "integer" } } },
                    "attempts": { "type": "array", "items": { "type": "object",
                        "required": ["attempt", "workerId", "claimedAt"] } },
                    "workers": { "type": "array", "items": { "type": "object", "required": ["id", "host"] } },
                },
            }),
        ),
    ]
}

/// A tool's arguments, checked as they are read; a refusal names the tool and the argument.
pub struct Arguments<'a> {
    tool: &'a str,
    values: &'a Map<String, Value>,
}

impl<'a> Arguments<'a> {
    pub fn new(tool: &'a str, values: &'a Map<String, Value>) -> anyhow::Result<Arguments<'a>> {
        Ok(Arguments { tool, values })
    }

    /// Deserializes the arguments as `T`, after refusing any not in `names`.
    pub fn parse<T: serde::de::DeserializeOwned>(&self, names: &[&str]) -> anyhow::Result<T> {
        self.known(names)?;
        serde_json::from_value(Value::Object(self.values.clone()))
            .map_err(|error| anyhow::anyhow!("{}: {error}", self.tool))
    }

    pub fn get(&self, name: &str) -> Option<&'a Value> {
        self.values.get(name)
    }

    pub fn all(&self) -> &'a Map<String, Value> {
        self.values
    }

    fn known(&self, names: &[&str]) -> anyhow::Result<()> {
        if let Some(unknown) = self.values.keys().find(|key| !names.contains(&key.as_str())) {
            bail!("{}: unknown argument {unknown:?}", self.tool);
        }
        Ok(())
    }

    /// The one argument of a one-argument tool: a string of `min` to `max` characters.
    pub fn text(&self, name: &str, min: usize, max: usize) -> anyhow::Result<String> {
        self.known(&[name])?;
        match self.values.get(name) {
            Some(Value::String(value)) => bounded_text(&format!("{}: {name}", self.tool), value, min, max),
            Some(_) => bail!("{}: {name} must be a string", self.tool),
            None => bail!("{}: {name} is required", self.tool),
        }
    }

    /// The one argument of a one-argument tool: `min` to `max` strings.
    pub fn texts(&self, name: &str, min: usize, max: usize) -> anyhow::Result<Vec<String>> {
        self.known(&[name])?;
        let Some(Value::Array(items)) = self.values.get(name) else {
            bail!("{}: {name} must be a list of {min} to {max} strings", self.tool);
        };
        if !(min..=max).contains(&items.len()) {
            bail!("{}: {name} takes {min} to {max} strings, got {}", self.tool, items.len());
        }
        items
            .iter()
            .map(|item| match item {
                Value::String(value) => bounded_text(&format!("{}: {name}", self.tool), value, 1, 200),
                _ => bail!("{}: {name} must be a list of strings", self.tool),
            })
            .collect()
    }
}

/// `value` when it has `min` to `max` characters.
pub fn bounded_text(what: &str, value: &str, min: usize, max: usize) -> anyhow::Result<String> {
    let count = value.chars().count();
    if count < min || count > max {
        bail!("{what} must have {min} to {max} characters, has {count}");
    }
    Ok(value.to_string())
}
