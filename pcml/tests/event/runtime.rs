//! Events and the runtime: the sync budget keeps always-ready loops from hogging a proc (for
//! fibers and tasks), and fibers dropped at shutdown while blocked in a sync cancel it.

use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Mutex};

use pcml::chan::Chan;
use pcml::event::{Event, always, never, select, with_nack};

fn one_proc() -> pcml::Runtime {
    pcml::Runtime::builder().procs(1).build().unwrap()
}

#[test]
fn a_fiber_looping_on_ready_events_lets_others_run() {
    one_proc()
        .block_on(|| {
            let started = Arc::new(AtomicBool::new(false));
            let stop = Arc::new(AtomicBool::new(false));
            let (st, s) = (started.clone(), stop.clone());
            let spinner = pcml::spawn(move || {
                st.store(true, SeqCst);
                while !s.load(SeqCst) {
                    always(()).sync();
                }
            });
            // Runs only if the spinner yields once it has started.
            let s = stop.clone();
            let setter = pcml::spawn(move || {
                while !started.load(SeqCst) {
                    pcml::yield_now();
                }
                s.store(true, SeqCst)
            });
            setter.join().unwrap();
            spinner.join().unwrap();
        })
        .unwrap();
}

#[test]
fn a_task_looping_on_ready_events_lets_others_run() {
    one_proc()
        .block_on(|| {
            let started = Arc::new(AtomicBool::new(false));
            let stop = Arc::new(AtomicBool::new(false));
            let (st, s) = (started.clone(), stop.clone());
            let spinner = pcml::spawn_task(async move {
                st.store(true, SeqCst);
                while !s.load(SeqCst) {
                    always(()).await;
                }
            });
            let s = stop.clone();
            let setter = pcml::spawn_task(async move {
                while !started.load(SeqCst) {
                    pcml::yield_async().await;
                }
                s.store(true, SeqCst)
            });
            setter.join().unwrap();
            spinner.join().unwrap();
        })
        .unwrap();
}

#[test]
fn shutdown_cancels_blocked_syncs_and_fires_their_nacks() {
    let slot: Arc<Mutex<Option<Event<()>>>> = Arc::default();
    let ch = Chan::<String>::new();
    let other = Chan::<String>::new();
    let (s, c, o) = (slot.clone(), ch.clone(), other.clone());
    one_proc()
        .block_on(move || {
            let s2 = s.clone();
            let c2 = c.clone();
            // Blocked forever in a choice: dropped (unwound) at shutdown.
            pcml::spawn(move || {
                select([
                    with_nack(move |nack| {
                        *s2.lock().unwrap() = Some(nack);
                        never::<String>()
                    }),
                    c2.recv_evt(),
                ])
            });
            // Blocked forever in a plain send on another channel.
            let o2 = o.clone();
            pcml::spawn(move || o2.send("kept".to_string()));
            while s.lock().unwrap().is_none() || o.queue_lens().0 == 0 {
                pcml::yield_now();
            }
        })
        .unwrap();
    // The dropped choice lost every branch: its nack fired.
    let nack = slot.lock().unwrap().take().unwrap();
    assert_eq!(nack.poll(), Some(()));
    // Neither dropped sync can be matched any more.
    assert_eq!(ch.try_send("late".to_string()), Err("late".to_string()));
    assert_eq!(other.try_recv(), None);
}
