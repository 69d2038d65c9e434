//! Community submissions: manifest bundles sent to the web (validated, digested and kept
//! Reported and unpublished there) turned into catalog rows when an admin publishes
//! them, in the shapes the public index exports. Publishing goes through
//! [`crate::publish::publish_rows`] like every importer.
//!
//! A submission may name parents the catalog already holds (an operation, a workload, an
//! implementation, a project) by digest or slug instead of carrying them; each run must
//! carry its BenchmarkProtocol and ExecutionEnvironment, which live inside the run's row.
//! Rows are evidence level Reported: `reported` set, nothing reproduced, no raw evidence.

use std::collections::{BTreeSet, HashMap};

use ki_catalog::{Catalog, CatalogError};
use ki_model::identity::{self, API_VERSION};
use ki_model::records::Kind;
use ki_model::rows::{BenchmarkRunRow, MeasurementRow, ProjectRow, RunFacts, WorkloadRow};
use serde_json::{Map, Value, json};

use crate::publish::PlannedRow;

/// The source community submissions are filed under.
pub const SOURCE_SLUG: &str = "community";

/// One manifest of a submission, as the web stored it.
#[derive(Debug, Clone)]
pub struct SubmittedManifest {
    pub manifest: Value,
    /// For an ImplementationRevision: the SoftwareProject (slug) it belongs to, from the
    /// bundle's `{projectSlug, manifest}` entry.
    pub project_slug: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum SubmissionError {
    #[error("manifest {index} ({kind} {name:?}): {message}")]
    Manifest { index: usize, kind: String, name: String, message: String },
    #[error(transparent)]
    Catalog(#[from] CatalogError),
}

fn row_id(table: &str, key: &str) -> String {
    crate::row_id(SOURCE_SLUG, table, key)
}

fn str_at<'a>(value: &'a Value, pointer: &str) -> Option<&'a str> {
    value.pointer(pointer).and_then(Value::as_str)
}

fn row(table: &'static str, value: Value) -> PlannedRow {
    PlannedRow { table, row: value.as_object().cloned().unwrap_or_default() }
}

/// A validated manifest of the submission, with where it was for error messages.
struct Entry {
    index: usize,
    kind: Kind,
    value: Value,
    digest: String,
    project_slug: Option<String>,
}

impl Entry {
    fn name(&self) -> &str {
        str_at(&self.value, "/metadata/name").unwrap_or("")
    }

    fn title(&self) -> &str {
        str_at(&self.value, "/metadata/title").unwrap_or_else(|| self.name())
    }

    fn error(&self, message: impl Into<String>) -> SubmissionError {
        SubmissionError::Manifest {
            index: self.index,
            kind: self.kind.name().to_string(),
            name: self.name().to_string(),
            message: message.into(),
        }
    }

    fn spec_str(&self, pointer: &str) -> Result<&str, SubmissionError> {
        str_at(&self.value, &format!("/spec{pointer}")).ok_or_else(|| self.error(format!("spec{pointer} is missing")))
    }
}

/// A parent row the submission's rows point at: carried by the submission or already
/// in the catalog.
#[derive(Clone)]
struct Parent {
    id: String,
    manifest: Value,
    row: Map<String, Value>,
}

/// Looks up a parent by its identifying column: first among the submission's own rows,
/// then in the catalog.
async fn parent(
    catalog: &Catalog,
    planned: &HashMap<String, Parent>,
    table: &str,
    column: &str,
    value: &str,
) -> Result<Option<Parent>, CatalogError> {
    if let Some(found) = planned.get(value) {
        return Ok(Some(found.clone()));
    }
    Ok(catalog.export_rows_where(table, column, value).await?.into_iter().next().map(|row| Parent {
        id: row.get("id").and_then(Value::as_str).unwrap_or_default().to_string(),
        manifest: row.get("manifest").cloned().unwrap_or(Value::Null),
        row,
    }))
}

/// Plans the catalog rows of a submission, published at `published_at` (UTC). Every
/// manifest is validated again (the log is a file an operator could edit). Kernel records
/// and serving records (ModelRevision, ServingStackRevision, ServingConfiguration,
/// ServingWorkload, ServingRun) become rows; a WorkloadSuite, which has no table, is refused.
pub async fn plan(
    catalog: &Catalog,
    manifests: &[SubmittedManifest],
    published_at: &str,
) -> Result<Vec<PlannedRow>, SubmissionError> {
    let mut entries = Vec::with_capacity(manifests.len());
    for (index, submitted) in manifests.iter().enumerate() {
        let valid = ki_model::manifest::validate_value(submitted.manifest.clone()).map_err(|problems| {
            let name = str_at(&submitted.manifest, "/metadata/name").unwrap_or("").to_string();
            let kind = str_at(&submitted.manifest, "/kind").unwrap_or("manifest").to_string();
            let message =
                problems.iter().map(|p| format!("{}: {}", p.pointer, p.message)).collect::<Vec<_>>().join("; ");
            SubmissionError::Manifest { index, kind, name, message }
        })?;
        let entry = Entry {
            index,
            kind: valid.kind,
            value: valid.value,
            digest: valid.digest,
            project_slug: submitted.project_slug.clone(),
        };
        match entry.kind {
            Kind::SoftwareProject
            | Kind::OperationSpec
            | Kind::WorkloadCase
            | Kind::ImplementationRevision
            | Kind::BenchmarkProtocol
            | Kind::ExecutionEnvironment
            | Kind::BenchmarkRun
            | Kind::ModelRevision
            | Kind::ServingStackRevision
            | Kind::ServingConfiguration
            | Kind::ServingWorkload
            | Kind::ServingRun => entries.push(entry),
            other => {
                return Err(entry.error(format!("{other} manifests cannot be published into the kernel catalog yet")));
            }
        }
    }
    let of_kind = |kind: Kind| entries.iter().filter(move |e| e.kind == kind);
    let created = json!(published_at);
    let source_id = row_id("sources", SOURCE_SLUG);
    let mut rows = vec![row(
        "sources",
        json!({
            "id": source_id, "slug": SOURCE_SLUG, "kind": "community", "name": "Community submissions",
            "policy": Value::Null, "createdAt": created,
        }),
    )];

    let mut projects: HashMap<String, Parent> = HashMap::new();
    for entry in of_kind(Kind::SoftwareProject) {
        let slug = entry.name().to_string();
        let name = entry.spec_str("/name")?.to_string();
        let url = str_at(&entry.value, "/spec/repository").or_else(|| str_at(&entry.value, "/spec/homepage"));
        let planned = row(
            "projects",
            json!({
                "id": row_id("projects", &slug), "slug": slug, "name": name, "normalizedName": name.to_lowercase(),
                "canonicalUrl": url, "licenseExpression": Value::Null, "manifest": entry.value, "createdAt": created,
            }),
        );
        keep_parent(&mut rows, &mut projects, slug.clone(), entry, planned);
    }

    let mut operations: HashMap<String, Parent> = HashMap::new();
    for entry in of_kind(Kind::OperationSpec) {
        let family = entry.spec_str("/family")?;
        let slug = free_slug(catalog, "operations", "semanticDigest", entry.name(), &entry.digest).await?;
        let planned = row(
            "operations",
            json!({
                "id": row_id("operations", &entry.digest), "slug": slug, "family": family, "name": entry.title(),
                "schemaVersion": API_VERSION, "semanticDigest": entry.digest, "manifest": entry.value, "tags": [family],
                "createdAt": created, "supersedesId": Value::Null,
            }),
        );
        keep_parent(&mut rows, &mut operations, entry.digest.clone(), entry, planned);
    }

    let mut workloads: HashMap<String, Parent> = HashMap::new();
    for entry in of_kind(Kind::WorkloadCase) {
        let operation_digest = entry.spec_str("/operationSpecDigest")?;
        let operation =
            required_parent(catalog, &operations, "operations", "semanticDigest", operation_digest, entry, "operation")
                .await?;
        // Layouts are declared by the operation's tensors; a workload inherits them.
        let mut layouts: BTreeSet<&str> = BTreeSet::new();
        for side in ["inputs", "outputs"] {
            for item in
                operation.manifest.pointer(&format!("/spec/{side}")).and_then(Value::as_array).into_iter().flatten()
            {
                if let Some(layout) = item.pointer("/tensor/layout").and_then(Value::as_str) {
                    layouts.insert(layout);
                }
            }
        }
        if layouts.is_empty() {
            layouts.insert("contiguous");
        }
        let layouts = layouts.into_iter().map(str::to_string).collect();
        let typed = WorkloadRow::new(
            row_id("workloads", &entry.digest),
            operation.id.clone(),
            entry.value.clone(),
            layouts,
            published_at.to_string(),
        )
        .map_err(|error| entry.error(format!("its digest cannot be computed: {error}")))?;
        let planned = PlannedRow::typed(typed);
        keep_parent(&mut rows, &mut workloads, entry.digest.clone(), entry, planned);
    }

    let single_project = (projects.len() == 1).then(|| projects.keys().next().cloned()).flatten();
    let mut implementations: HashMap<String, Parent> = HashMap::new();
    for entry in of_kind(Kind::ImplementationRevision) {
        let slug = entry.project_slug.clone().or_else(|| single_project.clone()).ok_or_else(|| {
            entry.error("names no project: give it as {projectSlug, manifest} in the bundle's implementations section")
        })?;
        let project = required_parent(catalog, &projects, "projects", "slug", &slug, entry, "project").await?;
        let operation_digest = entry.spec_str("/operation/specDigest")?;
        let operation =
            required_parent(catalog, &operations, "operations", "semanticDigest", operation_digest, entry, "operation")
                .await?;
        let revision = entry.value.pointer("/spec/projectRevision");
        let source_revision = ["commit", "version", "treeDigest"]
            .iter()
            .find_map(|field| revision.and_then(|r| r.get(*field)).and_then(Value::as_str))
            .unwrap_or("unspecified");
        let declared = str_at(&entry.value, "/spec/licensing/declared");
        let licence = str_at(&entry.value, "/spec/licensing/concluded").or(declared);
        let planned = row(
            "implementations",
            json!({
                "id": row_id("implementations", &entry.digest), "projectId": project.id, "operationId": operation.id,
                "slug": entry.name(), "implementationDigest": entry.digest, "sourceRevision": source_revision,
                "language": entry.spec_str("/callable/language")?, "framework": Value::Null,
                "targetArchitectures": entry.value.pointer("/spec/support/hardwareArchitectures").cloned().unwrap_or_else(|| json!([])),
                "licenseExpression": licence,
                "sourceAvailable": str_at(&entry.value, "/spec/projectRevision/repository").is_some(),
                "installable": false, "title": entry.title(), "installKind": Value::Null, "installCommand": Value::Null,
                "licenseDeclared": declared, "manifest": entry.value, "createdAt": created, "supersedesId": Value::Null,
            }),
        );
        keep_parent(&mut rows, &mut implementations, entry.digest.clone(), entry, planned);
    }

    let by_digest = |kind: Kind, digest: &str| entries.iter().find(|e| e.kind == kind && e.digest == digest);
    let mut measurements = Vec::new();
    for entry in of_kind(Kind::BenchmarkRun) {
        let carried = |field: &str, kind: Kind| -> Result<&Entry, SubmissionError> {
            let digest = entry.spec_str(&format!("/{field}"))?;
            by_digest(kind, digest).ok_or_else(|| {
                entry.error(format!("names {kind} {digest} as its {field}, which the submission does not carry"))
            })
        };
        let protocol = carried("protocolDigest", Kind::BenchmarkProtocol)?;
        let environment = carried("environmentDigest", Kind::ExecutionEnvironment)?;
        let implementation_digest = entry.spec_str("/implementationDigest")?;
        let implementation = required_parent(
            catalog,
            &implementations,
            "implementations",
            "implementationDigest",
            implementation_digest,
            entry,
            "implementation",
        )
        .await?;
        let workload_digest = entry.spec_str("/workloadDigest")?;
        let workload =
            required_parent(catalog, &workloads, "workloads", "workloadDigest", workload_digest, entry, "workload")
                .await?;
        let keys = identity::benchmark_run_keys(&entry.value, &protocol.value, &environment.value, &workload.manifest)
            .map_err(|error| entry.error(format!("its keys cannot be computed: {error}")))?;
        let run_id = row_id("benchmark_runs", &keys.run_digest);
        if let Some(p) = keys.primary.as_ref() {
            let id = row_id("measurements", &format!("{}:{}", keys.run_digest, p.metric_key()));
            measurements.push(PlannedRow::typed(MeasurementRow::primary(id, run_id.clone(), p)));
        }
        let facts = RunFacts {
            id: run_id,
            implementation_id: implementation.id.clone(),
            workload_id: workload.id.clone(),
            source_id: Some(source_id.clone()),
            published_at: Some(published_at.to_string()),
            reported: true,
            reproduced_by_kernelindex: false,
            independent_replication_count: 0,
            source_available: implementation.row.get("sourceAvailable").and_then(Value::as_bool).unwrap_or(false),
            installable: false,
            license_expression: implementation.row.get("licenseExpression").and_then(Value::as_str).map(str::to_string),
            has_raw_evidence: false,
            label: SOURCE_SLUG.to_string(),
        };
        let typed =
            BenchmarkRunRow::new(facts, &keys, entry.value.clone(), protocol.value.clone(), environment.value.clone())
                .map_err(|error| environment.error(format!("the run's row cannot be derived: {error}")))?;
        rows.push(PlannedRow::typed(typed));
    }
    rows.extend(measurements);
    plan_serving(catalog, &entries, &projects, &source_id, &created, &mut rows).await?;
    Ok(rows)
}

/// [`parent`], or an error saying which `what` the entry names that neither the submission
/// nor the catalog holds.
async fn required_parent(
    catalog: &Catalog,
    planned: &HashMap<String, Parent>,
    table: &str,
    column: &str,
    value: &str,
    entry: &Entry,
    what: &str,
) -> Result<Parent, SubmissionError> {
    parent(catalog, planned, table, column, value).await?.ok_or_else(|| {
        entry.error(format!("names {what} {value:?}, which neither the submission nor the catalog holds"))
    })
}

/// Adds a planned row, remembering it as the parent that `key` (its digest or slug) names for
/// the rows after it.
fn keep_parent(
    rows: &mut Vec<PlannedRow>,
    parents: &mut HashMap<String, Parent>,
    key: String,
    entry: &Entry,
    planned: PlannedRow,
) {
    let id = planned.row.get("id").and_then(Value::as_str).unwrap_or_default().to_string();
    parents.insert(key, Parent { id, manifest: entry.value.clone(), row: planned.row.clone() });
    rows.push(planned);
}

/// A slug for a new row: the manifest's name, told apart by its digest when another row of
/// `table` already has that slug for a different digest (a slug is a page address, not an
/// identity).
async fn free_slug(
    catalog: &Catalog,
    table: &str,
    digest_column: &str,
    name: &str,
    digest: &str,
) -> Result<String, CatalogError> {
    let holder = catalog.export_rows_where(table, "slug", name).await?.into_iter().next();
    Ok(match holder {
        Some(held) if held.get(digest_column).and_then(Value::as_str) != Some(digest) => {
            format!("{name}-{}", digest.get(7..15).unwrap_or_default())
        }
        _ => name.to_string(),
    })
}

/// The serving records' rows, in the shapes of the public index's serving tables. A
/// ServingStackRevision's project is the submission's SoftwareProject of that name, the
/// catalog's project of that slug, or else a project row made from the stack's own
/// `spec.project` (as the public index files MLPerf submitters). A run's scenario is its
/// source-native scenario when it has one, otherwise its workload's load generation.
async fn plan_serving(
    catalog: &Catalog,
    entries: &[Entry],
    projects: &HashMap<String, Parent>,
    source_id: &str,
    created: &Value,
    rows: &mut Vec<PlannedRow>,
) -> Result<(), SubmissionError> {
    let of_kind = |kind: Kind| entries.iter().filter(move |e| e.kind == kind);

    let mut models: HashMap<String, Parent> = HashMap::new();
    for entry in of_kind(Kind::ModelRevision) {
        let slug = free_slug(catalog, "model_revisions", "modelDigest", entry.name(), &entry.digest).await?;
        let planned = row(
            "model_revisions",
            json!({
                "id": row_id("model_revisions", &entry.digest), "slug": slug, "modelDigest": entry.digest,
                "name": entry.spec_str("/model")?, "parameterCount": entry.value.pointer("/spec/parameterCount").cloned().unwrap_or(Value::Null),
                "contextLength": entry.value.pointer("/spec/contextLength").cloned().unwrap_or(Value::Null),
                "tokenizer": str_at(&entry.value, "/spec/tokenizer/name"), "license": str_at(&entry.value, "/spec/license"),
                "schemaVersion": API_VERSION, "manifest": entry.value, "createdAt": created,
            }),
        );
        keep_parent(rows, &mut models, entry.digest.clone(), entry, planned);
    }

    let mut new_projects: HashMap<String, String> = HashMap::new();
    let mut stacks: HashMap<String, Parent> = HashMap::new();
    for entry in of_kind(Kind::ServingStackRevision) {
        let project_name = entry.spec_str("/project/name")?;
        let carried = projects.values().find(|p| p.row.get("name").and_then(Value::as_str) == Some(project_name));
        let project_slug = crate::names::slug(project_name);
        let project_id = match carried {
            Some(project) => project.id.clone(),
            None => match catalog.rows_where::<ProjectRow>("slug", &project_slug).await?.into_iter().next() {
                Some(held) => held.id,
                None => {
                    let id = row_id("projects", &project_slug);
                    if new_projects.insert(project_slug.clone(), id.clone()).is_none() {
                        let repository = str_at(&entry.value, "/spec/project/repository");
                        let mut spec = json!({"name": project_name});
                        if let Some(url) = repository {
                            spec["repository"] = json!(url);
                        }
                        rows.push(row(
                            "projects",
                            json!({
                                "id": id, "slug": project_slug, "name": project_name, "normalizedName": project_name.to_lowercase(),
                                "canonicalUrl": repository, "licenseExpression": Value::Null,
                                "manifest": {"apiVersion": API_VERSION, "kind": "SoftwareProject", "metadata": {"name": project_slug}, "spec": spec},
                                "createdAt": created,
                            }),
                        ));
                    }
                    id
                }
            },
        };
        let version = ["version", "commit"]
            .iter()
            .find_map(|field| str_at(&entry.value, &format!("/spec/revision/{field}")))
            .ok_or_else(|| entry.error("spec/revision has neither a version nor a commit"))?;
        let slug = free_slug(catalog, "serving_stack_revisions", "stackDigest", entry.name(), &entry.digest).await?;
        let planned = row(
            "serving_stack_revisions",
            json!({
                "id": row_id("serving_stack_revisions", &entry.digest), "projectId": project_id, "slug": slug,
                "stackDigest": entry.digest, "name": entry.title(), "version": version, "schemaVersion": API_VERSION,
                "manifest": entry.value, "createdAt": created,
            }),
        );
        keep_parent(rows, &mut stacks, entry.digest.clone(), entry, planned);
    }

    let mut configurations: HashMap<String, Parent> = HashMap::new();
    for entry in of_kind(Kind::ServingConfiguration) {
        let stack_digest = entry.spec_str("/stackDigest")?;
        let stack = required_parent(
            catalog,
            &stacks,
            "serving_stack_revisions",
            "stackDigest",
            stack_digest,
            entry,
            "serving stack",
        )
        .await?;
        let planned = row(
            "serving_configurations",
            json!({
                "id": row_id("serving_configurations", &entry.digest), "stackRevisionId": stack.id,
                "configurationDigest": entry.digest, "dtype": entry.spec_str("/dtype")?,
                "quantization": str_at(&entry.value, "/spec/quantization").or_else(|| str_at(&entry.value, "/spec/quantization/method")),
                "tensorParallel": entry.value.pointer("/spec/parallelism/tensor").cloned().unwrap_or(Value::Null),
                "summary": entry.title(), "schemaVersion": API_VERSION, "manifest": entry.value, "createdAt": created,
            }),
        );
        keep_parent(rows, &mut configurations, entry.digest.clone(), entry, planned);
    }

    let mut workloads: HashMap<String, Parent> = HashMap::new();
    for entry in of_kind(Kind::ServingWorkload) {
        let slug = free_slug(catalog, "serving_workloads", "workloadDigest", entry.name(), &entry.digest).await?;
        let streaming = entry
            .value
            .pointer("/spec/streaming")
            .and_then(Value::as_bool)
            .ok_or_else(|| entry.error("spec/streaming is missing"))?;
        let planned = row(
            "serving_workloads",
            json!({
                "id": row_id("serving_workloads", &entry.digest), "workloadDigest": entry.digest, "slug": slug,
                "name": entry.title(), "streaming": streaming, "loadGeneration": entry.spec_str("/loadGeneration")?,
                "schemaVersion": API_VERSION, "manifest": entry.value, "createdAt": created,
            }),
        );
        keep_parent(rows, &mut workloads, entry.digest.clone(), entry, planned);
    }

    let mut measurements = Vec::new();
    for entry in of_kind(Kind::ServingRun) {
        let named = |field: &str| entry.spec_str(&format!("/{field}"));
        let model =
            required_parent(catalog, &models, "model_revisions", "modelDigest", named("modelDigest")?, entry, "model")
                .await?;
        let configuration_digest = named("configurationDigest")?;
        let configuration = required_parent(
            catalog,
            &configurations,
            "serving_configurations",
            "configurationDigest",
            configuration_digest,
            entry,
            "serving configuration",
        )
        .await?;
        let workload = required_parent(
            catalog,
            &workloads,
            "serving_workloads",
            "workloadDigest",
            named("workloadDigest")?,
            entry,
            "serving workload",
        )
        .await?;
        let keys = identity::serving_run_keys(&entry.value, &model.manifest, &workload.manifest)
            .map_err(|error| entry.error(format!("its keys cannot be computed: {error}")))?;
        let run_id = row_id("serving_runs", &keys.run_digest);
        let count =
            |field: &str| entry.value.pointer(&format!("/spec/topology/{field}")).and_then(Value::as_u64).unwrap_or(0);
        let (per_node, nodes) = (count("acceleratorsPerNode"), count("nodeCount"));
        let scenario = str_at(&entry.value, "/spec/sourceNative/scenario")
            .or_else(|| str_at(&workload.manifest, "/spec/loadGeneration"))
            .ok_or_else(|| {
                entry.error("has no scenario: neither spec/sourceNative/scenario nor its workload's loadGeneration")
            })?;
        for (index, measurement) in
            entry.value.pointer("/spec/measurements").and_then(Value::as_array).into_iter().flatten().enumerate()
        {
            let field = |name: &str| measurement.get(name).cloned().unwrap_or(Value::Null);
            let (metric, statistic) = (
                str_at(measurement, "/metric").unwrap_or_default(),
                str_at(measurement, "/statistic").unwrap_or_default(),
            );
            measurements.push(row(
                "serving_measurements",
                json!({
                    "id": row_id("serving_measurements", &format!("{}:{index}:{metric}:{statistic}", keys.run_digest)), "runId": run_id,
                    "metric": metric, "statistic": statistic, "unit": field("unit"), "value": field("value"), "sampleCount": field("sampleCount"),
                }),
            ));
        }
        rows.push(row(
            "serving_runs",
            json!({
                "id": run_id, "runDigest": keys.run_digest, "modelRevisionId": model.id, "configurationId": configuration.id,
                "workloadId": workload.id, "sourceId": source_id, "status": named("status")?, "observedAt": named("observedAt")?,
                "publishedAt": created, "cohortKey": keys.cohort_key, "protocolKey": keys.protocol_key,
                "qualityPolicy": named("qualityPolicy")?, "metricSetKey": keys.metric_set_key, "scenario": scenario,
                "acceleratorVendor": str_at(&entry.value, "/spec/topology/acceleratorVendor"),
                "acceleratorModel": named("topology/acceleratorModel")?, "acceleratorCount": per_node, "nodeCount": nodes,
                "totalAccelerators": per_node * nodes, "reported": true, "schemaVersion": API_VERSION, "manifest": entry.value,
                "supersedesId": Value::Null, "retractedAt": Value::Null, "retractionReason": Value::Null, "createdAt": created,
            }),
        ));
    }
    rows.extend(measurements);
    Ok(())
}
