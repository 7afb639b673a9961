//! Operations on paths: make, remove and rename directories and files, and their
//! metadata. On io_uring each is one op in the ring (`MKDIRAT`, `UNLINKAT`,
//! `RENAMEAT`, `STATX`) where the kernel has it; otherwise (epoll, or an older kernel)
//! the same syscall runs on the blocking pool, so a slow disk never stalls a core.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::metadata::Metadata;
use crate::driver::op::{self as raw, supported, UringOpcode};
use crate::driver::{Completion, Op};
use crate::io::{OpFuture, Operation};
use crate::runtime::context::with_driver;

/// `path` as the kernel takes it.
pub(super) fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{}: a path with a NUL byte", path.display()),
        )
    })
}

/// `e`, with what was being done and to which path in its message (the kind kept).
pub(super) fn named(e: io::Error, what: &str, path: &Path) -> io::Error {
    io::Error::new(e.kind(), format!("{what} {}: {e}", path.display()))
}

/// True if this core's ring runs `op`: io_uring, with a kernel that has it.
pub(super) fn on_ring(op: UringOpcode) -> bool {
    with_driver(|d| d.info().is_uring()) && supported(op)
}

/// Runs `f` on the blocking pool.
pub(super) async fn blocking<T, F>(f: F) -> io::Result<T>
where
    F: FnOnce() -> io::Result<T> + Send + 'static,
    T: Send + 'static,
{
    crate::spawn_blocking(f)
        .await
        .map_err(|e| io::Error::other(format!("a blocking file operation failed: {e}")))?
}

/// A path op: its op and the path strings it points into (kept until the final
/// completion, even if the future is dropped).
struct PathOp {
    kind: Kind,
    path: CString,
    to: Option<CString>,
}

#[derive(Clone, Copy)]
enum Kind {
    MkDir(u32),
    Unlink { dir: bool },
    Rename,
}

impl Operation for PathOp {
    type Output = io::Result<()>;
    fn op(&mut self) -> Op {
        let path = self.path.as_ptr();
        match self.kind {
            Kind::MkDir(mode) => raw::MkDir { path, mode }.into(),
            Kind::Unlink { dir } => raw::Unlink { path, dir }.into(),
            Kind::Rename => raw::Rename {
                from: path,
                to: self.to.as_ref().expect("a rename has two paths").as_ptr(),
            }
            .into(),
        }
    }
    fn complete(self, c: Completion) -> Self::Output {
        c.io_result().map(drop)
    }
}

/// `statx` with the record it fills (boxed: its address goes to the kernel).
struct StatxOp {
    path: CString,
    buf: Box<libc::statx>,
    flags: i32,
}

impl Operation for StatxOp {
    type Output = io::Result<Metadata>;
    fn op(&mut self) -> Op {
        raw::Statx {
            path: self.path.as_ptr(),
            buf: &mut *self.buf,
            flags: self.flags,
        }
        .into()
    }
    fn complete(self, c: Completion) -> Self::Output {
        c.io_result()?;
        Ok(Metadata { stx: *self.buf })
    }
}

fn zeroed_statx() -> Box<libc::statx> {
    // SAFETY: statx is plain data; all zeroes is a valid value.
    Box::new(unsafe { std::mem::zeroed() })
}

/// `statx` on the calling thread (the blocking pool's).
fn statx_now(path: &CString, flags: i32) -> io::Result<Metadata> {
    let mut buf = zeroed_statx();
    // SAFETY: `path` is NUL-terminated and `buf` writable, both live for the call.
    let r = unsafe {
        libc::statx(
            libc::AT_FDCWD,
            path.as_ptr(),
            flags,
            libc::STATX_BASIC_STATS | libc::STATX_BTIME,
            &mut *buf,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(Metadata { stx: *buf })
}

async fn stat(path: &Path, flags: i32, what: &str) -> io::Result<Metadata> {
    let c = c_path(path).map_err(|e| named(e, what, path))?;
    let r = if on_ring(UringOpcode::Statx) {
        OpFuture::new(StatxOp {
            path: c,
            buf: zeroed_statx(),
            flags,
        })
        .await
    } else {
        blocking(move || statx_now(&c, flags)).await
    };
    r.map_err(|e| named(e, what, path))
}

/// The metadata of `path`, following symbolic links.
///
/// # Errors
///
/// `NotFound` (the path in the message) if nothing is there; what `statx` answers
/// otherwise.
pub async fn metadata<P: AsRef<Path>>(path: P) -> io::Result<Metadata> {
    stat(path.as_ref(), 0, "metadata").await
}

/// The metadata of `path` itself, a symbolic link not followed.
///
/// # Errors
///
/// As [`metadata`].
pub async fn symlink_metadata<P: AsRef<Path>>(path: P) -> io::Result<Metadata> {
    stat(path.as_ref(), libc::AT_SYMLINK_NOFOLLOW, "symlink_metadata").await
}

/// True if something is at `path` (links followed); errors other than `NotFound` are
/// errors.
///
/// # Errors
///
/// What `statx` answers other than `NotFound` (`PermissionDenied`, say).
pub async fn try_exists<P: AsRef<Path>>(path: P) -> io::Result<bool> {
    match metadata(path).await {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

async fn path_op(kind: Kind, op: UringOpcode, path: &Path, to: Option<&Path>) -> io::Result<()> {
    let c = c_path(path)?;
    let c_to = to.map(c_path).transpose()?;
    if on_ring(op) {
        return OpFuture::new(PathOp {
            kind,
            path: c,
            to: c_to,
        })
        .await;
    }
    let (path, to) = (path.to_owned(), to.map(Path::to_owned));
    blocking(move || match kind {
        Kind::MkDir(_) => std::fs::create_dir(&path),
        Kind::Unlink { dir: false } => std::fs::remove_file(&path),
        Kind::Unlink { dir: true } => std::fs::remove_dir(&path),
        Kind::Rename => std::fs::rename(&path, to.as_ref().expect("a rename has two paths")),
    })
    .await
}

/// Makes the directory `path` (its parent must exist).
///
/// # Errors
///
/// `NotFound` if the parent is missing, `AlreadyExists` if something is at `path`, with
/// the path in the message.
pub async fn create_dir<P: AsRef<Path>>(path: P) -> io::Result<()> {
    let path = path.as_ref();
    path_op(Kind::MkDir(0o777), UringOpcode::MkDirAt, path, None)
        .await
        .map_err(|e| named(e, "create_dir", path))
}

/// Makes `path` and every missing parent; a directory already there is fine.
///
/// # Errors
///
/// What making one of them failed with (a file in the way: `AlreadyExists`, or
/// `NotADirectory`), with that path in the message.
pub async fn create_dir_all<P: AsRef<Path>>(path: P) -> io::Result<()> {
    let path = path.as_ref();
    // Up from `path` until a directory can be made (or is there); then down again.
    let mut missing: Vec<PathBuf> = Vec::new();
    let mut at = Some(path);
    while let Some(dir) = at {
        if dir.as_os_str().is_empty() {
            break;
        }
        match path_op(Kind::MkDir(0o777), UringOpcode::MkDirAt, dir, None).await {
            Ok(()) => break,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                missing.push(dir.to_owned());
                at = dir.parent();
            }
            Err(_) if is_dir(dir).await => break,
            Err(e) => return Err(named(e, "create_dir_all", dir)),
        }
    }
    // `missing[0]` is `path` itself: made last.
    for dir in missing.iter().rev() {
        match path_op(Kind::MkDir(0o777), UringOpcode::MkDirAt, dir, None).await {
            Ok(()) => {}
            Err(_) if is_dir(dir).await => {} // made by someone else meanwhile
            Err(e) => return Err(named(e, "create_dir_all", dir)),
        }
    }
    Ok(())
}

async fn is_dir(path: &Path) -> bool {
    metadata(path).await.is_ok_and(|m| m.is_dir())
}

/// Removes the file (or symbolic link) at `path`.
///
/// # Errors
///
/// `NotFound` if nothing is there, `IsADirectory` for a directory, with the path in
/// the message.
pub async fn remove_file<P: AsRef<Path>>(path: P) -> io::Result<()> {
    let path = path.as_ref();
    path_op(
        Kind::Unlink { dir: false },
        UringOpcode::UnlinkAt,
        path,
        None,
    )
    .await
    .map_err(|e| named(e, "remove_file", path))
}

/// Removes the empty directory at `path`.
///
/// # Errors
///
/// `NotFound` if nothing is there, `DirectoryNotEmpty` if it holds anything, with the
/// path in the message.
pub async fn remove_dir<P: AsRef<Path>>(path: P) -> io::Result<()> {
    let path = path.as_ref();
    path_op(
        Kind::Unlink { dir: true },
        UringOpcode::UnlinkAt,
        path,
        None,
    )
    .await
    .map_err(|e| named(e, "remove_dir", path))
}

/// Removes `path` and everything under it (on the blocking pool: a walk of many
/// syscalls, which no ring op does at once).
///
/// # Errors
///
/// What removing failed with, the path in the message.
pub async fn remove_dir_all<P: AsRef<Path>>(path: P) -> io::Result<()> {
    let path = path.as_ref().to_owned();
    let p = path.clone();
    blocking(move || std::fs::remove_dir_all(&p))
        .await
        .map_err(|e| named(e, "remove_dir_all", &path))
}

/// Renames `from` to `to`, replacing what is at `to` (as `rename(2)` does).
///
/// # Errors
///
/// `NotFound` if `from` is not there, and what `rename(2)` refuses (across file systems:
/// `CrossesDevices`), with both paths in the message.
pub async fn rename<P: AsRef<Path>, Q: AsRef<Path>>(from: P, to: Q) -> io::Result<()> {
    let (from, to) = (from.as_ref(), to.as_ref());
    path_op(Kind::Rename, UringOpcode::RenameAt, from, Some(to))
        .await
        .map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("rename {} to {}: {e}", from.display(), to.display()),
            )
        })
}
