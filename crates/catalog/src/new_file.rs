//! A new SQLite catalog made from an export file, written once.
//!
//! An import into an open catalog writes every page twice (into the WAL, then into the file at
//! the checkpoint) and looks pages up through a WAL of millions of frames: at 1M runs that was
//! a third of the import's time. A catalog that does not exist yet needs neither: it is built
//! in a file of its own beside the one asked for, with no journal at all (a failed import leaves
//! nothing to undo: the file is removed), flushed to disk, and only then put in place under its
//! name, which nothing else can have taken meanwhile. Readers never see it half made.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use sqlx::sqlite::SqliteConnectOptions;

use crate::error::{CatalogError, Result};
use crate::import::{ImportOptions, ImportReport};
use crate::store;

/// The file a `sqlite://` URL names, when it names one that does not exist yet: not an
/// in-memory database, no `mode` asked for, not a file or link already there (even an empty one).
pub(crate) fn file_to_make(url: &str) -> Option<PathBuf> {
    let rest = url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:"))?;
    let (database, params) = rest.split_once('?').unwrap_or((rest, ""));
    if database.is_empty() || database == ":memory:" || params.split('&').any(|param| param.starts_with("mode=")) {
        return None;
    }
    // sqlx's reading of the URL (percent-decoding) names the file it would open.
    let options = SqliteConnectOptions::from_str(url).ok()?;
    let path = options.get_filename();
    match std::fs::symlink_metadata(path) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Some(path.to_path_buf()),
        _ => None,
    }
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> CatalogError + '_ {
    move |source| CatalogError::Io { path: path.display().to_string(), source }
}

/// Imports `export` into a new catalog at `target` (see the module's note). On any error
/// nothing is left behind and `target` still does not exist.
pub(crate) async fn import_into_new(target: &Path, export: &Path, options: &ImportOptions) -> Result<ImportReport> {
    let dir = match target.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let name = target.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
    // Removed when dropped, on every path that does not put it in place.
    let prefix = format!(".{name}.importing-");
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix);
    // A catalog's file, as SQLite makes one (less the umask), not a private temporary file.
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o644));
    let building = builder.tempfile_in(dir).map_err(io_error(target))?.into_temp_path();
    let pool = store::connect_for_one_load(&building).await?;
    let loaded = async {
        crate::migrate::migrate(&pool).await?;
        crate::import::import_file(&pool, export, options).await
    }
    .await;
    store::close(&pool).await;
    let report = loaded?;
    // Nothing was synced while loading: the whole file reaches the disk before it gets its name.
    std::fs::File::open(&building).and_then(|file| file.sync_all()).map_err(io_error(&building))?;
    building.persist_noclobber(target).map_err(|error| {
        let reason = if error.error.kind() == std::io::ErrorKind::AlreadyExists {
            std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                "made by something else during the import; nothing written",
            )
        } else {
            error.error
        };
        CatalogError::Io { path: target.display().to_string(), source: reason }
    })?;
    std::fs::File::open(dir).and_then(|dir| dir.sync_all()).map_err(io_error(dir))?;
    Ok(report)
}
