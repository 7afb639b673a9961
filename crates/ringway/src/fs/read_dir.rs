//! [`read_dir`]: a directory's entries. No io_uring op lists a directory, so the
//! listing runs on the blocking pool, a batch of entries per job, on both backends.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use super::metadata::Metadata;
use super::path_ops::{blocking, named};

/// Entries fetched per blocking job.
const BATCH: usize = 128;

/// The entries of the directory at `path` (without `.` and `..`), in the order the
/// file system gives them.
///
/// # Errors
///
/// `NotFound` if nothing is there, `NotADirectory` for a file, with the path in the
/// message.
///
/// # Examples
///
/// ```
/// #[ringway::main]
/// async fn main() -> std::io::Result<()> {
///     let mut names = Vec::new();
///     let mut dir = ringway::fs::read_dir("/").await?;
///     while let Some(entry) = dir.next_entry().await? {
///         names.push(entry.file_name());
///     }
///     assert!(names.iter().any(|n| n == "proc"));
///     Ok(())
/// }
/// ```
pub async fn read_dir<P: AsRef<Path>>(path: P) -> io::Result<ReadDir> {
    let path = path.as_ref().to_owned();
    let p = path.clone();
    let inner = blocking(move || std::fs::read_dir(p))
        .await
        .map_err(|e| named(e, "read_dir", &path))?;
    Ok(ReadDir {
        path,
        inner: Some(inner),
        batch: VecDeque::new(),
        done: false,
    })
}

/// A directory being listed; see [`read_dir`].
pub struct ReadDir {
    path: PathBuf,
    /// `None` while a blocking job holds it (or after one was cancelled).
    inner: Option<std::fs::ReadDir>,
    batch: VecDeque<io::Result<DirEntry>>,
    done: bool,
}

impl ReadDir {
    /// The next entry; `None` at the end.
    ///
    /// # Errors
    ///
    /// What reading the directory failed with. If a previous call was cancelled while
    /// its batch was being read, the listing cannot go on: an error says so.
    pub async fn next_entry(&mut self) -> io::Result<Option<DirEntry>> {
        loop {
            if let Some(e) = self.batch.pop_front() {
                return e.map(Some);
            }
            if self.done {
                return Ok(None);
            }
            let Some(mut inner) = self.inner.take() else {
                return Err(io::Error::other(format!(
                    "read_dir {}: an earlier next_entry was cancelled mid-batch; list \
                     the directory again",
                    self.path.display()
                )));
            };
            let (inner, batch, done) = crate::spawn_blocking(move || {
                let mut batch = Vec::with_capacity(BATCH);
                for _ in 0..BATCH {
                    match inner.next() {
                        Some(e) => batch.push(e.and_then(DirEntry::new)),
                        None => return (inner, batch, true),
                    }
                }
                (inner, batch, false)
            })
            .await
            .map_err(|e| io::Error::other(format!("read_dir: {e}")))?;
            self.inner = Some(inner);
            self.batch.extend(batch);
            self.done = done;
        }
    }
}

impl fmt::Debug for ReadDir {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReadDir")
            .field("path", &self.path)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

/// One entry of a [`ReadDir`].
pub struct DirEntry {
    inner: std::fs::DirEntry,
    /// From the listing itself where the file system says (`d_type`), else from an
    /// `lstat` made on the blocking pool with the batch.
    file_type: std::fs::FileType,
}

impl DirEntry {
    fn new(inner: std::fs::DirEntry) -> io::Result<DirEntry> {
        let file_type = inner.file_type()?;
        Ok(DirEntry { inner, file_type })
    }

    /// The entry's full path (the directory's path joined with its name).
    pub fn path(&self) -> PathBuf {
        self.inner.path()
    }

    /// The entry's name.
    pub fn file_name(&self) -> OsString {
        self.inner.file_name()
    }

    /// The entry's type (a symbolic link is reported as one, not followed).
    pub fn file_type(&self) -> std::fs::FileType {
        self.file_type
    }

    /// The entry's metadata, a symbolic link not followed.
    ///
    /// # Errors
    ///
    /// As [`symlink_metadata`](super::symlink_metadata) (the entry may be gone by now).
    pub async fn metadata(&self) -> io::Result<Metadata> {
        super::symlink_metadata(self.path()).await
    }
}

impl fmt::Debug for DirEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DirEntry")
            .field("path", &self.path())
            .field("file_type", &self.file_type)
            .finish()
    }
}
