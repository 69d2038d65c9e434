-- KernelIndex catalog, version 4 (SQLite): the web's own state, which used to live in a
-- JSON-lines file beside the catalog. API keys (only the sha256 of a secret is kept),
-- community attestations of runs, and submitted manifest bundles. Not part of the export
-- format; every replica of `ki serve` on one catalog reads and writes the same rows.
CREATE TABLE api_keys (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE CHECK (length(id) = 36),
    prefix TEXT NOT NULL,
    key_hash TEXT NOT NULL UNIQUE CHECK (length(key_hash) = 64 AND key_hash NOT GLOB '*[^0-9a-f]*'),
    label TEXT NOT NULL CHECK (length(trim(label)) > 0),
    scopes TEXT NOT NULL CHECK (json_valid(scopes) AND json_type(scopes) = 'array'),
    daily_quota INTEGER NOT NULL CHECK (typeof(daily_quota) = 'integer' AND daily_quota >= 0),
    created_at TEXT NOT NULL CHECK (created_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]*Z'),
    revoked_at TEXT CHECK (revoked_at IS NULL OR revoked_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]*Z')
);

CREATE TABLE attestations (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE CHECK (length(id) = 36),
    -- The run attested; not a foreign key, so that a server of an export file can keep
    -- its attestations in a catalog that does not hold the runs.
    run_id TEXT NOT NULL CHECK (length(run_id) = 36),
    kind TEXT NOT NULL CHECK (kind IN ('reproduced', 'could_not_reproduce', 'environment_note', 'regression_observed')),
    observed_ns INTEGER CHECK (observed_ns IS NULL OR (typeof(observed_ns) = 'integer' AND observed_ns >= 0)),
    evidence_url TEXT,
    note TEXT,
    attester TEXT NOT NULL,
    key_id TEXT NOT NULL REFERENCES api_keys (id) DEFERRABLE INITIALLY DEFERRED,
    created_at TEXT NOT NULL CHECK (created_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]*Z')
);
CREATE INDEX attestations_run_id_idx ON attestations (run_id);
CREATE INDEX attestations_key_id_created_at_idx ON attestations (key_id, created_at);

CREATE TABLE submissions (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE CHECK (length(id) = 36),
    trust TEXT NOT NULL CHECK (trust = 'reported'),
    title TEXT NOT NULL,
    documents TEXT NOT NULL CHECK (json_valid(documents) AND json_type(documents) = 'array'),
    submitter TEXT NOT NULL,
    key_id TEXT NOT NULL REFERENCES api_keys (id) DEFERRABLE INITIALLY DEFERRED,
    created_at TEXT NOT NULL CHECK (created_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]*Z'),
    published_at TEXT CHECK (published_at IS NULL OR published_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]*Z')
);
CREATE INDEX submissions_key_id_created_at_idx ON submissions (key_id, created_at);
