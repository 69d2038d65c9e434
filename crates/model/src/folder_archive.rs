//! A runner output folder packed as one `.tar.zst` archive of its files (paths relative to the
//! folder), read whole into memory within bounds. `fixtures/` keeps the runner's folders this way,
//! as [`PACKED`] inside the folder beside its README: a few hundred small JSON files (manifests,
//! raw samples) are a tenth of their size as one archive, and unpacked in place
//! (`tar --zstd -xf files.tar.zst`) the folder is what the runner wrote, byte for byte.
//!
//! Made with `tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 --exclude=./README.md
//! -C FOLDER -cf - . | zstd -19 -o FOLDER/files.tar.zst` (fixtures/README.md).

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Component, Path, PathBuf};

/// How an archive's file name ends.
pub const SUFFIX: &str = ".tar.zst";
/// The archive of a folder's files, kept inside the folder.
pub const PACKED: &str = "files.tar.zst";
/// The largest file an archive may hold (the content store's limit).
pub const MAX_FILE_BYTES: u64 = 16 << 20;
/// The most an archive may unpack to, all files together.
pub const MAX_TOTAL_BYTES: u64 = 1 << 30;

#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    #[error("{path}: cannot read the archive: {error}")]
    Read { path: PathBuf, error: std::io::Error },
    #[error("{path}: entry `{entry}` is not a plain path inside the folder (absolute, or climbing out with `..`)")]
    Outside { path: PathBuf, entry: String },
    #[error("{path}: entry `{entry}` is a {kind}, where a runner folder holds only files and folders")]
    NotAFile { path: PathBuf, entry: String, kind: String },
    #[error("{path}: entry `{entry}` is {size} bytes, over the limit of {limit}")]
    FileTooLarge { path: PathBuf, entry: String, size: u64, limit: u64 },
    #[error("{path}: its files unpack to more than {limit} bytes")]
    TooLarge { path: PathBuf, limit: u64 },
    #[error("{path}: entry `{entry}` appears twice")]
    Duplicate { path: PathBuf, entry: String },
}

/// The files of one archive, by their path inside the folder (`/`-separated, no leading `./`).
#[derive(Debug, Clone)]
pub struct FolderArchive {
    path: PathBuf,
    files: BTreeMap<String, Vec<u8>>,
}

impl FolderArchive {
    /// Whether `path` names an archive (by its suffix), rather than a folder.
    pub fn is_archive(path: &Path) -> bool {
        path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.ends_with(SUFFIX))
    }

    /// The archive `path` stands for: `path` itself when it names one, else the folder's
    /// [`PACKED`] archive when the folder holds one and no `unpacked` file (a folder unpacked in
    /// place is read as a folder).
    pub fn standing_for(path: &Path, unpacked: &str) -> Option<PathBuf> {
        if Self::is_archive(path) {
            return Some(path.to_path_buf());
        }
        let packed = path.join(PACKED);
        (packed.is_file() && !path.join(unpacked).exists()).then_some(packed)
    }

    /// Reads every file of the archive at `path`, refusing entries outside the folder, links and
    /// devices, and anything past [`MAX_FILE_BYTES`] or [`MAX_TOTAL_BYTES`].
    pub fn read(path: &Path) -> Result<FolderArchive, ArchiveError> {
        let read_error = |error| ArchiveError::Read { path: path.to_path_buf(), error };
        let file = std::fs::File::open(path).map_err(read_error)?;
        let decoder = zstd::stream::read::Decoder::new(file).map_err(read_error)?;
        // The decompressed stream is bounded too: headers and padding count against the total.
        let mut archive = tar::Archive::new(decoder.take(MAX_TOTAL_BYTES + (64 << 20)));
        let mut files = BTreeMap::new();
        let mut total = 0u64;
        for entry in archive.entries().map_err(read_error)? {
            let mut entry = entry.map_err(read_error)?;
            let kind = entry.header().entry_type();
            if kind.is_dir() {
                // Folders are implied by their files' paths (`./` names the folder itself).
                continue;
            }
            let raw = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
            let name = inside_name(&raw)
                .ok_or_else(|| ArchiveError::Outside { path: path.to_path_buf(), entry: raw.clone() })?;
            if !kind.is_file() {
                return Err(ArchiveError::NotAFile {
                    path: path.to_path_buf(),
                    entry: raw,
                    kind: format!("{kind:?}").to_lowercase(),
                });
            }
            let size = entry.size();
            if size > MAX_FILE_BYTES {
                return Err(ArchiveError::FileTooLarge {
                    path: path.to_path_buf(),
                    entry: raw,
                    size,
                    limit: MAX_FILE_BYTES,
                });
            }
            total += size;
            if total > MAX_TOTAL_BYTES {
                return Err(ArchiveError::TooLarge { path: path.to_path_buf(), limit: MAX_TOTAL_BYTES });
            }
            let mut bytes = Vec::with_capacity(size as usize);
            entry.read_to_end(&mut bytes).map_err(read_error)?;
            if files.insert(name.clone(), bytes).is_some() {
                return Err(ArchiveError::Duplicate { path: path.to_path_buf(), entry: name });
            }
        }
        Ok(FolderArchive { path: path.to_path_buf(), files })
    }

    /// The export rows of the file at `name` (`catalog-rows.jsonl`), errors naming the archive's
    /// path and the file; `None` when the archive does not hold it.
    pub fn export(&self, name: &str) -> Option<Result<Vec<crate::export::ExportLine>, crate::export::ExportError>> {
        let bytes = self.file(name)?.to_vec();
        let size = bytes.len() as u64;
        Some(
            crate::export::export_reader(self.path.join(name), std::io::Cursor::new(bytes), size)
                .and_then(|reader| reader.collect()),
        )
    }

    /// The archive's own path (for messages).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The bytes of the file at `name` (a path inside the folder; `./` and `a/../b` forms are
    /// read as the plain path), if the archive holds it.
    pub fn file(&self, name: &str) -> Option<&[u8]> {
        self.files.get(&inside_name(name)?).map(Vec::as_slice)
    }

    /// Every file, by name, in name order.
    pub fn files(&self) -> impl Iterator<Item = (&str, &[u8])> {
        self.files.iter().map(|(name, bytes)| (name.as_str(), bytes.as_slice()))
    }

    /// Writes every file under `folder` (created as needed): the runner's folder as it wrote it.
    pub fn unpack(&self, folder: &Path) -> std::io::Result<()> {
        for (name, bytes) in self.files() {
            let path = folder.join(name);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(path, bytes)?;
        }
        Ok(())
    }

    /// The files under `folder/` (a path inside the archive), by their name there.
    pub fn files_under<'a>(&'a self, folder: &'a str) -> impl Iterator<Item = (&'a str, &'a [u8])> {
        self.files().filter_map(move |(name, bytes)| {
            name.strip_prefix(folder).and_then(|rest| rest.strip_prefix('/')).map(|rest| (rest, bytes))
        })
    }
}

/// `raw` as a `/`-separated path inside the folder, or `None` when it is absolute, climbs out or
/// names the folder itself.
fn inside_name(raw: &str) -> Option<String> {
    let mut parts = Vec::new();
    for component in Path::new(raw).components() {
        match component {
            Component::Normal(part) => parts.push(part.to_str()?),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn archive(dir: &Path, entries: &[(&str, &[u8])]) -> PathBuf {
        let path = dir.join("run.tar.zst");
        let encoder = zstd::stream::write::Encoder::new(std::fs::File::create(&path).unwrap(), 3).unwrap();
        let mut builder = tar::Builder::new(encoder);
        for (name, bytes) in entries {
            let mut header = tar::Header::new_gnu();
            header.set_size(bytes.len() as u64);
            header.set_mode(0o644);
            if name.ends_with('/') {
                header.set_entry_type(tar::EntryType::Directory);
            }
            // Written raw, so that names tar's own checks would refuse reach the reader.
            let field = &mut header.as_old_mut().name;
            field[..name.len()].copy_from_slice(name.as_bytes());
            header.set_cksum();
            builder.append(&header, *bytes).unwrap();
        }
        builder.into_inner().unwrap().finish().unwrap();
        path
    }

    #[test]
    fn files_by_their_path_in_the_folder() {
        let dir = tempfile::tempdir().unwrap();
        let path = archive(
            dir.path(),
            &[
                ("./", b""),
                ("./catalog-rows.jsonl", b"{}\n"),
                ("./samples/", b""),
                ("./samples/a.json", b"[1]"),
                ("samples/b.json", b"[2]"),
            ],
        );
        assert!(FolderArchive::is_archive(&path) && !FolderArchive::is_archive(dir.path()));
        let read = FolderArchive::read(&path).unwrap();
        assert_eq!(read.file("catalog-rows.jsonl"), Some(&b"{}\n"[..]));
        assert_eq!(read.file("./samples/a.json"), Some(&b"[1]"[..]));
        assert_eq!(read.file("../samples/a.json"), None);
        let under: Vec<_> = read.files_under("samples").map(|(name, _)| name).collect();
        assert_eq!(under, ["a.json", "b.json"]);
        read.unpack(&dir.path().join("out")).unwrap();
        assert_eq!(std::fs::read(dir.path().join("out/samples/b.json")).unwrap(), b"[2]");
    }

    #[test]
    fn entries_outside_the_folder_are_refused_naming_them() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["../escape.json", "/etc/passwd"] {
            let path = archive(dir.path(), &[("ok.json", b"{}"), (name, b"x")]);
            let error = FolderArchive::read(&path).unwrap_err().to_string();
            assert!(error.contains(name) && error.contains("not a plain path"), "{error}");
        }
        let path = archive(dir.path(), &[("a.json", b"1"), ("./a.json", b"2")]);
        assert!(FolderArchive::read(&path).unwrap_err().to_string().contains("appears twice"));
        std::fs::write(&path, b"not zstd").unwrap();
        let error = FolderArchive::read(&path).unwrap_err().to_string();
        assert!(error.contains("run.tar.zst") && error.contains("cannot read"), "{error}");
    }
}
