-- KernelIndex catalog, version 2 (SQLite): columns the public index added after the
-- shared export was made (its migrations 0015 and 0017). Nullable, since snapshots from
-- before them lack the columns; ki_catalog::schema marks them `added_later`.
ALTER TABLE projects ADD COLUMN kind TEXT;
ALTER TABLE implementations ADD COLUMN role TEXT;
ALTER TABLE benchmark_runs ADD COLUMN sol_score REAL CHECK (sol_score IS NULL OR (typeof(sol_score) = 'real' AND sol_score >= 0 AND sol_score <= 1.7976931348623157e308));
