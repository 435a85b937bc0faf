//! The index's folder as tantivy reads it: document stores read with `pread`, paths confined
//! to the folder, and no locks or syncs for a read-only repository.

use std::path::Path;
use std::sync::Arc;

use tantivy::directory::error::{DeleteError, LockError, OpenReadError, OpenWriteError};

/// The index's folder as tantivy maps it, but for the segments' document stores
/// ([`PreadFile`]). A read-only one's locks are no-ops and its syncs nothing, so that a reader
/// needs no write access (tantivy's reader takes a lock file while it opens segments, which
/// keeps a writer's garbage collection from deleting them; a read-only repository has no
/// writer).
#[derive(Clone, Debug)]
pub(super) struct StoreDir {
    mapped: tantivy::directory::MmapDirectory,
    root: std::path::PathBuf,
    read_only: bool,
}

impl StoreDir {
    pub(super) fn open(dir: &Path, read_only: bool) -> tantivy::Result<StoreDir> {
        Ok(StoreDir {
            mapped: tantivy::directory::MmapDirectory::open(dir)?,
            root: dir.to_path_buf(),
            read_only,
        })
    }
}

/// Whether `path` is one file name, the only kind of path tantivy makes in its folder. Paths
/// read from the folder's own files (`.managed.json` lists the files its garbage collection
/// deletes) may come from a clone that committed `.cairn/` (ADR 66): `../../victim/x` or an
/// absolute path there is never opened, written or deleted.
fn flat(path: &Path) -> bool {
    let mut parts = path.components();
    matches!(
        (parts.next(), parts.next()),
        (Some(std::path::Component::Normal(_)), None)
    )
}

fn not_flat(path: &Path) -> std::io::Error {
    std::io::Error::other(format!(
        "{}: not a file of the index's folder",
        path.display()
    ))
}

impl tantivy::Directory for StoreDir {
    fn get_file_handle(
        &self,
        path: &Path,
    ) -> std::result::Result<Arc<dyn tantivy::directory::FileHandle>, OpenReadError> {
        if !flat(path) {
            return Err(OpenReadError::FileDoesNotExist(path.to_path_buf()));
        }
        store_handle(&self.mapped, &self.root, path)
    }

    fn delete(&self, path: &Path) -> std::result::Result<(), DeleteError> {
        if !flat(path) {
            // Taken off the managed list as a file already gone.
            return Err(DeleteError::FileDoesNotExist(path.to_path_buf()));
        }
        self.mapped.delete(path)
    }

    fn exists(&self, path: &Path) -> std::result::Result<bool, OpenReadError> {
        if !flat(path) {
            return Ok(false);
        }
        self.mapped.exists(path)
    }

    fn open_write(
        &self,
        path: &Path,
    ) -> std::result::Result<tantivy::directory::WritePtr, OpenWriteError> {
        if !flat(path) {
            return Err(OpenWriteError::wrap_io_error(
                not_flat(path),
                path.to_path_buf(),
            ));
        }
        self.mapped.open_write(path)
    }

    fn atomic_read(&self, path: &Path) -> std::result::Result<Vec<u8>, OpenReadError> {
        if !flat(path) {
            return Err(OpenReadError::FileDoesNotExist(path.to_path_buf()));
        }
        self.mapped.atomic_read(path)
    }

    fn atomic_write(&self, path: &Path, data: &[u8]) -> std::io::Result<()> {
        if !flat(path) {
            return Err(not_flat(path));
        }
        self.mapped.atomic_write(path, data)
    }

    fn sync_directory(&self) -> std::io::Result<()> {
        match self.read_only {
            true => Ok(()),
            false => self.mapped.sync_directory(),
        }
    }

    fn acquire_lock(
        &self,
        lock: &tantivy::directory::Lock,
    ) -> std::result::Result<tantivy::directory::DirectoryLock, LockError> {
        match self.read_only {
            true => Ok(tantivy::directory::DirectoryLock::from(Box::new(()))),
            false => self.mapped.acquire_lock(lock),
        }
    }

    fn watch(
        &self,
        callback: tantivy::directory::WatchCallback,
    ) -> tantivy::Result<tantivy::directory::WatchHandle> {
        self.mapped.watch(callback)
    }
}

/// The handle of `path` in `dir`: mapped, as tantivy does, but for a document store, whose
/// blocks are read one `pread` each ([`PreadFile`]).
fn store_handle(
    dir: &tantivy::directory::MmapDirectory,
    root: &Path,
    path: &Path,
) -> std::result::Result<Arc<dyn tantivy::directory::FileHandle>, OpenReadError> {
    use tantivy::Directory;
    let mapped = dir.get_file_handle(path)?;
    if path.extension().is_none_or(|e| e != "store") {
        return Ok(mapped);
    }
    match std::fs::File::open(root.join(path)) {
        Ok(file) => Ok(Arc::new(PreadFile { file, mapped })),
        Err(_) => Ok(mapped),
    }
}

/// A segment's document store: a recall loads a few dozen documents, each from a block of
/// its own somewhere in the file. Through the map each block is a page fault that maps
/// sixteen pages around it; a `pread` of the block is one call and one copy (ADR 64). Reads
/// longer than [`PREAD_MAX`] (a merge stacking whole stores) go through the map.
#[derive(Debug)]
struct PreadFile {
    file: std::fs::File,
    mapped: Arc<dyn tantivy::directory::FileHandle>,
}

/// The longest read [`PreadFile`] makes itself.
const PREAD_MAX: usize = 64 * 1024;

impl tantivy::HasLen for PreadFile {
    fn len(&self) -> usize {
        self.mapped.len()
    }
}

impl tantivy::directory::FileHandle for PreadFile {
    fn read_bytes(
        &self,
        range: std::ops::Range<usize>,
    ) -> std::io::Result<tantivy::directory::OwnedBytes> {
        if range.len() > PREAD_MAX {
            return self.mapped.read_bytes(range);
        }
        use std::os::unix::fs::FileExt;
        let mut buf = vec![0u8; range.len()];
        self.file.read_exact_at(&mut buf, range.start as u64)?;
        Ok(tantivy::directory::OwnedBytes::new(buf))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_store_is_read_with_pread_and_a_long_read_through_the_map() {
        let dir = tempfile::tempdir().unwrap();
        let bytes: Vec<u8> = (0..200_000u32).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(dir.path().join("seg.store"), &bytes).unwrap();
        std::fs::write(dir.path().join("seg.idx"), &bytes[..1000]).unwrap();
        let mmap = tantivy::directory::MmapDirectory::open(dir.path()).unwrap();
        let store = store_handle(&mmap, dir.path(), Path::new("seg.store")).unwrap();
        assert!(format!("{store:?}").starts_with("PreadFile"), "{store:?}");
        assert_eq!(store.len(), bytes.len());
        for range in [
            0..10,
            4096..8192,
            150_000..200_000,
            1000..(1000 + PREAD_MAX + 1),
        ] {
            assert_eq!(
                store.read_bytes(range.clone()).unwrap().as_slice(),
                &bytes[range]
            );
        }
        assert!(store.read_bytes(199_990..200_010).is_err(), "past the end");
        // Other files are mapped as tantivy maps them.
        let idx = store_handle(&mmap, dir.path(), Path::new("seg.idx")).unwrap();
        assert!(!format!("{idx:?}").starts_with("PreadFile"), "{idx:?}");
        assert_eq!(idx.read_bytes(0..1000).unwrap().as_slice(), &bytes[..1000]);
    }
}
