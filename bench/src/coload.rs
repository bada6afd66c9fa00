//! Co-runners: busy-looping OS processes that share the machine with a measurement, as other
//! jobs share a CI runner, a container host or a cloud VM.
//!
//! `pcml-bench --co-runner K` measures the multi-proc rows of Reppy, Russo and Xiao's programs a second
//! time while `K` co-runners run (rows whose program name ends in `, K busy`), beside the
//! quiet rows of the same run. Each co-runner is this binary started again in its hidden
//! `--busy-loop` mode: it spins on one core until it is killed, or until its parent is gone
//! (it checks a few times a second), so an interrupted suite leaves nothing behind.
//!
//! A co-runner leaves the bench's session first (`setsid`), as another job on the machine is in
//! a session (or cgroup) of its own. Where the kernel groups threads by session (autogroup
//! scheduling, `/proc/sys/kernel/sched_autogroup_enabled`, on by default on many kernels and on
//! the machine the suite is developed on), each session has one CPU weight against the other
//! sessions, split over the CPUs its threads run on: a busy loop in the bench's own session
//! took about half that weight off the measured program's CPU, and the program's share of its
//! core against the machine's other load fell with it, whatever the program did. That measures
//! the kernel's sharing of one session's weight, not how a program fares beside another job.
//! Measured on the 2-core VM at load 14-18 from other sessions, the one-proc spawn+join loop
//! (`examples/spawn1 2000000 1`), 6 alternations of no co-runner, a co-runner in the bench's
//! session and one in its own, medians (min-max): the spawner's CPU time per spawn+join 24.6 ns
//! (19.9-27.7), 21.1 ns (16.5-27.5) and 21.2 ns (16.8-26.9), so the program did no more work
//! beside the busy loop; its share of a core (CPU time over wall time) 0.41 (0.22-0.96), 0.24
//! (0.09-0.35) and 0.31 (0.22-0.48). Go's spawn on one thread (`GOMAXPROCS=1`, 1,000,000
//! goroutines, load 11-12): 0.755 s, 1.53 s and 1.00 s a run. With the other sessions kept off
//! its core (the program at `SCHED_FIFO` priority on CPU 0, which no normal thread can take its
//! core from, and `yes` on CPU 1), a busy loop on the other core cost neither pcml nor Go
//! anything measurable (4 alternations, spawn+join 25-31 ns alone, 19-29 ns beside it; Go
//! 0.38-0.45 s and 0.36-0.46 s): the loss is the OS's sharing of the cores, not the hardware.
//!
//! ```no_run
//! use pcml_bench::coload::CoRunners;
//! let busy = CoRunners::start(1).unwrap();
//! assert_eq!(busy.count(), 1);
//! // ... measure ...
//! drop(busy); // kills and reaps the co-runners
//! ```

use std::hint::black_box;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The hidden command-line flag of a co-runner process.
pub const BUSY_FLAG: &str = "--busy-loop";

/// Running co-runner processes; dropping this kills and reaps them.
#[derive(Debug)]
pub struct CoRunners {
    children: Vec<Child>,
}

impl CoRunners {
    /// Starts `k` co-runners (none for 0), and gives them a moment to reach their loop.
    pub fn start(k: usize) -> std::io::Result<CoRunners> {
        let exe = std::env::current_exe()?;
        let mut busy = CoRunners {
            children: Vec::with_capacity(k),
        };
        for _ in 0..k {
            let child = Command::new(&exe)
                .arg(BUSY_FLAG)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()?;
            // Pushed at once: if a later spawn fails, dropping `busy` stops this one.
            busy.children.push(child);
        }
        if k > 0 {
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(busy)
    }

    /// How many co-runners run.
    pub fn count(&self) -> usize {
        self.children.len()
    }
}

impl Drop for CoRunners {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
        }
        for c in &mut self.children {
            let _ = c.wait();
        }
    }
}

/// The body of a co-runner process: leaves the bench's session (see the module docs), then
/// spins until killed or orphaned. Never returns.
pub fn busy_loop() -> ! {
    // SAFETY: setsid takes no pointers and has no preconditions; it fails only if this
    // process leads a process group, which a child started by `Command` does not (and a
    // failure leaves the co-runner in the bench's session, as before).
    unsafe {
        libc::setsid();
    }
    let parent = std::os::unix::process::parent_id();
    let mut x = 1u64;
    loop {
        let until = Instant::now() + Duration::from_millis(200);
        while Instant::now() < until {
            for _ in 0..10_000 {
                x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
        }
        if std::os::unix::process::parent_id() != parent {
            std::process::exit(0);
        }
    }
}
