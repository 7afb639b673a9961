//! Files: open, positioned reads and writes, sync; whole files ([`read`], [`write`](fn@write));
//! directories and paths ([`create_dir_all`], [`remove_file`], [`rename`],
//! [`metadata`], [`read_dir`], ...).
//!
//! On io_uring these are real asynchronous operations (path operations included:
//! `MKDIRAT`, `UNLINKAT`, `RENAMEAT`, `STATX`, where the kernel has them; the blocking
//! pool otherwise). On epoll, regular files are always "ready", so the driver runs a
//! [`File`]'s `pread`/`pwrite` at submission, as every readiness-based runtime does
//! (the page cache makes that cheap; a cold disk read blocks the core for its
//! duration); the whole-file and path functions run on the blocking pool there
//! instead, so that they never stall a core. Directory listings use the blocking pool
//! on both (no ring op lists a directory).
//!
//! Errors name the path: `metadata /srv/missing: No such file or directory (os error
//! 2)`, with the `io::ErrorKind` of the OS error kept.

mod metadata;
mod path_ops;
mod read_dir;
mod whole;

pub use metadata::{FileType, Metadata};
pub use path_ops::{
    create_dir, create_dir_all, metadata, remove_dir, remove_dir_all, remove_file, rename,
    symlink_metadata, try_exists,
};
pub use read_dir::{read_dir, DirEntry, ReadDir};
pub use whole::{read, read_to_string, write};

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::buf::{IoBuf, IoBufMut, Slice};
use crate::driver::op as raw;
use crate::io::ops::{Open, Read, ResultOnly, Write};
use crate::io::OpFuture;

/// How to open a file (a subset of std's `OpenOptions`).
#[derive(Debug, Clone, Default)]
pub struct OpenOptions {
    read: bool,
    write: bool,
    create: bool,
    truncate: bool,
    append: bool,
    mode: Option<u32>,
}

impl OpenOptions {
    /// All off.
    pub fn new() -> Self {
        Self::default()
    }
    /// Open for reading.
    pub fn read(&mut self, on: bool) -> &mut Self {
        self.read = on;
        self
    }
    /// Open for writing.
    pub fn write(&mut self, on: bool) -> &mut Self {
        self.write = on;
        self
    }
    /// Create if missing.
    pub fn create(&mut self, on: bool) -> &mut Self {
        self.create = on;
        self
    }
    /// Truncate to zero length.
    pub fn truncate(&mut self, on: bool) -> &mut Self {
        self.truncate = on;
        self
    }
    /// Append.
    pub fn append(&mut self, on: bool) -> &mut Self {
        self.append = on;
        self
    }
    /// Permission bits for a created file (default 0o644).
    pub fn mode(&mut self, mode: u32) -> &mut Self {
        self.mode = Some(mode);
        self
    }

    fn flags(&self) -> io::Result<i32> {
        let mut f = match (self.read, self.write || self.append) {
            (true, true) => libc::O_RDWR,
            (false, true) => libc::O_WRONLY,
            (true, false) => libc::O_RDONLY,
            (false, false) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "open options: neither read nor write was asked for",
                ))
            }
        };
        if self.create {
            f |= libc::O_CREAT;
        }
        if self.truncate {
            f |= libc::O_TRUNC;
        }
        if self.append {
            f |= libc::O_APPEND;
        }
        Ok(f)
    }

    /// Opens `path`.
    pub async fn open<P: AsRef<Path>>(&self, path: P) -> io::Result<File> {
        let p = path.as_ref();
        let c = CString::new(p.as_os_str().as_bytes())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))?;
        let fd = OpFuture::new(Open {
            path: c,
            flags: self.flags()?,
            mode: self.mode.unwrap_or(0o644),
        })
        .await
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", p.display())))?;
        Ok(File { fd })
    }
}

/// An open file. Closed on drop.
#[derive(Debug)]
pub struct File {
    fd: OwnedFd,
}

impl File {
    /// Opens for reading.
    pub async fn open<P: AsRef<Path>>(path: P) -> io::Result<File> {
        OpenOptions::new().read(true).open(path).await
    }

    /// Creates (or truncates) for writing.
    pub async fn create<P: AsRef<Path>>(path: P) -> io::Result<File> {
        OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .await
    }

    /// Reads into `buf` from `pos`; `Ok(0)` at end of file.
    pub fn read_at<B: IoBufMut + Unpin>(&self, buf: B, pos: u64) -> OpFuture<Read<B>> {
        OpFuture::new(Read {
            fd: self.fd.as_raw_fd(),
            buf,
            offset: Some(pos),
        })
    }

    /// Writes `buf` at `pos`; returns how many bytes were written.
    pub fn write_at<B: IoBuf + Unpin>(&self, buf: B, pos: u64) -> OpFuture<Write<B>> {
        OpFuture::new(Write {
            fd: self.fd.as_raw_fd(),
            buf,
            offset: Some(pos),
        })
    }

    /// Writes all of `buf` at `pos`.
    pub async fn write_all_at<B: IoBuf + Unpin>(&self, buf: B, pos: u64) -> (io::Result<()>, B) {
        let total = buf.bytes_init();
        let mut done = 0;
        let mut slice = Slice::new(buf, 0, total);
        while done < total {
            let (r, s) = self.write_at(slice, pos + done as u64).await;
            let buf = s.into_inner();
            match r {
                Ok(0) => return (Err(io::ErrorKind::WriteZero.into()), buf),
                Ok(n) => done += n,
                Err(e) => return (Err(e), buf),
            }
            slice = Slice::new(buf, done, total);
        }
        (Ok(()), slice.into_inner())
    }

    /// Flushes data and metadata to storage.
    pub async fn sync_all(&self) -> io::Result<()> {
        OpFuture::new(ResultOnly(
            raw::Fsync {
                fd: self.fd.as_raw_fd(),
                data_only: false,
            }
            .into(),
        ))
        .await
        .map(drop)
    }

    /// Flushes data to storage.
    pub async fn sync_data(&self) -> io::Result<()> {
        OpFuture::new(ResultOnly(
            raw::Fsync {
                fd: self.fd.as_raw_fd(),
                data_only: true,
            }
            .into(),
        ))
        .await
        .map(drop)
    }

    /// The file's metadata (`fstat`, which does not block on an open file).
    pub fn metadata(&self) -> io::Result<std::fs::Metadata> {
        let dup = self.fd.try_clone()?;
        std::fs::File::from(dup).metadata()
    }
}

impl AsRawFd for File {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}
