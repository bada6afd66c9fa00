//! Co-runners: busy-looping OS processes that share the machine with a measurement, as other
//! jobs share a CI runner, a container host or a cloud VM.
//!
//! `pcml-bench --co-runner K` measures the multi-proc rows of Reppy, Russo and Xiao's programs a second
//! time while `K` co-runners run (rows whose program name ends in `, K busy`), beside the
//! quiet rows of the same run. Each co-runner is this binary started again in its hidden
//! `--busy-loop` mode: it spins on one core until it is killed, or until its parent is gone
//! (it checks a few times a second), so an interrupted suite leaves nothing behind.
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

/// The body of a co-runner process: spins until killed or orphaned. Never returns.
pub fn busy_loop() -> ! {
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
