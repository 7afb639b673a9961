//! Whole files: [`read`], [`read_to_string`], [`write`]. On io_uring an open, reads
//! (or a write) and a close in the ring; on epoll, where a regular file is always
//! "ready" and a read would run on the core however long the disk takes, the blocking
//! pool does the whole job.

use std::io;
use std::path::Path;

use super::path_ops::{blocking, named};
use super::{File, OpenOptions};
use crate::buf::IoBuf;
use crate::runtime::context::with_driver;

fn ring() -> bool {
    with_driver(|d| d.info().is_uring())
}

/// The whole content of the file at `path`.
///
/// # Errors
///
/// `NotFound` (the path in the message) if nothing is there, `IsADirectory` for a
/// directory, and what the reads answer.
///
/// # Examples
///
/// ```
/// #[ringway::main]
/// async fn main() -> std::io::Result<()> {
///     let path = std::env::temp_dir().join(format!("ringway-doc-{}", std::process::id()));
///     ringway::fs::write(&path, b"bytes".to_vec()).await?;
///     assert_eq!(ringway::fs::read(&path).await?, b"bytes");
///     ringway::fs::remove_file(&path).await?;
///     let e = ringway::fs::read(&path).await.unwrap_err();
///     assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
///     Ok(())
/// }
/// ```
pub async fn read<P: AsRef<Path>>(path: P) -> io::Result<Vec<u8>> {
    let path = path.as_ref();
    if !ring() {
        let p = path.to_owned();
        return blocking(move || std::fs::read(p))
            .await
            .map_err(|e| named(e, "read", path));
    }
    // `File::open`'s error already names the path: say what was being done.
    let file = File::open(path)
        .await
        .map_err(|e| io::Error::new(e.kind(), format!("read {e}")))?;
    read_file(&file).await.map_err(|e| named(e, "read", path))
}

/// Reads `file` from its start to its end: one read of the size `fstat` gives (into
/// the vector returned, no copy), then reads until one returns nothing (the file may
/// have grown meanwhile).
async fn read_file(file: &File) -> io::Result<Vec<u8>> {
    let size = file.metadata()?.len() as usize;
    let mut out: Vec<u8> = Vec::new();
    let mut want = size.max(4096) + 1;
    loop {
        let (r, buf) = file
            .read_at(Vec::with_capacity(want), out.len() as u64)
            .await;
        match r {
            Ok(0) => return Ok(out),
            Ok(_) if out.is_empty() => out = buf,
            Ok(_) => out.extend_from_slice(&buf),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
        want = 64 * 1024;
    }
}

/// The whole content of the file at `path`, as UTF-8.
///
/// # Errors
///
/// As [`read`], and `InvalidData` if the bytes are not UTF-8.
pub async fn read_to_string<P: AsRef<Path>>(path: P) -> io::Result<String> {
    let path = path.as_ref();
    let bytes = read(path).await?;
    String::from_utf8(bytes).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("read_to_string {}: not UTF-8: {e}", path.display()),
        )
    })
}

/// Writes `contents` as the whole file at `path` (created, or truncated first). The
/// buffer is owned, as every ringway write's: `b"..".to_vec()`, a `String`, `Bytes`,
/// `&'static [u8]`.
///
/// # Errors
///
/// `NotFound` if the directory is missing, `PermissionDenied`, ..., with the path in
/// the message.
pub async fn write<P, B>(path: P, contents: B) -> io::Result<()>
where
    P: AsRef<Path>,
    B: IoBuf + Unpin + Send,
{
    let path = path.as_ref();
    if !ring() {
        let p = path.to_owned();
        return blocking(move || {
            // SAFETY: the IoBuf contract: `stable_ptr` is valid for `bytes_init` bytes
            // while `contents`, owned by this closure, lives.
            let bytes =
                unsafe { std::slice::from_raw_parts(contents.stable_ptr(), contents.bytes_init()) };
            std::fs::write(p, bytes)
        })
        .await
        .map_err(|e| named(e, "write", path));
    }
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .await
        .map_err(|e| io::Error::new(e.kind(), format!("write {e}")))?;
    let (r, _) = file.write_all_at(contents, 0).await;
    r.map_err(|e| named(e, "write", path))
}
