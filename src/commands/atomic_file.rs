//! Output files that appear whole or not at all: written under a temporary
//! name beside the target, renamed when complete.

use std::io::Write;
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

use crate::CliError;

/// A file being written; dropped without [`AtomicFile::commit`], it vanishes.
pub struct AtomicFile {
    temp: NamedTempFile,
    target: PathBuf,
}

impl AtomicFile {
    /// Starts writing `target` (in its directory, so the rename is atomic).
    pub fn create(target: &Path) -> Result<AtomicFile, CliError> {
        let mut builder = tempfile::Builder::new();
        builder.prefix(".arbor-").suffix(".tmp");
        // The finished file gets an ordinary file's permissions (0666 less the
        // umask), not the owner-only mode of a temporary file.
        #[cfg(unix)]
        builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
        let temp = builder.tempfile_in(AtomicFile::directory(target)).map_err(CliError::io(target))?;
        Ok(AtomicFile { temp, target: target.to_owned() })
    }

    /// The directory `target` will be in, where its temporary files go.
    pub fn directory(target: &Path) -> &Path {
        match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        }
    }

    /// The file handle to write to.
    pub fn file(&mut self) -> &mut std::fs::File {
        self.temp.as_file_mut()
    }

    /// Flushes and renames the file to its target.
    pub fn commit(mut self) -> Result<(), CliError> {
        self.temp.as_file_mut().flush().map_err(CliError::io(&self.target))?;
        self.temp.as_file().sync_all().map_err(CliError::io(&self.target))?;
        self.temp.persist(&self.target).map_err(|e| CliError::Io { path: self.target.clone(), source: e.error })?;
        Ok(())
    }

    /// Writes `bytes` as the whole file.
    pub fn write_all(target: &Path, bytes: &[u8]) -> Result<(), CliError> {
        let mut f = AtomicFile::create(target)?;
        f.file().write_all(bytes).map_err(CliError::io(target))?;
        f.commit()
    }
}
