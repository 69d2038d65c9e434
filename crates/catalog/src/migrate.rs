//! Versioned migrations, applied when a catalog is opened. Each version is a pair of SQL
//! files (SQLite, PostgreSQL) compiled into the binary; the catalog records the version
//! and a checksum of what it applied, and refuses a database whose recorded migrations
//! differ from these files or come from a newer `ki`.

use sha2::{Digest, Sha256};

use crate::error::{CatalogError, DbContext, Result};
use crate::rows::{SqlValue, Storage};
use crate::store::{Backend, Pool, Session};

pub struct Migration {
    pub version: i64,
    pub name: &'static str,
    pub sqlite: &'static str,
    pub postgres: &'static str,
}

pub static MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "catalog",
        sqlite: include_str!("../migrations/sqlite/0001_catalog.sql"),
        postgres: include_str!("../migrations/postgres/0001_catalog.sql"),
    },
    Migration {
        version: 2,
        name: "corrections",
        sqlite: include_str!("../migrations/sqlite/0002_corrections.sql"),
        postgres: include_str!("../migrations/postgres/0002_corrections.sql"),
    },
    Migration {
        version: 3,
        name: "later_columns",
        sqlite: include_str!("../migrations/sqlite/0003_later_columns.sql"),
        postgres: include_str!("../migrations/postgres/0003_later_columns.sql"),
    },
    Migration {
        version: 4,
        name: "state",
        sqlite: include_str!("../migrations/sqlite/0004_state.sql"),
        postgres: include_str!("../migrations/postgres/0004_state.sql"),
    },
    Migration {
        version: 5,
        name: "verification_queue",
        sqlite: include_str!("../migrations/sqlite/0005_verification_queue.sql"),
        postgres: include_str!("../migrations/postgres/0005_verification_queue.sql"),
    },
    Migration {
        version: 6,
        name: "artifact_contents",
        sqlite: include_str!("../migrations/sqlite/0006_artifact_contents.sql"),
        postgres: include_str!("../migrations/postgres/0006_artifact_contents.sql"),
    },
    Migration {
        version: crate::search::MIGRATION_VERSION,
        name: "search",
        sqlite: include_str!("../migrations/sqlite/0007_search.sql"),
        postgres: include_str!("../migrations/postgres/0007_search.sql"),
    },
];

impl Migration {
    fn sql(&self, backend: Backend) -> &'static str {
        match backend {
            Backend::Sqlite => self.sqlite,
            Backend::Postgres => self.postgres,
        }
    }

    fn checksum(&self, backend: Backend) -> String {
        hex::encode(Sha256::digest(self.sql(backend).as_bytes()))
    }
}

const LEDGER: &str = "CREATE TABLE IF NOT EXISTS ki_schema_migrations (
    version BIGINT PRIMARY KEY,
    name TEXT NOT NULL,
    checksum TEXT NOT NULL,
    applied_at TEXT NOT NULL
)";

/// Brings the schema up to date inside one write transaction (so two processes opening
/// a fresh catalog at once apply each migration exactly once).
pub(crate) async fn migrate(pool: &Pool) -> Result<Vec<i64>> {
    let mut session = Session::begin(pool, true).await?;
    let backend = session.backend();
    session.execute(LEDGER, &[]).await.context(|| "cannot create the migration ledger".into())?;
    let applied = session
        .fetch_all(
            "SELECT version, checksum FROM ki_schema_migrations ORDER BY version",
            &[],
            &[Storage::Int, Storage::Text],
        )
        .await
        .context(|| "cannot read the migration ledger".into())?;
    let newest_known = MIGRATIONS.last().map_or(0, |migration| migration.version);
    for row in &applied {
        let (SqlValue::Int(Some(version)), SqlValue::Text(Some(checksum))) = (&row[0], &row[1]) else {
            return Err(CatalogError::Migration("the migration ledger holds a malformed row".into()));
        };
        match MIGRATIONS.iter().find(|migration| migration.version == *version) {
            None if *version > newest_known => {
                return Err(CatalogError::Migration(format!(
                    "the catalog's schema is at version {version}, newer than this ki knows (up to {newest_known}); use a newer ki"
                )));
            }
            None => return Err(CatalogError::Migration(format!("the catalog records an unknown migration {version}"))),
            Some(migration) if migration.checksum(backend) != *checksum => {
                return Err(CatalogError::Migration(format!(
                    "migration {version} ({}) was applied from different SQL than this ki carries",
                    migration.name
                )));
            }
            Some(_) => {}
        }
    }
    let mut newly_applied = Vec::new();
    for migration in MIGRATIONS {
        let done = applied.iter().any(|row| row[0] == SqlValue::Int(Some(migration.version)));
        if done {
            continue;
        }
        session
            .run_script(migration.sql(backend))
            .await
            .context(|| format!("migration {} ({}) failed", migration.version, migration.name))?;
        // The search index is derived in Rust (one text on both backends): filled here, in the
        // migration's transaction, for a catalog that already has rows.
        if migration.version == crate::search::MIGRATION_VERSION {
            crate::search::rebuild(&mut session).await?;
        }
        let record = match backend {
            Backend::Sqlite => {
                "INSERT INTO ki_schema_migrations (version, name, checksum, applied_at) VALUES (?1, ?2, ?3, ?4)"
            }
            Backend::Postgres => {
                "INSERT INTO ki_schema_migrations (version, name, checksum, applied_at) VALUES ($1, $2, $3, $4)"
            }
        };
        session
            .execute(
                record,
                &[
                    SqlValue::Int(Some(migration.version)),
                    SqlValue::Text(Some(migration.name.to_string())),
                    SqlValue::Text(Some(migration.checksum(backend))),
                    SqlValue::Text(Some(ki_model::utc::now_millis())),
                ],
            )
            .await
            .context(|| "cannot record a migration".into())?;
        newly_applied.push(migration.version);
    }
    session.commit().await.context(|| "cannot commit migrations".into())?;
    Ok(newly_applied)
}
