-- KernelIndex catalog, version 2 (SQLite): the audit trail of corrections.
-- A correction changes a run's retraction or supersession columns and deletes
-- nothing; this table says who did it, when (UTC), to which run and why. It is the
-- catalog's own record and not part of the export format.
CREATE TABLE corrections (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE CHECK (length(id) = 36),
    action TEXT NOT NULL CHECK (action IN ('retract', 'supersede')),
    run_id TEXT NOT NULL REFERENCES benchmark_runs (id) DEFERRABLE INITIALLY DEFERRED,
    by_run_id TEXT REFERENCES benchmark_runs (id) DEFERRABLE INITIALLY DEFERRED,
    reason TEXT NOT NULL CHECK (length(trim(reason)) > 0),
    actor TEXT NOT NULL CHECK (length(trim(actor)) > 0),
    at TEXT NOT NULL CHECK (at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]*Z'),
    CHECK ((action = 'supersede') = (by_run_id IS NOT NULL))
);
CREATE INDEX corrections_run_id_idx ON corrections (run_id);
