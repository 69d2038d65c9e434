//! `/api/v1/openapi.json`: generated from the same route table the router is built
//! from, so a route cannot exist without being described (a test also calls each one).

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
    Asset,
    /// Markdown, CSV or JSON by `format`.
    Export,
}

#[derive(Debug, Clone)]
pub struct RouteDoc {
    pub method: Method,
    pub path: &'static str,
    pub summary: &'static str,
    pub produces: Produces,
    /// Query parameters the route reads.
    pub query: &'static [&'static str],
    /// Needs an API key.
    pub auth: bool,
}

pub fn document(routes: &[RouteDoc]) -> Value {
    let mut paths = Map::new();
    for route in routes {
        let entry = paths.entry(route.path.to_string()).or_insert_with(|| json!({}));
        let mut parameters: Vec<Value> = route
            .path
            .split('/')
            .filter_map(|seg| seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
            .map(|name| json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}}))
            .collect();
        for q in route.query {
            parameters.push(json!({"name": q, "in": "query", "required": false, "schema": {"type": "string"}}));
        }
        let content_type = match route.produces {
            Produces::Html => "text/html",
            Produces::Json => "application/json",
            Produces::Atom => "application/atom+xml",
            Produces::Asset => "text/plain",
            Produces::Export => "text/markdown",
        };
        let mut responses = Map::new();
        responses.insert(
            if route.method == Method::Post && route.auth { "201" } else { "200" }.to_string(),
            json!({"description": "success", "content": {content_type: {}}}),
        );
        responses.insert(
            "default".into(),
            json!({"description": "an RFC 9457 problem with a requestId",
                   "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}}),
        );
        let mut operation = json!({
            "summary": route.summary,
            "operationId": format!("{}{}", route.method.as_str(), route.path.replace(['/', '{', '}', '.', '-'], "_")),
            "parameters": parameters,
            "responses": responses,
        });
        if route.auth {
            operation["security"] = json!([{"apiKey": []}]);
        }
        if route.method == Method::Post {
            operation["requestBody"] = json!({"required": true, "content": {
                "application/json": {}, "application/x-www-form-urlencoded": {}, "application/yaml": {}}});
        }
        entry[route.method.as_str()] = operation;
    }
    json!({
        "openapi": "3.1.0",
        "info": {"title": "KernelIndex", "version": "v1",
                 "description": "Run dossiers, operation leaderboards, resolve, compare, records; every HTML page has a JSON twin under /api/v1."},
        "paths": paths,
        "components": {
            "securitySchemes": {"apiKey": {"type": "http", "scheme": "bearer", "description": "ki_… key from `ki admin key create`"}},
            "schemas": {"Problem": {"type": "object", "required": ["type", "title", "status", "detail"], "properties": {
                "type": {"type": "string"}, "title": {"type": "string"}, "status": {"type": "integer"},
                "detail": {"type": "string"}, "instance": {"type": "string"}, "requestId": {"type": "string"},
                "errors": {"type": "array", "items": {"type": "object"}}}}}
        }
    })
}
