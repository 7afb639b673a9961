//! [`Metadata`]: what `statx` says of a path.

use std::fmt;
use std::io;
use std::time::{Duration, SystemTime};

/// A file's metadata, from `statx` (on the ring or the blocking pool: the same record
/// either way). The counterpart of `std::fs::Metadata`, which cannot be built from one.
#[derive(Clone)]
pub struct Metadata {
    pub(super) stx: libc::statx,
}

impl Metadata {
    /// The file's type.
    pub fn file_type(&self) -> FileType {
        FileType(u32::from(self.stx.stx_mode) & libc::S_IFMT)
    }
    /// True for a directory.
    pub fn is_dir(&self) -> bool {
        self.file_type().is_dir()
    }
    /// True for a regular file.
    pub fn is_file(&self) -> bool {
        self.file_type().is_file()
    }
    /// True for a symbolic link (only from [`symlink_metadata`](super::symlink_metadata)).
    pub fn is_symlink(&self) -> bool {
        self.file_type().is_symlink()
    }
    /// Size in bytes.
    pub fn len(&self) -> u64 {
        self.stx.stx_size
    }
    /// True for a file of zero bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The permissions, as std's type (which keeps the whole mode, as std does).
    pub fn permissions(&self) -> std::fs::Permissions {
        use std::os::unix::fs::PermissionsExt;
        std::fs::Permissions::from_mode(self.mode())
    }
    /// The whole `st_mode` (type and permission bits).
    pub fn mode(&self) -> u32 {
        u32::from(self.stx.stx_mode)
    }
    /// Last modification.
    pub fn modified(&self) -> io::Result<SystemTime> {
        time(self.stx.stx_mtime, true)
    }
    /// Last access.
    pub fn accessed(&self) -> io::Result<SystemTime> {
        time(self.stx.stx_atime, true)
    }
    /// Creation (birth), where the file system records it.
    pub fn created(&self) -> io::Result<SystemTime> {
        time(
            self.stx.stx_btime,
            self.stx.stx_mask & libc::STATX_BTIME != 0,
        )
    }
    /// Inode number.
    pub fn ino(&self) -> u64 {
        self.stx.stx_ino
    }
    /// Number of hard links.
    pub fn nlink(&self) -> u64 {
        u64::from(self.stx.stx_nlink)
    }
    /// Owner's user id.
    pub fn uid(&self) -> u32 {
        self.stx.stx_uid
    }
    /// Owner's group id.
    pub fn gid(&self) -> u32 {
        self.stx.stx_gid
    }
}

fn time(t: libc::statx_timestamp, known: bool) -> io::Result<SystemTime> {
    if !known {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "this file system does not record creation times",
        ));
    }
    let since = Duration::new(t.tv_sec.unsigned_abs(), t.tv_nsec);
    Ok(if t.tv_sec >= 0 {
        SystemTime::UNIX_EPOCH + since
    } else {
        SystemTime::UNIX_EPOCH - since
    })
}

impl fmt::Debug for Metadata {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Metadata")
            .field("file_type", &self.file_type())
            .field("len", &self.len())
            .field("mode", &format_args!("{:o}", self.mode()))
            .finish_non_exhaustive()
    }
}

/// A file's type, from [`Metadata::file_type`].
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct FileType(u32);

impl FileType {
    /// A directory.
    pub fn is_dir(&self) -> bool {
        self.0 == libc::S_IFDIR
    }
    /// A regular file.
    pub fn is_file(&self) -> bool {
        self.0 == libc::S_IFREG
    }
    /// A symbolic link.
    pub fn is_symlink(&self) -> bool {
        self.0 == libc::S_IFLNK
    }
}

impl fmt::Debug for FileType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self.0 {
            libc::S_IFDIR => "dir",
            libc::S_IFREG => "file",
            libc::S_IFLNK => "symlink",
            libc::S_IFIFO => "fifo",
            libc::S_IFSOCK => "socket",
            libc::S_IFCHR => "char device",
            libc::S_IFBLK => "block device",
            _ => "unknown",
        };
        write!(f, "FileType({name})")
    }
}
