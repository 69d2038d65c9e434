-- KernelIndex catalog, version 2 (PostgreSQL): columns the public index added after the
-- shared export was made (its migrations 0015 and 0017). Nullable, since snapshots from
-- before them lack the columns; ki_catalog::schema marks them `added_later`.
ALTER TABLE projects ADD COLUMN kind text;
ALTER TABLE implementations ADD COLUMN role text;
ALTER TABLE benchmark_runs ADD COLUMN sol_score double precision CHECK (sol_score >= 0 AND sol_score < 'Infinity'::double precision);
