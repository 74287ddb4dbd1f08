//! Where a model's encoded trees live: in memory, or in a temporary file.
//!
//! A grown forest's trees are its largest part (the flights forest's are
//! 33 MB, for 12.6 MB of raw features), and a forest holds every finished
//! tree until the model is written. Given a directory, training appends
//! each tree's section to an unnamed temporary file there as soon as it is
//! encoded ([`Spill`]) and maps the file back when all are done: memory
//! then holds the trees being grown, not the ones finished, and the
//! sections are read from the page cache when the model is written.

use std::fs::File;
use std::io::Write;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use memmap2::Mmap;

use crate::{ArborError, Result};

/// The encoded sections of a model's trees, in tree order.
pub(crate) enum Sections {
    /// Each section in a vector of its own.
    Owned(Vec<Vec<u8>>),
    /// Sections at these byte ranges of a read-only mapping of a spill file.
    Mapped {
        /// The whole spill file.
        map: Mmap,
        /// Tree `t`'s section is `map[spans[t]]`.
        spans: Vec<Range<usize>>,
    },
}

impl Sections {
    /// The number of trees.
    pub(crate) fn len(&self) -> usize {
        match self {
            Sections::Owned(sections) => sections.len(),
            Sections::Mapped { spans, .. } => spans.len(),
        }
    }

    /// Tree `t`'s section.
    pub(crate) fn get(&self, t: usize) -> &[u8] {
        match self {
            Sections::Owned(sections) => &sections[t],
            Sections::Mapped { map, spans } => &map[spans[t].clone()],
        }
    }

    /// Every section, in tree order.
    pub(crate) fn slices(&self) -> Vec<&[u8]> {
        (0..self.len()).map(|t| self.get(t)).collect()
    }
}

/// An unnamed temporary file that finished trees' sections are appended
/// to, from any thread, in the order they finish.
pub(crate) struct Spill {
    file: Mutex<(File, usize)>,
    dir: PathBuf,
}

impl Spill {
    /// A new spill file in `dir` (the model's destination directory, say),
    /// removed by the system when the last handle to it closes.
    pub(crate) fn create(dir: &Path) -> Result<Spill> {
        let file = tempfile::tempfile_in(dir).map_err(|e| spill_error(dir, e))?;
        Ok(Spill { file: Mutex::new((file, 0)), dir: dir.to_owned() })
    }

    /// Appends `section`; returns where it lies in the file.
    pub(crate) fn put(&self, section: &[u8]) -> Result<Range<usize>> {
        // A thread that panicked holding the lock left no partial state a later write depends on:
        // a failed write is an error that ends training.
        let mut guard = self.file.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let (file, end) = &mut *guard;
        file.write_all(section).map_err(|e| spill_error(&self.dir, e))?;
        let start = *end;
        *end += section.len();
        Ok(start..*end)
    }

    /// Maps the file back read-only: tree `t`'s section is at `spans[t]`.
    pub(crate) fn into_sections(self, spans: Vec<Range<usize>>) -> Result<Sections> {
        let (file, end) = self.file.into_inner().unwrap_or_else(|poisoned| poisoned.into_inner());
        if end == 0 {
            // Nothing to map (a mapping may not be empty).
            return Ok(Sections::Owned(vec![Vec::new(); spans.len()]));
        }
        // SAFETY: the file was created unnamed by this process and is only
        // read from here on. Nothing else can open it by name, truncate it or
        // write to it, which is what would make the mapping change under
        // the slices taken from it.
        let map = unsafe { Mmap::map(&file) }.map_err(|e| spill_error(&self.dir, e))?;
        if spans.iter().any(|span| span.end > map.len()) {
            return Err(spill_error(&self.dir, std::io::Error::other("the spill file is shorter than written")));
        }
        Ok(Sections::Mapped { map, spans })
    }
}

fn spill_error(dir: &Path, source: std::io::Error) -> ArborError {
    ArborError::Spill { dir: dir.to_owned(), source }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_put_out_of_order_read_back_in_tree_order() {
        let dir = tempfile::tempdir().unwrap();
        let spill = Spill::create(dir.path()).unwrap();
        let trees: Vec<Vec<u8>> = (0..5u8).map(|t| vec![t; 3 + t as usize * 100]).collect();
        let mut spans = vec![0..0; trees.len()];
        for t in [3, 0, 4, 1, 2] {
            spans[t] = spill.put(&trees[t]).unwrap();
        }
        let sections = spill.into_sections(spans).unwrap();
        assert!(matches!(sections, Sections::Mapped { .. }));
        assert_eq!(sections.len(), trees.len());
        for (t, tree) in trees.iter().enumerate() {
            assert_eq!(sections.get(t), tree.as_slice(), "tree {t}");
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "the spill file has no name");
    }

    #[test]
    fn a_directory_that_cannot_hold_the_spill_is_named() {
        let missing = Path::new("/nonexistent/arbor-spill");
        let err = Spill::create(missing).err().expect("no such directory");
        assert!(err.to_string().contains("/nonexistent/arbor-spill"), "{err}");
    }
}
