//! `ki mcp`: the index as a Model Context Protocol server on stdin/stdout, for agents. One
//! JSON-RPC 2.0 message a line, each at most [`MAX_MESSAGE_BYTES`]; no batches.
//!
//! Both eras of the protocol are served (the spec's "dual-era" server): revision 2026-07-28,
//! stateless — every request names its version in `_meta`, `server/discover` advertises what
//! is served — and the `initialize` handshake of 2025-11-25 and 2025-06-18 (the first with
//! structured tool output). The tools answer with the documents of `/api/v1` — the same the
//! read commands print with `--json` — read from a catalog or, with `--api URL`, from a
//! running index ([`crate::reader`]); a refusal is a tool error (`isError`) in the words the
//! command prints.

use std::io::{BufRead, Read};
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Args;
use ki_ranking::ResolveRequest;
use serde_json::{Map, Value, json};

use crate::reader::{ReadArgs, Reader};

/// The longest message read; a longer line is refused (and skipped) without being held.
pub const MAX_MESSAGE_BYTES: u64 = 1024 * 1024;
/// The revision served statelessly, per request.
const MODERN_VERSION: &str = "2026-07-28";
/// Revisions served after an `initialize` handshake, newest first.
const HANDSHAKE_VERSIONS: [&str; 2] = ["2025-11-25", "2025-06-18"];
/// How long a client may keep the tool list and the discovery answer (they change only with
/// a new `ki`).
const LIST_TTL_MS: u64 = 3_600_000;
const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;
const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

#[derive(Args)]
pub struct McpArgs {
    #[command(flatten)]
    pub read: ReadArgs,
}

pub fn run(args: McpArgs) -> anyhow::Result<ExitCode> {
    let mut server = Server { reader: Reader::with_memory(&args.read, true)?, handshake: None };
    let mut input = std::io::stdin().lock();
    while let Some(line) = read_message(&mut input)? {
        let reply = match line {
            Line::TooLong => Some(error_reply(
                Value::Null,
                INVALID_REQUEST,
                &format!("a message is at most {MAX_MESSAGE_BYTES} bytes; this one was skipped"),
                None,
            )),
            Line::Message(bytes) => server.handle(&bytes),
        };
        if let Some(reply) = reply {
            // serde_json escapes every C0 character; the terminal module escapes the rest, in
            // JSON's own notation, so the line stays the same JSON.
            crate::term::out(&reply.to_string());
        }
    }
    Ok(ExitCode::SUCCESS)
}

enum Line {
    Message(Vec<u8>),
    TooLong,
}

/// The next line of input, or `None` at the end. A line over the bound is read past in
/// pieces, never held whole.
fn read_message(input: &mut impl BufRead) -> anyhow::Result<Option<Line>> {
    let mut line = Vec::new();
    let read = input.by_ref().take(MAX_MESSAGE_BYTES + 1).read_until(b'\n', &mut line).context("cannot read stdin")?;
    if read == 0 {
        return Ok(None);
    }
    if line.last() != Some(&b'\n') && line.len() as u64 > MAX_MESSAGE_BYTES {
        let mut rest = Vec::new();
        loop {
            rest.clear();
            let read = input.by_ref().take(64 * 1024).read_until(b'\n', &mut rest).context("cannot read stdin")?;
            if read == 0 || rest.last() == Some(&b'\n') {
                return Ok(Some(Line::TooLong));
            }
        }
    }
    Ok(Some(Line::Message(line)))
}

struct Server {
    reader: Reader,
    /// The revision an `initialize` agreed on, for clients of the handshake era.
    handshake: Option<&'static str>,
}

/// Which era a request is served in.
#[derive(Clone, Copy, PartialEq)]
enum Era {
    Modern,
    Handshake,
}

fn error_reply(id: Value, code: i64, message: &str, data: Option<Value>) -> Value {
    let mut error = json!({ "code": code, "message": message });
    if let Some(data) = data {
        error["data"] = data;
    }
    json!({ "jsonrpc": "2.0", "id": id, "error": error })
}

fn supported_versions() -> Vec<&'static str> {
    std::iter::once(MODERN_VERSION).chain(HANDSHAKE_VERSIONS).collect()
}

fn server_info() -> Value {
    json!({ "name": "ki", "title": "KernelIndex", "version": env!("CARGO_PKG_VERSION") })
}

const INSTRUCTIONS: &str = "KernelIndex answers which GPU kernel implementation is the fastest verified one for an exact \
workload. Runs are ranked only inside a comparison group (same operation, workload, hardware, protocol, environment); \
evidence levels are reported < reproducible < verified < replicated. Start with `search` to find an operation's name, \
then `resolve` with its axes; `show_run` and `compare` explain runs; `records_since` lists new records.";

impl Server {
    /// The reply to one message (`None` for a notification or a client's response).
    fn handle(&mut self, bytes: &[u8]) -> Option<Value> {
        let message: Value = match serde_json::from_slice(bytes) {
            Ok(message) => message,
            Err(error) => return Some(error_reply(Value::Null, PARSE_ERROR, &format!("not JSON: {error}"), None)),
        };
        let Value::Object(message) = message else {
            let what = if message.is_array() { "batches are not part of MCP" } else { "a message is a JSON object" };
            return Some(error_reply(Value::Null, INVALID_REQUEST, what, None));
        };
        let id = message.get("id").cloned();
        let valid_id =
            matches!(&id, Some(Value::String(_))) || id.as_ref().is_some_and(|id| id.is_i64() || id.is_u64());
        let method = message.get("method").and_then(Value::as_str);
        if message.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return Some(error_reply(id.unwrap_or(Value::Null), INVALID_REQUEST, "\"jsonrpc\" must be \"2.0\"", None));
        }
        let Some(method) = method else {
            if message.contains_key("result") || message.contains_key("error") {
                return None; // a response; this server sends no requests
            }
            return Some(error_reply(
                id.unwrap_or(Value::Null),
                INVALID_REQUEST,
                "a request names its \"method\"",
                None,
            ));
        };
        let Some(id) = id else {
            return None; // a notification (initialized, cancelled, …): nothing to answer
        };
        if !valid_id {
            return Some(error_reply(Value::Null, INVALID_REQUEST, "\"id\" must be a string or an integer", None));
        }
        let params = match message.get("params") {
            None => Map::new(),
            Some(Value::Object(params)) => params.clone(),
            Some(_) => return Some(error_reply(id, INVALID_PARAMS, "\"params\" must be an object", None)),
        };
        Some(match self.answer(method, &params) {
            Ok(result) => json!({ "jsonrpc": "2.0", "id": id, "result": result }),
            Err(Refusal { code, message, data }) => error_reply(id, code, &message, data),
        })
    }

    /// The era a request is served in: modern when its `_meta` names a version (which must be
    /// served), else the handshake's, once there was one.
    fn era(&self, method: &str, params: &Map<String, Value>) -> Result<Era, Refusal> {
        let requested = params.get("_meta").and_then(|meta| meta.get(PROTOCOL_VERSION_KEY));
        match requested {
            Some(Value::String(version)) if version == MODERN_VERSION => Ok(Era::Modern),
            Some(other) => Err(Refusal {
                code: UNSUPPORTED_PROTOCOL_VERSION,
                message: "Unsupported protocol version".into(),
                data: Some(json!({ "supported": supported_versions(), "requested": other })),
            }),
            None if self.handshake.is_some() || method == "initialize" => Ok(Era::Handshake),
            None => Err(Refusal {
                code: INVALID_REQUEST,
                message: format!(
                    "name the protocol version in params._meta[{PROTOCOL_VERSION_KEY:?}] ({MODERN_VERSION}), or send initialize first ({})",
                    HANDSHAKE_VERSIONS.join(", ")
                ),
                data: None,
            }),
        }
    }

    fn answer(&mut self, method: &str, params: &Map<String, Value>) -> Result<Value, Refusal> {
        let era = self.era(method, params)?;
        let mut result = match method {
            "initialize" => {
                let offered = params.get("protocolVersion").and_then(Value::as_str).unwrap_or("");
                // An offer this server does not speak gets its newest; the client decides.
                let agreed =
                    HANDSHAKE_VERSIONS.iter().find(|v| **v == offered).copied().unwrap_or(HANDSHAKE_VERSIONS[0]);
                self.handshake = Some(agreed);
                json!({
                    "protocolVersion": agreed,
                    "capabilities": { "tools": { "listChanged": false } },
                    "serverInfo": server_info(),
                    "instructions": INSTRUCTIONS,
                })
            }
            "server/discover" => json!({
                "supportedVersions": supported_versions(),
                "capabilities": { "tools": {} },
                "instructions": INSTRUCTIONS,
                "ttlMs": LIST_TTL_MS,
                "cacheScope": "public",
            }),
            "ping" => json!({}),
            "tools/list" => {
                let mut list = json!({ "tools": super::mcp_tools::tools() });
                if era == Era::Modern {
                    list["ttlMs"] = json!(LIST_TTL_MS);
                    list["cacheScope"] = json!("public");
                }
                list
            }
            "tools/call" => self.call(params)?,
            _ => return Err(Refusal::new(METHOD_NOT_FOUND, format!("no method {method:?}"))),
        };
        if era == Era::Modern {
            result["resultType"] = json!("complete");
            result["_meta"] = json!({ "io.modelcontextprotocol/serverInfo": server_info() });
        }
        Ok(result)
    }

    fn call(&self, params: &Map<String, Value>) -> Result<Value, Refusal> {
        let name = params
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| Refusal::new(INVALID_PARAMS, "tools/call names its tool in \"name\"".to_string()))?;
        if !super::mcp_tools::TOOL_NAMES.contains(&name) {
            return Err(Refusal::new(INVALID_PARAMS, format!("no tool {name:?}")));
        }
        let arguments = match params.get("arguments") {
            None => Map::new(),
            Some(Value::Object(arguments)) => arguments.clone(),
            Some(_) => return Err(Refusal::new(INVALID_PARAMS, "\"arguments\" must be an object".to_string())),
        };
        Ok(match run_tool(&self.reader, name, &arguments) {
            Ok(document) => json!({
                "content": [{ "type": "text", "text": document.to_string() }],
                "structuredContent": document,
                "isError": false,
            }),
            // The command's own words, for the model to read and act on.
            Err(error) => json!({
                "content": [{ "type": "text", "text": format!("{error:#}") }],
                "isError": true,
            }),
        })
    }
}

/// A JSON-RPC error: the request itself is wrong (a tool's refusal is a result instead).
struct Refusal {
    code: i64,
    message: String,
    data: Option<Value>,
}

impl Refusal {
    fn new(code: i64, message: String) -> Refusal {
        Refusal { code, message, data: None }
    }
}

/// One tool call: its arguments checked, then the reader's answer.
fn run_tool(reader: &Reader, name: &str, arguments: &Map<String, Value>) -> anyhow::Result<Value> {
    use super::mcp_tools::{Arguments, bounded_text};
    let arguments = Arguments::new(name, arguments)?;
    match name {
        "search" => reader.search(&arguments.text("query", 1, 200)?),
        "resolve" => {
            let requests: Vec<ResolveRequest> = match (arguments.get("requests"), arguments.get("operation")) {
                (Some(_), Some(_)) => bail!("resolve: give one workload (operation, axes, …) or requests, not both"),
                (Some(requests), None) => serde_json::from_value(requests.clone())
                    .map_err(|error| anyhow::anyhow!("resolve: requests: {error}"))?,
                (None, _) => vec![
                    serde_json::from_value(Value::Object(arguments.all().clone()))
                        .map_err(|error| anyhow::anyhow!("resolve: {error}"))?,
                ],
            };
            if requests.is_empty() || requests.len() > ki_ranking::resolve::MAX_BATCH {
                bail!("a resolve batch takes 1 to {} requests, got {}", ki_ranking::resolve::MAX_BATCH, requests.len());
            }
            for request in &requests {
                bounded_text("operation", &request.operation, 1, 200)?;
            }
            reader.resolve_batch(&requests)
        }
        "show_run" => reader.run(&arguments.text("run", 1, 200)?),
        "compare" => reader.compare(&arguments.texts("runs", 2, 8)?),
        "records_since" => super::records::since(reader, &arguments.text("since", 1, 64)?),
        "list_runs" => {
            let filters = ["operation", "workload", "hardware", "evidence", "source", "implementation", "status"];
            let all: Vec<&str> = filters.iter().copied().chain(["cursor", "limit"]).collect();
            let filter: ki_ranking::feed::RunFilter = arguments.parse(&all)?;
            let page: ki_ranking::feed::PageRequest = serde_json::from_value(json!({
                "cursor": arguments.get("cursor"),
                "limit": arguments.get("limit"),
            }))
            .map_err(|error| anyhow::anyhow!("list_runs: {error}"))?;
            reader.runs(&filter, &page)
        }
        "verification_status" => reader.verification(&arguments.text("job", 1, 200)?),
        _ => bail!("no tool {name:?}"),
    }
}
