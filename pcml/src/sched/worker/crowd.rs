//! Whether the machine is crowded: more threads ready to run than it has CPUs, so that an
//! idle proc that spins keeps a thread with work (another proc's, or another program's) off
//! a core. Idle procs then park at once instead of spinning (`Context::idle`; the policy and
//! its measurements are in the `sched` docs, "Explicit placement on a busy machine").

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long one look at the machine's run queues stands for: an idle proc that asks later
/// looks again, so a change of the machine's load is seen within this long. A look is one
/// `pread(2)` of `/proc/loadavg` at offset 0 through a descriptor the process keeps open
/// (`runnable`), made by one idle proc for all of them.
const CROWD_EVERY: Duration = Duration::from_micros(500);

/// The shared verdict (`Shared::crowding`), refreshed by whichever idle proc finds it stale.
pub(crate) struct Crowding {
    /// The CPUs this process may run on at once (0: unknown, the machine is then never
    /// crowded): the online CPUs, fewer if its affinity mask or its cgroup's CPU quota allows
    /// fewer (`std::thread::available_parallelism`, as `procs` defaults to). `/proc/loadavg`
    /// counts runnable threads across the whole machine, so a confined process is judged
    /// crowded more readily than a per-CPU count would (other programs on CPUs it cannot use
    /// are counted too): it then parks where it could have spun, a slower wake-up, never the
    /// collapse of a spinner that keeps its own work off the only core it has.
    cpus: usize,
    /// When the runtime started: `sampled_at` counts from it.
    epoch: Instant,
    /// When the verdict was last refreshed, in microseconds since `epoch` (`u64::MAX` before
    /// the first look). Relaxed: the compare-exchange only elects one refresher at a time; a
    /// verdict read a little stale is harmless (a spin more or less).
    sampled_at: AtomicU64,
    /// The verdict of the last look. Relaxed: a hint (see `sampled_at`).
    crowded: AtomicBool,
}

impl Crowding {
    pub(crate) fn new() -> Self {
        Self::with_cpus(std::thread::available_parallelism().map_or(0, |n| n.get()))
    }

    fn with_cpus(cpus: usize) -> Self {
        Self {
            cpus,
            epoch: Instant::now(),
            sampled_at: AtomicU64::new(u64::MAX),
            crowded: AtomicBool::new(false),
        }
    }

    /// Whether, at the latest look (at most `CROWD_EVERY` ago, else this call looks), the
    /// threads ready to run on the machine besides the caller filled every CPU.
    pub(crate) fn is_crowded(&self) -> bool {
        if self.cpus == 0 {
            return false;
        }
        let now = self.epoch.elapsed().as_micros() as u64;
        // Relaxed: see the field.
        let last = self.sampled_at.load(Ordering::Relaxed);
        let stale = last == u64::MAX || now.saturating_sub(last) >= CROWD_EVERY.as_micros() as u64;
        if stale
            && self
                .sampled_at
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            // The count includes the caller, which runs: the others are one fewer.
            let crowded = runnable().is_some_and(|n| n > self.cpus);
            self.crowded.store(crowded, Ordering::Relaxed);
            return crowded;
        }
        self.crowded.load(Ordering::Relaxed)
    }
}

/// The threads running or ready to run on the machine now, the kernel's own count: the first
/// number of the fourth field of `/proc/loadavg` ("0.52 0.58 0.59 3/412 12345").
///
/// The file is opened once per process and kept open; each look is one `pread(2)` at offset
/// 0, which makes the kernel format the line afresh (a seq_file read from its start). Before,
/// each look was `fs::read_to_string`: an open, a `statx`, two or three reads and a close, six
/// system calls where one will do. Under a hyper server on 1 proc loaded by `wrk` the idle
/// proc looked about 360 times a second, some 2,200 system calls a second, 0.04 per request
/// (`perf stat` of the `syscalls` tracepoints).
pub(super) fn runnable() -> Option<usize> {
    let mut buf = [0u8; LOADAVG_MAX];
    parse_runnable(read_loadavg(&mut buf)?)
}

/// Room for `/proc/loadavg`'s line ("1234.56 1234.56 1234.56 12345/123456 12345678\n" is
/// under 64 bytes).
const LOADAVG_MAX: usize = 128;

/// `/proc/loadavg`'s line as the kernel formats it now, read into `buf` by one `pread(2)`.
fn read_loadavg(buf: &mut [u8; LOADAVG_MAX]) -> Option<&str> {
    static LOADAVG: OnceLock<Option<File>> = OnceLock::new();
    let file = LOADAVG
        .get_or_init(|| File::open("/proc/loadavg").ok())
        .as_ref()?;
    let n = file.read_at(buf, 0).ok()?;
    std::str::from_utf8(&buf[..n]).ok()
}

fn parse_runnable(loadavg: &str) -> Option<usize> {
    let field = loadavg.split_whitespace().nth(3)?;
    field.split('/').next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_runnable_count_is_read_from_the_fourth_field() {
        assert_eq!(parse_runnable("0.52 0.58 0.59 3/412 12345\n"), Some(3));
        assert_eq!(parse_runnable("10.47 10.71 8.42 17/141 25419"), Some(17));
        assert_eq!(parse_runnable("garbage"), None);
        assert_eq!(parse_runnable(""), None);
    }

    #[test]
    fn a_busy_thread_beside_the_caller_crowds_one_cpu() {
        use std::sync::Arc;
        // Linux: the caller runs, so it is counted.
        assert!(runnable().is_some_and(|n| n >= 1));
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let busy = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        });
        // The spinner is always running or ready to run, and the caller runs: two threads
        // for one CPU.
        assert!(Crowding::with_cpus(1).is_crowded());
        // No machine has that many threads ready.
        assert!(!Crowding::with_cpus(1 << 20).is_crowded());
        // Unknown CPUs: never crowded, so the procs spin as on a quiet machine.
        assert!(!Crowding::with_cpus(0).is_crowded());
        stop.store(true, Ordering::Relaxed);
        busy.join().unwrap();
    }

    #[test]
    fn a_process_confined_to_one_cpu_counts_one() {
        // Affinity is per thread, and a runtime's `Crowding` is made on the thread that
        // builds it: confine a fresh thread to one CPU it may use now.
        std::thread::spawn(|| {
            // SAFETY: a zeroed cpu_set_t is a valid empty set; the calls read or write only
            // the set passed, whose size is given; 0 is the calling thread.
            unsafe {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                let size = std::mem::size_of::<libc::cpu_set_t>();
                assert_eq!(libc::sched_getaffinity(0, size, &mut set), 0);
                let first = (0..libc::CPU_SETSIZE as usize)
                    .find(|&c| libc::CPU_ISSET(c, &set))
                    .expect("the thread may run somewhere");
                let mut one: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(first, &mut one);
                assert_eq!(libc::sched_setaffinity(0, size, &one), 0);
            }
            assert_eq!(Crowding::new().cpus, 1);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn each_look_reads_the_line_afresh() {
        // The descriptor is kept open: a look must see the kernel's line as it is now, not as
        // it was when the file was opened. Its last field is the last process id handed out,
        // and a new thread takes one.
        let last_pid = || {
            let mut buf = [0u8; LOADAVG_MAX];
            let line = read_loadavg(&mut buf).expect("Linux has /proc/loadavg");
            line.split_whitespace().nth(4).unwrap().trim().to_owned()
        };
        let before = last_pid();
        std::thread::spawn(|| {}).join().unwrap();
        assert_ne!(last_pid(), before);
        assert!(runnable().is_some_and(|n| n >= 1));
    }

    #[test]
    fn a_verdict_stands_until_it_is_stale() {
        let c = Crowding::with_cpus(1 << 20);
        assert!(!c.is_crowded());
        let at = c.sampled_at.load(Ordering::Relaxed);
        assert_ne!(at, u64::MAX);
        // Forced: the next ask within CROWD_EVERY keeps it without looking.
        c.crowded.store(true, Ordering::Relaxed);
        c.sampled_at
            .store(c.epoch.elapsed().as_micros() as u64, Ordering::Relaxed);
        assert!(c.is_crowded());
    }
}
