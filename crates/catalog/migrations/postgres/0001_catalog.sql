-- KernelIndex catalog, version 1: one table per export table (PostgreSQL).
-- Columns mirror the export rows (snake_case here, camelCase in exports) and
-- ki_catalog::schema; CHECKs mirror the kernelindex.dev/v1alpha1 JSON Schemas.
-- `seq` records arrival order, so exports list rows in the order they came.
CREATE TABLE sources (
    seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    id uuid PRIMARY KEY,
    slug text NOT NULL UNIQUE,
    kind text NOT NULL,
    name text NOT NULL,
    policy json,
    created_at text NOT NULL CHECK (created_at ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?Z$')
);

CREATE TABLE projects (
    seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    id uuid PRIMARY KEY,
    slug text NOT NULL UNIQUE,
    name text NOT NULL,
    normalized_name text NOT NULL,
    canonical_url text,
    license_expression text,
    manifest json NOT NULL,
    created_at text NOT NULL CHECK (created_at ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?Z$')
);

CREATE TABLE operations (
    seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    id uuid PRIMARY KEY,
    slug text NOT NULL UNIQUE,
    family text NOT NULL,
    name text NOT NULL,
    schema_version text NOT NULL CHECK (schema_version = 'kernelindex.dev/v1alpha1'),
    semantic_digest text NOT NULL UNIQUE CHECK (semantic_digest ~ '^sha256:[0-9a-f]{64}$'),
    manifest json NOT NULL,
    tags json NOT NULL CHECK (json_typeof(tags) = 'array'),
    created_at text NOT NULL CHECK (created_at ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?Z$'),
    supersedes_id uuid REFERENCES operations (id) DEFERRABLE INITIALLY DEFERRED
);
CREATE INDEX operations_family_idx ON operations (family);

CREATE TABLE operation_aliases (
    seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    operation_id uuid NOT NULL REFERENCES operations (id) DEFERRABLE INITIALLY DEFERRED,
    alias text NOT NULL,
    PRIMARY KEY (operation_id, alias)
);
CREATE INDEX operation_aliases_alias_idx ON operation_aliases (alias);

CREATE TABLE workloads (
    seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    id uuid PRIMARY KEY,
    operation_id uuid NOT NULL REFERENCES operations (id) DEFERRABLE INITIALLY DEFERRED,
    workload_digest text NOT NULL UNIQUE CHECK (workload_digest ~ '^sha256:[0-9a-f]{64}$'),
    schema_version text NOT NULL CHECK (schema_version = 'kernelindex.dev/v1alpha1'),
    manifest json NOT NULL,
    shape_summary text NOT NULL,
    dtypes json NOT NULL CHECK (json_typeof(dtypes) = 'array'),
    layout_keys json NOT NULL CHECK (json_typeof(layout_keys) = 'array'),
    created_at text NOT NULL CHECK (created_at ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?Z$')
);
CREATE INDEX workloads_operation_id_idx ON workloads (operation_id);

CREATE TABLE implementations (
    seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    id uuid PRIMARY KEY,
    project_id uuid NOT NULL REFERENCES projects (id) DEFERRABLE INITIALLY DEFERRED,
    operation_id uuid NOT NULL REFERENCES operations (id) DEFERRABLE INITIALLY DEFERRED,
    slug text NOT NULL,
    implementation_digest text NOT NULL UNIQUE CHECK (implementation_digest ~ '^sha256:[0-9a-f]{64}$'),
    source_revision text NOT NULL,
    language text NOT NULL,
    framework text,
    target_architectures json NOT NULL CHECK (json_typeof(target_architectures) = 'array'),
    license_expression text,
    source_available boolean NOT NULL,
    installable boolean NOT NULL,
    title text NOT NULL,
    install_kind text CHECK (install_kind IN ('git', 'pip', 'package', 'container', 'source')),
    install_command text,
    license_declared text,
    manifest json NOT NULL,
    created_at text NOT NULL CHECK (created_at ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?Z$'),
    supersedes_id uuid REFERENCES implementations (id) DEFERRABLE INITIALLY DEFERRED
);
CREATE INDEX implementations_operation_id_idx ON implementations (operation_id);
CREATE INDEX implementations_project_id_idx ON implementations (project_id);
CREATE INDEX implementations_slug_idx ON implementations (slug);

CREATE TABLE benchmark_runs (
    seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    id uuid PRIMARY KEY,
    run_digest text NOT NULL UNIQUE CHECK (run_digest ~ '^sha256:[0-9a-f]{64}$'),
    implementation_id uuid NOT NULL REFERENCES implementations (id) DEFERRABLE INITIALLY DEFERRED,
    workload_id uuid NOT NULL REFERENCES workloads (id) DEFERRABLE INITIALLY DEFERRED,
    source_id uuid REFERENCES sources (id) DEFERRABLE INITIALLY DEFERRED,
    status text NOT NULL CHECK (status IN ('passed', 'incorrect_shape', 'incorrect_dtype', 'incorrect_numerical', 'compile_error', 'runtime_error', 'timeout', 'resource_exceeded', 'invalid_reference', 'policy_violation', 'suspected_reward_hack', 'incomplete_evidence', 'revoked')),
    observed_at text NOT NULL CHECK (observed_at ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?Z$'),
    published_at text CHECK (published_at ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?Z$'),
    hardware_vendor text NOT NULL,
    hardware_model text NOT NULL,
    hardware_architecture text NOT NULL,
    driver_major bigint CHECK (driver_major >= 0),
    cuda_major bigint CHECK (cuda_major >= 0),
    protocol_key text NOT NULL CHECK (protocol_key ~ '^sha256:[0-9a-f]{64}$'),
    environment_key text NOT NULL CHECK (environment_key ~ '^sha256:[0-9a-f]{64}$'),
    correctness_key text NOT NULL CHECK (correctness_key ~ '^sha256:[0-9a-f]{64}$'),
    comparison_key text NOT NULL CHECK (comparison_key ~ '^sha256:[0-9a-f]{64}$'),
    primary_metric text NOT NULL,
    primary_value double precision CHECK (primary_value >= 0 AND primary_value < 'Infinity'::double precision),
    primary_unit text,
    sample_count bigint CHECK (sample_count > 0),
    uncertainty_low double precision CHECK (uncertainty_low >= 0 AND uncertainty_low < 'Infinity'::double precision),
    uncertainty_high double precision CHECK (uncertainty_high >= 0 AND uncertainty_high < 'Infinity'::double precision),
    reported boolean NOT NULL,
    reproduced_by_kernelindex boolean NOT NULL,
    independent_replication_count bigint NOT NULL CHECK (independent_replication_count >= 0),
    source_available boolean NOT NULL,
    installable boolean NOT NULL,
    license_expression text,
    primary_statistic text,
    has_raw_evidence boolean NOT NULL,
    source_native boolean NOT NULL,
    environment_summary text NOT NULL,
    manifest json NOT NULL,
    supersedes_id uuid REFERENCES benchmark_runs (id) DEFERRABLE INITIALLY DEFERRED,
    retracted_at text CHECK (retracted_at ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?Z$'),
    retraction_reason text,
    CHECK ((primary_value IS NULL) = (primary_unit IS NULL)),
    CHECK (retraction_reason IS NULL OR retracted_at IS NOT NULL),
    CHECK (uncertainty_low IS NULL OR uncertainty_high IS NULL OR uncertainty_low <= uncertainty_high)
);
CREATE INDEX benchmark_runs_comparison_key_primary_value_idx ON benchmark_runs (comparison_key, primary_value);
CREATE INDEX benchmark_runs_primary_metric_primary_statistic_primary_unit_idx ON benchmark_runs (primary_metric, primary_statistic, primary_unit);
CREATE INDEX benchmark_runs_hardware_model_idx ON benchmark_runs (hardware_model);
CREATE INDEX benchmark_runs_hardware_architecture_idx ON benchmark_runs (hardware_architecture);
CREATE INDEX benchmark_runs_status_idx ON benchmark_runs (status);
CREATE INDEX benchmark_runs_published_at_idx ON benchmark_runs (published_at);
CREATE INDEX benchmark_runs_retracted_at_idx ON benchmark_runs (retracted_at);
CREATE INDEX benchmark_runs_supersedes_id_idx ON benchmark_runs (supersedes_id);
CREATE INDEX benchmark_runs_implementation_id_idx ON benchmark_runs (implementation_id);
CREATE INDEX benchmark_runs_workload_id_idx ON benchmark_runs (workload_id);
CREATE INDEX benchmark_runs_source_id_idx ON benchmark_runs (source_id);

CREATE TABLE measurements (
    seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    id uuid PRIMARY KEY,
    run_id uuid NOT NULL REFERENCES benchmark_runs (id) DEFERRABLE INITIALLY DEFERRED,
    metric text NOT NULL,
    statistic text NOT NULL,
    unit text NOT NULL,
    value double precision NOT NULL CHECK (value >= 0 AND value < 'Infinity'::double precision),
    sample_count bigint CHECK (sample_count > 0)
);
CREATE INDEX measurements_run_id_idx ON measurements (run_id);

CREATE TABLE record_events (
    seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    id uuid PRIMARY KEY,
    comparison_key text NOT NULL CHECK (comparison_key ~ '^sha256:[0-9a-f]{64}$'),
    run_id uuid NOT NULL REFERENCES benchmark_runs (id) DEFERRABLE INITIALLY DEFERRED,
    previous_run_id uuid REFERENCES benchmark_runs (id) DEFERRABLE INITIALLY DEFERRED,
    policy_version text NOT NULL,
    cause text NOT NULL,
    at text NOT NULL CHECK (at ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?Z$'),
    created_at text NOT NULL CHECK (created_at ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?Z$')
);
CREATE INDEX record_events_comparison_key_idx ON record_events (comparison_key);
CREATE INDEX record_events_run_id_idx ON record_events (run_id);
CREATE INDEX record_events_previous_run_id_idx ON record_events (previous_run_id);

CREATE TABLE artifacts (
    seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    id uuid PRIMARY KEY,
    content_digest text NOT NULL UNIQUE CHECK (content_digest ~ '^sha256:[0-9a-f]{64}$'),
    kind text NOT NULL,
    media_type text NOT NULL,
    size_bytes bigint NOT NULL CHECK (size_bytes >= 0),
    storage text NOT NULL,
    uri text,
    license text,
    created_at text NOT NULL CHECK (created_at ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?Z$')
);

CREATE TABLE model_revisions (
    seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    id uuid PRIMARY KEY,
    slug text NOT NULL UNIQUE,
    model_digest text NOT NULL UNIQUE CHECK (model_digest ~ '^sha256:[0-9a-f]{64}$'),
    name text NOT NULL,
    parameter_count bigint CHECK (parameter_count > 0),
    context_length bigint CHECK (context_length > 0),
    tokenizer text,
    license text,
    schema_version text NOT NULL CHECK (schema_version = 'kernelindex.dev/v1alpha1'),
    manifest json NOT NULL,
    created_at text NOT NULL CHECK (created_at ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?Z$')
);

CREATE TABLE serving_stack_revisions (
    seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    id uuid PRIMARY KEY,
    project_id uuid NOT NULL REFERENCES projects (id) DEFERRABLE INITIALLY DEFERRED,
    slug text NOT NULL UNIQUE,
    stack_digest text NOT NULL UNIQUE CHECK (stack_digest ~ '^sha256:[0-9a-f]{64}$'),
    name text NOT NULL,
    version text NOT NULL,
    schema_version text NOT NULL CHECK (schema_version = 'kernelindex.dev/v1alpha1'),
    manifest json NOT NULL,
    created_at text NOT NULL CHECK (created_at ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?Z$')
);
CREATE INDEX serving_stack_revisions_project_id_idx ON serving_stack_revisions (project_id);

CREATE TABLE serving_configurations (
    seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    id uuid PRIMARY KEY,
    stack_revision_id uuid NOT NULL REFERENCES serving_stack_revisions (id) DEFERRABLE INITIALLY DEFERRED,
    configuration_digest text NOT NULL UNIQUE CHECK (configuration_digest ~ '^sha256:[0-9a-f]{64}$'),
    dtype text NOT NULL,
    quantization text,
    tensor_parallel bigint CHECK (tensor_parallel > 0),
    summary text NOT NULL,
    schema_version text NOT NULL CHECK (schema_version = 'kernelindex.dev/v1alpha1'),
    manifest json NOT NULL,
    created_at text NOT NULL CHECK (created_at ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?Z$')
);
CREATE INDEX serving_configurations_stack_revision_id_idx ON serving_configurations (stack_revision_id);

CREATE TABLE serving_workloads (
    seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    id uuid PRIMARY KEY,
    workload_digest text NOT NULL UNIQUE CHECK (workload_digest ~ '^sha256:[0-9a-f]{64}$'),
    slug text NOT NULL UNIQUE,
    name text NOT NULL,
    streaming boolean NOT NULL,
    load_generation text NOT NULL CHECK (load_generation IN ('open_loop', 'closed_loop', 'offline')),
    schema_version text NOT NULL CHECK (schema_version = 'kernelindex.dev/v1alpha1'),
    manifest json NOT NULL,
    created_at text NOT NULL CHECK (created_at ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?Z$')
);

CREATE TABLE serving_runs (
    seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    id uuid PRIMARY KEY,
    run_digest text NOT NULL UNIQUE CHECK (run_digest ~ '^sha256:[0-9a-f]{64}$'),
    model_revision_id uuid NOT NULL REFERENCES model_revisions (id) DEFERRABLE INITIALLY DEFERRED,
    configuration_id uuid NOT NULL REFERENCES serving_configurations (id) DEFERRABLE INITIALLY DEFERRED,
    workload_id uuid NOT NULL REFERENCES serving_workloads (id) DEFERRABLE INITIALLY DEFERRED,
    source_id uuid REFERENCES sources (id) DEFERRABLE INITIALLY DEFERRED,
    status text NOT NULL CHECK (status IN ('valid', 'invalid', 'incomplete_evidence')),
    observed_at text NOT NULL CHECK (observed_at ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?Z$'),
    published_at text CHECK (published_at ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?Z$'),
    cohort_key text NOT NULL CHECK (cohort_key ~ '^sha256:[0-9a-f]{64}$'),
    protocol_key text NOT NULL,
    quality_policy text NOT NULL,
    metric_set_key text NOT NULL,
    scenario text NOT NULL,
    accelerator_vendor text,
    accelerator_model text NOT NULL,
    accelerator_count bigint NOT NULL CHECK (accelerator_count > 0),
    node_count bigint NOT NULL CHECK (node_count > 0),
    total_accelerators bigint NOT NULL CHECK (total_accelerators > 0),
    reported boolean NOT NULL,
    schema_version text NOT NULL CHECK (schema_version = 'kernelindex.dev/v1alpha1'),
    manifest json NOT NULL,
    supersedes_id uuid REFERENCES serving_runs (id) DEFERRABLE INITIALLY DEFERRED,
    retracted_at text CHECK (retracted_at ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?Z$'),
    retraction_reason text,
    created_at text NOT NULL CHECK (created_at ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?Z$'),
    CHECK (retraction_reason IS NULL OR retracted_at IS NOT NULL)
);
CREATE INDEX serving_runs_cohort_key_idx ON serving_runs (cohort_key);
CREATE INDEX serving_runs_model_revision_id_idx ON serving_runs (model_revision_id);
CREATE INDEX serving_runs_configuration_id_idx ON serving_runs (configuration_id);
CREATE INDEX serving_runs_workload_id_idx ON serving_runs (workload_id);
CREATE INDEX serving_runs_accelerator_model_idx ON serving_runs (accelerator_model);
CREATE INDEX serving_runs_status_idx ON serving_runs (status);
CREATE INDEX serving_runs_published_at_idx ON serving_runs (published_at);
CREATE INDEX serving_runs_retracted_at_idx ON serving_runs (retracted_at);
CREATE INDEX serving_runs_supersedes_id_idx ON serving_runs (supersedes_id);
CREATE INDEX serving_runs_source_id_idx ON serving_runs (source_id);

CREATE TABLE serving_measurements (
    seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    id uuid PRIMARY KEY,
    run_id uuid NOT NULL REFERENCES serving_runs (id) DEFERRABLE INITIALLY DEFERRED,
    metric text NOT NULL,
    statistic text NOT NULL,
    unit text NOT NULL,
    value double precision NOT NULL CHECK (value >= 0 AND value < 'Infinity'::double precision),
    sample_count bigint CHECK (sample_count > 0)
);
CREATE INDEX serving_measurements_run_id_idx ON serving_measurements (run_id);
