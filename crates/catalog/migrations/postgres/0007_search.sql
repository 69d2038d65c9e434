-- KernelIndex catalog, version 7 (PostgreSQL): the search index (ki_catalog::search).
-- One row per thing the search box finds (an operation with its aliases, an implementation,
-- a project, a GPU model) and the text its words are found in, written by
-- ki_model::search_text (lower-cased there, so that both backends hold the same bytes).
-- Derived from the export tables and written in the transaction of every import that changes
-- them; filled for an existing catalog by the migration. Not exported.
CREATE TABLE search_entries (
    kind TEXT NOT NULL CHECK (kind IN ('operation', 'implementation', 'project', 'hardware')),
    entry_key TEXT NOT NULL,
    haystack TEXT NOT NULL,
    PRIMARY KEY (kind, entry_key)
);

-- Substring search: a pg_trgm GIN index serves `haystack LIKE '%term%'`. The extension is
-- the database's (created in public, where a schema's DROP ... CASCADE cannot remove it);
-- its operator class is named through the schema it lives in, whichever that is.
CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public;
DO $$
DECLARE
    home TEXT;
BEGIN
    SELECT n.nspname INTO home FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
        WHERE e.extname = 'pg_trgm';
    EXECUTE format('CREATE INDEX search_entries_trigrams ON search_entries USING gin (haystack %I.gin_trgm_ops)', home);
END
$$;
