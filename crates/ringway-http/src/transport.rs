//! What a connection reads from and writes to: plain TCP (multishot receive into pool
//! buffers, one send per batch) or TLS over TCP (see [`crate::tls`]).

use std::io;
use std::os::fd::{AsRawFd, RawFd};

use ringway::net::{RecvStream, TcpStream};

use crate::buffers::PooledBuf;
use crate::input::Input;

/// A byte stream the connection state machine drives.
pub(crate) trait Transport {
    /// Waits for input and adds it to `input`; returns how many bytes came, 0 at the end.
    fn recv(&mut self, input: &mut Input) -> impl std::future::Future<Output = io::Result<usize>>;
    /// Sends all of `buf` (in one send where the peer takes it all); hands the buffer
    /// back.
    fn send(
        &mut self,
        buf: PooledBuf,
    ) -> impl std::future::Future<Output = (io::Result<()>, PooledBuf)>;
    /// Ends the write direction (after a TLS `close_notify` where there is one).
    fn close_write(&mut self) -> impl std::future::Future<Output = ()>;
    /// The socket, if bytes spliced into it go to the peer unchanged (not under TLS).
    fn splice_target(&self) -> Option<RawFd> {
        None
    }
}

/// Plain TCP.
pub(crate) struct Tcp {
    stream: TcpStream,
    rx: RecvStream,
}

impl Tcp {
    pub fn new(mut stream: TcpStream) -> Self {
        let _ = stream.set_nodelay(true);
        let rx = stream.recv_multishot();
        Tcp { stream, rx }
    }
}

impl Transport for Tcp {
    async fn recv(&mut self, input: &mut Input) -> io::Result<usize> {
        match std::future::poll_fn(|cx| self.rx.poll_next(cx)).await {
            Some(Ok(buf)) => {
                let n = buf.len();
                input.push_pool(buf);
                Ok(n)
            }
            Some(Err(e)) => Err(e),
            None => Ok(0),
        }
    }

    async fn send(&mut self, buf: PooledBuf) -> (io::Result<()>, PooledBuf) {
        self.stream.write_all(buf).await
    }

    async fn close_write(&mut self) {
        let _ = self.stream.shutdown(std::net::Shutdown::Write);
    }

    fn splice_target(&self) -> Option<RawFd> {
        Some(self.stream.as_raw_fd())
    }
}
