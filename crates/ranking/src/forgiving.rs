//! Resolve as forgiving as search (issue 34): a resolve request's operation, GPU, axis names
//! and dtypes read with the same [`Lexicon`] and [`understand`] the search reads plain words
//! with, before [`Index::resolve`] answers it. `H200`, `h200` and `H100 SXM` are the GPUs the
//! runs name (`NVIDIA H200`); `gqa paged decode` and `rms norm` are operation words, the
//! operation answered being the one they name whose axes the request uses and that has the most
//! runs; `batch 16` or `bs` is the operation's own `batch_size`; `bfloat16` is its `bf16`. What
//! was read otherwise than written is said in [`ResolveResponse::read_as`]. Pure.

use crate::index::Index;
use crate::query::{Filter, dtype_short};
use crate::resolve::{ReadAs, ResolveRequest, ResolveResponse};
use crate::understand::{Lexicon, LexiconParts, OperationNames, axis_for, understand};

/// Most other operations an operation reading names.
const MAX_OTHERS_NAMED: usize = 5;

impl Index {
    /// A [`Lexicon`] of this index's own names (operations with their aliases, families and axes,
    /// the GPUs its runs name, projects, implementations, languages): what a reader of a partial
    /// index (one operation's rows) reads requests with. A read model has its own, built once.
    pub fn lexicon(&self) -> Lexicon {
        let mut gpus: Vec<&str> = self.runs.iter().filter_map(|r| r.hardware_model.as_deref()).collect();
        gpus.sort_unstable();
        gpus.dedup();
        let mut languages: Vec<&str> = self.implementations.iter().map(|i| i.language.as_str()).collect();
        languages.sort_unstable();
        languages.dedup();
        let operations = self
            .operations
            .iter()
            .enumerate()
            .map(|(op, row)| OperationNames {
                name: &row.name,
                slug: &row.slug,
                family: &row.family,
                aliases: self.aliases_of(op),
                models: Vec::new(),
                axes: self.operation_known_axes[op].iter().map(String::as_str).collect(),
            })
            .collect();
        Lexicon::new(&LexiconParts {
            operations,
            gpus,
            projects: self.projects.iter().map(|p| (p.name.as_str(), p.slug.as_str())).collect(),
            implementations: self.implementations.iter().map(|i| i.slug.as_str()).collect(),
            languages,
        })
    }

    fn aliases_of(&self, op: usize) -> Vec<&str> {
        let id = &self.operations[op].id;
        self.operation_aliases.iter().filter(|a| &a.operation_id == id).map(|a| a.alias.as_str()).collect()
    }

    /// Every run of an operation, over its workloads.
    fn operation_run_count(&self, op: usize) -> usize {
        self.workloads_by_operation[op].iter().map(|&w| self.workload_runs(w).len()).sum()
    }

    /// Whether some comparison group of the operation was measured on this hardware.
    fn measured_on(&self, op: usize, hardware: &str) -> bool {
        self.workloads_by_operation[op].iter().any(|&w| {
            self.cohorts_by_workload[w]
                .iter()
                .any(|m| m.filters.iter().any(|(h, _)| h.as_deref().is_some_and(|h| h.eq_ignore_ascii_case(hardware))))
        })
    }

    /// The request as the index names things, and what was read otherwise than written. A part
    /// the lexicon cannot read is left as written, for resolve to say what it lacks.
    pub fn read_request(&self, request: &ResolveRequest, lexicon: &Lexicon) -> (ResolveRequest, Vec<ReadAs>) {
        let mut read = request.clone();
        let mut read_as = Vec::new();
        let given = request.operation.trim();
        // The GPU first: the operation's choice prefers one measured on it.
        if let Some(hardware) = request.hardware.as_deref().map(str::trim).filter(|h| !h.is_empty())
            && let Some(gpu) = lexicon.gpu_named(hardware)
            && gpu != hardware
        {
            read.hardware = Some(gpu.to_string());
            read_as.push(ReadAs { field: "hardware".into(), given: hardware.into(), read: gpu.into(), note: None });
        }
        let op = match self.find_operation(given) {
            Ok(op) => Some(op),
            Err(_) => self.operation_from_words(given, lexicon, &mut read, &mut read_as),
        };
        let Some(op) = op else { return (read, read_as) };
        let known: Vec<&str> = self.operation_known_axes[op].iter().map(String::as_str).collect();
        let axes = std::mem::take(&mut read.axes);
        for (name, value) in axes {
            let own = if known.contains(&name.as_str()) {
                None
            } else {
                let loose = lexicon.axis_named(&name).unwrap_or_else(|| name.clone());
                axis_for(&loose, &known).filter(|own| !read.axes.contains_key(own) && !request.axes.contains_key(own))
            };
            match own {
                Some(own) => {
                    read_as.push(ReadAs { field: "axis".into(), given: name.clone(), read: own.clone(), note: None });
                    read.axes.insert(own, value);
                }
                None => {
                    read.axes.insert(name, value);
                }
            }
        }
        let workloads = &self.workloads_by_operation[op];
        for dtype in &mut read.dtypes {
            let own = |d: &String| d.eq_ignore_ascii_case(dtype.trim());
            if workloads.iter().any(|&w| self.workloads[w].dtypes.iter().any(own)) {
                continue;
            }
            let wanted = dtype_short(dtype.trim());
            let found = workloads.iter().flat_map(|&w| &self.workloads[w].dtypes).find(|d| dtype_short(d) == wanted);
            if let Some(found) = found {
                read_as.push(ReadAs { field: "dtype".into(), given: dtype.clone(), read: found.clone(), note: None });
                *dtype = found.clone();
            }
        }
        (read, read_as)
    }

    /// The operation plain words name (`gqa paged decode`, `rms norm`): of those whose names hold
    /// every word (or a common name it stands for), the one measured on the request's GPU, that
    /// has every axis the request names, with the most runs. GPU, axes and dtypes the words also
    /// name join the request where it names none.
    fn operation_from_words(
        &self,
        given: &str,
        lexicon: &Lexicon,
        read: &mut ResolveRequest,
        read_as: &mut Vec<ReadAs>,
    ) -> Option<usize> {
        let understood = understand(given, lexicon);
        if understood.terms.is_empty() {
            return None;
        }
        let texts: Vec<String> = (0..self.operations.len())
            .map(|op| {
                let row = &self.operations[op];
                let mut text = format!("{} {} {}", row.name, row.slug, row.family);
                for alias in self.aliases_of(op) {
                    text.push(' ');
                    text.push_str(alias);
                }
                text.to_lowercase()
            })
            .collect();
        let mut matching: Vec<usize> = (0..self.operations.len())
            .filter(|&op| {
                understood.terms.iter().all(|alternatives| alternatives.iter().any(|a| texts[op].contains(a.as_str())))
            })
            .collect();
        if matching.is_empty() {
            return None;
        }
        if read.hardware.is_none()
            && let Some(gpu) = understood.request.values(Filter::Gpu).next()
        {
            read.hardware = lexicon.gpu_named(gpu).map(str::to_string);
        }
        for (axis, value) in &understood.request.axes {
            read.axes.entry(axis.clone()).or_insert_with(|| value.clone());
        }
        if read.dtypes.is_empty() {
            read.dtypes = understood.request.values(Filter::Dtype).map(str::to_string).collect();
        }
        let hardware = read.hardware.clone();
        let has_axes = |op: usize| {
            let known: Vec<&str> = self.operation_known_axes[op].iter().map(String::as_str).collect();
            read.axes.keys().all(|name| {
                known.contains(&name.as_str())
                    || axis_for(&lexicon.axis_named(name).unwrap_or_else(|| name.clone()), &known).is_some()
            })
        };
        let runs: Vec<usize> = (0..self.operations.len())
            .map(|op| if matching.contains(&op) { self.operation_run_count(op) } else { 0 })
            .collect();
        matching.sort_by(|&a, &b| {
            let on = |op: usize| hardware.as_deref().is_some_and(|h| self.measured_on(op, h));
            on(b)
                .cmp(&on(a))
                .then(has_axes(b).cmp(&has_axes(a)))
                .then(runs[b].cmp(&runs[a]))
                .then(self.operations[a].name.cmp(&self.operations[b].name))
        });
        let chosen = matching[0];
        let others: Vec<&str> =
            matching[1..].iter().take(MAX_OTHERS_NAMED).map(|&op| self.operations[op].name.as_str()).collect();
        let note = (!others.is_empty()).then(|| {
            let more = matching.len() - 1 - others.len();
            format!(
                "{} operations match; this one {}. Others: {}{}",
                matching.len(),
                match hardware.as_deref() {
                    Some(h) if self.measured_on(chosen, h) => format!("was measured on {h} and has the most runs"),
                    _ => "has the most runs".to_string(),
                },
                others.join(", "),
                if more > 0 { format!(" and {more} more") } else { String::new() }
            )
        });
        read.operation = self.operations[chosen].name.clone();
        read_as.push(ReadAs { field: "operation".into(), given: given.into(), read: read.operation.clone(), note });
        Some(chosen)
    }

    /// [`Index::resolve_at`] of the request as [`Index::read_request`] reads it: what `/resolve`,
    /// `/api/v1/resolve/kernel[/batch]`, `ki resolve` and the MCP tool answer.
    pub fn resolve_read_at(
        &self,
        request: &ResolveRequest,
        lexicon: &Lexicon,
        now: crate::time::Instant,
    ) -> ResolveResponse {
        let (read, read_as) = self.read_request(request, lexicon);
        let mut response = self.resolve_at(&read, now);
        response.read_as = read_as;
        response
    }
}
