//! The catalog's tables as data: every column of every export table, in export order,
//! with its SQL name, its kind and the rules a value must meet. Import, export and the
//! read API are all driven from these specs; the migrations hold the same tables as SQL
//! (a test checks the two agree, column by column, on both backends).

/// What a column holds. Every kind maps to one SQL type per backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A canonical lowercase hyphenated UUID (PostgreSQL `uuid`).
    Uuid,
    Text,
    /// `sha256:` + 64 lowercase hex.
    Digest,
    /// An ISO 8601 UTC timestamp ending in `Z`, kept as written.
    Timestamp,
    /// A non-negative integer.
    Count,
    /// A strictly positive integer.
    PositiveCount,
    /// A finite, non-negative number.
    Measure,
    Bool,
    /// Any JSON value, kept as JSON text (key order preserved).
    Json,
    /// A JSON array, kept as JSON text.
    JsonArray,
    /// A string from a closed set.
    Enum(&'static [&'static str]),
    /// A string that must equal the one API version the catalog stores.
    SchemaVersion,
}

#[derive(Debug, Clone, Copy)]
pub struct Column {
    /// The camelCase name the export uses.
    pub json: &'static str,
    /// The snake_case name in SQL.
    pub sql: &'static str,
    pub kind: Kind,
    pub nullable: bool,
    /// A UUID column that refers to `id` of this table.
    pub references: Option<&'static str>,
    /// Unique across the table (besides the key).
    pub unique: bool,
    /// Added after the shared export was made (migration 0003): a snapshot row may lack
    /// the key, which then reads as null, and rows are written (exports, the read API)
    /// without the key while it is null, so snapshots from before the column still
    /// round-trip byte for byte. Always nullable. The SQL column comes after the
    /// table's version-1 columns; in export rows it has its place in `columns`.
    pub added_later: bool,
}

#[derive(Debug)]
pub struct Table {
    pub name: &'static str,
    pub columns: &'static [Column],
    /// The columns that identify a row: `id`, or both columns of operation_aliases.
    pub key: &'static [&'static str],
    /// For exports: rows of this table are written only when this UUID column names a
    /// published run of the given runs table (`None`: the table itself is filtered, or
    /// written whole).
    pub published_via: Option<(&'static str, &'static str)>,
    /// This table holds runs; only those with `published_at` set are exported.
    pub is_runs: bool,
}

impl Table {
    pub fn column(&self, json: &str) -> Option<&'static Column> {
        self.columns.iter().find(|column| column.json == json)
    }

    pub fn unique_columns(&self) -> impl Iterator<Item = &'static Column> {
        self.columns.iter().filter(|column| column.unique)
    }
}

pub const API_VERSION: &str = "kernelindex.dev/v1alpha1";

/// Closed sets, from the JSON Schemas in kernelindex-registry/registry/schemas.
pub const RUN_STATUSES: &[&str] = &[
    "passed",
    "incorrect_shape",
    "incorrect_dtype",
    "incorrect_numerical",
    "compile_error",
    "runtime_error",
    "timeout",
    "resource_exceeded",
    "invalid_reference",
    "policy_violation",
    "suspected_reward_hack",
    "incomplete_evidence",
    "revoked",
];
pub const SERVING_RUN_STATUSES: &[&str] = &["valid", "invalid", "incomplete_evidence"];
pub const LOAD_GENERATIONS: &[&str] = &["open_loop", "closed_loop", "offline"];
pub const INSTALL_KINDS: &[&str] = &["git", "pip", "package", "container", "source"];

const fn col(json: &'static str, sql: &'static str, kind: Kind) -> Column {
    Column { json, sql, kind, nullable: false, references: None, unique: false, added_later: false }
}
const fn opt(json: &'static str, sql: &'static str, kind: Kind) -> Column {
    Column { json, sql, kind, nullable: true, references: None, unique: false, added_later: false }
}
const fn uniq(json: &'static str, sql: &'static str, kind: Kind) -> Column {
    Column { json, sql, kind, nullable: false, references: None, unique: true, added_later: false }
}
const fn fk(json: &'static str, sql: &'static str, table: &'static str) -> Column {
    Column { json, sql, kind: Kind::Uuid, nullable: false, references: Some(table), unique: false, added_later: false }
}
const fn opt_fk(json: &'static str, sql: &'static str, table: &'static str) -> Column {
    Column { json, sql, kind: Kind::Uuid, nullable: true, references: Some(table), unique: false, added_later: false }
}
/// A column of migration 0003 (see [`Column::added_later`]).
const fn later(json: &'static str, sql: &'static str, kind: Kind) -> Column {
    Column { json, sql, kind, nullable: true, references: None, unique: false, added_later: true }
}

const ID: Column = col("id", "id", Kind::Uuid);
const CREATED_AT: Column = col("createdAt", "created_at", Kind::Timestamp);
const MANIFEST: Column = col("manifest", "manifest", Kind::Json);
const SCHEMA_VERSION: Column = col("schemaVersion", "schema_version", Kind::SchemaVersion);

const KEY_ID: &[&str] = &["id"];

/// Every table, in the order exports write them (parents before children).
pub static TABLES: &[Table] = &[
    Table {
        name: "sources",
        columns: &[
            ID,
            uniq("slug", "slug", Kind::Text),
            col("kind", "kind", Kind::Text),
            col("name", "name", Kind::Text),
            opt("policy", "policy", Kind::Json),
            CREATED_AT,
        ],
        key: KEY_ID,
        published_via: None,
        is_runs: false,
    },
    Table {
        name: "projects",
        columns: &[
            ID,
            uniq("slug", "slug", Kind::Text),
            col("name", "name", Kind::Text),
            col("normalizedName", "normalized_name", Kind::Text),
            opt("canonicalUrl", "canonical_url", Kind::Text),
            opt("licenseExpression", "license_expression", Kind::Text),
            // library, individual or vendor in the public index (its migration 0017).
            later("kind", "kind", Kind::Text),
            MANIFEST,
            CREATED_AT,
        ],
        key: KEY_ID,
        published_via: None,
        is_runs: false,
    },
    Table {
        name: "operations",
        columns: &[
            ID,
            uniq("slug", "slug", Kind::Text),
            col("family", "family", Kind::Text),
            col("name", "name", Kind::Text),
            SCHEMA_VERSION,
            uniq("semanticDigest", "semantic_digest", Kind::Digest),
            MANIFEST,
            col("tags", "tags", Kind::JsonArray),
            CREATED_AT,
            opt_fk("supersedesId", "supersedes_id", "operations"),
        ],
        key: KEY_ID,
        published_via: None,
        is_runs: false,
    },
    Table {
        name: "operation_aliases",
        columns: &[fk("operationId", "operation_id", "operations"), col("alias", "alias", Kind::Text)],
        key: &["operationId", "alias"],
        published_via: None,
        is_runs: false,
    },
    Table {
        name: "workloads",
        columns: &[
            ID,
            fk("operationId", "operation_id", "operations"),
            uniq("workloadDigest", "workload_digest", Kind::Digest),
            SCHEMA_VERSION,
            MANIFEST,
            col("shapeSummary", "shape_summary", Kind::Text),
            col("dtypes", "dtypes", Kind::JsonArray),
            col("layoutKeys", "layout_keys", Kind::JsonArray),
            CREATED_AT,
        ],
        key: KEY_ID,
        published_via: None,
        is_runs: false,
    },
    Table {
        name: "implementations",
        columns: &[
            ID,
            fk("projectId", "project_id", "projects"),
            fk("operationId", "operation_id", "operations"),
            col("slug", "slug", Kind::Text),
            uniq("implementationDigest", "implementation_digest", Kind::Digest),
            col("sourceRevision", "source_revision", Kind::Text),
            col("language", "language", Kind::Text),
            opt("framework", "framework", Kind::Text),
            col("targetArchitectures", "target_architectures", Kind::JsonArray),
            opt("licenseExpression", "license_expression", Kind::Text),
            col("sourceAvailable", "source_available", Kind::Bool),
            col("installable", "installable", Kind::Bool),
            col("title", "title", Kind::Text),
            opt("installKind", "install_kind", Kind::Enum(INSTALL_KINDS)),
            opt("installCommand", "install_command", Kind::Text),
            opt("licenseDeclared", "license_declared", Kind::Text),
            // "baseline" for a source's reference solution, else null (its migration 0015).
            later("role", "role", Kind::Text),
            MANIFEST,
            CREATED_AT,
            opt_fk("supersedesId", "supersedes_id", "implementations"),
        ],
        key: KEY_ID,
        published_via: None,
        is_runs: false,
    },
    Table {
        name: "benchmark_runs",
        columns: &[
            ID,
            uniq("runDigest", "run_digest", Kind::Digest),
            fk("implementationId", "implementation_id", "implementations"),
            fk("workloadId", "workload_id", "workloads"),
            opt_fk("sourceId", "source_id", "sources"),
            col("status", "status", Kind::Enum(RUN_STATUSES)),
            col("observedAt", "observed_at", Kind::Timestamp),
            opt("publishedAt", "published_at", Kind::Timestamp),
            col("hardwareVendor", "hardware_vendor", Kind::Text),
            col("hardwareModel", "hardware_model", Kind::Text),
            col("hardwareArchitecture", "hardware_architecture", Kind::Text),
            opt("driverMajor", "driver_major", Kind::Count),
            opt("cudaMajor", "cuda_major", Kind::Count),
            col("protocolKey", "protocol_key", Kind::Digest),
            col("environmentKey", "environment_key", Kind::Digest),
            col("correctnessKey", "correctness_key", Kind::Digest),
            col("comparisonKey", "comparison_key", Kind::Digest),
            col("primaryMetric", "primary_metric", Kind::Text),
            opt("primaryValue", "primary_value", Kind::Measure),
            opt("primaryUnit", "primary_unit", Kind::Text),
            opt("sampleCount", "sample_count", Kind::PositiveCount),
            opt("uncertaintyLow", "uncertainty_low", Kind::Measure),
            opt("uncertaintyHigh", "uncertainty_high", Kind::Measure),
            col("reported", "reported", Kind::Bool),
            col("reproducedByKernelindex", "reproduced_by_kernelindex", Kind::Bool),
            col("independentReplicationCount", "independent_replication_count", Kind::Count),
            col("sourceAvailable", "source_available", Kind::Bool),
            col("installable", "installable", Kind::Bool),
            opt("licenseExpression", "license_expression", Kind::Text),
            opt("primaryStatistic", "primary_statistic", Kind::Text),
            col("hasRawEvidence", "has_raw_evidence", Kind::Bool),
            col("sourceNative", "source_native", Kind::Bool),
            col("environmentSummary", "environment_summary", Kind::Text),
            // The source's published SOL score, when it publishes one (its migration 0015).
            later("solScore", "sol_score", Kind::Measure),
            MANIFEST,
            opt_fk("supersedesId", "supersedes_id", "benchmark_runs"),
            opt("retractedAt", "retracted_at", Kind::Timestamp),
            opt("retractionReason", "retraction_reason", Kind::Text),
        ],
        key: KEY_ID,
        published_via: None,
        is_runs: true,
    },
    Table {
        name: "measurements",
        columns: &[
            ID,
            fk("runId", "run_id", "benchmark_runs"),
            col("metric", "metric", Kind::Text),
            col("statistic", "statistic", Kind::Text),
            col("unit", "unit", Kind::Text),
            col("value", "value", Kind::Measure),
            opt("sampleCount", "sample_count", Kind::PositiveCount),
        ],
        key: KEY_ID,
        published_via: Some(("run_id", "benchmark_runs")),
        is_runs: false,
    },
    Table {
        name: "record_events",
        columns: &[
            ID,
            col("comparisonKey", "comparison_key", Kind::Digest),
            fk("runId", "run_id", "benchmark_runs"),
            opt_fk("previousRunId", "previous_run_id", "benchmark_runs"),
            col("policyVersion", "policy_version", Kind::Text),
            col("cause", "cause", Kind::Text),
            col("at", "at", Kind::Timestamp),
            CREATED_AT,
        ],
        key: KEY_ID,
        published_via: Some(("run_id", "benchmark_runs")),
        is_runs: false,
    },
    Table {
        name: "artifacts",
        columns: &[
            ID,
            uniq("contentDigest", "content_digest", Kind::Digest),
            col("kind", "kind", Kind::Text),
            col("mediaType", "media_type", Kind::Text),
            col("sizeBytes", "size_bytes", Kind::Count),
            col("storage", "storage", Kind::Text),
            opt("uri", "uri", Kind::Text),
            opt("license", "license", Kind::Text),
            CREATED_AT,
        ],
        key: KEY_ID,
        published_via: None,
        is_runs: false,
    },
    Table {
        name: "model_revisions",
        columns: &[
            ID,
            uniq("slug", "slug", Kind::Text),
            uniq("modelDigest", "model_digest", Kind::Digest),
            col("name", "name", Kind::Text),
            opt("parameterCount", "parameter_count", Kind::PositiveCount),
            opt("contextLength", "context_length", Kind::PositiveCount),
            opt("tokenizer", "tokenizer", Kind::Text),
            opt("license", "license", Kind::Text),
            SCHEMA_VERSION,
            MANIFEST,
            CREATED_AT,
        ],
        key: KEY_ID,
        published_via: None,
        is_runs: false,
    },
    Table {
        name: "serving_stack_revisions",
        columns: &[
            ID,
            fk("projectId", "project_id", "projects"),
            uniq("slug", "slug", Kind::Text),
            uniq("stackDigest", "stack_digest", Kind::Digest),
            col("name", "name", Kind::Text),
            col("version", "version", Kind::Text),
            SCHEMA_VERSION,
            MANIFEST,
            CREATED_AT,
        ],
        key: KEY_ID,
        published_via: None,
        is_runs: false,
    },
    Table {
        name: "serving_configurations",
        columns: &[
            ID,
            fk("stackRevisionId", "stack_revision_id", "serving_stack_revisions"),
            uniq("configurationDigest", "configuration_digest", Kind::Digest),
            col("dtype", "dtype", Kind::Text),
            opt("quantization", "quantization", Kind::Text),
            opt("tensorParallel", "tensor_parallel", Kind::PositiveCount),
            col("summary", "summary", Kind::Text),
            SCHEMA_VERSION,
            MANIFEST,
            CREATED_AT,
        ],
        key: KEY_ID,
        published_via: None,
        is_runs: false,
    },
    Table {
        name: "serving_workloads",
        columns: &[
            ID,
            uniq("workloadDigest", "workload_digest", Kind::Digest),
            uniq("slug", "slug", Kind::Text),
            col("name", "name", Kind::Text),
            col("streaming", "streaming", Kind::Bool),
            col("loadGeneration", "load_generation", Kind::Enum(LOAD_GENERATIONS)),
            SCHEMA_VERSION,
            MANIFEST,
            CREATED_AT,
        ],
        key: KEY_ID,
        published_via: None,
        is_runs: false,
    },
    Table {
        name: "serving_runs",
        columns: &[
            ID,
            uniq("runDigest", "run_digest", Kind::Digest),
            fk("modelRevisionId", "model_revision_id", "model_revisions"),
            fk("configurationId", "configuration_id", "serving_configurations"),
            fk("workloadId", "workload_id", "serving_workloads"),
            opt_fk("sourceId", "source_id", "sources"),
            col("status", "status", Kind::Enum(SERVING_RUN_STATUSES)),
            col("observedAt", "observed_at", Kind::Timestamp),
            opt("publishedAt", "published_at", Kind::Timestamp),
            col("cohortKey", "cohort_key", Kind::Digest),
            col("protocolKey", "protocol_key", Kind::Text),
            col("qualityPolicy", "quality_policy", Kind::Text),
            col("metricSetKey", "metric_set_key", Kind::Text),
            col("scenario", "scenario", Kind::Text),
            opt("acceleratorVendor", "accelerator_vendor", Kind::Text),
            col("acceleratorModel", "accelerator_model", Kind::Text),
            col("acceleratorCount", "accelerator_count", Kind::PositiveCount),
            col("nodeCount", "node_count", Kind::PositiveCount),
            col("totalAccelerators", "total_accelerators", Kind::PositiveCount),
            col("reported", "reported", Kind::Bool),
            SCHEMA_VERSION,
            MANIFEST,
            opt_fk("supersedesId", "supersedes_id", "serving_runs"),
            opt("retractedAt", "retracted_at", Kind::Timestamp),
            opt("retractionReason", "retraction_reason", Kind::Text),
            CREATED_AT,
        ],
        key: KEY_ID,
        published_via: None,
        is_runs: true,
    },
    Table {
        name: "serving_measurements",
        columns: &[
            ID,
            fk("runId", "run_id", "serving_runs"),
            col("metric", "metric", Kind::Text),
            col("statistic", "statistic", Kind::Text),
            col("unit", "unit", Kind::Text),
            col("value", "value", Kind::Measure),
            opt("sampleCount", "sample_count", Kind::PositiveCount),
        ],
        key: KEY_ID,
        published_via: Some(("run_id", "serving_runs")),
        is_runs: false,
    },
];

/// The spec of a table by its export name.
pub fn table(name: &str) -> Option<&'static Table> {
    TABLES.iter().find(|table| table.name == name)
}

/// The names of every table, in export order.
pub fn table_names() -> impl Iterator<Item = &'static str> {
    TABLES.iter().map(|table| table.name)
}
