//! The two backends behind one set of operations. SQL text is generated per backend from
//! the table specs; the row I/O is written once and stamped out for each sqlx driver.

use std::str::FromStr;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgConnection, PgPool, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{ConnectOptions, Connection};

use crate::error::{CatalogError, DbContext, Result};
use crate::rows::{SqlValue, Storage, storage};
use crate::schema::{Kind, Table};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

#[derive(Clone, Debug)]
pub(crate) enum Pool {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

/// How long a writer waits for another writer's SQLite lock before giving up.
const SQLITE_BUSY_TIMEOUT: Duration = Duration::from_secs(60);

/// The page size of a new SQLite catalog.
const SQLITE_PAGE_BYTES: u32 = 16 << 10;

pub(crate) async fn connect(url: &str) -> Result<Pool> {
    if url.starts_with("sqlite:") {
        let options = SqliteConnectOptions::from_str(url)
            .map_err(|_| CatalogError::Url(url.to_string()))?
            .create_if_missing(true)
            // A run's row (its manifest inline) is about 2.2 KB: a 4 KiB page holds one and
            // leaves the rest empty, a 16 KiB page holds seven. Applies to a new file only.
            .page_size(SQLITE_PAGE_BYTES)
            .journal_mode(SqliteJournalMode::Wal)
            // WAL + NORMAL: a crash never corrupts the file; commits are atomic.
            .synchronous(SqliteSynchronous::Normal)
            .foreign_keys(true)
            .busy_timeout(SQLITE_BUSY_TIMEOUT)
            // sqlx warns of a slow statement with the whole statement's text (a 50 KB line of
            // placeholders per batched INSERT of an import); what is slow is ours to say.
            .disable_statement_logging();
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(options)
            .await
            .context(|| format!("cannot open {url}"))?;
        Ok(Pool::Sqlite(pool))
    } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        let options = PgConnectOptions::from_str(url)
            .map_err(|_| CatalogError::Url(crate::urls::redact(url)))?
            .disable_statement_logging();
        // A pool retries a refused connection until its acquire timeout (30 s) and then says
        // only "pool timed out"; one direct connection first fails at once, with the reason.
        let probe = PgConnection::connect_with(&options)
            .await
            .context(|| format!("cannot connect to {}", crate::urls::redact(url)))?;
        let _ = probe.close().await;
        let pool = PgPoolOptions::new()
            .max_connections(4)
            .connect_with(options)
            .await
            .context(|| format!("cannot connect to {}", crate::urls::redact(url)))?;
        Ok(Pool::Postgres(pool))
    } else {
        Err(CatalogError::Url(crate::urls::redact(url)))
    }
}

/// One connection to a new SQLite file that one import fills and nothing else reads
/// ([`crate::new_file`]): no journal and no syncing, since a failed load is removed, not undone.
pub(crate) async fn connect_for_one_load(path: &std::path::Path) -> Result<Pool> {
    let options = SqliteConnectOptions::new()
        .filename(path)
        .page_size(SQLITE_PAGE_BYTES)
        .journal_mode(SqliteJournalMode::Off)
        .synchronous(SqliteSynchronous::Off)
        .foreign_keys(true)
        .disable_statement_logging();
    let pool = SqlitePoolOptions::new()
        .max_connections(1)
        .connect_with(options)
        .await
        .context(|| format!("cannot open {}", path.display()))?;
    Ok(Pool::Sqlite(pool))
}

/// Closes the pool, waiting for its connections to finish.
pub(crate) async fn close(pool: &Pool) {
    match pool {
        Pool::Sqlite(pool) => pool.close().await,
        Pool::Postgres(pool) => pool.close().await,
    }
}

/// The SELECT list for a table's columns (PostgreSQL returns uuid and json as text).
pub(crate) fn select_list(backend: Backend, table: &Table) -> String {
    table
        .columns
        .iter()
        .map(|column| match (backend, column.kind) {
            (Backend::Postgres, Kind::Uuid | Kind::Json | Kind::JsonArray) => format!("{}::text", column.sql),
            _ => column.sql.to_string(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// A placeholder for parameter `number` (1-based) of a column of `kind`.
pub(crate) fn placeholder(backend: Backend, number: usize, kind: Kind) -> String {
    match backend {
        Backend::Sqlite => format!("?{number}"),
        Backend::Postgres => match kind {
            Kind::Uuid => format!("${number}::uuid"),
            Kind::Json | Kind::JsonArray => format!("${number}::json"),
            _ => format!("${number}"),
        },
    }
}

/// `INSERT INTO table (...) VALUES (...), (...)` for `rows` rows.
///
/// SQLite gets anonymous `?` placeholders: sqlx looks up the name of every parameter it
/// binds, and SQLite finds a numbered (`?NNN`) name by scanning the statement's list of
/// names, which makes binding a batch of thousands of numbered parameters quadratic
/// (it was most of the import's time).
pub(crate) fn insert_sql(backend: Backend, table: &Table, rows: usize) -> String {
    let columns: Vec<&str> = table.columns.iter().map(|column| column.sql).collect();
    let mut sql = format!("INSERT INTO {} ({}) VALUES ", table.name, columns.join(", "));
    let mut number = 1;
    for row in 0..rows {
        if row > 0 {
            sql.push_str(", ");
        }
        sql.push('(');
        for (index, column) in table.columns.iter().enumerate() {
            if index > 0 {
                sql.push_str(", ");
            }
            match backend {
                Backend::Sqlite => sql.push('?'),
                Backend::Postgres => sql.push_str(&placeholder(backend, number, column.kind)),
            }
            number += 1;
        }
        sql.push(')');
    }
    sql
}

/// `COPY table (columns) FROM STDIN`: PostgreSQL's bulk load of new rows, in its text format
/// ([`copy_row`]), the columns as [`insert_sql`] names them.
pub(crate) fn copy_sql(table: &Table) -> String {
    let columns: Vec<&str> = table.columns.iter().map(|column| column.sql).collect();
    format!("COPY {} ({}) FROM STDIN", table.name, columns.join(", "))
}

/// Appends one row in `COPY`'s text format: values separated by tabs, `\N` for null, a
/// backslash, tab, newline and carriage return in text escaped; doubles in their shortest
/// text that reads back as the same double, as a bound double is stored.
pub(crate) fn copy_row(values: &[SqlValue], out: &mut Vec<u8>) {
    use std::io::Write as _;
    for (index, value) in values.iter().enumerate() {
        if index > 0 {
            out.push(b'\t');
        }
        match value {
            SqlValue::Text(None) | SqlValue::Int(None) | SqlValue::Real(None) | SqlValue::Bool(None) => {
                out.extend_from_slice(b"\\N")
            }
            SqlValue::Text(Some(text)) if !text.bytes().any(|byte| matches!(byte, b'\\' | b'\t' | b'\n' | b'\r')) => {
                out.extend_from_slice(text.as_bytes())
            }
            SqlValue::Text(Some(text)) => {
                let bytes = text.as_bytes();
                let mut start = 0;
                for (at, byte) in bytes.iter().enumerate() {
                    let escaped: &[u8] = match byte {
                        b'\\' => b"\\\\",
                        b'\t' => b"\\t",
                        b'\n' => b"\\n",
                        b'\r' => b"\\r",
                        _ => continue,
                    };
                    out.extend_from_slice(&bytes[start..at]);
                    out.extend_from_slice(escaped);
                    start = at + 1;
                }
                out.extend_from_slice(&bytes[start..]);
            }
            SqlValue::Int(Some(number)) => {
                let _ = write!(out, "{number}");
            }
            // Rust writes the shortest digits that read back as the same double.
            SqlValue::Real(Some(number)) => {
                let _ = write!(out, "{number:?}");
            }
            SqlValue::Bool(Some(flag)) => out.push(if *flag { b't' } else { b'f' }),
        }
    }
    out.push(b'\n');
}

/// Rows per INSERT statement: big enough to keep round trips few, within both
/// backends' parameter limits (SQLite 32766, PostgreSQL 65535).
pub(crate) fn batch_rows(table: &Table) -> usize {
    (16_000 / table.columns.len()).clamp(1, 500)
}

pub(crate) fn storages(kinds: impl Iterator<Item = Kind>) -> Vec<Storage> {
    kinds.map(storage).collect()
}

/// Row I/O written once for both drivers.
macro_rules! backend_io {
    ($module:ident, $db:ty, $connection:ty, $row:ty) => {
        pub(crate) mod $module {
            use futures_util::TryStreamExt;
            use sqlx::{AssertSqlSafe, Row};

            use crate::rows::{SqlValue, Storage};

            pub(crate) type Connection = $connection;

            fn bind<'q>(
                query: sqlx::query::Query<'q, $db, <$db as sqlx::Database>::Arguments>,
                value: &SqlValue,
            ) -> sqlx::query::Query<'q, $db, <$db as sqlx::Database>::Arguments> {
                match value {
                    SqlValue::Text(text) => query.bind(text.clone()),
                    SqlValue::Int(number) => query.bind(*number),
                    SqlValue::Real(number) => query.bind(*number),
                    SqlValue::Bool(flag) => query.bind(*flag),
                }
            }

            fn decode(row: &$row, storages: &[Storage]) -> Result<Vec<SqlValue>, sqlx::Error> {
                storages
                    .iter()
                    .enumerate()
                    .map(|(index, storage)| {
                        Ok(match storage {
                            Storage::Text => SqlValue::Text(row.try_get(index)?),
                            Storage::Int => SqlValue::Int(row.try_get(index)?),
                            Storage::Real => SqlValue::Real(row.try_get(index)?),
                            Storage::Bool => SqlValue::Bool(row.try_get(index)?),
                        })
                    })
                    .collect()
            }

            pub(crate) async fn execute(
                connection: &mut Connection,
                sql: &str,
                params: &[SqlValue],
            ) -> Result<u64, sqlx::Error> {
                let mut query = sqlx::query::<$db>(AssertSqlSafe(sql.to_string()));
                for value in params {
                    query = bind(query, value);
                }
                Ok(query.execute(&mut *connection).await?.rows_affected())
            }

            pub(crate) async fn fetch_all(
                connection: &mut Connection,
                sql: &str,
                params: &[SqlValue],
                storages: &[Storage],
            ) -> Result<Vec<Vec<SqlValue>>, sqlx::Error> {
                let mut query = sqlx::query::<$db>(AssertSqlSafe(sql.to_string()));
                for value in params {
                    query = bind(query, value);
                }
                let rows = query.fetch_all(&mut *connection).await?;
                rows.iter().map(|row| decode(row, storages)).collect()
            }

            /// Streams rows to `visit` without holding them all in memory.
            pub(crate) async fn for_each<E: From<sqlx::Error>>(
                connection: &mut Connection,
                sql: &str,
                params: &[SqlValue],
                storages: &[Storage],
                mut visit: impl FnMut(Vec<SqlValue>) -> Result<(), E>,
            ) -> Result<(), E> {
                let mut query = sqlx::query::<$db>(AssertSqlSafe(sql.to_string()));
                for value in params {
                    query = bind(query, value);
                }
                let mut stream = query.fetch(&mut *connection);
                while let Some(row) = stream.try_next().await? {
                    visit(decode(&row, storages)?)?;
                }
                Ok(())
            }

            pub(crate) async fn run_script(connection: &mut Connection, sql: &'static str) -> Result<(), sqlx::Error> {
                sqlx::raw_sql(sql).execute(&mut *connection).await.map(|_| ())
            }
        }
    };
}

backend_io!(sqlite_io, sqlx::Sqlite, sqlx::SqliteConnection, sqlx::sqlite::SqliteRow);
backend_io!(pg_io, sqlx::Postgres, sqlx::PgConnection, sqlx::postgres::PgRow);

impl Pool {
    pub(crate) fn backend(&self) -> Backend {
        match self {
            Pool::Sqlite(_) => Backend::Sqlite,
            Pool::Postgres(_) => Backend::Postgres,
        }
    }
}

/// One read statement on a pooled connection, outside any transaction: for a single query on
/// a request's path, where BEGIN and ROLLBACK would be two more round trips.
pub(crate) async fn fetch_all(
    pool: &Pool,
    sql: &str,
    params: &[SqlValue],
    storages: &[Storage],
) -> Result<Vec<Vec<SqlValue>>, sqlx::Error> {
    match pool {
        Pool::Sqlite(pool) => sqlite_io::fetch_all(&mut *pool.acquire().await?, sql, params, storages).await,
        Pool::Postgres(pool) => pg_io::fetch_all(&mut *pool.acquire().await?, sql, params, storages).await,
    }
}

/// Whether another connection holds the SQLite write lock right now (asked without waiting;
/// the answer may change at once, so it only decides whether to tell the user about a wait).
async fn sqlite_writer_busy(pool: &sqlx::SqlitePool) -> bool {
    // A connection of its own, closed after: one that waits for nothing must never go back to
    // the pool, not even when this future is dropped half way (a client that went away).
    let options = pool.connect_options().as_ref().clone().busy_timeout(Duration::ZERO);
    let Ok(mut connection) = <sqlx::SqliteConnection as sqlx::Connection>::connect_with(&options).await else {
        return false;
    };
    let busy = match sqlx::raw_sql("BEGIN IMMEDIATE; ROLLBACK").execute(&mut connection).await {
        Ok(_) => false,
        Err(error) => is_sqlite_busy(&error),
    };
    let _ = sqlx::Connection::close(connection).await;
    busy
}

/// SQLITE_BUSY (5) and its extended codes: another connection holds the lock.
fn is_sqlite_busy(error: &sqlx::Error) -> bool {
    error
        .as_database_error()
        .and_then(|e| e.code())
        .and_then(|code| code.parse::<i32>().ok())
        .is_some_and(|code| code & 0xff == 5)
}

/// A transaction or plain connection on either backend, with the operations the
/// catalog needs.
pub(crate) enum Session {
    Sqlite(sqlx::Transaction<'static, sqlx::Sqlite>),
    Postgres(sqlx::Transaction<'static, sqlx::Postgres>),
}

/// The advisory lock that serializes catalog writers on PostgreSQL.
const PG_WRITER_LOCK: i64 = 0x6b69_6361_7461_6c67; // "kicatalg"

impl Session {
    /// Begins a transaction. A writer takes the write lock at once (SQLite
    /// `BEGIN IMMEDIATE`, a PostgreSQL advisory lock), so two importers queue rather
    /// than race; readers are never blocked by it.
    pub(crate) async fn begin(pool: &Pool, write: bool) -> Result<Session> {
        match pool {
            Pool::Sqlite(pool) => {
                if !write {
                    let tx = pool.begin_with("BEGIN").await.context(|| "cannot begin a transaction".into())?;
                    return Ok(Session::Sqlite(tx));
                }
                if sqlite_writer_busy(pool).await {
                    // Waiting in silence looks like a hang (issue 36, finding 10): say why.
                    tracing::warn!(
                        "another process is writing to {}; waiting up to {} s for its write lock",
                        pool.connect_options().get_filename().display(),
                        SQLITE_BUSY_TIMEOUT.as_secs()
                    );
                }
                match pool.begin_with("BEGIN IMMEDIATE").await {
                    Ok(tx) => Ok(Session::Sqlite(tx)),
                    Err(cause) if is_sqlite_busy(&cause) => Err(CatalogError::Database {
                        context: format!(
                            "another process held the catalog's write lock for {} s (a writer such as `ki catalog import` or `ki admin`); try again when it has finished",
                            SQLITE_BUSY_TIMEOUT.as_secs()
                        ),
                        cause,
                    }),
                    Err(cause) => Err(CatalogError::Database { context: "cannot begin a transaction".into(), cause }),
                }
            }
            Pool::Postgres(pool) => {
                let mut tx = pool.begin().await.context(|| "cannot begin a transaction".into())?;
                if write {
                    let tried = pg_io::fetch_all(
                        &mut tx,
                        "SELECT pg_try_advisory_xact_lock($1)",
                        &[SqlValue::Int(Some(PG_WRITER_LOCK))],
                        &[Storage::Bool],
                    )
                    .await
                    .context(|| "cannot take the catalog writer lock".into())?;
                    if tried.first().and_then(|row| row.first()) == Some(&SqlValue::Bool(Some(true))) {
                        return Ok(Session::Postgres(tx));
                    }
                    tracing::warn!("another process is writing to this catalog; waiting for its writer lock");
                    pg_io::execute(&mut tx, "SELECT pg_advisory_xact_lock($1)", &[SqlValue::Int(Some(PG_WRITER_LOCK))])
                        .await
                        .context(|| "cannot take the catalog writer lock".into())?;
                }
                Ok(Session::Postgres(tx))
            }
        }
    }

    pub(crate) fn backend(&self) -> Backend {
        match self {
            Session::Sqlite(_) => Backend::Sqlite,
            Session::Postgres(_) => Backend::Postgres,
        }
    }

    pub(crate) async fn execute(&mut self, sql: &str, params: &[SqlValue]) -> Result<u64, sqlx::Error> {
        match self {
            Session::Sqlite(tx) => sqlite_io::execute(tx, sql, params).await,
            Session::Postgres(tx) => pg_io::execute(tx, sql, params).await,
        }
    }

    pub(crate) async fn fetch_all(
        &mut self,
        sql: &str,
        params: &[SqlValue],
        storages: &[Storage],
    ) -> Result<Vec<Vec<SqlValue>>, sqlx::Error> {
        match self {
            Session::Sqlite(tx) => sqlite_io::fetch_all(tx, sql, params, storages).await,
            Session::Postgres(tx) => pg_io::fetch_all(tx, sql, params, storages).await,
        }
    }

    pub(crate) async fn for_each<E: From<sqlx::Error>>(
        &mut self,
        sql: &str,
        params: &[SqlValue],
        storages: &[Storage],
        visit: impl FnMut(Vec<SqlValue>) -> Result<(), E>,
    ) -> Result<(), E> {
        match self {
            Session::Sqlite(tx) => sqlite_io::for_each(tx, sql, params, storages, visit).await,
            Session::Postgres(tx) => pg_io::for_each(tx, sql, params, storages, visit).await,
        }
    }

    pub(crate) async fn run_script(&mut self, sql: &'static str) -> Result<(), sqlx::Error> {
        match self {
            Session::Sqlite(tx) => sqlite_io::run_script(tx, sql).await,
            Session::Postgres(tx) => pg_io::run_script(tx, sql).await,
        }
    }

    /// `COPY … FROM STDIN` of `data` ([`copy_row`]s) in this transaction (PostgreSQL only).
    pub(crate) async fn copy_in(&mut self, statement: &str, data: &[u8]) -> Result<u64, sqlx::Error> {
        match self {
            Session::Postgres(tx) => {
                let mut copy = tx.copy_in_raw(statement).await?;
                copy.send(data).await?;
                copy.finish().await
            }
            Session::Sqlite(_) => Err(sqlx::Error::Protocol("COPY is PostgreSQL's".into())),
        }
    }

    pub(crate) async fn commit(self) -> Result<(), sqlx::Error> {
        match self {
            Session::Sqlite(tx) => tx.commit().await,
            Session::Postgres(tx) => tx.commit().await,
        }
    }

    pub(crate) async fn rollback(self) -> Result<(), sqlx::Error> {
        match self {
            Session::Sqlite(tx) => tx.rollback().await,
            Session::Postgres(tx) => tx.rollback().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_batch_inserts_use_anonymous_placeholders() {
        let table = crate::schema::table("measurements").unwrap();
        let rows = batch_rows(table);
        let sql = insert_sql(Backend::Sqlite, table, rows);
        // Numbered placeholders make sqlx's binding quadratic in the batch size.
        assert_eq!(sql.matches('?').count(), rows * table.columns.len());
        assert!(!sql.contains("?1"), "{}", &sql[..200]);
        let sql = insert_sql(Backend::Postgres, table, 2);
        assert!(sql.ends_with("($8::uuid, $9::uuid, $10, $11, $12, $13, $14)"), "{sql}");
    }

    /// What a test's tracing subscriber was given, as text.
    #[derive(Clone, Default)]
    struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// A statement slower than sqlx's slow-statement threshold (1 s) on both backends leaves
    /// no warning: sqlx's carries the whole statement (an import's batched INSERT printed a
    /// 50 KB line of placeholders); the catalog says itself what is slow and why.
    #[tokio::test]
    async fn a_slow_statement_prints_no_statement_text() {
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        // Global: SQLite's statements run (and are logged) on sqlx's worker thread.
        tracing::subscriber::set_global_default(subscriber).expect("no other subscriber in this test process");
        let dir = tempfile::tempdir().unwrap();
        let Pool::Sqlite(sqlite) =
            connect(&format!("sqlite://{}", dir.path().join("slow.db").display())).await.unwrap()
        else {
            unreachable!()
        };
        let started = std::time::Instant::now();
        let mut rows = 1_000_000_i64;
        while started.elapsed() < Duration::from_millis(1200) {
            rows *= 4;
            let counted: i64 = sqlx::query_scalar(
                "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < ?) SELECT count(*) FROM c",
            )
            .bind(rows)
            .fetch_one(&sqlite)
            .await
            .unwrap();
            assert_eq!(counted, rows);
        }
        let Pool::Postgres(postgres) = connect("postgres://postgres@127.0.0.1:5432/test").await.unwrap() else {
            unreachable!()
        };
        sqlx::query("SELECT pg_sleep(1.2)").execute(&postgres).await.unwrap();
        // The subscriber does see what the catalog's code says.
        tracing::warn!("the test's own warning");
        let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
        assert!(text.contains("the test's own warning"), "{text}");
        assert!(
            !text.contains("slow statement") && !text.contains("pg_sleep") && !text.contains("RECURSIVE"),
            "{text}"
        );
    }

    async fn page_size(pool: &Pool) -> i64 {
        let Pool::Sqlite(pool) = pool else { unreachable!("a SQLite pool") };
        sqlx::query_scalar("PRAGMA page_size").fetch_one(pool).await.unwrap()
    }

    /// A new file gets the large pages; a file made with SQLite's default keeps its own
    /// (a page size changes only by a VACUUM) and opens as before.
    #[tokio::test]
    async fn a_new_sqlite_catalog_has_large_pages_and_an_old_one_keeps_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let new = dir.path().join("new.db");
        let pool = connect(&format!("sqlite://{}", new.display())).await.unwrap();
        assert_eq!(page_size(&pool).await, i64::from(SQLITE_PAGE_BYTES));

        let old = dir.path().join("old.db");
        let options = SqliteConnectOptions::from_str(&format!("sqlite://{}", old.display()))
            .unwrap()
            .create_if_missing(true)
            .page_size(4096);
        let mut connection = sqlx::sqlite::SqliteConnection::connect_with(&options).await.unwrap();
        sqlx::query("CREATE TABLE kept (x INTEGER)").execute(&mut connection).await.unwrap();
        sqlx::query("INSERT INTO kept VALUES (7)").execute(&mut connection).await.unwrap();
        connection.close().await.unwrap();
        let pool = connect(&format!("sqlite://{}", old.display())).await.unwrap();
        assert_eq!(page_size(&pool).await, 4096);
        let Pool::Sqlite(sqlite) = &pool else { unreachable!() };
        let kept: i64 = sqlx::query_scalar("SELECT x FROM kept").fetch_one(sqlite).await.unwrap();
        assert_eq!(kept, 7);
    }
}
