//! A child's piped stdin, stdout and stderr as ringway streams (owned buffers, through
//! the driver: reads and writes on the ring, or readiness on epoll).

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use crate::buf::{IoBuf, IoBufMut};
use crate::io::{FdRead, FdWrite, FdWriteAll, OpFuture, StreamFd};

/// The writing end of a child's stdin. Dropping it closes the pipe: the child reads end
/// of file.
#[derive(Debug)]
pub struct ChildStdin {
    fd: StreamFd,
}

impl ChildStdin {
    pub(super) fn new(fd: OwnedFd) -> io::Result<ChildStdin> {
        Ok(ChildStdin {
            fd: StreamFd::new(fd)?,
        })
    }

    /// Writes from `buf`; returns how many bytes the pipe took. `EPIPE` (`BrokenPipe`)
    /// if the child closed its stdin (or exited).
    pub fn write<B: IoBuf + Unpin>(&mut self, buf: B) -> OpFuture<FdWrite<B>> {
        self.fd.write(buf)
    }

    /// Writes all of `buf`, then gives it back.
    pub fn write_all<B: IoBuf + Unpin>(&mut self, buf: B) -> FdWriteAll<B> {
        self.fd.write_all(buf)
    }
}

impl AsRawFd for ChildStdin {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.fd()
    }
}

macro_rules! reader {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name {
            fd: StreamFd,
        }

        impl $name {
            pub(super) fn new(fd: OwnedFd) -> io::Result<$name> {
                Ok($name {
                    fd: StreamFd::new(fd)?,
                })
            }

            /// Reads into `buf`; `Ok(0)` once the child has closed its end (or exited).
            pub fn read<B: IoBufMut + Unpin>(&mut self, buf: B) -> OpFuture<FdRead<B>> {
                self.fd.read(buf)
            }

            /// Reads until end of file, appending to `buf`; returns it.
            pub async fn read_to_end(&mut self, buf: Vec<u8>) -> io::Result<Vec<u8>> {
                read_to_end(&self.fd, buf).await
            }
        }

        impl AsRawFd for $name {
            fn as_raw_fd(&self) -> RawFd {
                self.fd.fd()
            }
        }
    };
}

reader! {
    /// The reading end of a child's stdout.
    ChildStdout
}

reader! {
    /// The reading end of a child's stderr.
    ChildStderr
}

/// Reads `fd` to its end into `out`, in chunks of at least 16 KiB.
pub(super) async fn read_to_end(fd: &StreamFd, mut out: Vec<u8>) -> io::Result<Vec<u8>> {
    const CHUNK: usize = 16 * 1024;
    let mut chunk = Vec::with_capacity(CHUNK);
    loop {
        chunk.clear();
        let (r, c) = fd.read(chunk).await;
        chunk = c;
        match r {
            Ok(0) => return Ok(out),
            Ok(_) => out.extend_from_slice(&chunk),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

impl ChildStdout {
    pub(super) fn stream(&self) -> &StreamFd {
        &self.fd
    }
}

impl ChildStderr {
    pub(super) fn stream(&self) -> &StreamFd {
        &self.fd
    }
}
