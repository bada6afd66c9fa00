//! A stream socket's reads and writes as direct system calls.
//!
//! `TcpStream`'s reads, writes and vectored writes call `recvfrom(2)`, `sendto(2)` and
//! `writev(2)` through `syscall(2)`, with the arguments std's `TcpStream` passes (`recv` with
//! no flags; `send` with `MSG_NOSIGNAL`; `writev` of at most `IOV_MAX` slices), so they
//! behave as std's calls do, errors included.
//!
//! # How it works
//! glibc's `recv`, `send` and `writev` are cancellation points of POSIX threads: in a
//! process with more than one thread each call enables asynchronous cancellation before
//! the system call and disables it after, two atomic compare-and-swaps on the thread's
//! descriptor. pcml never cancels a thread, so those wrappers buy nothing here; `syscall(2)`
//! is not a cancellation point and makes the call with a few register moves. (A hyper server
//! under `wrk` ran about 150 instructions a request fewer, one read and one write each: see
//! docs/performance.md.)

use std::io;
use std::io::IoSlice;
use std::os::fd::AsRawFd;

/// At most this many slices go to one `writev(2)` (Linux's `IOV_MAX`; std clamps alike).
const IOV_MAX: usize = 1024;

/// The result of a system call that returns a count or -1 with `errno` set.
fn count(r: libc::c_long) -> io::Result<usize> {
    usize::try_from(r).map_err(|_| io::Error::last_os_error())
}

/// `recv(fd, buf, len, 0)`, as std's `TcpStream::read`.
pub(super) fn recv(s: &impl AsRawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for writes of `buf.len()` bytes for the whole call; the kernel
    // writes at most that many; the address arguments are null (none wanted). Every argument
    // is passed as a full register (`c_long` or a pointer).
    let r = unsafe {
        libc::syscall(
            libc::SYS_recvfrom,
            libc::c_long::from(s.as_raw_fd()),
            buf.as_mut_ptr(),
            buf.len(),
            0 as libc::c_long,
            std::ptr::null_mut::<libc::sockaddr>(),
            std::ptr::null_mut::<libc::socklen_t>(),
        )
    };
    count(r)
}

/// `send(fd, buf, len, MSG_NOSIGNAL)`, as std's `TcpStream::write`: a write to a connection
/// the peer has closed fails with `BrokenPipe` instead of raising `SIGPIPE`.
pub(super) fn send(s: &impl AsRawFd, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for reads of `buf.len()` bytes for the whole call; no address.
    let r = unsafe {
        libc::syscall(
            libc::SYS_sendto,
            libc::c_long::from(s.as_raw_fd()),
            buf.as_ptr(),
            buf.len(),
            libc::c_long::from(libc::MSG_NOSIGNAL),
            std::ptr::null::<libc::sockaddr>(),
            0 as libc::c_long,
        )
    };
    count(r)
}

/// `writev(fd, bufs, min(n, IOV_MAX))`, as std's `TcpStream::write_vectored`.
pub(super) fn writev(s: &impl AsRawFd, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
    // SAFETY: `IoSlice` is ABI-compatible with `iovec` on Unix (std's guarantee), and each
    // slice is valid for reads of its length for the whole call; at most `bufs.len()`.
    let r = unsafe {
        libc::syscall(
            libc::SYS_writev,
            libc::c_long::from(s.as_raw_fd()),
            bufs.as_ptr().cast::<libc::iovec>(),
            bufs.len().min(IOV_MAX),
        )
    };
    count(r)
}

#[cfg(all(test, not(pcml_loom)))]
mod tests {
    use std::io::{IoSlice, Read, Write};
    use std::os::unix::net::UnixStream;

    #[test]
    fn the_calls_move_bytes_and_report_errors_as_std_does() {
        let (a, mut b) = UnixStream::pair().unwrap();
        assert_eq!(super::send(&a, b"abc").unwrap(), 3);
        let bufs = [IoSlice::new(b"de"), IoSlice::new(b""), IoSlice::new(b"f")];
        assert_eq!(super::writev(&a, &bufs).unwrap(), 3);
        let mut got = [0; 6];
        b.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"abcdef");
        b.write_all(b"xy").unwrap();
        let mut buf = [0; 8];
        assert_eq!(super::recv(&a, &mut buf).unwrap(), 2);
        assert_eq!(&buf[..2], b"xy");
        a.set_nonblocking(true).unwrap();
        let e = super::recv(&a, &mut buf).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::WouldBlock);
        drop(b);
        assert_eq!(super::recv(&a, &mut buf).unwrap(), 0, "end of file");
        let e = super::send(&a, b"z").unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "no SIGPIPE: {e}");
        let e = super::writev(&a, &[IoSlice::new(b"z")]).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe);
    }
}
