//! Borrowed halves of a stream: [`TcpStream::split`](super::TcpStream::split) and
//! [`UnixStream::split`](super::UnixStream::split).
//!
//! A stream's reads and writes take `&mut self` (one reader, one writer: sends stay in
//! order). Splitting borrows the stream once and hands out one half that only reads and
//! one that only writes, so a reading and a writing future can run at the same time in
//! one task (`futures::join!`, `select!`) without `Rc` or a second task. For halves
//! that outlive the borrow (two tasks), `TcpStream::into_split`.

use std::io;

use super::background::{Flush, SendAllFuture};
use super::socket::{ReadFuture, RecvStream, Socket, WriteAll, WriteFuture};
use crate::buf::{IoBuf, IoBufMut};
use crate::io::ops::WriteVectored;
use crate::io::OpFuture;

/// The reading half of a split stream.
#[derive(Debug)]
pub struct ReadHalf<'a> {
    socket: &'a Socket,
}

/// The writing half of a split stream.
#[derive(Debug)]
pub struct WriteHalf<'a> {
    socket: &'a Socket,
}

/// Both halves of `socket`.
pub(super) fn split(socket: &Socket) -> (ReadHalf<'_>, WriteHalf<'_>) {
    (ReadHalf { socket }, WriteHalf { socket })
}

impl ReadHalf<'_> {
    /// Reads into `buf`; `Ok(0)` at end of stream.
    pub fn read<B: IoBufMut + Unpin>(&mut self, buf: B) -> ReadFuture<B> {
        self.socket.read(buf)
    }

    /// A multishot receive into pool buffers (see
    /// [`TcpStream::recv_multishot`](super::TcpStream::recv_multishot)).
    pub fn recv_multishot(&mut self) -> RecvStream {
        self.socket.recv_multishot()
    }
}

impl WriteHalf<'_> {
    /// Writes from `buf`; returns how many bytes went.
    pub fn write<B: IoBuf + Unpin>(&mut self, buf: B) -> WriteFuture<B> {
        self.socket.write(buf)
    }

    /// Writes all of `buf`.
    pub fn write_all<B: IoBuf + Unpin>(&mut self, buf: B) -> WriteAll<'_, B> {
        self.socket.write_all(buf)
    }

    /// Writes several buffers with one `sendmsg`.
    pub fn write_vectored<B: IoBuf + Unpin>(&mut self, bufs: Vec<B>) -> OpFuture<WriteVectored<B>> {
        self.socket.write_vectored(bufs)
    }

    /// Hands `buf` to a background send (see
    /// [`TcpStream::send_all`](super::TcpStream::send_all)).
    pub fn send_all<B: IoBuf + Unpin + 'static>(&mut self, buf: B) -> SendAllFuture<'_, B> {
        self.socket.send_all(buf)
    }

    /// Waits for the background sends, returning their error if one failed.
    pub fn flush(&mut self) -> Flush<'_> {
        self.socket.flush()
    }

    /// Says that a task is about to wait for the background send in flight by a means
    /// of its own (see [`TcpStream::awaiting_send`](super::TcpStream::awaiting_send)).
    pub fn awaiting_send(&self) {
        self.socket.awaiting_send()
    }

    /// Shuts down the writing direction: the peer reads end of stream.
    pub fn shutdown(&self) -> io::Result<()> {
        self.socket.shutdown(std::net::Shutdown::Write)
    }
}
