-- KernelIndex catalog, version 5 (PostgreSQL): the verification queue (ki_catalog::queue).
-- Jobs wait here for GPU workers, which claim them with a lease (SELECT ... FOR UPDATE
-- SKIP LOCKED), renew it while they run, and publish the job's records and verdict in the
-- transaction that marks the job done. Times are milliseconds since the Unix epoch from the
-- database's clock, so that the hosts of a fleet need not agree on the time. Ids are UUIDs
-- as text (the queue's SQL is the same on both backends). The queue's own record, not part
-- of the export format.

-- A worker process: which GPU and software it runs (EnvironmentFacts as JSON).
CREATE TABLE verification_workers (
    seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    id text PRIMARY KEY CHECK (length(id) = 36),
    host text NOT NULL CHECK (length(btrim(host)) > 0),
    gpu_model text NOT NULL CHECK (length(btrim(gpu_model)) > 0),
    environment text NOT NULL CHECK (environment::jsonb IS NOT NULL),
    started_ms bigint NOT NULL,
    last_seen_ms bigint NOT NULL,
    stopped_ms bigint
);

-- One solution or implementation x a workload set x a protocol (x requirement, x basis),
-- known by job_key, the digest of exactly that: enqueuing it again finds this row.
CREATE TABLE verification_jobs (
    seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    id text PRIMARY KEY CHECK (length(id) = 36),
    job_key text NOT NULL UNIQUE CHECK (job_key LIKE 'sha256:%'),
    spec text NOT NULL CHECK (spec::jsonb IS NOT NULL),
    -- The GPU a worker must have (spec.requirement.gpu); NULL: any.
    gpu_model text,
    -- Lower runs first: people's submissions before bulk re-verification.
    priority bigint NOT NULL,
    origin text NOT NULL CHECK (origin IN ('submission', 'reverification')),
    submission_id text,
    reverifies_run_id text,
    reason text,
    state text NOT NULL CHECK (state IN ('pending', 'running', 'done', 'parked')),
    attempts bigint NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    environment_failures bigint NOT NULL DEFAULT 0 CHECK (environment_failures >= 0),
    max_environment_failures bigint NOT NULL CHECK (max_environment_failures > 0),
    -- Not claimed before this (a retry after an environment failure waits a little).
    available_ms bigint NOT NULL,
    worker_id text REFERENCES verification_workers (id),
    lease_token text,
    lease_expires_ms bigint,
    verdict text CHECK (verdict IS NULL OR verdict::jsonb IS NOT NULL),
    published text CHECK (published IS NULL OR published::jsonb IS NOT NULL),
    parked_reason text,
    enqueued_ms bigint NOT NULL,
    updated_ms bigint NOT NULL,
    finished_ms bigint,
    CHECK ((state = 'running') = (lease_token IS NOT NULL AND worker_id IS NOT NULL AND lease_expires_ms IS NOT NULL)),
    CHECK ((state = 'done') = (verdict IS NOT NULL)),
    CHECK ((state = 'parked') = (parked_reason IS NOT NULL))
);
CREATE INDEX verification_jobs_claim_idx ON verification_jobs (state, priority, seq);
CREATE INDEX verification_jobs_submission_idx ON verification_jobs (submission_id);

-- Every claim of a job: by whom, when, and how it ended.
CREATE TABLE verification_attempts (
    seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    job_id text NOT NULL REFERENCES verification_jobs (id),
    attempt bigint NOT NULL CHECK (attempt > 0),
    worker_id text NOT NULL REFERENCES verification_workers (id),
    lease_token text NOT NULL UNIQUE,
    claimed_ms bigint NOT NULL,
    ended_ms bigint,
    outcome text CHECK (outcome IN ('completed', 'failed', 'released', 'expired')),
    message text,
    UNIQUE (job_id, attempt),
    CHECK ((outcome IS NULL) = (ended_ms IS NULL))
);
CREATE INDEX verification_attempts_job_idx ON verification_attempts (job_id);

-- A lane is one workload under one protocol on one GPU model. Jobs sharing a lane run one
-- at a time, so that their runs are published in the order they were observed (the
-- record-event ledger follows observation order and is only appended to). Claimers lock
-- lane rows FOR UPDATE SKIP LOCKED, so two claims never take one lane at once.
CREATE TABLE verification_lanes (
    lane text PRIMARY KEY,
    job_id text REFERENCES verification_jobs (id)
);
CREATE INDEX verification_lanes_job_idx ON verification_lanes (job_id);
