-- KernelIndex catalog, version 2 (PostgreSQL): the audit trail of corrections.
-- A correction changes a run's retraction or supersession columns and deletes
-- nothing; this table says who did it, when (UTC), to which run and why. It is the
-- catalog's own record and not part of the export format.
CREATE TABLE corrections (
    seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    id uuid PRIMARY KEY,
    action text NOT NULL CHECK (action IN ('retract', 'supersede')),
    run_id uuid NOT NULL REFERENCES benchmark_runs (id) DEFERRABLE INITIALLY DEFERRED,
    by_run_id uuid REFERENCES benchmark_runs (id) DEFERRABLE INITIALLY DEFERRED,
    reason text NOT NULL CHECK (length(btrim(reason)) > 0),
    actor text NOT NULL CHECK (length(btrim(actor)) > 0),
    at text NOT NULL CHECK (at ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?Z$'),
    CHECK ((action = 'supersede') = (by_run_id IS NOT NULL))
);
CREATE INDEX corrections_run_id_idx ON corrections (run_id);
