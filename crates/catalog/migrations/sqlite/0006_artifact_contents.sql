-- KernelIndex catalog, version 6 (SQLite): the contents of artifacts the rows name (an
-- implementation's source, a run's raw samples), held by their sha256 digest. Written only
-- after the digest is recomputed from the bytes; never changed once written. Not part of the
-- export format: exports and record digests do not see this table.
CREATE TABLE artifact_contents (
    seq INTEGER PRIMARY KEY,
    digest TEXT NOT NULL UNIQUE CHECK (length(digest) = 71 AND digest GLOB 'sha256:*' AND substr(digest, 8) NOT GLOB '*[^0-9a-f]*'),
    size_bytes INTEGER NOT NULL CHECK (typeof(size_bytes) = 'integer' AND size_bytes >= 0 AND size_bytes = length(content)),
    content BLOB NOT NULL CHECK (typeof(content) = 'blob'),
    stored_at TEXT NOT NULL CHECK (stored_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]*Z')
);
