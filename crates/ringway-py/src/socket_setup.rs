//! What asyncio does to every socket it hands a transport: non-blocking, and for TCP
//! `TCP_NODELAY`.

use std::os::fd::RawFd;

/// Makes a socket non-blocking (asyncio's sockets are) and, for TCP, sets `TCP_NODELAY`.
pub(crate) fn prepare_socket(fd: RawFd, tcp: bool) {
    let on: libc::c_int = 1;
    // SAFETY: `fd` is an open socket; FIONBIO reads an int flag.
    unsafe { libc::ioctl(fd, libc::FIONBIO, &on) };
    if tcp {
        // SAFETY: setsockopt reads `len` bytes from a live int.
        unsafe {
            libc::setsockopt(
                fd,
                libc::IPPROTO_TCP,
                libc::TCP_NODELAY,
                &on as *const _ as *const libc::c_void,
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
    }
}
