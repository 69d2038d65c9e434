-- KernelIndex catalog, version 6 (PostgreSQL): the contents of artifacts the rows name (an
-- implementation's source, a run's raw samples), held by their sha256 digest. Written only
-- after the digest is recomputed from the bytes; never changed once written. Not part of the
-- export format: exports and record digests do not see this table.
CREATE TABLE artifact_contents (
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    digest TEXT NOT NULL UNIQUE CHECK (digest ~ '^sha256:[0-9a-f]{64}$'),
    size_bytes BIGINT NOT NULL CHECK (size_bytes >= 0 AND size_bytes = octet_length(content)),
    content BYTEA NOT NULL,
    stored_at TEXT NOT NULL CHECK (stored_at ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}.*Z$')
);
