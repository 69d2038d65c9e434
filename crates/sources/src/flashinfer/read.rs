//! Reading and validating the flashinfer-trace layout: definitions, workloads, solutions and
//! traces, each checked against the schema docs and against each other before anything is mapped.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use jiff::Timestamp;
use serde_json::{Map, Value};

use super::constraint::{self, Check};
use crate::error::{Origin, SourceError};
use crate::names;
use ki_model::problem::child_pointer;

/// A `const` or `var` axis of a definition.
#[derive(Debug, Clone, PartialEq)]
pub enum Axis {
    Const(i64),
    Var,
}

/// An input or output of a definition.
#[derive(Debug, Clone)]
pub struct TensorDecl {
    pub name: String,
    /// Axis names; `None` for a scalar.
    pub shape: Option<Vec<String>>,
    /// The record model's dtype name (`bf16`).
    pub dtype: &'static str,
}

#[derive(Debug, Clone)]
pub struct Definition {
    pub origin: Origin,
    /// Path under the data set root, `/`-separated.
    pub relative_path: String,
    pub name: String,
    pub op_type: String,
    pub description: Option<String>,
    pub tags: Vec<String>,
    pub axes: Vec<(String, Axis)>,
    pub constraints: Vec<String>,
    pub inputs: Vec<TensorDecl>,
    pub outputs: Vec<TensorDecl>,
    pub reference: String,
}

impl Definition {
    pub fn axis(&self, name: &str) -> Option<&Axis> {
        self.axes.iter().find(|(n, _)| n == name).map(|(_, a)| a)
    }
}

/// Where one input's data comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum InputData {
    Random,
    Scalar(serde_json::Number),
    Safetensors { path: String, tensor_key: String },
}

#[derive(Debug, Clone)]
pub struct Workload {
    pub origin: Origin,
    /// Pointer of the `workload` object in its record.
    pub pointer: String,
    pub definition: String,
    pub uuid: String,
    /// Axis values in the order the record gives them.
    pub axes: Vec<(String, i64)>,
    pub inputs: Vec<(String, InputData)>,
}

#[derive(Debug, Clone)]
pub struct SourceFile {
    pub path: String,
    pub content: String,
}

#[derive(Debug, Clone)]
pub struct Solution {
    pub origin: Origin,
    pub relative_path: String,
    pub name: String,
    pub definition: String,
    pub author: String,
    pub description: Option<String>,
    /// Lowercase: `python`, `triton`, `cpp`, `cuda`.
    pub language: String,
    pub target_hardware: Vec<String>,
    pub entry_file: String,
    pub entry_symbol: String,
    pub sources: Vec<SourceFile>,
}

#[derive(Debug, Clone)]
pub struct Performance {
    pub latency_ms: f64,
    pub reference_latency_ms: Option<f64>,
    pub speedup_factor: Option<f64>,
}

#[derive(Debug, Clone)]
pub struct Evaluation {
    /// The record model's status (`passed`, `incorrect_numerical`, …).
    pub status: &'static str,
    pub log: String,
    /// Errors that are finite numbers; "NaN" / "Infinity" leave theirs `None`.
    pub correctness: Option<(Option<f64>, Option<f64>)>,
    pub performance: Option<Performance>,
    pub hardware: String,
    pub libs: Vec<(String, String)>,
    pub timestamp: Timestamp,
}

#[derive(Debug, Clone)]
pub struct Trace {
    pub origin: Origin,
    pub definition: String,
    pub solution: String,
    pub workload: Workload,
    pub evaluation: Evaluation,
}

/// A data set read whole and cross-checked.
#[derive(Debug, Default)]
pub struct Dataset {
    pub root: PathBuf,
    pub definitions: Vec<Definition>,
    pub workloads: Vec<Workload>,
    pub solutions: Vec<Solution>,
    pub traces: Vec<Trace>,
}

impl Dataset {
    pub fn definition(&self, name: &str) -> Option<&Definition> {
        self.definitions.iter().find(|d| d.name == name)
    }
}

/// Reads `root` (a flashinfer-trace checkout) whole. Every problem found is returned; the
/// caller imports nothing unless there are none.
pub fn read_dataset(root: &Path) -> Result<Dataset, Vec<SourceError>> {
    let mut errors = Vec::new();
    let mut dataset = Dataset { root: root.to_path_buf(), ..Dataset::default() };
    let definitions_dir = root.join("definitions");
    if !definitions_dir.is_dir() {
        return Err(vec![
            Origin::file(root).error("", "not a flashinfer-trace data set: it has no definitions/ directory"),
        ]);
    }

    for path in files_under(&definitions_dir, "json", &mut errors) {
        match read_json(&path).and_then(|(origin, value)| parse_definition(root, &path, origin, &value)) {
            Ok(definition) => dataset.definitions.push(definition),
            Err(error) => errors.push(error),
        }
    }
    let mut seen = HashMap::new();
    for definition in &dataset.definitions {
        if let Some(first) = seen.insert(definition.name.clone(), definition.relative_path.clone()) {
            errors.push(
                definition
                    .origin
                    .error("/name", format!("definition {:?} is also defined in {first}", definition.name)),
            );
        }
    }

    for path in files_under(&root.join("workloads"), "jsonl", &mut errors) {
        for_each_line(&path, &mut errors, |origin, value| {
            let workload = parse_workload_record(origin, value, false)?;
            check_workload(&dataset, &workload.0)?;
            dataset.workloads.push(workload.0);
            Ok(())
        });
    }
    let mut uuids = HashSet::new();
    for workload in &dataset.workloads {
        if !uuids.insert((workload.definition.clone(), workload.uuid.clone())) {
            errors.push(workload.origin.error(
                format!("{}/uuid", workload.pointer),
                format!("workload {} of {} appears twice", workload.uuid, workload.definition),
            ));
        }
    }

    for path in files_under(&root.join("solutions"), "json", &mut errors) {
        match read_json(&path).and_then(|(origin, value)| parse_solution(root, &path, origin, &value)) {
            Ok(solution) => {
                if dataset.definition(&solution.definition).is_none() {
                    errors.push(solution.origin.error(
                        "/definition",
                        format!("solution {:?} names unknown definition {:?}", solution.name, solution.definition),
                    ));
                } else {
                    dataset.solutions.push(solution);
                }
            }
            Err(error) => errors.push(error),
        }
    }
    let mut solution_names = HashMap::new();
    for solution in &dataset.solutions {
        if let Some(first) = solution_names.insert(solution.name.clone(), solution.relative_path.clone()) {
            errors.push(
                solution.origin.error("/name", format!("solution {:?} is also defined in {first}", solution.name)),
            );
        }
    }

    for path in files_under(&root.join("traces"), "jsonl", &mut errors) {
        for_each_line(&path, &mut errors, |origin, value| {
            let (workload, solution, evaluation) = parse_workload_record(origin.clone(), value, true)?;
            check_workload(&dataset, &workload)?;
            // A trace line without a solution or evaluation is a workload entry, not a result.
            let (Some(solution), Some(evaluation)) = (solution, evaluation) else { return Ok(()) };
            let Some(known) = dataset.solutions.iter().find(|s| s.name == solution) else {
                return Err(origin.error("/solution", format!("trace names unknown solution {solution:?}")));
            };
            if known.definition != workload.definition {
                return Err(origin.error(
                    "/solution",
                    format!(
                        "solution {solution:?} solves {:?}, not the trace's definition {:?}",
                        known.definition, workload.definition
                    ),
                ));
            }
            let evaluation = parse_evaluation(&origin, "/evaluation", &evaluation)?;
            dataset.traces.push(Trace {
                origin,
                definition: workload.definition.clone(),
                solution,
                workload,
                evaluation,
            });
            Ok(())
        });
    }

    if errors.is_empty() { Ok(dataset) } else { Err(errors) }
}

/// Every file with extension `ext` under `dir`, sorted, so imports are reproducible.
fn files_under(dir: &Path, ext: &str, errors: &mut Vec<SourceError>) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        let entries = match std::fs::read_dir(&current) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && current == dir => return found,
            Err(e) => {
                errors.push(Origin::file(&current).error("", format!("cannot list directory: {e}")));
                continue;
            }
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == ext) {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// The largest definition or solution file read: ki verify's Solution intake takes 16 MiB
/// (sources inline); the samples' largest file is 40 KB.
const MAX_JSON_FILE_BYTES: u64 = 16 << 20;
/// The largest workload or trace list read; the largest trace file of FlashInfer-Bench's PR 221
/// is 1.1 MB.
const MAX_JSONL_FILE_BYTES: u64 = 64 << 20;

/// A file's text, refused past `limit` bytes without reading further.
fn read_bounded(path: &Path, limit: u64) -> Result<String, SourceError> {
    use std::io::Read;
    let refuse = |message: String| Origin::file(path).error("", message);
    let file = std::fs::File::open(path).map_err(|e| refuse(format!("cannot read: {e}")))?;
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes).map_err(|e| refuse(format!("cannot read: {e}")))?;
    if bytes.len() as u64 > limit {
        return Err(refuse(format!("larger than {limit} bytes ({} MiB)", limit >> 20)));
    }
    String::from_utf8(bytes).map_err(|e| refuse(format!("not UTF-8 text (byte {})", e.utf8_error().valid_up_to())))
}

fn read_json(path: &Path) -> Result<(Origin, Value), SourceError> {
    let text = read_bounded(path, MAX_JSON_FILE_BYTES)?;
    match serde_json::from_str::<Value>(&text) {
        Ok(value) => Ok((Origin::document(path, text), value)),
        Err(e) => Err(SourceError {
            file: path.to_path_buf(),
            line: Some(e.line()),
            pointer: String::new(),
            message: format!("invalid JSON: {e}"),
        }),
    }
}

/// Calls `each` for every non-blank line of a JSONL file; the first error of a line is kept.
fn for_each_line(
    path: &Path,
    errors: &mut Vec<SourceError>,
    mut each: impl FnMut(Origin, &Value) -> Result<(), SourceError>,
) {
    let text = match read_bounded(path, MAX_JSONL_FILE_BYTES) {
        Ok(text) => text,
        Err(error) => {
            errors.push(error);
            return;
        }
    };
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let origin = Origin::line(path, index + 1);
        match serde_json::from_str::<Value>(line) {
            Ok(value) => {
                if let Err(error) = each(origin, &value) {
                    errors.push(error);
                }
            }
            Err(e) => errors.push(origin.error("", format!("invalid JSON (column {}): {e}", e.column()))),
        }
    }
}

fn relative(root: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(root).unwrap_or(path);
    rel.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/")
}

fn object<'a>(origin: &Origin, pointer: &str, value: &'a Value) -> Result<&'a Map<String, Value>, SourceError> {
    value.as_object().ok_or_else(|| origin.error(pointer, "expected an object"))
}

fn required<'a>(
    origin: &Origin,
    pointer: &str,
    map: &'a Map<String, Value>,
    field: &str,
) -> Result<&'a Value, SourceError> {
    match map.get(field) {
        Some(value) if !value.is_null() => Ok(value),
        _ => Err(origin.error(child_pointer(pointer, field), "required field is missing")),
    }
}

fn string_field(origin: &Origin, pointer: &str, map: &Map<String, Value>, field: &str) -> Result<String, SourceError> {
    let value = required(origin, pointer, map, field)?;
    match value.as_str() {
        Some(text) if !text.trim().is_empty() => Ok(text.to_string()),
        Some(_) => Err(origin.error(child_pointer(pointer, field), "must not be empty")),
        None => Err(origin.error(child_pointer(pointer, field), "expected a string")),
    }
}

fn optional_string(
    origin: &Origin,
    pointer: &str,
    map: &Map<String, Value>,
    field: &str,
) -> Result<Option<String>, SourceError> {
    match map.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(_) => Err(origin.error(child_pointer(pointer, field), "expected a string")),
    }
}

fn string_list(origin: &Origin, pointer: &str, value: Option<&Value>) -> Result<Vec<String>, SourceError> {
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                item.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| origin.error(format!("{pointer}/{i}"), "expected a string"))
            })
            .collect(),
        Some(_) => Err(origin.error(pointer, "expected an array of strings")),
    }
}

fn parse_definition(root: &Path, path: &Path, origin: Origin, value: &Value) -> Result<Definition, SourceError> {
    let top = object(&origin, "", value)?;
    let name = string_field(&origin, "", top, "name")?;
    let op_type = string_field(&origin, "", top, "op_type")?;
    let description = optional_string(&origin, "", top, "description")?;
    let tags = string_list(&origin, "/tags", top.get("tags"))?;
    let constraints = string_list(&origin, "/constraints", top.get("constraints"))?;

    let axes_value = object(&origin, "/axes", required(&origin, "", top, "axes")?)?;
    let mut axes = Vec::new();
    for (axis_name, axis) in axes_value {
        let pointer = child_pointer("/axes", axis_name);
        // Lowercased, an axis name must be a manifest identifier (`M` → `m`).
        if !names::is_identifier(&axis_name.to_ascii_lowercase()) {
            return Err(origin.error(pointer, "an axis name must be a letter followed by letters, digits or _"));
        }
        let axis_object = object(&origin, &pointer, axis)?;
        let kind = string_field(&origin, &pointer, axis_object, "type")?;
        let parsed = match kind.as_str() {
            "const" => {
                let value = required(&origin, &pointer, axis_object, "value")?;
                Axis::Const(value.as_i64().ok_or_else(|| {
                    origin.error(child_pointer(&pointer, "value"), "a const axis value must be an integer")
                })?)
            }
            "var" => Axis::Var,
            other => {
                return Err(origin.error(
                    child_pointer(&pointer, "type"),
                    format!("axis type must be \"const\" or \"var\", not {other:?}"),
                ));
            }
        };
        if axes.iter().any(|(n, _): &(String, Axis)| names::identifier(n) == names::identifier(axis_name)) {
            return Err(origin.error(pointer, "two axes have the same name once lowercased"));
        }
        axes.push((axis_name.clone(), parsed));
    }

    let inputs = parse_tensors(&origin, "/inputs", required(&origin, "", top, "inputs")?, &axes)?;
    let outputs = parse_tensors(&origin, "/outputs", required(&origin, "", top, "outputs")?, &axes)?;
    if inputs.is_empty() {
        return Err(origin.error("/inputs", "a definition needs at least one input"));
    }
    if outputs.is_empty() {
        return Err(origin.error("/outputs", "a definition needs at least one output"));
    }
    for output in &outputs {
        if inputs.iter().any(|input| names::identifier(&input.name) == names::identifier(&output.name)) {
            return Err(origin.error(
                child_pointer("/outputs", &output.name),
                format!("{:?} is both an input and an output; every tensor needs its own name", output.name),
            ));
        }
    }

    let reference = string_field(&origin, "", top, "reference")?;
    if !defines_global_run(&reference) {
        return Err(origin.error(
            "/reference",
            "the reference implementation must define a global function named `run` (its entry point)",
        ));
    }
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    if stem != name {
        return Err(origin
            .error("/name", format!("definition {name:?} is stored in {stem}.json; the file must be named after it")));
    }
    Ok(Definition {
        relative_path: relative(root, path),
        origin,
        name,
        op_type,
        description,
        tags,
        axes,
        constraints,
        inputs,
        outputs,
        reference,
    })
}

/// Whether Python source defines `run` at module level (`def run(` at column 0).
fn defines_global_run(source: &str) -> bool {
    source.lines().any(|line| {
        let rest = line.strip_prefix("async def ").or_else(|| line.strip_prefix("def "));
        rest.is_some_and(|r| {
            r.trim_start().strip_prefix("run").is_some_and(|after| after.trim_start().starts_with('('))
        })
    })
}

fn parse_tensors(
    origin: &Origin,
    pointer: &str,
    value: &Value,
    axes: &[(String, Axis)],
) -> Result<Vec<TensorDecl>, SourceError> {
    let map = object(origin, pointer, value)?;
    let mut tensors = Vec::new();
    for (name, spec) in map {
        let at = child_pointer(pointer, name);
        if !names::is_identifier(&name.to_ascii_lowercase()) {
            return Err(origin.error(at, "a tensor name must be a letter followed by letters, digits or _"));
        }
        let spec_object = object(origin, &at, spec)?;
        let shape = match spec_object.get("shape") {
            None => {
                return Err(origin.error(child_pointer(&at, "shape"), "required field is missing (null for a scalar)"));
            }
            Some(Value::Null) => None,
            Some(Value::Array(items)) => {
                let mut shape = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    let item_at = format!("{at}/shape/{i}");
                    let axis = item.as_str().ok_or_else(|| origin.error(&item_at, "a shape lists axis names"))?;
                    if !axes.iter().any(|(n, _)| n == axis) {
                        return Err(origin.error(
                            item_at,
                            format!("shape names axis {axis:?}, which the definition does not declare"),
                        ));
                    }
                    shape.push(axis.to_string());
                }
                Some(shape)
            }
            Some(_) => return Err(origin.error(child_pointer(&at, "shape"), "expected an array of axis names or null")),
        };
        let dtype_name = string_field(origin, &at, spec_object, "dtype")?;
        let dtype = names::dtype(&dtype_name).ok_or_else(|| {
            origin.error(
                child_pointer(&at, "dtype"),
                format!("unknown dtype {dtype_name:?} (known: {})", names::FLASHINFER_DTYPES),
            )
        })?;
        if tensors.iter().any(|t: &TensorDecl| names::identifier(&t.name) == names::identifier(name)) {
            return Err(origin.error(at, "two tensors have the same name once lowercased"));
        }
        tensors.push(TensorDecl { name: name.clone(), shape, dtype });
    }
    Ok(tensors)
}

type WorkloadRecord = (Workload, Option<String>, Option<Value>);

/// A workloads/*.jsonl or traces/*.jsonl line: `{definition, workload, solution, evaluation}`.
fn parse_workload_record(origin: Origin, value: &Value, is_trace: bool) -> Result<WorkloadRecord, SourceError> {
    let top = object(&origin, "", value)?;
    let definition = string_field(&origin, "", top, "definition")?;
    let solution = optional_string(&origin, "", top, "solution")?;
    let evaluation = top.get("evaluation").filter(|v| !v.is_null()).cloned();
    if !is_trace && (solution.is_some() || evaluation.is_some()) {
        return Err(
            origin.error("/evaluation", "a workload entry has solution and evaluation null; results belong in traces/")
        );
    }
    if is_trace && evaluation.is_some() && solution.is_none() {
        return Err(origin.error("/solution", "a trace with an evaluation must name its solution"));
    }
    let workload_value = object(&origin, "/workload", required(&origin, "", top, "workload")?)?;
    let uuid = string_field(&origin, "/workload", workload_value, "uuid")?;
    let axes_map = object(&origin, "/workload/axes", required(&origin, "/workload", workload_value, "axes")?)?;
    let mut axes = Vec::new();
    for (name, v) in axes_map {
        let n = v.as_i64().filter(|n| *n >= 0).ok_or_else(|| {
            origin.error(child_pointer("/workload/axes", name), "an axis value must be a non-negative integer")
        })?;
        axes.push((name.clone(), n));
    }
    let inputs_map = object(&origin, "/workload/inputs", required(&origin, "/workload", workload_value, "inputs")?)?;
    let mut inputs = Vec::new();
    for (name, descriptor) in inputs_map {
        let at = child_pointer("/workload/inputs", name);
        let d = object(&origin, &at, descriptor)?;
        let kind = string_field(&origin, &at, d, "type")?;
        let data = match kind.as_str() {
            "random" => InputData::Random,
            "scalar" => match required(&origin, &at, d, "value")? {
                Value::Number(n) => InputData::Scalar(n.clone()),
                Value::Bool(b) => InputData::Scalar(serde_json::Number::from(u8::from(*b))),
                _ => {
                    return Err(
                        origin.error(child_pointer(&at, "value"), "a scalar value must be a number or a boolean")
                    );
                }
            },
            "safetensors" => InputData::Safetensors {
                path: string_field(&origin, &at, d, "path")?,
                tensor_key: string_field(&origin, &at, d, "tensor_key")?,
            },
            other => {
                return Err(origin.error(
                    child_pointer(&at, "type"),
                    format!("input type must be random, scalar or safetensors, not {other:?}"),
                ));
            }
        };
        inputs.push((name.clone(), data));
    }
    let workload = Workload { origin, pointer: "/workload".into(), definition, uuid, axes, inputs };
    Ok((workload, solution, evaluation))
}

/// A workload must bind exactly the definition's var axes, agree with its const axes and
/// constraints, and give data for exactly its inputs.
fn check_workload(dataset: &Dataset, workload: &Workload) -> Result<(), SourceError> {
    let origin = &workload.origin;
    let Some(definition) = dataset.definition(&workload.definition) else {
        return Err(origin.error("/definition", format!("unknown definition {:?}", workload.definition)));
    };
    let mut values: HashMap<String, i64> = HashMap::new();
    for (name, axis) in &definition.axes {
        if let Axis::Const(v) = axis {
            values.insert(name.clone(), *v);
        }
    }
    for (name, value) in &workload.axes {
        let at = child_pointer("/workload/axes", name);
        match definition.axis(name) {
            None => {
                return Err(
                    origin.error(at, format!("axis {name:?} is not declared by definition {:?}", definition.name))
                );
            }
            Some(Axis::Const(c)) if c != value => {
                return Err(origin.error(
                    at,
                    format!(
                        "axis {name:?} is const {c} in definition {:?}, but the workload says {value}",
                        definition.name
                    ),
                ));
            }
            _ => {
                values.insert(name.clone(), *value);
            }
        }
    }
    for (name, axis) in &definition.axes {
        if *axis == Axis::Var && !workload.axes.iter().any(|(n, _)| n == name) {
            return Err(origin.error(
                "/workload/axes",
                format!("var axis {name:?} of definition {:?} has no value", definition.name),
            ));
        }
    }
    for (i, c) in definition.constraints.iter().enumerate() {
        if let Check::Fails { left, right } = constraint::check(c, &values) {
            return Err(origin.error(
                "/workload/axes",
                format!(
                    "the axes contradict constraint {i} of definition {:?}: {c} ({left} vs {right})",
                    definition.name
                ),
            ));
        }
    }
    for (name, data) in &workload.inputs {
        let at = child_pointer("/workload/inputs", name);
        let Some(input) = definition.inputs.iter().find(|t| &t.name == name) else {
            return Err(origin.error(at, format!("{name:?} is not an input of definition {:?}", definition.name)));
        };
        match (&input.shape, data) {
            (None, InputData::Random) => {
                return Err(origin.error(at, format!("{name:?} is a scalar; it needs type \"scalar\" with a value")));
            }
            (Some(_), InputData::Scalar(_)) => {
                return Err(origin.error(at, format!("{name:?} is a tensor; a scalar value cannot stand for it")));
            }
            _ => {}
        }
    }
    for input in &definition.inputs {
        if !workload.inputs.iter().any(|(n, _)| n == &input.name) {
            return Err(origin.error(
                "/workload/inputs",
                format!("input {:?} of definition {:?} has no data source", input.name, definition.name),
            ));
        }
    }
    Ok(())
}

fn parse_solution(root: &Path, path: &Path, origin: Origin, value: &Value) -> Result<Solution, SourceError> {
    let top = object(&origin, "", value)?;
    let name = string_field(&origin, "", top, "name")?;
    let definition = string_field(&origin, "", top, "definition")?;
    let author = string_field(&origin, "", top, "author")?;
    let description = optional_string(&origin, "", top, "description")?;
    let spec = object(&origin, "/spec", required(&origin, "", top, "spec")?)?;
    // The legacy (2025) schema wrote "Python"; the current one writes "python".
    let language = string_field(&origin, "/spec", spec, "language")?.to_ascii_lowercase();
    if !matches!(language.as_str(), "python" | "triton" | "cpp" | "cuda") {
        return Err(
            origin.error("/spec/language", format!("language must be python, triton, cpp or cuda, not {language:?}"))
        );
    }
    let target_hardware = string_list(&origin, "/spec/target_hardware", spec.get("target_hardware"))?;
    let entry_point = string_field(&origin, "/spec", spec, "entry_point")?;
    let Some((entry_file, entry_symbol)) = entry_point.split_once("::").filter(|(f, s)| !f.is_empty() && !s.is_empty())
    else {
        return Err(
            origin.error("/spec/entry_point", format!("{entry_point:?} is not of the form file_path::function_name"))
        );
    };
    let sources_value = required(&origin, "", top, "sources")?;
    let items = sources_value.as_array().ok_or_else(|| origin.error("/sources", "expected an array of files"))?;
    let mut sources = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let at = format!("/sources/{i}");
        let file = object(&origin, &at, item)?;
        let file_path = string_field(&origin, &at, file, "path")?;
        let content = match required(&origin, &at, file, "content")? {
            Value::String(s) => s.clone(),
            _ => return Err(origin.error(format!("{at}/content"), "expected a string")),
        };
        if sources.iter().any(|s: &SourceFile| s.path == file_path) {
            return Err(origin.error(format!("{at}/path"), format!("{file_path:?} appears twice")));
        }
        sources.push(SourceFile { path: file_path, content });
    }
    if !sources.iter().any(|s| s.path == entry_file) {
        return Err(
            origin.error("/spec/entry_point", format!("entry point file {entry_file:?} is not among the sources"))
        );
    }
    Ok(Solution {
        relative_path: relative(root, path),
        origin,
        name,
        definition,
        author,
        description,
        language,
        target_hardware,
        entry_file: entry_file.to_string(),
        entry_symbol: entry_symbol.to_string(),
        sources,
    })
}

/// A finite number; the strings "NaN" / "Infinity" / "-Infinity" (how the data set writes
/// non-finite errors) and null give `None`.
fn error_value(origin: &Origin, pointer: &str, value: Option<&Value>) -> Result<Option<f64>, SourceError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_f64() {
            Some(v) if v.is_finite() && v >= 0.0 => Ok(Some(v)),
            _ => Err(origin.error(pointer, "an error must be a non-negative number")),
        },
        Some(Value::String(s)) if matches!(s.as_str(), "NaN" | "Infinity" | "-Infinity" | "inf" | "nan") => Ok(None),
        Some(_) => Err(origin.error(pointer, "expected a number, \"NaN\" or \"Infinity\"")),
    }
}

fn positive_ms(
    origin: &Origin,
    pointer: &str,
    value: Option<&Value>,
    required_field: bool,
) -> Result<Option<f64>, SourceError> {
    match value.and_then(Value::as_f64) {
        Some(v) if v.is_finite() && v >= 0.0 => Ok(Some(v)),
        Some(_) => Err(origin.error(pointer, "must be a finite, non-negative number")),
        None if value.is_some_and(|v| !v.is_null() && !v.is_string()) => {
            Err(origin.error(pointer, "expected a number"))
        }
        None if required_field => Err(origin.error(pointer, "required number is missing")),
        None => Ok(None),
    }
}

fn map_status(status: &str) -> Option<&'static str> {
    Some(match status {
        "PASSED" => "passed",
        "INCORRECT_SHAPE" => "incorrect_shape",
        "INCORRECT_NUMERICAL" => "incorrect_numerical",
        "INCORRECT_DTYPE" => "incorrect_dtype",
        "RUNTIME_ERROR" => "runtime_error",
        "COMPILE_ERROR" => "compile_error",
        "TIMEOUT" => "timeout",
        _ => return None,
    })
}

/// An ISO 8601 timestamp; one without an offset is taken as UTC (the harness writes UTC).
pub fn parse_timestamp(text: &str) -> Option<Timestamp> {
    if let Ok(t) = text.parse::<Timestamp>() {
        return Some(t);
    }
    let civil: jiff::civil::DateTime = text.parse().ok()?;
    jiff::tz::Offset::UTC.to_timestamp(civil).ok()
}

fn parse_evaluation(origin: &Origin, pointer: &str, value: &Value) -> Result<Evaluation, SourceError> {
    let e = object(origin, pointer, value)?;
    let status_text = string_field(origin, pointer, e, "status")?;
    let status = map_status(&status_text).ok_or_else(|| {
        origin.error(
            format!("{pointer}/status"),
            format!("unknown status {status_text:?} (known: PASSED, INCORRECT_SHAPE, INCORRECT_NUMERICAL, INCORRECT_DTYPE, RUNTIME_ERROR, COMPILE_ERROR, TIMEOUT)"),
        )
    })?;
    let log = match e.get("log") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(_) => return Err(origin.error(format!("{pointer}/log"), "expected a string")),
    };
    let correctness = match e.get("correctness") {
        None | Some(Value::Null) => None,
        Some(c) => {
            let at = format!("{pointer}/correctness");
            let c = object(origin, &at, c)?;
            Some((
                error_value(origin, &format!("{at}/max_absolute_error"), c.get("max_absolute_error"))?,
                error_value(origin, &format!("{at}/max_relative_error"), c.get("max_relative_error"))?,
            ))
        }
    };
    let performance = match e.get("performance") {
        None | Some(Value::Null) => None,
        Some(p) => {
            let at = format!("{pointer}/performance");
            let p = object(origin, &at, p)?;
            let latency = positive_ms(origin, &format!("{at}/latency_ms"), p.get("latency_ms"), true)?;
            Some(Performance {
                latency_ms: latency.unwrap_or_default(),
                reference_latency_ms: positive_ms(
                    origin,
                    &format!("{at}/reference_latency_ms"),
                    p.get("reference_latency_ms"),
                    false,
                )?,
                speedup_factor: positive_ms(origin, &format!("{at}/speedup_factor"), p.get("speedup_factor"), false)?,
            })
        }
    };
    if status == "passed" && performance.is_none() {
        return Err(origin.error(format!("{pointer}/performance"), "a PASSED evaluation must report its performance"));
    }
    let env_at = format!("{pointer}/environment");
    let env = object(origin, &env_at, required(origin, pointer, e, "environment")?)?;
    let hardware = string_field(origin, &env_at, env, "hardware")?;
    let mut libs = Vec::new();
    if let Some(l) = env.get("libs").filter(|v| !v.is_null()) {
        for (name, version) in object(origin, &format!("{env_at}/libs"), l)? {
            let version = version.as_str().ok_or_else(|| {
                origin.error(child_pointer(&format!("{env_at}/libs"), name), "a version must be a string")
            })?;
            libs.push((name.clone(), version.to_string()));
        }
    }
    let stamp = string_field(origin, pointer, e, "timestamp")?;
    let timestamp = parse_timestamp(&stamp).ok_or_else(|| {
        origin.error(format!("{pointer}/timestamp"), format!("{stamp:?} is not an ISO 8601 timestamp"))
    })?;
    Ok(Evaluation { status, log, correctness, performance, hardware, libs, timestamp })
}

#[cfg(test)]
mod tests {
    use super::parse_timestamp;

    #[test]
    fn timestamps_with_an_offset_or_none_are_utc() {
        let utc = |text: &str| parse_timestamp(text).map(|t| format!("{t:.3}"));
        assert_eq!(utc("2026-03-17T14:19:30.123456Z").as_deref(), Some("2026-03-17T14:19:30.123Z"));
        assert_eq!(utc("2026-03-17T16:19:30+02:00").as_deref(), Some("2026-03-17T14:19:30.000Z"));
        // The harness writes UTC without an offset, with a `T` or a space.
        assert_eq!(utc("2026-03-17T14:19:30.5").as_deref(), Some("2026-03-17T14:19:30.500Z"));
        assert_eq!(utc("2026-03-17 14:19:30").as_deref(), Some("2026-03-17T14:19:30.000Z"));
        assert_eq!(utc("17 March 2026"), None);
        assert_eq!(utc(""), None);
    }
}
