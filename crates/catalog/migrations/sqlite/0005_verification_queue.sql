-- KernelIndex catalog, version 5 (SQLite): the verification queue (ki_catalog::queue).
-- Jobs wait here for GPU workers, which claim them with a lease, renew it while they run,
-- and publish the job's records and verdict in the transaction that marks the job done.
-- Times are milliseconds since the Unix epoch from the database's clock, so that the hosts
-- of a fleet need not agree on the time. Ids are UUIDs as text. The queue's own record,
-- not part of the export format.

-- A worker process: which GPU and software it runs (EnvironmentFacts as JSON).
CREATE TABLE verification_workers (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE CHECK (length(id) = 36),
    host TEXT NOT NULL CHECK (length(trim(host)) > 0),
    gpu_model TEXT NOT NULL CHECK (length(trim(gpu_model)) > 0),
    environment TEXT NOT NULL CHECK (json_valid(environment)),
    started_ms INTEGER NOT NULL,
    last_seen_ms INTEGER NOT NULL,
    stopped_ms INTEGER
);

-- One solution or implementation x a workload set x a protocol (x requirement, x basis),
-- known by job_key, the digest of exactly that: enqueuing it again finds this row.
CREATE TABLE verification_jobs (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE CHECK (length(id) = 36),
    job_key TEXT NOT NULL UNIQUE CHECK (job_key GLOB 'sha256:*'),
    spec TEXT NOT NULL CHECK (json_valid(spec)),
    -- The GPU a worker must have (spec.requirement.gpu); NULL: any.
    gpu_model TEXT,
    -- Lower runs first: people's submissions before bulk re-verification.
    priority INTEGER NOT NULL,
    origin TEXT NOT NULL CHECK (origin IN ('submission', 'reverification')),
    submission_id TEXT,
    reverifies_run_id TEXT,
    reason TEXT,
    state TEXT NOT NULL CHECK (state IN ('pending', 'running', 'done', 'parked')),
    attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    environment_failures INTEGER NOT NULL DEFAULT 0 CHECK (environment_failures >= 0),
    max_environment_failures INTEGER NOT NULL CHECK (max_environment_failures > 0),
    -- Not claimed before this (a retry after an environment failure waits a little).
    available_ms INTEGER NOT NULL,
    worker_id TEXT REFERENCES verification_workers (id),
    lease_token TEXT,
    lease_expires_ms INTEGER,
    verdict TEXT CHECK (verdict IS NULL OR json_valid(verdict)),
    published TEXT CHECK (published IS NULL OR json_valid(published)),
    parked_reason TEXT,
    enqueued_ms INTEGER NOT NULL,
    updated_ms INTEGER NOT NULL,
    finished_ms INTEGER,
    CHECK ((state = 'running') = (lease_token IS NOT NULL AND worker_id IS NOT NULL AND lease_expires_ms IS NOT NULL)),
    CHECK ((state = 'done') = (verdict IS NOT NULL)),
    CHECK ((state = 'parked') = (parked_reason IS NOT NULL))
);
CREATE INDEX verification_jobs_claim_idx ON verification_jobs (state, priority, seq);
CREATE INDEX verification_jobs_submission_idx ON verification_jobs (submission_id);

-- Every claim of a job: by whom, when, and how it ended.
CREATE TABLE verification_attempts (
    seq INTEGER PRIMARY KEY,
    job_id TEXT NOT NULL REFERENCES verification_jobs (id),
    attempt INTEGER NOT NULL CHECK (attempt > 0),
    worker_id TEXT NOT NULL REFERENCES verification_workers (id),
    lease_token TEXT NOT NULL UNIQUE,
    claimed_ms INTEGER NOT NULL,
    ended_ms INTEGER,
    outcome TEXT CHECK (outcome IN ('completed', 'failed', 'released', 'expired')),
    message TEXT,
    UNIQUE (job_id, attempt),
    CHECK ((outcome IS NULL) = (ended_ms IS NULL))
);
CREATE INDEX verification_attempts_job_idx ON verification_attempts (job_id);

-- A lane is one workload under one protocol on one GPU model. Jobs sharing a lane run one
-- at a time, so that their runs are published in the order they were observed (the
-- record-event ledger follows observation order and is only appended to).
CREATE TABLE verification_lanes (
    lane TEXT PRIMARY KEY,
    job_id TEXT REFERENCES verification_jobs (id)
);
CREATE INDEX verification_lanes_job_idx ON verification_lanes (job_id);
