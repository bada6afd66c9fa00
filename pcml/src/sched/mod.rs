//! The scheduler (Reppy, Russo and Xiao 2009; Morrisett and Tolmach 1992): runtimes, procs' run queues, work stealing, inboxes,
//! spawning, joining, deadlock detection.
//!
//! A runtime runs its procs on worker OS threads, one per proc unless it has more procs than
//! the process can run at once (see the placement policy below, and `worker`). Work reaches a proc three ways:
//! its own deque and held slot (what it spawns, stealable by idle procs; see `held`), the
//! global injector (work from
//! outside the procs), and its inbox (wake-ups of its own fibers, and fibers placed on it with
//! `spawn_on`). A started fiber lives on its home proc for life (see `fiber`); tasks migrate.
//!
//! # Placement: where threads run, and why
//!
//! ```
//! // Let the scheduler place threads: a thread runs where it was spawned unless that proc
//! // leaves it waiting, so threads that talk to each other stay together.
//! let sum = pcml::run(|| {
//!     let ch = pcml::Chan::new();
//!     let tx = ch.clone();
//!     let producer = pcml::spawn(move || (1..=100u64).for_each(|i| tx.send(i)));
//!     let sum: u64 = (0..100).map(|_| ch.recv()).sum();
//!     producer.join().unwrap();
//!     sum
//! });
//! assert_eq!(sum, 5050);
//! ```
//!
//! The policy, most important first:
//! - **New work stays where it was spawned.** `spawn` and `spawn_task` put the new thread on
//!   the spawner's proc. A started fiber never moves (see `fiber`), so where a fiber first
//!   runs is where it talks to its partners for life. The exceptions are a burst of
//!   spawns while other procs are idle (or have nothing queued), and a proc on which many
//!   fibers live (below).
//! - **An idle proc takes only work that waits.** A fiber a proc spawns while it holds none
//!   is held (the oldest unstarted spawn: those spawned after it go to the deque; its joiner
//!   takes it back with plain loads and stores, see `held`); an idle proc takes a held fiber only
//!   if it sees the same one held `HELD_GRACE` (2 ms) apart and the holding proc's thread
//!   spent `HELD_BUSY` (1 ms) of CPU time meanwhile (it is busy with something else, a long
//!   computation say), and other queued work only if it is still there after `STEAL_GRACE`
//!   (20 us) of watching (giving up at once if work of its own arrives) and the proc that
//!   queued it ran on a core meanwhile (its thread's CPU clock moved 5 us or more). A proc that spawns a
//!   thread and then blocks runs it within a microsecond or two, so the thread stays beside
//!   the threads it was spawned to talk to; a proc busy with something else leaves its queue
//!   waiting, and the idle proc takes it. The held fiber's longer grace, and the CPU-time
//!   test, cover a busy machine, where the OS may take the spawner's core away for a while:
//!   the spawner runs the fiber as soon as it has a core again, so the fiber does not move.
//!   A proc that takes no turn for a whole time slice is marked hogged by the watchdog, and
//!   its fiber then moves whatever its clock says, unless the kernel has its thread runnable
//!   (state `R` in `/proc/self/task/<tid>/stat`, read by the idle proc after its grace):
//!   a thread that computes shows it on its clock, and one blocked in a system call is not
//!   runnable, so a runnable thread whose clock stood still waits for a core. Before that
//!   test, a spawner the OS had left without a core for a time slice was marked and lost its
//!   fiber all the same: beside one busy loop at load 10-15, `examples/primes.rs spawn 1000
//!   2` stole a filter in 5 of 46 runs (4 of them with a debug print: each time the victim's
//!   clock had not moved, and the watchdog had marked it), and those runs took 1.3 to 21 s
//!   against 0.3 to 1.2 s for the others; with the test none of 28 runs stole. In
//!   `examples/spawn1.rs 1000000 2`, alternated, 5 of 12 runs stole, none of 12 with the
//!   test. One fiber of
//!   Reppy, Russo and Xiao's primes sieve stolen that way put a proc boundary in the middle of
//!   the chain of filters, and every later number crossed it twice: the run switched threads
//!   27% more often (resumes 729,590 against 573,791) and took 1.2x and 1.7x the median time
//!   of the runs around it without a steal, in two such runs (`examples/primes.rs spawn 1000
//!   2` prints the steals and how many filters ran on proc 1). Beside a busy-looping
//!   process, 2 of 50 runs stole a filter with the 2 ms grace alone, none of 50 with the
//!   CPU-time test. Go's scheduler likewise waits before it steals a goroutine's `runnext`,
//!   and tokio never steals its LIFO slot. Queued work gets the same CPU-time test over its
//!   shorter grace: a ping-pong pair spawned one after the other leaves the ponger held and
//!   the pinger queued until the spawner joins it, and on a busy machine the spawner's
//!   thread can lose its core for longer than 20 us right there. The idle proc then took
//!   the pinger, and every message of the run crossed procs: `examples/pingpong2.rs 25000
//!   spawn 2 8`, 32 runs at load 11-13, stole in 8 runs, which took up to 98 us a message
//!   (median of all 32: 367 ns); with the test, none of 32 runs stole (median 194 ns, slowest
//!   791 ns). A victim that is busy runs on its core and its clock moves, so a tree of spawns
//!   still spreads as before; one whose thread is blocked in a system call keeps its queue
//!   until the watchdog marks it hogged, and one whose thread waits for a core keeps it
//!   until it runs again, unless it is a backlog that clearly waited (below). One
//!   exception: tasks woken by a dispatch of I/O readiness events that left two or more
//!   items queued may be taken at once (each waited on its own socket, so none is the
//!   partner of what its proc runs next). An idle proc
//!   that watched such a batch for 20 us before it took half cost a 2-proc echo server of
//!   100 connections 30% of its CPU time (`examples/echo_load pcml 2`, 5 runs alternated at
//!   load 9-11: 28.9 us of CPU a round trip with the grace, 20.4 us without, tokio's
//!   `multi_thread(2)` 20.3 us). A sleeping proc is woken for such a batch only while the
//!   machine has a core to spare (the crowding test of the spin, below): on a crowded
//!   machine the wake-up takes a core from another runnable thread, often the clients the
//!   batch answers, and a 2-proc hyper server under `wrk` on 2 cores took 4% less CPU a
//!   request without it (`Context::io_dispatch` gives the figures).
//!
//!   A backlog does not wait for ever, though. An idle proc that has been refused a
//!   proc's queued work for `STARVED_AFTER` (2 ms, a hundred graces: in practice its next
//!   look after the park that follows a refusal), looking at that queue at least every 8 ms
//!   and never finding it empty, takes its backlog whatever the victim's clock says: its
//!   tasks woken during their own poll, and new work only from a deque of two items or
//!   more, so that the pinger queued behind its held ponger stays (a held fiber keeps its
//!   own rule, above). On a busy machine the victim's clock can stand still at every look
//!   although its thread is runnable: the idle proc's own wake-up from its park is often
//!   what took the victim's core, the two threads sharing one core's run queue.
//!   `tasks_run_on_both_procs` (tests/sched/steal.rs: 64 tasks spawned on proc 0 of 2,
//!   each computing 50 us between yields, until both procs have run one) took 73 and 91 s
//!   in 2 of 23 runs beside two busy loops, and a debug print in `examples/spread.rs`, of
//!   the same shape, showed 20 refusals in a row, each with 0 ns of the victim's CPU time,
//!   its thread runnable and 16 tasks queued there. With the rule, alternated with the
//!   build before it, 15 runs each (the test binary's `steal::tasks_run_on_both_procs`
//!   alone, wall time; the first figures at each co-runner count taken before the 8 ms
//!   bound above): beside two
//!   `yes` loops at load 8-11, a median of 0.09 s (0.01-0.35 s) against 0.77 s (0.10-5.1 s,
//!   3 runs over 1 s), and at load 8, 0.04 s (0.01-0.09 s) against 0.07 s (0.02-4.5 s, 3
//!   over 1 s); beside one, 0.07 s (0.01-1.5 s) against 1.2 s (0.05-4.8 s, 8 over 1 s) at
//!   load 11, and 0.03 s (0.02-0.08 s) against 0.23 s (0.03-13.7 s, 6 over 1 s) at load 7.
//!   `examples/spread.rs 16 80` (16 tasks of 80 slices of a fixed computation, 64 ms of
//!   work on a quiet core, spawned on proc 0) beside one `yes`, 6 alternations of 3 runs:
//!   at load 12-13, 198 ms on 2 procs (159-548 ms) against 222 ms (166-929 ms), and 261 ms
//!   on one proc; at load 7, 173 ms (142-221 ms, proc 1 running 442-767 of the 1,280
//!   slices) against 171 ms (123-214 ms), and 213 ms on one proc: where the first look
//!   finds the spawner on its core, as most do, nothing changes. A task taken so rejoins
//!   its partner at its next message (a woken task runs on its waker's proc), whereas a
//!   fiber stays where it started for life: a lone item of new work therefore stays, as it
//!   may be the second of a pair spawned back to back, but a burst of spawns is a backlog
//!   like any other. The cases the CPU-time test was made for stay as they were: beside
//!   one `yes` at load 13-16, 6 alternations, `examples/primes.rs spawn 1000 2 3`,
//!   `pingpong2.rs 25000 spawn 2 8`, `spawn1.rs 1000000 2` and `parpp.rs 50000 spawn`
//!   stole nothing in any run, before or after (no filter on proc 1, no split pair). The
//!   bench's scheduler-placed rows (`pcml-bench --only spawn,pingpong,parpingpong,primes
//!   --procs 1,2 --co-runner 1 --peers go`), alternated at load 7-11: each 2-proc row, quiet
//!   and beside one busy loop, at or above its ratio to the 1-proc row before (spawn 0.69x
//!   and 0.77x against 0.66x and 0.71x, ping-pong 1.48x and 1.12x against 1.06x and 0.81x,
//!   parallel ping-pong 0.95x and 1.30x against 0.85x and 1.01x, primes-1000 1.23x and
//!   1.22x against 1.04x and 0.97x), the 1-proc rows, which no steal touches, themselves
//!   moving by up to 40% between the runs; one more alternation at load 5-9, on the
//!   dealing rule's later test: within 0.07 of the ratios before or above them (parallel
//!   ping-pong beside the busy loop 1.08x against 1.15x, primes-1000 beside it 0.88x
//!   against 0.91x, spawn beside it 0.83x against 0.42x).
//! - **Partners spawned back to back stay together.** A program often spawns the two ends
//!   of a conversation one after the other (a ponger, then its pinger), and a thief that
//!   takes one of them leaves the pair talking across procs for good, since neither moves
//!   once started. When a joiner takes the held fiber (the oldest spawn not yet run) to run
//!   it inline, its proc runs next the oldest queued spawn, the one spawned right after it,
//!   which a thief would otherwise take first, instead of the newest. In
//!   `examples/parpp.rs 50000 spawn` on 2 procs (8 pairs, each ponger spawned before its
//!   pinger, joined in that order) the spawner ran the first ponger inline and a thief's
//!   batch began with its pinger: a split pair in every run, which set the run's pace (every
//!   message of it a cross-proc wake-up). Measured together with a second rule, a thief
//!   taking an even number of new items so that its batch does not end between two
//!   neighbours, at `SCHED_FIFO` priority (`chrt -f 1`: a core each on the shared machine),
//!   6 alternations: 10.4-14.4 M msgs/s (median 11.1 M) before, 22.6-32.2 M (median 29.5 M)
//!   and no split pair after (one proc: 14.2-19.0 M). The second rule was taken out again:
//!   the bench's row joins the pingers, which run inline from the deque and leave their
//!   claimed entries at its front, so an even batch counted from there split a pair, and
//!   the row fell from 14.0-17.2 M to 8.9-12.3 M msgs/s (medians of 6, 2 procs, load 2-5).
//!   With the first rule alone, as the code stands, the same example under `chrt -f 1`, 6
//!   alternations with the build before both: 23.1-32.9 M msgs/s (median 27.5 M) against
//!   6.5-15.8 M (median 9.4 M), every pair on one proc. The example prints the proc of each
//!   fiber.
//! - **A burst of spawns is split with idle procs before it starts.** A fiber starts within
//!   a microsecond or two of its spawner's next block, and once started it never moves, so
//!   an idle proc's steal, which waits `STEAL_GRACE` and the idle proc's own wake-up first,
//!   came too late for a burst of spawns: the 16 fibers of 8 ping-pong pairs spawned by one
//!   fiber started on the spawner's proc, but for the few pairs a steal caught while the
//!   spawner was still spawning (and a steal's batch, counted from the oldest end, often
//!   ended between a ponger and its pinger). So when a proc looks for new work and its last
//!   thread left a spawn sequence (the deque, and the oldest spawn, held or run inline by
//!   its joiner) of `BURST_MIN` (8) fibers or more, while procs of other OS threads are
//!   idle (parked, spinning, or watching a queue to steal from), it deals the newest part
//!   of the sequence to each of them before any of it starts, through their inboxes, and
//!   keeps the oldest part: the sequence is cut into as many parts as the procs that share
//!   it, each of an even length. Spawns come two by two more often than in any other
//!   grouping (a ponger and its pinger, a server and its client), and the newest spawn ends
//!   the last group, so even parts counted from the newest keep pairs whole; the oldest
//!   spawn, the one the spawner is likeliest to join and talk to first, stays. A dealt
//!   fiber starts and stays on its new proc as a `spawn_on` fiber does, and a joiner waits
//!   for it there instead of running it inline on its own proc, which would split it from
//!   the partner dealt with it (the bench's row joins each pinger in turn, and a pinger
//!   whose proc's thread had not had a core yet was run by the spawner). An idle proc that
//!   watches the spawner's queue when the part arrives in its inbox stops watching at once
//!   (it counts as idle while it watches). Parts that would hold a task are not
//!   dealt (tasks migrate, and stealing spreads them), nor a part whose spawn sites differ
//!   from those of the spawns queued below it, in order: a burst that repeats one group
//!   (a ponger and its pinger eight times, the rows of a matrix) is split, a team whose
//!   members differ is not. Nor is a sequence shorter than 8: a single pair, the
//!   spawn+join loop, and small teams stay on the spawner's proc as before. The bench's
//!   worker pool (4 workers spawned in a loop, then their producer, all talking through
//!   two channels) had its producer and a worker dealt with the first version of this
//!   rule, which cut its 2-proc row from 11-18 M jobs/s to 3.1-6.8 M (every job crossed
//!   procs twice); with the size and site tests it is not dealt (11.5-12.6 M against
//!   11.8-12.8 M before, 2 alternations under `chrt -f 1`). Each proc
//!   counts the bursts it split (`ProcMetrics::bursts_dealt`, which `examples/parpp.rs`
//!   prints). Not every burst is independent work: a ring of fibers spawned in one burst
//!   is cut where the parts meet, and each token lap crosses procs twice. This is the
//!   price Go and tokio pay too, whose idle workers take half of a run queue at once; but
//!   they move a goroutine or task again later, and a fiber does not, so a program that
//!   knows its threads talk in a chain places them with `spawn_on`, or spawns them one at
//!   a time (each started before the next: the dealing of long blocks below applies).
//!   Measured under `chrt -f 1` (a core each on the shared 2-core machine), alternated
//!   with the build before: `examples/parpp.rs 30000 spawn` on 2 procs, 6 runs each,
//!   41.5-48.7 M msgs/s (median 42.4 M), the burst dealt in 5 runs (in the sixth, 27.6 M,
//!   a steal of three pairs came first: the runtime's first burst, spawned on cold
//!   caches, took longer than `STEAL_GRACE`), against 5.5-32.1 M (median 18.4 M) before,
//!   where a steal took three pairs in every run and split one in three of them (60,001
//!   wake-ups across procs); one proc 16.1-19.0 M. The bench (`pcml-bench --only
//!   spawn,parpingpong,primes --procs 1,2 --peers go --runs 6 --rounds 2`, 3 alternations
//!   under `chrt -f 1`): parallel ping-pong (spawn) on 2 procs 42.5, 41.5 and 48.1 M
//!   msgs/s against 15.4, 18.8 and 14.0 M before, 1.92x, 2.10x and 2.16x of one proc
//!   against 0.73x, 0.86x and 0.65x; the spawn rows (2 procs 38.7-40.0 M threads/s
//!   against 35.3-39.6 M) and primes-1000 (2 procs 27.9-30.1 ms against 27.9-38.9 ms)
//!   within their noise. Without `chrt`, with `--co-runner 1`, at load 4-20 from the other
//!   programs on the machine (4 alternations, the first two before the joiner rule
//!   above), the second core is mostly not there to be
//!   had, and the 2-proc row over the 1-proc row read 1.24x, 0.95x, 1.09x and 1.20x
//!   against 0.91x, 0.96x, 1.05x and 1.29x before; beside the busy loop over quiet, 0.76x,
//!   0.55x, 0.58x and 0.28x against 0.52x, 0.48x, 0.44x and 0.34x.
//!   Idle here means with nothing queued, not only parked, spinning or watching: a proc of
//!   another OS thread whose deques and held slot are empty, and which the watchdog has not
//!   marked hogged, is dealt its part too, and starts it at its next turn. The bench's rows
//!   spawn the timed burst as soon as a short warm-up burst is joined, when the other
//!   proc may still be ending the warm-up's last fibers, or be awake but not yet run by
//!   the OS since a wake-up: counted busy, it was passed over, and the whole burst started
//!   on the spawner's proc (or a steal took some of it later, splitting a pair). That was
//!   35 of 130 runs of a warm-up and a timed burst on 2 procs at load 6 (`examples/parpp.rs
//!   30000 spawn warm` runs that sequence), and 9 of 40 beside a busy loop; none of 170
//!   with this rule. A proc with work queued is still passed over: it would start the part
//!   only after that work. Measured with the session's autogroup at nice -20 (`echo -20 >
//!   /proc/self/autogroup`, so that the other sessions' load on the shared 2-core machine,
//!   8-12, took little of its cores; the co-runner is the bench's child, in the same
//!   group), `pcml-bench --only parpingpong,spawn,pingpong,primes --procs 1,2 --co-runner 1
//!   --peers go --runs 6 --rounds 2`, 3 alternations with the build before: parallel
//!   ping-pong (spawn) on 2 procs 44.8, 37.3 and 36.4 M msgs/s (2.10x, 1.79x and 2.14x of
//!   one proc) against 24.6, 28.0 and 24.3 M (1.04x, 1.61x, 1.17x); beside the busy loop
//!   unchanged (26.0, 20.2, 17.3 M against 24.9, 22.2, 17.1 M), so its busy/quiet ratio
//!   now reads 0.58x, 0.54x and 0.48x (Go's own 1.01x, 0.86x, 0.88x, from a 2-proc
//!   figure of 6-7 M); the spawn, ping-pong and primes rows within their noise.
//!
//!   A sequence most of which earlier threads queued, a few spawns each, is not a burst
//!   but a tree unfolding: each node spawns its children and waits for their sums, the
//!   proc runs the newest spawn first, and the queue grows by a few at every node. Dealt,
//!   its newest part is its smallest subtrees, whose sums each cross back to a parent on
//!   the dealer's proc, and the receiver, soon idle again, was dealt the next few: the
//!   bench's skynet of fibers (729 leaves, 3-ary, each node `spawn`s its children, which
//!   send their sums up a channel) ran 70-80 such deals a run on each proc, 300-700
//!   wake-ups across procs, and took twice as long on 2 procs as on 1. So only a sequence
//!   at least half of which the last thread spawned is dealt; a tree is left to the idle
//!   procs' steals, which take the oldest spawns, its largest subtrees. Measured on the
//!   shared 2-core machine (load 5-6, other programs building) with the bench (`--only
//!   skynet,actor-skynet,bitonic,spawn,parpingpong,primes,pingpong --procs 1,2 --no-peers
//!   --runs 3 --rounds 1`, two alternations): skynet 729/3 of fibers on 2 procs 0.627 and
//!   0.751 ms against 1.04 and 1.52 ms (1 proc about 0.5 ms), Krook's skynet of fiber
//!   actors on 2 procs 0.767 and 0.780 ms against 1.73 and 1.11 ms, bitonic's fiber
//!   actors 0.682 and 0.690 ms against 0.940 and 0.634 ms, primes-1000 scheduler-placed
//!   86.1 ms both against 124 and 94.8 ms, the other rows within their noise;
//!   `examples/skynet_fibers 729 3 2 30` (one runtime, 30 trees), 3 alternations: medians
//!   326-474 us against 424-433 us (1 proc 439-447 us), 3-4 steals a tree where it ran
//!   faster than 1 proc.
//! - **Beside a busy process a dealt burst runs at the speed of one proc.** With one busy
//!   loop on a 2-core machine, three threads ready to run could each have 2/3 of a core
//!   if the kernel shared the cores by thread, and the two halves of a burst of independent
//!   pairs would finish in 3/4 of the time one core takes. It shares them by session where
//!   the busy loop is in a session of its own (below), and even in one session a proc
//!   woken by a futex while every CPU is busy runs on its waker's CPU (the wake-affine
//!   placement, 99.7% of the wake-ups measured, see "Explicit placement on a busy machine"
//!   below), so both procs share the dealer's core while the busy loop keeps the other,
//!   and the kernel does not move a thread to even out two threads on one core against
//!   one on the other within a run of tens of milliseconds.
//!   Measured and not kept: taking the dealer's CPU out of the receiver thread's CPU mask
//!   for the wake-up (`sched_setaffinity`, the mask given back right after; a wider mask
//!   moves no thread), on a crowded machine only. At load 17 the receiver ended its run
//!   on another CPU than the dealer in 25 of 39 dealt runs against 10 of 36 without, but
//!   the row beside the busy loop moved within its noise (20-run medians of the
//!   warm-up-then-timed sequence, autogroup at nice -20: 21.7, 28.1 and 20.3 M msgs/s
//!   against 21.0, 24.4 and 19.5 M without it, spreads 0.4-34 M; in the bench above, with
//!   it, 26.0, 20.2 and 17.3 M against 24.9, 22.2 and 17.1 M before), short of the 4/3 of
//!   one proc's figure it aimed at, so the three system calls a dealt part were left out.
//!   (The bench figures of the rule above are of that build, the rule and the mask both.)
//!   On a machine loaded by other sessions a second proc buys little anyway: with
//!   autogroup scheduling (on here,
//!   `/proc/sys/kernel/sched_autogroup_enabled`), a session's threads share one weight
//!   against the other sessions, so a second thread adds no share of the cores; dealt and
//!   undealt runs of the same batches at load 6 read medians of 14.3 M (68 runs) and
//!   15.3 M (19).
//!
//!   The bench's co-runner is such a session (a busy loop that leaves the bench's session,
//!   see the bench's `coload`), and beside it the two procs get one core between them, not
//!   4/3, whatever they do: the kernel balances the CPUs by the sessions' weights, and a
//!   session's weight is shared by its threads, so both procs on one CPU and the busy loop
//!   on the other is the balance it keeps (a proc on the busy loop's CPU would hold a third
//!   of it, and the kernel moves it off). `examples/parpp.rs 400000 spawn warm` prints each
//!   thread's CPU time and wait for a core over the run (`/proc/self/task/*/schedstat`) and
//!   the cores used (all threads' CPU time over the wall time), 6 alternations at load 1-3:
//!   on 2 procs quiet, 46.3 M msgs/s (40.6-53.9 M) on 1.81 cores (1.39-1.91); beside a busy
//!   loop in a session of its own, 28.0 M (15.5-33.9 M) on 0.99 cores (0.56-1.00), each
//!   proc's thread waiting about as long as it ran; beside one in the program's own
//!   session, 32.2 M (18.5-35.5 M) on 1.12 cores (0.64-1.36); one proc 29.6 M quiet and
//!   27.4 M beside the other session's loop, on 1.00 and 0.98 cores. The procs do not
//!   waste their core: quiet, 25.6 M msgs/s a core used, beside the loop 28.3 M (medians),
//!   with 3-8 parks a run and no steal. Go's 2-proc peer is given one core too (its CPU
//!   time over the wall time beside the loop, `time bench/peers/run.sh go parpingpong
//!   4000000 2`: 0.61-1.01, median 0.66), so a 2-proc row beside one busy session can
//!   read at most about one proc's figure, and its busy/quiet ratio at most about the
//!   inverse of its quiet 2-proc speed-up: a runtime whose 2-proc row scales less (Go's
//!   quiet 2-proc parallel ping-pong used 0.93-1.97 cores, median 1.03, in those runs)
//!   loses less of it. Measured and not kept: each proc's thread pinned to its own CPU
//!   (`sched_setaffinity`, so that the kernel cannot put both on one CPU), 6 alternations
//!   of the example: beside the busy loop 27.0 M msgs/s (25.0-34.0 M) against 25.6 M
//!   (19.3-28.5 M), but quiet 32.0 M (24.1-41.2 M) against 41.3 M (36.8-46.2 M), since a
//!   pinned proc cannot leave a CPU that another session's thread takes, and the proc
//!   that ends its pairs first cannot help the other; in the bench (one run each, load
//!   2-4) the quiet parallel ping-pong on 2 procs fell from 1.71x of one proc to 1.12x.
//!
//!   What a program that in effect runs on one proc (a spawn+join loop: the joiner takes its
//!   held child back) loses beside a busy process is its share of a core, not work, and no
//!   placement on 2 procs buys it back. The one-proc spawn+join loop (`examples/spawn1 2000000
//!   1`) at load 14-18 from other sessions, 6 alternations: the spawner's CPU time per
//!   spawn+join was 24.6 ns quiet and 21.2 ns beside a busy loop (medians), while its share of
//!   a core (CPU time over wall time) fell from 0.41 to 0.31; the other threads of the 2-proc
//!   runtime (the idle proc, the watchdog) added a median of 0.65 ns of CPU time a spawn+join
//!   (0.1-2.2, quiet and busy alike). With the program at `SCHED_FIFO` priority on CPU 0 (no
//!   other session's thread could take its core) and `yes` on CPU 1, the busy loop cost nothing
//!   measurable, pcml's 25-31 ns against 19-29 ns, Go's one-thread spawn 0.38-0.45 s against
//!   0.36-0.46 s a million: no cost of shared hardware (caches, a host core's other
//!   hyperthread) showed. The bench's co-runner, in the bench's own session, had cut that share
//!   further (to 0.24) under the kernel's per-session weights, and its runs of 10-20 ms
//!   measured whether the OS gave a core during them at all; the bench now starts co-runners in
//!   sessions of their own and sizes the compared runs to a fifth of a second (the bench's
//!   `coload`, `Ctx::fit_span`).
//! - **A held fiber wakes nobody.** Since no proc may take it for `HELD_GRACE`, a spawn
//!   does not wake an idle proc for it (work pushed on a deque does). Instead, while some
//!   proc spawns (its held slot's ticket moves) or holds a fiber, one idle proc, the
//!   watcher, parks at most `HELD_GRACE` and looks again, without spinning when its park
//!   timed out; a spawn wakes a sleeper only when no proc watches. Waking an idle proc at
//!   every spawn kept it cycling between a futex wake-up, 100 us of spinning and a park
//!   while another proc ran a spawn+join loop, and under load some such looks stole the
//!   held fiber (which then crossed procs to be joined): `examples/spawn1.rs 2000000 4`, 5
//!   runs each alternating at load 10, stole 9 fibers before and none with the watcher (on 8
//!   procs 4 and 3: the watchdog marks a proc that spawns and joins without a turn as
//!   hogged, and a spawner the OS deschedules can leave a fiber held 2 ms). The spawn path
//!   also lost its SeqCst fence.
//!   The price: a spawn that races with a proc falling asleep may go unseen (no fence on
//!   the spawner's side); the fiber then runs when its proc next takes a turn, or moves
//!   when the watchdog finds that proc hogged.
//! - **Taking a held fiber back costs its joiner nothing that a thief's steal could pay
//!   for.** The spawner puts and its joiner takes back with plain loads and stores; a thief,
//!   which waited `HELD_GRACE` already, raises a flag and has the kernel run a memory barrier
//!   on the process's CPUs (`membarrier`, a few microseconds) before it looks (an asymmetric
//!   Dekker pair, see `held`; where the kernel lacks it, `SeqCst` fences on both sides). The
//!   joiner's compare-and-swap on the slot was what a spawn+join on 2 procs paid over one
//!   proc (where the slot is a private cell): 25 ns of the spawner's CPU time against 16 ns
//!   (`examples/spawn1.rs 2000000 2`), 20 ns without it. In the bench
//!   (`pcml-bench --only spawn --procs 1,2 --co-runner 1 --peers go --runs 6 --rounds 2`,
//!   alternated with the build before at load 6-11) the 2-proc row's best runs went from
//!   38-40 M threads/s to 55-56 M, against 64-68 M on one proc (0.58x to 0.85x).
//! - **Many long-lived fibers are dealt out in long blocks, while the procs have cores.**
//!   Once 100 started fibers live on a proc, the fibers it spawns next go to the OS
//!   threads (carriers, below) in turn, 100 at a time (the next thread first, this one
//!   included; a block for another thread goes to its first proc, and one for this thread
//!   stays on this proc; like `spawn_on`'s, each starts and stays on its proc), as long as the spawner's OS thread spent at most a
//!   tenth of its time since the last block waiting for a core (the kernel's count, in
//!   `/proc/thread-self/schedstat`; for the first block, since 50 started fibers lived on
//!   the proc) and the receiving proc's thread has a core free right now: the threads run
//!   at a real-time priority (`SCHED_FIFO` or `SCHED_RR`, which a runtime's threads share,
//!   and which no normally scheduled process can take a core from), or the threads
//!   runnable by `/proc/loadavg`, less this runtime's awake threads (a carrier is awake
//!   while any of its procs is), plus this runtime's with the receiver's awake, are at
//!   most the cores (where either count cannot be read, every block stays). A block the
//!   tests keep leaves the turn with the thread it was for: the next block is offered to
//!   that thread again, so that a kept first block does not also send the second home.
//!   A kept block is offered once more halfway through (after 50 of its spawns,
//!   `SPILL_RETRY`), and its second half goes if both tests pass then, the turn moving on
//!   as for a block dealt whole. Both tests read the machine at one
//!   instant, and one thread runnable for a moment beside the spawner (another program's
//!   compiler, say) kept a whole block, a tenth of the chain, on a machine that
//!   had the cores: in runs of `examples/primes.rs spawn 1000 2` on the machine shared
//!   with other builds (load 2-3), 0 to 500 filters of 1,000 went to proc 1, and the runs
//!   that dealt fewer took longer (a median of 44 ms over 30 runs, the 17 with four or
//!   five blocks on proc 1 32-48 ms, the 2 with none 51 and 62 ms, against a median of 51
//!   ms on one proc; a busier moment both keeps blocks and slows a run, so not all of that
//!   is the layout's).
//!   With the second offer, 3 alternations of 8 runs at load 5-6: 9 of 24 runs with four
//!   or five blocks on proc 1 against 7 of 24, 8 runs in which a second offer dealt a half
//!   block, medians 52.1, 45.3 and 35.7 ms against 51.3, 49.4 and 49.0 ms; beside `yes`
//!   neither dealt a block (48.5, 48.6, 60.7 ms against 52.4, 47.6, 58.8 ms). In the bench
//!   (`pcml-bench --only primes --procs 1,2 --co-runner 1 --peers go --runs 6 --rounds 2`,
//!   4 alternations at load 5-13, 1-proc medians from 82 to 159 ms) the 2-proc row over
//!   the 1-proc row read 1.32x, 1.68x, 1.01x and 1.01x against 0.96x, 1.28x, 0.87x and
//!   1.23x, and beside the busy loop 1.63x, 0.81x, 1.31x and 0.98x against 1.02x, 0.79x,
//!   1.06x and 1.37x: within the machine's noise, no cost seen. An offer every 20 spawns
//!   (up to four more a block) dealt about as much (a mean of 294 filters on proc 1 in the
//!   same alternations, against 284 with the halfway offer and 259 with none) but reads the
//!   two counts 36 more times a run where every offer is refused (beside a busy process),
//!   each pair of reads some 40 us at that load.
//!   Each proc counts the blocks it dealt and the offers it refused, by reason
//!   (`ProcMetrics::blocks_dealt`, `blocks_kept_waited`, `blocks_kept_no_core`, which
//!   `examples/primes.rs` prints). The second test is for a co-runner:
//!   a spawner whose partner proc is parked has its core to itself beside one busy
//!   process, and the first test alone dealt blocks there (primes-1000 2 procs over 1 proc,
//!   both beside one busy loop, fell from 0.93x to 0.68x in the bench's procs run); with
//!   it, beside `yes`, no block was dealt in 8 runs (`examples/primes.rs spawn 1000 2 4`,
//!   76-102 ms against 78-93 ms on one proc beside it), and on the quiet machine 100 to 400
//!   filters of 1,000 went to proc 1 (59-100 ms against 84-122 ms on one proc). The case
//!   is a pipeline that grows, such as the primes sieve, whose filters are spawned one by
//!   one, each started before the next: kept on one proc it runs at one proc's speed, and
//!   cut in long blocks it runs on all of them, a message crossing procs only at a block's
//!   edge. Spawn+join, a tree of spawns and ping-pong pairs never have 100 fibers started on
//!   one proc, and a burst of spawns that have not run yet spreads by stealing, as before.
//!   Measured with primes-1000 (`examples/primes.rs`: `split 1000 2 R K` puts the generator
//!   and filters 1 to K-1 on proc 0 and the rest on proc 1, `blocks 1000 2 R B` deals the
//!   filters to the procs in blocks of B, `spawn` places them by this rule; each run prints
//!   each proc's resumes, parks and wake-ups sent across), alternations of 3 runs:
//!   - with a core each (the runs at `SCHED_FIFO` priority, so that the other processes of
//!     the shared 2-core machine could not take the cores), 5 alternations: medians of 88
//!     ms on one proc, 85 ms with every filter on one of 2 procs, 53 ms for one cut at K =
//!     280 (1.68x), 46 ms for blocks of 100 (1.91x), 52 ms for blocks of 50, 68 ms of 32, 89
//!     ms of 20 and 107 ms of 10 (more cuts, more hops); async tasks, which migrate, 57 ms
//!     (1.55x). This rule without its test of the run queue (and with its first block left
//!     on the spawner's proc), in 4 more alternations: 42 ms against 79 ms on one proc
//!     (1.89x);
//!   - on the same machine shared with other builds (load 9-12), the same rule took 378 ms
//!     against 246 ms on one proc (0.65x, 4 alternations), and blocks of 10 398 ms against
//!     175 ms: a pipeline pinned across two procs goes at the pace of whichever of its
//!     threads the OS has descheduled, each proc running dry and parking hundreds of times a
//!     run, where tokio's and Go's tasks move to the thread that has a core. Hence the test:
//!     a spawner whose thread waits for a core keeps its blocks, and the chain stays on one
//!     proc, at one proc's speed. With it, at load 12-14, no run of 12 dealt a block (median
//!     810 ms, against 895 ms on one proc and 1,075 ms on 2 procs before the rule; single
//!     runs from 0.34 s to 3.2 s), and with a core each the rule ran at 56 ms against 94 ms
//!     on one proc (1.68x, 5 alternations);
//!   - the rule before its first block's window, its real-time test and its kept turn dealt
//!     no block in most runs on this machine shared with the other helpers' builds (load
//!     1.7-7), even at `SCHED_FIFO` priority. Its decisions, traced: the loadavg test
//!     refused whenever any other thread was runnable (2 to 11 of them, counted as if each
//!     held a core, though at `SCHED_FIFO` none could take one from the sieve), and the
//!     first block's wait test looked at the thread's whole life, its start-up: 0.2-3 ms, of
//!     which 10-66% waiting (at `SCHED_FIFO`, 33 us of 206 us), refusing it in 4 runs of 6
//!     at load 2; a refused first block then sent the second home by turn, filters 0 to 299
//!     on the spawner (53% of the messages). With the three changes, 6 alternations of 3
//!     runs of `examples/primes.rs spawn 1000 2 3`, at load 7: under `chrt -f 1` 30.4 ms
//!     (25.3-37.2, 500 filters on proc 1 in each run) against 50.2 ms (44.1-70.7, none)
//!     before and 45.7 ms on one proc (1.50x); without it neither dealt a block (73.9 and
//!     78.4 ms, one proc 90.9 ms), nor beside `yes` (5 alternations; 207 and 209 ms, one
//!     proc 167 ms). Alone (load 3, `chrt -f 1`, 4 alternations of 3 runs): the real-time
//!     test 32.9 ms with 400-500 filters dealt, with the first block's window 27.0 ms (500
//!     in every run), with the kept turn 29.4 ms, the window and the kept turn without it
//!     44.6 ms (0-400), before 46.6 ms. Every block dealt at load 3 without `chrt` (the
//!     tests off) took 138 ms against 84 ms with none dealt (6 alternations): there the
//!     loadavg test is right. Blocks of 200, 150 and 50 (27.9, 29.1, 30.4 ms) and a first
//!     block kept here (30.0 ms) did not beat blocks of 100 (27.9 ms), and stay as they were.
//!     In the bench (`pcml-bench --only primes --procs 1,2 --runs 6 --rounds 2 --peers go`,
//!     3 alternations), under `chrt -f 1` at load 10-36: the spawn row on 2 procs 41.9-44.7
//!     ms against 58.6-66.7 ms before, tokio's 2 workers over it 1.22-1.46x against
//!     0.71-0.87x; without `chrt`, with `--co-runner 1`, at load 7-12: 1.58-1.71x against
//!     1.01-1.50x (tokio's times as noisy as the load), and 2 procs over 1 beside the busy
//!     loop 1.09-1.22x against 0.98-1.14x.
//!
//!   The counts show where the hops go, not the time. One proc resumes threads 573,791
//!   times for 516,383 messages; the busier proc resumed 466,000-510,000 times with the cut
//!   at K = 280 (about 1,440 messages cross, but each half runs dry and blocks where one
//!   proc would find its next number already offered), 288,000-295,000 times with blocks of
//!   10 (54,000-55,000 wake-ups across) and 361,000-386,000 with blocks of 100 (5,900-6,300
//!   across), the two procs parking 650-1,100 times a run between them (the idle proc of
//!   the one-proc layout: 33-53). A program can place its own pipeline with `spawn_on`:
//!   once near the middle of the work, or in blocks of 50-100 stages.
//!
//!   The blocks go round the OS threads rather than the procs because procs beyond the
//!   cores share threads (below): a block dealt to another proc of the spawner's own
//!   thread buys no core, and only adds a hop on that thread at each of its edges. And the
//!   core test counts this runtime's awake threads, not its awake procs: counted by procs,
//!   a spawner on 4 procs over 2 threads, whose thread's idle mate is awake by definition
//!   (a carrier's procs sleep together), counted 2 threads awake where 1 was, and so dealt
//!   a block beside one other runnable thread on the 2-core machine, where on 2 procs the
//!   same test kept it (traced: `running` 2, 4 procs awake of 8, proc 1 asleep). That made
//!   4 and 8 procs deal where 2 did not at the bench's low loads (2-3: one other runnable
//!   thread now and then), the pipeline then going at the pace of the thread that shared
//!   its core, and primes-1000 on 4 procs read 0.66x of 2 procs in the procs run. Now 2, 4
//!   and 8 procs over 2 threads take the same decisions and the same layout (filters 100 to
//!   199, 300 to 399, ... on proc 1, the rest on the spawner's proc). Measured under `chrt
//!   -f 1` (every block dealt), `examples/primes.rs spawn 1000 P 3`, 4 alternations with
//!   the build before: 2, 4 and 8 procs 28.8, 30.6 and 30.5 ms (medians of 12) against
//!   27.7, 31.4 and 32.1 ms, 300 and 200 filters on proc 1 before at 4 and 8 procs (the
//!   others on procs 2, 3, ...); in the bench (`pcml-bench --only primes,spawn --procs
//!   1,2,4,8 --peers go --runs 6 --rounds 2`, 6 alternations at load 7-22, where hardly a
//!   block is dealt at any proc count, so both builds keep the chain on one proc), 4 procs
//!   over 2 read 0.93x, 1.04x, 1.01x, 1.22x, 0.99x and 0.87x (the lowest round 0.73x)
//!   against 1.41x, 0.95x, 0.91x, 0.89x, 1.39x and 1.10x (0.42x), and 8 procs 1.23x, 1.04x,
//!   0.87x, 1.25x, 1.12x and 1.09x (0.65x) against 1.06x, 0.98x, 1.52x, 1.23x, 1.42x and
//!   0.75x (0.71x): the noise of a crowded machine.
//! - **Woken tasks run on the waker's proc** (tasks migrate freely), so a task woken by a
//!   message runs next to its sender; woken fibers always go home, through their proc's inbox.
//!   The exception is a task whose last poll left a choice of several branches pending: it
//!   stays with the proc where it made the choice (see "Fair choice across procs").
//!   A woken or spawned task that finds its proc's deque empty wakes no idle proc (tokio's
//!   rule for its LIFO slot): it runs at that proc's next turn, so two tasks that talk, and a
//!   child and the parent that awaits it, stay on one proc, and the pusher pays no SeqCst
//!   fence; it stays stealable by a searching proc, and the watchdog wakes a sleeper for it if
//!   the proc's thread computes on for a time slice. The second task pushed before that turn
//!   wakes one, so a burst of spawns still spreads. An idle proc counts another proc's queued
//!   work as work to take only if that proc has more than its next turn takes (two items of
//!   new work, its held fiber counted, or tasks woken during their own poll), and it gives up
//!   watching a lone item once that proc takes a turn: a pair of tasks that talk has the one
//!   not running queued about half the time, and an idle proc that counted it never parked
//!   (it spun on the pair's queue, bouncing its cache lines, and took a task of the pair
//!   whenever the queue looked full through the whole grace: 62 steals in the 6 runs of a
//!   benchmark row). A proc that runs out of its own work on a turn still takes a lone item
//!   left behind a thread that computes. Every 244th turn a proc runs its oldest new work
//!   first if more is queued above it: the deque runs the newest first, and such a pair keeps
//!   one task on top at every turn, so a task woken just before the pair's last message (the
//!   ponger, which had sent its last reply) waited below the next pair for that pair's whole
//!   run.
//! - **`spawn_on` is the exception**, for programs that know their layout: the thread runs on
//!   the named proc and is never stolen (Reppy, Russo and Xiao's benchmarks place threads this way).
//!   Two threads that exchange a message per unit of work should not be split across procs:
//!   each message then costs a cross-proc wake-up (below), which is worth paying only for
//!   work much larger than it, or for threads that mostly run alone.
//! - **An idle proc spins, then parks.** It looks for work for 100 us (50 us on its core, then
//!   giving the core away between looks, so on a machine with more runnable threads than cores
//!   it does not keep the thread with work off a core), then sleeps until its next timer or a
//!   wake-up. Only so many idle procs spin at once: half as many as the procs the machine's
//!   cores can run together (one on a 2-core machine, whatever the number of procs); the
//!   others look for 10 us (taking over if a spinner finds work meanwhile) and park. One
//!   spinner finds new work as soon as several would, and with more procs than cores (a
//!   `procs` setting taken from a bigger machine) spinners would take cores from the procs
//!   that have work. A spinner looks at its own queues and inbox every 200 ns or so (8
//!   pauses), at other procs' queues only every 8th look, and a proc watching a victim's
//!   queue through `STEAL_GRACE` reads it about every 3 us: each read takes the line of the
//!   victim's deque indices from the victim's core, so its next push or pop misses. With
//!   the other procs' queues read at every look (and a watched queue every pause), a 2-proc
//!   skynet of tasks that await their children's join handles, whose second proc spun and
//!   watched beside the first, ran at half the speed of one proc (`examples/skynet 729
//!   tasks-once 2000 3 2` under `chrt -f 1`, medians of 5 alternations: 239 us a tree
//!   against 121 us with the sparser reads; one proc 80 us). The spin does not ask whether
//!   the machine has a core to spare: two
//!   such tests (the thread's own wait for a core in `/proc/thread-self/schedstat`, the
//!   running count of `/proc/loadavg`) were measured and not kept: parking where they said
//!   "no core" cost the 2-proc echo server and, beside a busy loop, the 1-proc servers (the
//!   performance notes give the figures). A proc asks its own history instead, as adaptive
//!   mutexes do: it keeps a running share of its recent idle gaps that a spin covered (work
//!   came within the 100 us), each new gap weighing an eighth, and while that share is
//!   under a half it looks for 10 us, as a proc over the spin limit does, and parks; the
//!   park's length says whether a spin would have found the work, so the share comes back
//!   once gaps shorten. A spin that ran twice its length or more lost its core meanwhile,
//!   and is not counted (the wait was the OS's). An echo server's gaps are microseconds and
//!   its proc spins as before (0 skipped looks in 14,300 on 1 proc); a hyper server's under
//!   `wrk`, whose threads want the cores the spin would take, often outlast the spin (410
//!   skipped in 2,000 on 2 procs). The bench's hyper rows, alternated with the
//!   unconditional spin: 1 proc 0.901x-0.974x of tokio before, 1.01x-1.10x after (3 pairs,
//!   `chrt -f 1`), 0.905x-0.983x and 0.932x-1.03x beside a busy loop; 2 procs 0.935x-0.992x
//!   and 0.986x-0.995x, beside a busy loop higher in 5 of 7 pairs; in all, with 3 pairs
//!   more after a rebase, the 1-proc row rose in 8 of 9 pairs and the 2-proc row in 10 of
//!   13, and the echo rows moved within the noise (the performance notes give the figures).
//!   A carrier of several procs (`idle_all`) still spins whatever its history.
//!   Before it counts itself among the spinners (a read-modify-write of a count every proc
//!   writes as it goes idle and back, so its line is usually on the other core), a proc
//!   whose spins pay looks at its own queues and inbox alone for about 2 us, a pause apart,
//!   writing nothing another proc reads: the reply of a partner on another proc then finds
//!   it there, and its next turn pays no miss. With the proc's inbox laid out in its own
//!   pair of cache lines (count, lock and first messages together, see `inbox`), the
//!   paper-placed rows on 2 procs, alternated with the build before (`pcml-bench --only
//!   pingpong,parpingpong,primes --procs 2 --no-peers --runs 3 --rounds 1`, 3 pairs, 4
//!   December 2026, at a moment when a cache line took 470 ns there and back between the
//!   VM's two cores): ping-pong 903-907 k msgs/s against 657-660 k, parallel ping-pong
//!   2.21-2.26 M against 1.87-4.45 M, primes-1000 300-307 ms against 317-331 ms; the
//!   scheduler-placed rows unchanged. `examples/pingpong2 200000 placed 2` at 70 ns a line:
//!   343-379 ns a message against 553-616 ns. A carrier of several procs takes the same look
//!   at its own procs: on 4 and 8 procs (`--procs 4,8`, 2 alternations) the paper-placed
//!   ping-pong read 2.38-2.78 M msgs/s against 0.66-1.79 M. Beside one busy loop, where the
//!   crowding test parks a proc before any look, the paper-placed rows kept their figures
//!   (spawn 184-185 k/s, ping-pong 244 k msgs/s), the parallel ping-pong 825-827 k msgs/s
//!   against 870-872 k (`--co-runner 1`, 2 alternations).
//!   A proc back from a park that timed out (the held-slot watcher, or a
//!   timer that fired nothing for it) parks again at once if it found nothing: nobody
//!   handed it work, so none is on its way (a carrier whose procs all found nothing, the
//!   same). An idle proc whose steal was refused because the victim's thread had no core
//!   (the CPU-time test above) stops counting other procs' queued work as work until its
//!   next park ends, and parks `HELD_GRACE` at most: before, it saw the queue, looked,
//!   was refused and looked again, never parking, on a core the victim's thread was
//!   perhaps waiting for, for as long as the victim stayed off its core (tests/sched
//!   held.rs: a proc whose thread sleeps in the OS with 999 fibers queued; the idle proc
//!   used to park only once it had taken all but one). Now such a queue is a backlog,
//!   taken once the refusals have gone on for `STARVED_AFTER` (above), and the test leaves
//!   a pair, one fiber held and one queued, which stays while the idle proc parks.
//! - **Procs beyond the cores share OS threads.** A runtime starts at most as many OS
//!   threads, carriers, as the process can run at once (`available_parallelism`, which
//!   follows CPU affinity and cgroup quotas; at least two for two procs or more), and proc
//!   `p` runs on carrier `p % C`, the carrier taking turns of each of its procs in
//!   rotation, up to 32 in a row for a proc that has work ([`Builder::carrier_threads`]
//!   sets `C`; with one turn each, the empty turns of a busy proc's idle mates made
//!   scheduler-placed ping-pong on 8 procs 0.34x of 2 procs; with up to 32, 0.90x). A proc keeps its identity: its
//!   queues, inbox, timers and fibers are its own, `spawn_on(p)` places a fiber on it and
//!   `current_proc` names it, and a started fiber still never leaves its OS thread, so the
//!   thread-local reason it is pinned (see `fiber`) holds. What changes is the cost of a
//!   hop. With one OS thread per proc and more procs than cores, a message to a fiber of
//!   another proc wakes a parked thread (a futex wake-up, then a wait for the OS to give it
//!   a core); the Parallel CML paper's placement (round-robin `spawn_on`) pays that on
//!   nearly every message, and its 4- and 8-proc rows on a 2-core machine ran 5 to 25 times
//!   slower than on 2 procs (primes-1000 4 procs over 2: 0.20x; parallel ping-pong: 0.06x).
//!   Between two procs of one carrier the hop is an inbox push read at the receiver's next
//!   turn on the same thread, and between carriers it is what it is on 2 procs: `procs(8)`
//!   on 2 cores costs what `procs(2)` does. The price is that a fiber that computes without
//!   a sync point, or blocks its OS thread in a system call, holds up the other procs of its
//!   carrier too (their queued work and timers move to other carriers as a hog's do, see
//!   `watchdog`; their started fibers wait); a program that wants an OS thread per proc
//!   whatever the machine sets `carrier_threads` to its procs. Procs of one carrier never
//!   steal from each other (their work runs on that thread anyway), and take work from other
//!   carriers only when none of them has any; the carrier sleeps when all of them are idle,
//!   on one parker that a wake-up of any of them unparks. What a carrier pays for its idle
//!   procs is kept to loads: in its rotation a proc whose inbox, queues and the injector
//!   are empty has its turn counted (the watchdog takes a proc whose count stands still for
//!   a hog) and is passed over, with a full turn every 32nd for its timers; the carrier
//!   steals once, through its first proc, not once per proc; and an idle carrier's look for
//!   work reads each of its procs' own queues and, once for all, the surplus of the procs of
//!   other carriers. Before, every idle mate took a full turn on every rotation (a steal
//!   from an empty injector is a SeqCst fence), every proc stole in turn and every proc's
//!   look read every other proc's deques (on 8 procs over 2 threads, 28 deques a look where
//!   4 do; a profile of the paper's ping-pong spent half its samples there), so a message
//!   between carriers cost more on 8 procs than on 2: `examples/pingpong2 100000 placed P
//!   1` (pinger on proc 0, ponger on the last), run under `chrt -f 1` so that the other
//!   programs on the machine (load 8-10) did not set the pace, 6 alternations each, medians:
//!   739 ns a message on 8 procs before against 472 ns after (2 procs: 451 and 435 ns);
//!   `examples/cross_spawn 20000 8` 1,240 against 951 ns a child (2 procs: 963 and 885).
//!   The parallel ping-pong and the round-robin sieve ran as fast on 8 procs as on 2
//!   before and after (`parpp 20000`: 5.4-5.8 M against 5.2 M msgs/s; `primes placed 1000`:
//!   104-110 ms against 127-142 ms).
//! - **Explicit placement on a busy machine costs a wait for a core at every hop, so on a
//!   crowded machine idle procs park without spinning.** A started fiber cannot follow its
//!   partner to a thread that has a core (see `fiber`), so when the OS gives another program
//!   the core of a proc, every message to that proc's fibers waits until the OS runs its
//!   thread again. Programs placed with `spawn_on` so that every message crosses procs (the
//!   Parallel CML paper's benchmarks) then ran at the speed of the OS's scheduler: beside one
//!   busy-looping process on the 2-core machine this is developed on, 0.04x to 0.19x of their
//!   quiet speed (pcml-bench `--co-runner 1`), where Go, which moves a goroutine to whichever
//!   thread runs, kept 0.68x-1.05x. What the time went to: in `examples/cross_spawn 20000 2`
//!   (a parent on proc 0 joining children placed on proc 1) beside `yes > /dev/null`, each
//!   proc's thread spent about 94% of the run waiting for a core (`run_delay` in its
//!   `/proc/thread-self/schedstat`: 1.28 s of waiting against 0.08 s of running), in waits of
//!   about a millisecond each, while it parked only 0.05 times a child: the idle procs were
//!   spinning, so the machine had three threads ready for two cores, and the one the OS left
//!   waiting was as often as not the proc holding the partner's next message. So an idle proc
//!   first asks whether the machine is crowded, more threads ready to run than it has CPUs
//!   besides the asker (the kernel's count of ready threads, the fourth field of
//!   `/proc/loadavg`, looked at by one idle proc at most every 500 us and the verdict shared;
//!   `worker::crowd`; "its CPUs" are those the process may use at once, fewer than the
//!   machine's under an affinity mask (`taskset`, a cpuset) or a cgroup CPU quota (a
//!   container's `--cpus`), as `std::thread::available_parallelism` counts them: the count of
//!   ready threads is the whole machine's, so a confined process is called crowded more
//!   readily than a per-CPU count would, and parks where it might have spun), and if so parks at once: a spin would only keep a thread with work,
//!   quite likely its partner, off a core, while a parked proc is woken onto its waker's core
//!   and runs as soon as the waker itself blocks. On a quiet machine nothing changes but that
//!   look (one `pread` of `/proc/loadavg`, kept open: 1.3-1.7 us against 6.6-7.3 us for the
//!   open, read and close it was before, on the shared 2-core machine; at most once per 500 us
//!   for all procs),
//!   and procs spin as below. Measured on the 2-core machine at load 12-15 (other builds and
//!   benchmarks) with `yes > /dev/null` beside it, 6 alternations of the unchanged build and
//!   this one, medians (min-max): `cross_spawn 5000 2` 1,040 us a child (23-3,234) against
//!   24 us (14-82); `pingpong2 20000 placed 2` 254 us a message (138-839, one run of 6 over
//!   60 s) against 29 us (9-64); `PCML_PROCS=2 parpp 5000` 0.03 M msgs/s (0.00-0.10) against
//!   0.32 M (0.06-1.35); `primes placed 1000 2` 10.3 s (1.8-32.6) against 1.2 s (0.4-4.6).
//!   Without `yes` (the same load of other programs, so the machine was crowded too):
//!   `cross_spawn` 142 us a child (50-173) against 16 us (10-25), `pingpong2` 46 us a
//!   message (7-276) against 9 us (6-12), `parpp` 0.04 M msgs/s (0.02-0.18) against 0.39 M
//!   (0.16-0.72), `primes` 2.7 s (1.6-4.4) against 0.57 s (0.24-0.65). In the bench's procs
//!   run (`pcml-bench --only spawn,pingpong,parpingpong,primes --procs 1,2 --co-runner 1
//!   --peers go`, two alternations of the build before and this one, load 3-8, medians of 6
//!   samples), the paper-placed 2-proc rows beside one busy loop: spawn 42 k and 78 k
//!   threads/s before against 213 k and 208 k; the sieve 491 and 521 ms against 133 and 135
//!   ms; the parallel ping-pong 433 k and 260 k msgs/s against 736 k and 882 k; but the
//!   ping-pong 821 k and 440 k msgs/s against 282 k and 252 k: where every message is a hop,
//!   a spin sometimes caught the reply when the OS ran both threads at once, and a park never
//!   does. A short spin before that park (256 looks for work, a few microseconds) was
//!   measured and not kept: beside the busy loop, two alternations, the ping-pong read 460 k
//!   and 325 k msgs/s against 281 k and 289 k, but the spawn 95 k and 93 k threads/s against
//!   173 k and 197 k. Without the busy loop the paper-placed rows moved within 8% (spawn 1.61 M threads/s
//!   against 1.49 M and 1.45 M, ping-pong 2.89-2.99 M msgs/s against 2.77-2.78 M: a 2-core
//!   machine looks crowded now and then with no co-runner, when a third thread is ready for a
//!   moment), and the scheduler-placed rows, quiet and busy, within their noise. An idea
//!   measured first and not built: that the partner's thread, woken by a futex while both cores were busy, sat
//!   queued behind the other program while the waker's core went idle, so that a proc about
//!   to park might move it onto its own core (`sched_setaffinity`). A flag set at
//!   the futex wake-up and cleared when the wakee's wait returned was never found set by a
//!   proc about to park in 60,000 children of `cross_spawn`, 200,000 messages of `pingpong2`,
//!   the parallel ping-pong and the sieve beside `yes`; 99.7% of futex wake-ups ran the wakee
//!   on the waker's own CPU (the kernel's wake-affine placement), 93% within 5 us. Before the
//!   crowding test, two cheap changes were measured and not kept, at load 9-14 (`cross_spawn
//!   20000 2`, alternated with the unchanged build): letting every idle carrier spin when
//!   there are no more carriers than cores took parks from up to 0.67 a child to 0.00-0.02,
//!   but each child took 110-342 us (median 130) against 20-168 us (median 72), 18 runs each;
//!   and halving an idle proc's spin after each spin that found the machine crowded gave a
//!   median of 99 us a child against 99 us: a shorter spin still holds the core a partner
//!   waits for. A program that talks across procs all the time can still do better on a
//!   machine known to be busy with fewer carriers ([`Builder::carrier_threads`]`(1)` puts
//!   every proc on one OS thread, where a hop is an inbox push on that thread, at the price
//!   of running on one core): the paper's parallel ping-pong on 2 procs at load 9-10
//!   (`PCML_PROCS=2 examples/parpp 20000 T`, 5 alternations) ran 1.6-9.4 M msgs/s (median
//!   4.0 M) on one thread against 0.03-0.15 M (median 0.07 M) on two, before the crowding
//!   test.
//!
//!   What is left of a hop beside a busy loop is the OS's own price, not the scheduler's: two
//!   parked procs that take turns on one core pay a futex wake-up, a futex wait and a switch
//!   of OS threads a hop, whatever the runtime does around them, and a spin (above) or a
//!   `sched_yield` instead of the park is worse (below). `examples/pingpong2 N threads` hands a
//!   counter between two plain OS threads that park until it is their turn
//!   (`std::thread::park`): alternated with `pingpong2 50000 placed 2 1`, 6 runs each, all
//!   under `chrt -f 1` beside a `chrt -f 1 yes` (so that the other programs of the loaded
//!   2-core machine, load 9-12, do not set the pace: the busy loop keeps one core and the two
//!   procs share the other), the placed ping-pong took 3.36-4.31 us a message (median 3.63)
//!   against 2.94-3.82 us (median 3.50) between the bare threads, and `cross_spawn 20000 2`
//!   (two hops a child) 7.0-10.7 us a child (median 8.1); without `chrt`, beside `yes` at
//!   load 9-12, 4.8-13.5 us (median 7.8) against 3.0-10.3 us (median 8.6). Against a quiet
//!   hop of about 400 ns (both procs spinning on a core each), that floor bounds the
//!   busy/quiet ratio of a paper-placed row to about 0.1x, which is what the bench's rows
//!   show (0.08x-0.13x); Go keeps 0.5x-1.0x because it moves the goroutines onto the
//!   thread that has the core, which a started fiber cannot do (see `fiber`). Yielding the
//!   core instead of parking, a few `sched_yield`s with a look at the inbox after each
//!   before the park, was measured and not kept: `pingpong2 50000 placed 2 2` beside `yes`
//!   at load 9-16, 3 alternations, took 8.1-290 us a message with 1, 4 or 16 yields against
//!   9.5-25 us parking at once: the OS then no longer moves a woken proc onto its waker's
//!   core, and a proc left beside the busy loop waits for it a time slice at a time. Nor was
//!   one `sched_yield` by a proc that has just woken a sleeping proc on a crowded machine,
//!   before its next turn (to run the wakee, put on the waker's core, at once, so that its
//!   reply finds the waker awake): beside `yes` at load 6-9, 6 alternations, `cross_spawn
//!   20000 2` took 6.2-301 us a child (7 of 18 runs over 40 us) against 5.0-35 us, the yield
//!   handing the core to the busy loop whenever it shared it; the ping-pong moved within its
//!   noise (5.1-21 us a message against 6.0-16 us). Looking
//!   at `/proc/loadavg` every 5 ms instead of every 500 us (fewer system calls on the idle
//!   path) moved the same figures within their noise (3.75-4.43 us against 3.95-4.57 us
//!   under `chrt -f 1`). Short of fewer OS threads ([`Builder::carrier_threads`], above, at
//!   the price of the second core), what is left to save is the number of those switches,
//!   next.
//! - **On a crowded machine, a wake-up of a sleeping proc leaves when its waker's turn
//!   ends.** Unparked at once, the sleeping proc's thread is put on its waker's core (the
//!   kernel's wake-affine placement, above) and, having slept, preempts the waker there: it
//!   runs the one fiber woken, whose reply finds the waker's fiber not yet blocked, and parks
//!   again; every message of a ping-pong so cost two switches of OS threads, and the paper's
//!   parallel ping-pong (eight pairs, each split across the procs) woke the other proc for
//!   each message instead of once for the eight its proc had ready. So a fiber's wake-up sent
//!   to another proc's inbox (`Context::send_wake`) while that proc sleeps and the machine is
//!   crowded (`crowd`) is pushed at once but its unpark is owed (a bit per proc,
//!   `ProcWatch::unparks_owed`): the proc pays what it owes when it runs out of work (before
//!   it spins or parks, so nothing can sleep on an owed wake-up), at its next timer turn
//!   (every 32 turns, so a long queue holds it back for at most that many), and, if a
//!   fiber holds the proc's thread without a sync point, the watchdog pays it at its next
//!   look (the test `a_wake_up_across_procs_leaves_while_its_sender_computes`). On a quiet
//!   machine nothing changes: the unpark leaves with the push. Measured on the 2-core
//!   machine beside `yes > /dev/null` in a session of its own (load 3.6, helpers' builds
//!   running too), the unchanged build and this one alternated 3 times:
//!   `PCML_PROCS=2 examples/parpp 30000` 0.77-0.82 M msgs/s against 1.81-2.08 M (parks
//!   125 k against 35 k a run of 480 k resumes), `pingpong2 50000 placed 2 1` 4.21-4.23 us
//!   a message against 2.64-2.68 us (parks a message 1.0 against 0.56), `cross_spawn 10000
//!   2` (5.4-6.2 us a child against 5.4-5.4), `primes placed 1000 2` (187-196 ms against
//!   182-201) and `primes spawn 1000 2` (73-78 ms against 75-76) within their noise; in the
//!   bench's procs run (`--only spawn,pingpong,parpingpong,primes --procs 1,2 --co-runner 1
//!   --no-peers --runs 3 --rounds 1`, two alternations, load 2.5-4.8) the paper-placed
//!   parallel ping-pong beside the busy loop 2.11 M and 1.03 M msgs/s against 829 k and
//!   412 k, the ping-pong 382 k and 186 k against 234 k and 160 k, and the
//!   scheduler-placed rows within their noise. Where the count of ready threads calls the
//!   machine crowded but the procs have cores anyway (run under `chrt -f 1`, above, which
//!   puts them ahead of the other programs the count includes), the held-back unpark costs
//!   the overlap of the two procs' turns: `parpp 30000` there ran 3.07-3.13 M msgs/s
//!   against 3.46-4.19 M (4 alternations, load 4.3), while `pingpong2` ran 0.95-1.01 us a
//!   message against 5.1-6.5 us (one run of 4 at 9.2 us).
//!
//! ## Fair choice across procs
//!
//! A choice picks uniformly among the branches enabled when it looks (see `event`), but that
//! alone is not fair between partners that re-offer at different speeds. A fiber woken on the
//! chooser's own proc re-offers only once the chooser has suspended and the proc runs it; a
//! fiber of another proc re-offers once its own proc has drained the wake-up and run it, which
//! may be sooner (that proc is idle and spinning) or much later (its thread has no core). Left
//! alone, a loop of `select` between a sender on its proc and one on another, both always
//! ready, gave the remote sender between 0 and 5 of 20,000 wins on the 2-core machine this is
//! developed on, and in some runs most of them.
//!
//! So partners of a choice take turns, whatever proc they live on:
//! - **A remote partner's wake-up leaves at the turn a local one would run.** A choice that
//!   takes the offer of a fiber of another proc queues its wake-up in its own proc's inbox;
//!   once the chooser has blocked or yielded, the proc's loop counts the fibers then ready and
//!   sends the wake-up after as many turns: the remote fiber re-offers no sooner than a local
//!   one that the choice woke would (and not before the local fibers queued ahead of it).
//! - **That fiber owes the chooser's proc a turn.** Its proc runs it at once when the wake-up
//!   arrives, and sends back word (`Paid`) when it has suspended again, with its next offer
//!   in place.
//! - **Local partners wait for owed turns.** While turns are owed to a proc, the fibers of
//!   that proc that its choices wake wait, runnable but not queued, until every owed turn is
//!   paid: the local partner re-offers no sooner than the remote one. A choice takes the
//!   payments waiting in its proc's inbox before it looks at its branches.
//!
//! The choice itself never waits: it takes whatever is enabled, or blocks as usual. What waits
//! is the local partner whose offer it took, and not for ever: every 2 ms the waiting proc
//! reads the CPU time of the procs that owe it, and gives their turns up if one of them ran
//! 1 ms or more without paying (it is busy with something else, a long computation say: the
//! partner is then treated as gone); one that did not run has no core, and waiting for it is
//! the fair thing to do, since the waiting proc parks meanwhile. After 500 ms the turns are
//! given up whatever happened. A partner that ends, or blocks on something else, pays as it
//! suspends. On a runtime of one proc nothing is ever owed, and the rule costs a choice a few
//! thread-local loads and stores and their tests (callgrind, `examples/choose1` over 4
//! channels: 3,552 instructions per message against 3,531, +0.6%); it adds nothing to a plain
//! send or receive, a spawn or a join.
//!
//! With the rule, the loop above gives each sender between 8,450 and 11,550 of 20,000 wins
//! (tests/sched/steal.rs, repeated on the loaded 2-core machine). Its price is on the
//! cross-proc path: one more inbox message per remote partner taken by a choice, and a
//! cross-proc wake-up that leaves when the chooser suspends rather than at once. The same
//! holds with the chooser on the sending side: a loop of `select` between sending to a
//! receiver on the chooser's proc and to one on another proc gave each receiver between
//! 8,590 and 11,421 of 20,000 messages in 15 runs.
//!
//! An async task chooses under the same rule, with one more step:
//! - **A task's pending choice keeps it on the proc where it made it.** A task whose poll
//!   leaves a choice of several branches pending is marked until its next poll. Woken by a
//!   partner on that proc, it waits in the proc's own queue of placed work, which no other
//!   proc steals from; woken by a partner on another proc, it goes back through the proc's
//!   inbox, as a fiber's wake-up goes home. Any other wake-up runs a task on the waker's
//!   proc. So the turns are owed to the proc where the choice was made, and its local
//!   partners wait there, as for a fiber.
//! - **The proc of the choice is waited for unless it computes.** Only when the watchdog
//!   finds that proc running one thread for a time slice and that thread using the CPU
//!   (three quarters of the slice) does the task run where it was woken. A proc that takes
//!   no turn because its OS thread waits for a core (a busy machine) is also marked hogged
//!   by the watchdog, so that other procs take its queued work, but a task is not moved off
//!   it for that.
//!
//! Why both: a task that ran wherever it was woken sat beside the partner that had woken it
//! last, whose next offer then came first. And a task that left the proc of its choice while
//! that proc's thread waited for a core (taken by an idle proc, or run by a waker that found
//! the silent proc marked hogged) ran beside the other proc's partner with nothing owed: a
//! round between a task and a fiber of one proc takes about a microsecond, and the partner
//! left behind cannot offer until its thread has a core again, so one such wait gave one
//! sender thousands of wins in a row (2,879 in 1.9 ms, in a timeline of the scheduler's
//! events on the 2-core machine at load 10-14). Measured with a loop of 20,000
//! `choose([a.recv_evt(), b.recv_evt()]).await` in a task and an always-ready sender on each
//! of 2 procs (the fiber loop above, in a task; counting from when each sender has won once),
//! at load 9-14 with a busy-looping process beside it: before the second step, 8 of 270
//! tries gave one sender fewer than a third of the wins (runs of up to 14,693 wins of one
//! sender in a row); with it, none of 60 tries (the fewest wins 7,916), and
//! the two long runs left (2,000 and 2,237) came from a proc whose thread the OS left
//! runnable but unscheduled for 0.7 s (its wait time in `/proc/<pid>/task/<tid>/schedstat`),
//! after which the owed turns are given up, and from a waker that found the proc of the
//! choice computing. The test `a_task_choice_between_a_local_and_a_remote_sender_is_fair`
//! (tests/sched/steal.rs), run 30 times at load 10-13 (15 of them beside a busy loop),
//! passed every time at its first try (the fewest wins 8,276).
//!
//! What a task pays for it: a task whose pending choice a partner on another proc completes
//! is woken through an inbox (a push, and a futex wake-up if its proc sleeps) instead of
//! running at once beside that partner, and one woken on its own proc is not taken by an idle
//! proc, even if its proc then computes for long (as a fiber would not be); its poll costs one
//! store more (the proc's record of the running task), a pending choice a load and a store of
//! the task's header, and every wake-up of a task on the proc that polled it last a test of
//! the mark. Every task on a runtime of one proc takes the path it took before but for that
//! test (callgrind, `examples/taskpp async`, one proc, difference of 20,000 and 60,000 round
//! trips: 1,643.6 instructions a round trip against 1,639.9, +0.2%; `pingpong1` 815.9 against
//! 815.7, `choose1` 3,756.9 against 3,756.9, `spawn1` 196.1 against 195.9, medians of two
//! alternations).
//!
//! ## What crossing procs costs, and how it grows
//!
//! Measured on the 2-core VM this library is developed on, and modelled for bigger machines:
//! - a cache line moving between cores: about 80-200 ns (1.2 us in the VM's slow spells),
//!   against 1-5 ns for a line in the proc's own cache. A cross-proc rendezvous on a channel
//!   moves 3-4 lines (the channel's lock and queue, the partner's sync record, the inbox);
//! - waking a fiber of another proc: an inbox push (one line, plus the proc's `sleeping` flag
//!   read after a SeqCst fence), then the home proc's turn to drain it. If the home proc is
//!   spinning that is one more line; if it is parked it is a futex wake-up, about 45 us here,
//!   and if the OS has given its core to another process, one OS time slice (milliseconds);
//! - an idle proc's look for work reads one line per other proc (its deque ends, held slot
//!   and inbox): O(P) per look, so at 16 procs a look reads 16 lines; a steal then takes half
//!   the victim's deque in one batch, so spreading a tree of N spawns takes O(log N) steals
//!   per proc rather than one per thread;
//! - notifying idle procs of new work wakes at most one sleeper per push, and none while a
//!   proc is searching: the cost per spawn stays O(1) in P;
//! - a joiner taking back its held fiber costs no locked instruction at any P; the idle proc
//!   that steals a held fiber (only after it waited `HELD_GRACE`) pays a `membarrier`, an
//!   interrupt to every CPU then running a thread of the process (a few microseconds here),
//!   which grows with the procs awake, O(P), once per such steal;
//! - the crowding test of an idle proc (one `pread` of `/proc/loadavg`) is made at most once
//!   every 500 us for the whole runtime, whatever P.
//!
//! - between two procs of one carrier (more procs than cores): an inbox push and its
//!   drain on the same thread, no wake-up at all; the carrier's rotation adds one look at
//!   each of its procs' inboxes and queues per round, loads only (a proc with work takes
//!   up to 32 turns a round).
//!
//! On 16 procs (the Parallel CML paper's figures run on 16 to 48 cores) the per-operation
//! costs above stay the same except the idle look, which grows linearly; what grows is the
//! chance that a message's partner is remote. With scheduler placement a thread's partners
//! are, in the common case, the threads it spawned or was spawned with, so the share of
//! messages that cross procs is the share of threads that were stolen: each steal moves
//! half a queue, so in a tree-shaped program it falls as the tree grows. With round-robin
//! `spawn_on`, as in Reppy, Russo and Xiao's primes, a share (P-1)/P of the messages cross procs: 15/16
//! at 16 procs, each paying a cross-proc wake-up, so that program scales only where the work
//! per message is larger than a wake-up (the paper's Manticore figures: primes-2000 in
//! 3.08 s on 1 proc, 0.92 s on 8).
//!
//! A thread that computes without a sync point holds its proc: see `watchdog` for
//! [`consume_budget`], and for the watchdog that lets the other procs take what such a proc
//! leaves waiting.
//!
//! Deadlock (Krook's NoRunnableThreads; CML shuts down the same way): when the last proc goes
//! to sleep and main is blocked, every queue is empty and no blocking job, timer or I/O source
//! is pending, and nothing outside the runtime can act (no OS thread but pcml's own and those
//! waiting in `block_on`, no other runtime that is not idle: see `outside`), `block_on` returns
//! [`RuntimeError::Deadlock`] naming how many threads are blocked. [`Builder::detect_deadlock`]
//! says exactly what is and is not detected. Partial deadlocks, threads that wait on each
//! other while the rest runs, are found from the wait-for graph (see `waitfor`):
//! [`deadlocks`], [`Runtime::deadlocks`], [`Builder::report_deadlocks`].
//!
//! # What a destructor may do at shutdown
//!
//! Shutdown drops the threads left when main returns: started fibers are unwound on their
//! procs, queued tasks and unstarted fibers are dropped by their procs, and what is left after
//! the procs stop (tasks waiting in an `.await`, the injector) by `Runtime`'s drop, on the
//! thread that called `block_on`. Their destructors may send without blocking, wake other
//! threads and spawn; they must not block (a blocking call there panics, as nothing is left
//! to wake it, and the panic is that thread's join error). A thread spawned there never runs:
//! on a proc it is dropped with the proc's queues, and off the procs the spawn (`spawn`,
//! `try_spawn`, `spawn_on`, `spawn_task`, `spawn_blocking`, an actor's spawn) cancels it at
//! once: its body is dropped on the spot and its join reports a cancellation
//! ([`JoinError::is_cancelled`]). (A blocking job spawned by a proc's shutdown may still run:
//! the blocking pool stops after the procs, and cancels the jobs still queued when it does.)
//! Either way the spawn returns a handle and does not panic
//! (a guard that spawns a clean-up or notifies a supervisor cannot handle a panic, and one
//! during another unwind aborts the process), and nothing of the new thread leaks.
//!
//! # Invariants
//! - See `worker` for the run-queue and sleep invariants, `owed` for the turns owed across
//!   procs, `join` for results, `blocker` for wake-ups.

pub(crate) mod blocker;
pub(crate) mod blocking;
pub(crate) mod dump;
pub(crate) mod fibers;
pub(crate) mod held;
pub(crate) mod inbox;
pub(crate) mod io;
pub(crate) mod join;
pub(crate) mod metrics;
pub(crate) mod outside;
pub(crate) mod owed;
pub(crate) mod panic;
pub(crate) mod registry;
pub(crate) mod runtime;
pub(crate) mod sigquit;
pub(crate) mod spawn;
pub(crate) mod timer;
pub(crate) mod waitfor;
pub mod watchdog;
pub(crate) mod worker;

#[cfg(all(test, pcml_loom))]
mod tests;

pub use dump::{
    Dump, ObjectId, SpawnBuilder, ThreadDump, ThreadKind, ThreadState, current_name, dump,
};
pub use join::{JoinError, JoinHandle, ThreadId};
pub use metrics::{ProcMetrics, RuntimeMetrics, metrics};
pub use runtime::{BuildError, Builder, MAX_PROCS, Runtime, RuntimeError, run};
pub use sigquit::dump_on_sigquit;
pub use spawn::{
    SpawnError, YieldAsync, current, exit, spawn, spawn_blocking, spawn_on, spawn_task,
    try_current, try_spawn, try_spawn_on, yield_async, yield_now,
};
pub use waitfor::{PartialDeadlock, deadlocks};
pub use watchdog::{ConsumeBudget, consume_budget, consume_budget_async};

pub(crate) use runtime::default_procs;
pub(crate) use worker::location;
