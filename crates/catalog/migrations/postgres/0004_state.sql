-- KernelIndex catalog, version 4 (PostgreSQL): the web's own state, which used to live in
-- a JSON-lines file beside the catalog. API keys (only the sha256 of a secret is kept),
-- community attestations of runs, and submitted manifest bundles. Not part of the export
-- format; every replica of `ki serve` on one catalog reads and writes the same rows.
CREATE TABLE api_keys (
    seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    id uuid PRIMARY KEY,
    prefix text NOT NULL,
    key_hash text NOT NULL UNIQUE CHECK (key_hash ~ '^[0-9a-f]{64}$'),
    label text NOT NULL CHECK (length(btrim(label)) > 0),
    scopes json NOT NULL CHECK (json_typeof(scopes) = 'array'),
    daily_quota bigint NOT NULL CHECK (daily_quota >= 0),
    created_at text NOT NULL CHECK (created_at ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?Z$'),
    revoked_at text CHECK (revoked_at ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?Z$')
);

CREATE TABLE attestations (
    seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    id uuid PRIMARY KEY,
    -- The run attested; not a foreign key, so that a server of an export file can keep
    -- its attestations in a catalog that does not hold the runs.
    run_id uuid NOT NULL,
    kind text NOT NULL CHECK (kind IN ('reproduced', 'could_not_reproduce', 'environment_note', 'regression_observed')),
    observed_ns bigint CHECK (observed_ns >= 0),
    evidence_url text,
    note text,
    attester text NOT NULL,
    key_id uuid NOT NULL REFERENCES api_keys (id) DEFERRABLE INITIALLY DEFERRED,
    created_at text NOT NULL CHECK (created_at ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?Z$')
);
CREATE INDEX attestations_run_id_idx ON attestations (run_id);
CREATE INDEX attestations_key_id_created_at_idx ON attestations (key_id, created_at);

CREATE TABLE submissions (
    seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    id uuid PRIMARY KEY,
    trust text NOT NULL CHECK (trust = 'reported'),
    title text NOT NULL,
    documents json NOT NULL CHECK (json_typeof(documents) = 'array'),
    submitter text NOT NULL,
    key_id uuid NOT NULL REFERENCES api_keys (id) DEFERRABLE INITIALLY DEFERRED,
    created_at text NOT NULL CHECK (created_at ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?Z$'),
    published_at text CHECK (published_at ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?Z$')
);
CREATE INDEX submissions_key_id_created_at_idx ON submissions (key_id, created_at);
