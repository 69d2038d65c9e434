-- KernelIndex catalog, version 7 (SQLite): the search index (ki_catalog::search).
-- One row per thing the search box finds (an operation with its aliases, an implementation,
-- a project, a GPU model) and the text its words are found in, written by
-- ki_model::search_text (lower-cased there, so that both backends hold the same bytes).
-- Derived from the export tables and written in the transaction of every import that changes
-- them; filled for an existing catalog by the migration. Not exported.
CREATE TABLE search_entries (
    -- operation, implementation, project or hardware.
    kind TEXT NOT NULL CHECK (kind IN ('operation', 'implementation', 'project', 'hardware')),
    -- The row's id; for hardware, the GPU model as runs name it.
    entry_key TEXT NOT NULL,
    -- What the query's words are looked for in (substrings), lower-cased.
    haystack TEXT NOT NULL,
    PRIMARY KEY (kind, entry_key)
);

-- Substring search: the trigram tokenizer finds every row whose haystack holds a quoted term
-- of 3 or more characters. Case-sensitive: the text and the words are lower-cased already.
CREATE VIRTUAL TABLE search_entries_text USING fts5(
    haystack,
    content = 'search_entries',
    content_rowid = 'rowid',
    tokenize = 'trigram case_sensitive 1'
);

CREATE TRIGGER search_entries_insert AFTER INSERT ON search_entries BEGIN
    INSERT INTO search_entries_text (rowid, haystack) VALUES (new.rowid, new.haystack);
END;
CREATE TRIGGER search_entries_delete AFTER DELETE ON search_entries BEGIN
    INSERT INTO search_entries_text (search_entries_text, rowid, haystack) VALUES ('delete', old.rowid, old.haystack);
END;
CREATE TRIGGER search_entries_update AFTER UPDATE ON search_entries BEGIN
    INSERT INTO search_entries_text (search_entries_text, rowid, haystack) VALUES ('delete', old.rowid, old.haystack);
    INSERT INTO search_entries_text (rowid, haystack) VALUES (new.rowid, new.haystack);
END;
