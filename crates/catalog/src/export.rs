//! Writing exports: JSONL of `{"table":…,"row":…}`, tables in export order, rows in
//! arrival order, runs only once published (and the measurements and record events of
//! published runs only); plain or zstd-compressed as the file's name says.

use std::io::Write;
use std::path::Path;

use crate::error::{CatalogError, DbContext, Result};
use crate::json_text;
use crate::rows;
use crate::schema::{TABLES, Table};
use crate::store::{self, Backend, Pool, Session};

/// Rows written per table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportSummary {
    pub tables: Vec<(&'static str, u64)>,
}

impl ExportSummary {
    pub fn rows(&self) -> u64 {
        self.tables.iter().map(|(_, count)| count).sum()
    }
}

/// The query for the exported rows of a table.
pub(crate) fn export_sql(backend: Backend, table: &Table) -> String {
    let filter = if table.is_runs {
        " WHERE published_at IS NOT NULL".to_string()
    } else if let Some((column, runs)) = table.published_via {
        format!(" WHERE {column} IN (SELECT id FROM {runs} WHERE published_at IS NOT NULL)")
    } else {
        String::new()
    };
    format!("SELECT {} FROM {}{} ORDER BY seq", store::select_list(backend, table), table.name, filter)
}

/// Writes the export lines (uncompressed) to `out`, from one consistent snapshot.
pub(crate) async fn write_lines(pool: &Pool, out: &mut dyn Write) -> Result<ExportSummary> {
    let mut session = Session::begin(pool, false).await?;
    let backend = session.backend();
    let mut summary = ExportSummary { tables: Vec::new() };
    let mut line: Vec<u8> = Vec::with_capacity(1 << 16);
    for table in TABLES {
        let storages = store::storages(table.columns.iter().map(|column| column.kind));
        let mut count = 0u64;
        let mut write_error = None;
        session
            .for_each(&export_sql(backend, table), &[], &storages, |values| -> Result<()> {
                line.clear();
                line.extend_from_slice(b"{\"table\":");
                json_text::write_string(table.name, &mut line);
                line.extend_from_slice(b",\"row\":");
                rows::render_row(table, &values, &mut line);
                line.extend_from_slice(b"}\n");
                if let Err(error) = out.write_all(&line) {
                    write_error = Some(error);
                    return Err(CatalogError::Export("write failed".into()));
                }
                count += 1;
                Ok(())
            })
            .await
            .map_err(|error| match write_error.take() {
                Some(io) => CatalogError::Export(format!("cannot write the export: {io}")),
                None => error,
            })?;
        summary.tables.push((table.name, count));
    }
    session.rollback().await.context(|| "cannot end the export's read transaction".into())?;
    Ok(summary)
}

/// A good ratio at a few seconds for the 49 MB shared export on two cores.
const ZSTD_LEVEL: i32 = 9;

/// What an export file holds, as its name says: the reader detects compression by content,
/// but people and other tools go by the name, so the name must not lie.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    /// `NAME.jsonl`: JSON lines.
    JsonLines,
    /// `NAME.jsonl.zst`: JSON lines, Zstandard-compressed.
    ZstdJsonLines,
}

impl ExportFormat {
    /// The format `path`'s name asks for; any name but `NAME.jsonl` or `NAME.jsonl.zst` is refused.
    pub fn for_path(path: &Path) -> Result<ExportFormat> {
        let name = path.file_name().and_then(|name| name.to_str()).unwrap_or("");
        let stem_before = |suffix: &str| name.strip_suffix(suffix).is_some_and(|stem| !stem.is_empty());
        if stem_before(".jsonl.zst") {
            Ok(ExportFormat::ZstdJsonLines)
        } else if stem_before(".jsonl") {
            Ok(ExportFormat::JsonLines)
        } else {
            Err(CatalogError::Export(format!(
                "{}: an export is named NAME.jsonl (JSON lines) or NAME.jsonl.zst (zstd-compressed)",
                path.display()
            )))
        }
    }
}

/// Writes an export to `path`, plain or zstd-compressed as its name says
/// ([`ExportFormat::for_path`]), atomically (a temporary file renamed into place once complete).
pub(crate) async fn write_file(pool: &Pool, path: &Path) -> Result<ExportSummary> {
    let format = ExportFormat::for_path(path)?;
    let io_error = |source| CatalogError::Io { path: path.display().to_string(), source };
    let directory = path.parent().filter(|parent| !parent.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let temporary = tempfile::NamedTempFile::new_in(directory).map_err(io_error)?;
    let file = std::io::BufWriter::new(temporary.as_file().try_clone().map_err(io_error)?);
    let (summary, mut writer) = match format {
        ExportFormat::JsonLines => {
            let mut writer = file;
            (write_lines(pool, &mut writer).await?, writer)
        }
        ExportFormat::ZstdJsonLines => {
            let mut encoder = zstd::stream::write::Encoder::new(file, ZSTD_LEVEL).map_err(io_error)?;
            let summary = write_lines(pool, &mut encoder).await?;
            (summary, encoder.finish().map_err(io_error)?)
        }
    };
    writer.flush().map_err(io_error)?;
    drop(writer);
    temporary.persist(path).map_err(|error| io_error(error.error))?;
    Ok(summary)
}
