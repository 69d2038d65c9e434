//! `/api/v1/openapi.json` (OpenAPI 3.1): generated from the same route table the router is
//! built from, with the JSON Schemas (2020-12) of the handlers' own query, body and answer
//! types, derived by `schemars` from the serde types themselves, so a route cannot exist
//! undescribed and a schema cannot drift from what the handler sends (the route tests check
//! every answer against its schema).

use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde_json::{Map, Value, json};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Post,
}

impl Method {
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "get",
            Method::Post => "post",
        }
    }
}

/// What a route answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Produces {
    Html,
    Json,
    Atom,
    /// A file of this media type (a stylesheet, a script, the export, `/healthz`'s text).
    Asset(&'static str),
    /// The compare page: HTML, or Markdown, CSV or JSON by `format`.
    Export,
}

/// A schema of a type, made by the document's one generator.
pub type SchemaFn = fn(&mut SchemaGenerator) -> Schema;

/// The schema of `T`, as a reference into `components/schemas` when it is a named type.
pub fn schema_of<T: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    generator.subschema_for::<T>()
}

/// The schema of `T` itself (a query struct, whose properties become parameters).
pub fn inline_schema_of<T: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    T::json_schema(generator)
}

/// A link from a route's answer to another operation (Schemathesis's stateful phase follows
/// them): `parameter` of `operation` is taken from `expression` (`$response.body#/runs/0/id`).
#[derive(Debug, Clone, Copy)]
pub struct Link {
    pub name: &'static str,
    pub operation: (Method, &'static str),
    pub parameter: &'static str,
    pub expression: &'static str,
}

/// Every route's description, in registration order: the route table hands it to the pages
/// that describe the API (`/docs`, `/api/v1/openapi.json`).
pub type RouteDocs = std::sync::Arc<[RouteDoc]>;

/// One route, as the document describes it.
#[derive(Debug, Clone)]
pub struct RouteDoc {
    pub method: Method,
    pub path: &'static str,
    pub summary: &'static str,
    pub produces: Produces,
    /// Needs an API key.
    pub auth: bool,
    /// The query struct the handler extracts.
    pub query: Option<SchemaFn>,
    /// The request body: its media types and schema.
    pub body: Option<(&'static [&'static str], SchemaFn)>,
    /// The JSON answer (JSON routes; the compare page's `format=json`).
    pub answer: Option<SchemaFn>,
    /// The status of success (200; 201 for a creation; 303 for a form's redirect).
    pub success: u16,
    /// Longest accepted value of each path parameter.
    pub path_max_length: Option<u32>,
    pub links: Vec<Link>,
}

impl RouteDoc {
    pub fn new(method: Method, path: &'static str, produces: Produces, summary: &'static str) -> RouteDoc {
        RouteDoc {
            method,
            path,
            summary,
            produces,
            auth: false,
            query: None,
            body: None,
            answer: None,
            success: 200,
            path_max_length: None,
            links: Vec::new(),
        }
    }

    pub fn query<Q: JsonSchema>(mut self) -> RouteDoc {
        self.query = Some(inline_schema_of::<Q>);
        self
    }

    pub fn body<B: JsonSchema>(mut self, media: &'static [&'static str]) -> RouteDoc {
        self.body = Some((media, schema_of::<B>));
        self
    }

    pub fn answers<A: JsonSchema>(mut self) -> RouteDoc {
        self.answer = Some(schema_of::<A>);
        self
    }

    pub fn auth(mut self) -> RouteDoc {
        self.auth = true;
        self
    }

    pub fn status(mut self, status: u16) -> RouteDoc {
        self.success = status;
        self
    }

    pub fn path_max_length(mut self, length: u32) -> RouteDoc {
        self.path_max_length = Some(length);
        self
    }

    pub fn link(mut self, link: Link) -> RouteDoc {
        self.links.push(link);
        self
    }

    pub fn operation_id(method: Method, path: &str) -> String {
        format!("{}{}", method.as_str(), path.replace(['/', '{', '}', '.', '-'], "_"))
    }

    /// The path's `{parameters}`.
    pub fn path_parameters(&self) -> Vec<&'static str> {
        self.path.split('/').filter_map(|seg| seg.strip_prefix('{').and_then(|s| s.strip_suffix('}'))).collect()
    }
}

/// A query parameter's schema without `null` (a parameter is absent, never null).
fn without_null(mut schema: Value) -> Value {
    if let Some(types) = schema.get_mut("type").and_then(Value::as_array_mut) {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let only = types[0].clone();
            schema["type"] = only;
        }
    }
    if let Some(any_of) = schema.get("anyOf").and_then(Value::as_array).cloned() {
        let rest: Vec<Value> = any_of.into_iter().filter(|s| s.get("type") != Some(&json!("null"))).collect();
        if rest.len() == 1 {
            let mut only = rest[0].clone();
            if let (Some(target), Some(description)) = (only.as_object_mut(), schema.get("description")) {
                target.insert("description".into(), description.clone());
            }
            return only;
        }
    }
    schema
}

fn query_parameters(schema: &Schema) -> Vec<Value> {
    let value = schema.as_value();
    let required: Vec<&str> = value
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = value.get("properties").and_then(Value::as_object) else { return Vec::new() };
    properties
        .iter()
        .map(|(name, property)| {
            let mut property = without_null(property.clone());
            let description = property.as_object_mut().and_then(|p| p.remove("description"));
            let mut parameter = json!({
                "name": name,
                "in": "query",
                "required": required.contains(&name.as_str()),
                "schema": property,
            });
            if parameter["schema"]["type"] == "array" {
                parameter["style"] = json!("form");
                parameter["explode"] = json!(true);
            }
            if let Some(description) = description {
                parameter["description"] = description;
            }
            parameter
        })
        .collect()
}

const PROBLEM_SCHEMA: &str = "#/components/schemas/Problem";

fn content_of(route: &RouteDoc, generator: &mut SchemaGenerator) -> Value {
    let text = json!({"schema": {"type": "string"}});
    match route.produces {
        Produces::Html => json!({"text/html": text}),
        Produces::Atom => json!({"application/atom+xml": text}),
        Produces::Asset(media) if media.starts_with("text/") => json!({ media: text }),
        Produces::Asset(media) => json!({ media: {"schema": {"type": "string", "contentEncoding": "binary"}} }),
        Produces::Json => {
            let schema = route.answer.map(|answer| answer(generator).to_value()).unwrap_or(json!({}));
            json!({"application/json": {"schema": schema}})
        }
        Produces::Export => {
            let schema = route.answer.map(|answer| answer(generator).to_value()).unwrap_or(json!({}));
            json!({"text/html": text, "text/markdown": text, "text/csv": text, "application/json": {"schema": schema}})
        }
    }
}

pub fn document(routes: &[RouteDoc]) -> Value {
    // Answers are described as serde writes them (a field skipped when empty is not required),
    // queries and bodies as serde reads them.
    let settings = SchemaSettings::draft2020_12().with(|s| s.definitions_path = "/components/schemas".into());
    let mut generator = settings.clone().for_serialize().into_generator();
    let mut reader = settings.for_deserialize().into_generator();
    let mut paths = Map::new();
    for route in routes {
        let mut parameters: Vec<Value> = route
            .path_parameters()
            .into_iter()
            .map(|name| {
                let mut schema = json!({"type": "string", "minLength": 1});
                if let Some(max) = route.path_max_length {
                    schema["maxLength"] = json!(max);
                }
                json!({"name": name, "in": "path", "required": true, "schema": schema})
            })
            .collect();
        if let Some(query) = route.query {
            parameters.extend(query_parameters(&query(&mut reader)));
        }
        let mut responses = Map::new();
        let mut success = json!({"description": "success", "content": content_of(route, &mut generator)});
        if route.success == 303 {
            success = json!({"description": "filed; redirects to the run page",
                             "headers": {"location": {"schema": {"type": "string"}}}});
        }
        if !route.links.is_empty() {
            let links: Map<String, Value> = route
                .links
                .iter()
                .map(|l| {
                    (
                        l.name.to_string(),
                        json!({
                            "operationId": RouteDoc::operation_id(l.operation.0, l.operation.1),
                            "parameters": { l.parameter: l.expression },
                        }),
                    )
                })
                .collect();
            success["links"] = Value::Object(links);
        }
        responses.insert(route.success.to_string(), success);
        if route.method == Method::Get {
            responses.insert("304".into(), json!({"description": "not modified (the If-None-Match ETag matched)"}));
        }
        responses.insert(
            "default".into(),
            json!({"description": "an RFC 9457 problem with a requestId",
                   "content": {"application/problem+json": {"schema": {"$ref": PROBLEM_SCHEMA}}}}),
        );
        let mut operation = json!({
            "summary": route.summary,
            "operationId": RouteDoc::operation_id(route.method, route.path),
            "parameters": parameters,
            "responses": responses,
        });
        if route.auth {
            operation["security"] = json!([{"bearer": []}, {"apiKey": []}]);
        }
        if let Some((media, schema)) = route.body {
            let schema = schema(&mut reader).to_value();
            let content: Map<String, Value> =
                media.iter().map(|m| (m.to_string(), json!({"schema": schema}))).collect();
            operation["requestBody"] = json!({"required": true, "content": content});
        }
        let entry = paths.entry(route.path.to_string()).or_insert_with(|| json!({}));
        entry[route.method.as_str()] = operation;
    }
    schema_of::<crate::problem::Problem>(&mut generator);
    // A type both read and written (a resolve request, echoed in its answer) keeps the schema
    // it is read with: it admits what serde writes too (every field, defaults included).
    let mut schemas: Map<String, Value> = reader.take_definitions(true).into_iter().collect();
    for (name, schema) in generator.take_definitions(true) {
        schemas.entry(name).or_insert(schema);
    }
    json!({
        "openapi": "3.1.0",
        "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
        "info": {"title": "KernelIndex", "version": "v1",
                 "description": "Run dossiers, operation leaderboards, resolve, compare, records, run lists and a change feed, the verification queue; every HTML page has a JSON twin under /api/v1."},
        "paths": paths,
        "components": {
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer", "description": "ki_… key from `ki admin key create`"},
                "apiKey": {"type": "apiKey", "in": "header", "name": "X-Api-Key"}
            },
            "schemas": schemas,
        }
    })
}
