//! UDP round trips through pcml's sockets, and readiness of a raw file descriptor (a pipe).

use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

use pcml::io::Async;
use pcml::net::UdpSocket;
use pcml::time::timeout_evt;
use pcml::{select, spawn};

#[test]
fn udp_ping_pong_between_fibers() {
    const ROUNDS: u32 = 200;
    let rt = pcml::Runtime::builder().procs(2).build().unwrap();
    let last = rt
        .block_on(|| {
            let a = UdpSocket::bind("127.0.0.1:0").unwrap();
            let b = UdpSocket::bind("127.0.0.1:0").unwrap();
            let a_addr = a.local_addr().unwrap();
            let b_addr = b.local_addr().unwrap();
            // b answers every datagram with its number plus one.
            let echo = spawn(move || {
                let mut buf = [0u8; 4];
                for _ in 0..ROUNDS {
                    let (n, from) = b.recv_from(&mut buf).unwrap();
                    assert_eq!((n, from), (4, a_addr));
                    let v = u32::from_le_bytes(buf) + 1;
                    b.send_to(&v.to_le_bytes(), from).unwrap();
                }
            });
            let mut v = 0u32;
            let mut buf = [0u8; 4];
            for _ in 0..ROUNDS {
                a.send_to(&v.to_le_bytes(), b_addr).unwrap();
                let (n, from) = a.recv_from(&mut buf).unwrap();
                assert_eq!((n, from), (4, b_addr));
                v = u32::from_le_bytes(buf);
            }
            echo.join().unwrap();
            v
        })
        .unwrap();
    assert_eq!(last, ROUNDS);
}

#[test]
fn udp_round_trip_from_tokio_and_os_threads() {
    let server = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = server.local_addr().unwrap();
    let t = std::thread::spawn(move || {
        let mut buf = [0u8; 16];
        for _ in 0..2 {
            let (n, from) = server.recv_from(&mut buf).unwrap();
            server.send_to(&buf[..n], from).unwrap();
        }
    });
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        let c = UdpSocket::bind("127.0.0.1:0").unwrap();
        c.send_to_async(b"tokio", addr).await.unwrap();
        let mut buf = [0u8; 16];
        let (n, from) = c.recv_from_async(&mut buf).await.unwrap();
        assert_eq!((&buf[..n], from), (&b"tokio"[..], addr));
    });
    let c = UdpSocket::bind("127.0.0.1:0").unwrap();
    c.connect(addr).unwrap();
    c.send(b"thread").unwrap();
    let mut buf = [0u8; 16];
    let n = c.recv(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"thread");
    t.join().unwrap();
}

/// A non-blocking pipe: `(read end, write end)`.
fn pipe() -> (RawFd, RawFd) {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: `fds` is a valid array of two descriptors for pipe2 to fill.
    let r = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) };
    assert_eq!(r, 0, "pipe2: {}", io::Error::last_os_error());
    (fds[0], fds[1])
}

fn close(fd: RawFd) {
    // SAFETY: `fd` is a descriptor this test opened and no longer uses.
    unsafe { libc::close(fd) };
}

fn read_fd(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for writes of `buf.len()` bytes.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

fn write_fd(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for reads of `buf.len()` bytes.
    let n = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

#[test]
fn raw_pipe_readiness_in_a_choice() {
    let (r, w) = pipe();
    let rt = pcml::Runtime::builder().procs(2).build().unwrap();
    let got = rt
        .block_on(move || {
            let reader = Async::new(r).unwrap();
            let writer = Async::new(w).unwrap();
            // An empty pipe: the timeout wins.
            let idle = select([
                reader.readable_evt().wrap(|()| false),
                timeout_evt(Duration::from_millis(5)).wrap(|()| true),
            ]);
            assert!(idle);
            // An empty pipe is writable.
            writer.writable_evt().sync();
            let t = spawn(move || {
                pcml::time::sleep(Duration::from_millis(2));
                writer.write_with(|&fd| write_fd(fd, b"pipe")).unwrap();
                writer
            });
            let idle = select([
                reader.readable_evt().wrap(|()| false),
                timeout_evt(Duration::from_secs(10)).wrap(|()| true),
            ]);
            assert!(!idle, "data arrived well within the timeout");
            let mut buf = [0u8; 8];
            let n = reader.read_with(|&fd| read_fd(fd, &mut buf)).unwrap();
            let writer = t.join().unwrap();
            drop((reader, writer));
            buf[..n].to_vec()
        })
        .unwrap();
    assert_eq!(got, b"pipe");
    close(r);
    close(w);
}

#[test]
fn raw_pipe_from_os_thread_and_async_task() {
    let (r, w) = pipe();
    let reader = Async::new(r).unwrap();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(2));
        write_fd(w, b"xyz").unwrap();
    });
    let mut buf = [0u8; 8];
    let n = reader.read_with(|&fd| read_fd(fd, &mut buf)).unwrap();
    assert_eq!(&buf[..n], b"xyz");
    t.join().unwrap();
    drop(reader);

    // The same pipe from a pcml async task.
    let got = pcml::run(move || {
        pcml::spawn_task(async move {
            let reader = Async::new(r).unwrap();
            write_fd(w, b"task").unwrap();
            let mut buf = [0u8; 8];
            let n = reader
                .read_with_async(|&fd| read_fd(fd, &mut buf))
                .await
                .unwrap();
            buf[..n].to_vec()
        })
        .join()
        .unwrap()
    });
    assert_eq!(got, b"task");
    close(r);
    close(w);
}

#[test]
fn a_blocking_descriptor_is_refused() {
    let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
    let err = Async::new(a).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    assert!(err.to_string().contains("non-blocking"), "{err}");
}

#[test]
fn a_fiber_reading_an_always_ready_descriptor_lets_others_run() {
    use std::io::{Read, Write};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    const BYTES: usize = 64 * 1024;
    // One proc: a fiber whose reads always find data must still yield, or the fiber that stops
    // it would not run until the data ran out.
    let rt = pcml::Runtime::builder().procs(1).build().unwrap();
    let read = rt
        .block_on(|| {
            let (a, mut b) = std::os::unix::net::UnixStream::pair().unwrap();
            a.set_nonblocking(true).unwrap();
            b.write_all(&[7u8; BYTES]).unwrap(); // a Unix socket delivers at once
            let a = Async::new(a).unwrap();
            let stop = Arc::new(AtomicBool::new(false));
            let s = stop.clone();
            let reader = spawn(move || {
                let mut n = 0;
                while !s.load(Ordering::Relaxed) && n < BYTES {
                    let mut byte = [0u8; 1];
                    n += a.read_with(|mut s| s.read(&mut byte)).unwrap();
                }
                n
            });
            spawn(move || stop.store(true, Ordering::Relaxed));
            let n = reader.join().unwrap();
            drop(b);
            n
        })
        .unwrap();
    assert!(read < BYTES, "the reader never yielded ({read} bytes read)");
}

/// Several tasks awaiting datagrams on one socket: the first waits in the socket's own waker
/// slot, the others through the readiness queue; every one is woken and gets a datagram.
#[test]
fn tasks_awaiting_one_socket_each_get_a_datagram() {
    use std::sync::Arc;
    const READERS: u32 = 4;
    for procs in [1, 2] {
        let rt = pcml::Runtime::builder().procs(procs).build().unwrap();
        let got = rt
            .block_on(|| {
                let a = UdpSocket::bind("127.0.0.1:0").unwrap();
                let b = Arc::new(UdpSocket::bind("127.0.0.1:0").unwrap());
                let b_addr = b.local_addr().unwrap();
                let readers: Vec<_> = (0..READERS)
                    .map(|_| {
                        let b = b.clone();
                        pcml::spawn_task(async move {
                            let mut buf = [0u8; 4];
                            let (n, _) = b.recv_from_async(&mut buf).await.unwrap();
                            assert_eq!(n, 4);
                            u32::from_le_bytes(buf)
                        })
                    })
                    .collect();
                // Let the readers reach their awaits (if some have not, they find data: the
                // test holds either way).
                pcml::time::sleep(Duration::from_millis(50));
                for v in 1..=READERS {
                    a.send_to(&v.to_le_bytes(), b_addr).unwrap();
                }
                readers
                    .into_iter()
                    .map(|r| r.join().unwrap())
                    .collect::<Vec<_>>()
            })
            .unwrap();
        let mut got = got;
        got.sort_unstable();
        assert_eq!(got, (1..=READERS).collect::<Vec<_>>(), "on {procs} procs");
    }
}

/// A read abandoned while waiting (its future dropped, as a timeout or a select drops it)
/// leaves its task's waker in the socket's slot; another task's read must still be woken by
/// the next datagram, and so must a later read of the first task.
#[test]
fn an_abandoned_async_read_does_not_strand_later_readers() {
    use std::future::Future;
    use std::sync::Arc;
    use std::task::Poll;
    let rt = pcml::Runtime::builder().procs(1).build().unwrap();
    rt.block_on(|| {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = Arc::new(UdpSocket::bind("127.0.0.1:0").unwrap());
        let b_addr = b.local_addr().unwrap();
        let b1 = b.clone();
        let (first, second) = (pcml::IVar::new(), pcml::IVar::new());
        let (f1, s1) = (first.clone(), second.clone());
        // Task 1 starts a read, polls it once (it parks), drops it, then reads again.
        let t1 = pcml::spawn_task(async move {
            let mut buf = [0u8; 4];
            {
                let mut read = std::pin::pin!(b1.recv_from_async(&mut buf));
                let pending =
                    std::future::poll_fn(|cx| Poll::Ready(read.as_mut().poll(cx).is_pending()))
                        .await;
                assert!(pending, "no datagram was sent yet");
            }
            f1.put(()).unwrap();
            s1.get_evt().await;
            let (n, _) = b1.recv_from_async(&mut buf).await.unwrap();
            (n, u32::from_le_bytes(buf))
        });
        first.get();
        // Task 2 reads while task 1's waker still holds the slot.
        let b2 = b.clone();
        let t2 = pcml::spawn_task(async move {
            let mut buf = [0u8; 4];
            let (n, _) = b2.recv_from_async(&mut buf).await.unwrap();
            (n, u32::from_le_bytes(buf))
        });
        pcml::time::sleep(Duration::from_millis(50));
        a.send_to(&7u32.to_le_bytes(), b_addr).unwrap();
        assert_eq!(t2.join().unwrap(), (4, 7));
        second.put(()).unwrap();
        pcml::time::sleep(Duration::from_millis(50));
        a.send_to(&8u32.to_le_bytes(), b_addr).unwrap();
        assert_eq!(t1.join().unwrap(), (4, 8));
    })
    .unwrap();
}
