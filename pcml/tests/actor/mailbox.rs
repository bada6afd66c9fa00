//! Actors: the owner's private part of the mailbox (messages its receives took out of the
//! shared queue in one lock) against everything else that reads the mailbox: receive events,
//! marks, lengths, signals, kills.

use std::time::Duration;

use pcml::actor::{self, Ctx, Received};

fn rt(procs: usize) -> pcml::Runtime {
    pcml::Runtime::builder().procs(procs).build().unwrap()
}

/// After a receive took the mailbox private, the length counts both parts, and a receive
/// event (synced on another thread) gets the oldest message, which was private.
#[test]
fn a_receive_event_sees_the_private_messages_in_order() {
    let mut me = Ctx::new();
    me.pid().send_many([1, 2, 3, 4]).unwrap();
    assert_eq!(me.receive(), 1);
    me.pid().send(5).unwrap();
    assert_eq!(me.len(), 4);
    assert!(!me.is_empty());
    let ev = me.receive_evt();
    assert_eq!(std::thread::spawn(move || ev.sync()).join().unwrap(), 2);
    let ev = me.receive_match_evt(|m| m % 2 == 0);
    assert_eq!(ev.sync(), 4);
    assert_eq!(me.receive(), 3);
    assert_eq!(me.receive(), 5);
    assert!(me.is_empty());
}

/// A receive event that is alive (not yet synced) keeps the owner's receives on the shared
/// queue; once it is dropped the owner takes messages private again; order holds throughout.
#[test]
fn receives_alternate_with_a_live_receive_event() {
    let mut me = Ctx::new();
    me.pid().send_many(0..10).unwrap();
    assert_eq!(me.receive(), 0);
    let ev = me.receive_match_evt(|m| *m == 9);
    assert_eq!(me.receive_match(|m| m % 2 == 1), 1);
    assert_eq!(me.receive(), 2);
    assert_eq!(ev.sync(), 9);
    assert_eq!(me.receive_match(|m| *m > 6), 7);
    let ev = me.receive_evt();
    drop(ev);
    assert_eq!(me.recv_many(5), vec![3, 4, 5, 6, 8]);
    assert_eq!(me.try_receive(), None);
}

/// A mark taken while messages are private still skips exactly the messages before it, and
/// a receive that removes one restarts the scan from the oldest.
#[test]
fn marks_count_the_private_messages() {
    let mut me = Ctx::new();
    me.pid().send_many([1, 2, 3]).unwrap();
    assert_eq!(me.receive(), 1); // 2 and 3 are private now
    let mark = me.mark();
    me.pid().send_many([2, 3]).unwrap();
    assert_eq!(me.receive_match_since(mark, |m| *m == 3), 3);
    assert_eq!(me.len(), 3);
    // A message was removed since the mark: the scan starts from the oldest again.
    assert_eq!(me.receive_match_since(mark, |m| *m == 3), 3);
    assert_eq!(me.recv_many(2), vec![2, 2]);
}

/// A mark taken while the messages are still in the shared queue (nothing private yet) is
/// honoured by a receive that starts with an empty private part.
#[test]
fn a_mark_past_the_private_part_skips_the_shared_messages_before_it() {
    let mut me = Ctx::new();
    me.pid().send_many([(1, 'a'), (1, 'b')]).unwrap();
    let mark = me.mark();
    me.pid().send((1, 'c')).unwrap();
    assert_eq!(me.len(), 3);
    assert_eq!(me.receive_match_since(mark, |m| m.0 == 1), (1, 'c'));
    // The two older ones are still there.
    assert_eq!(me.recv_many(2), vec![(1, 'a'), (1, 'b')]);
    let mark = me.mark();
    me.pid().send_many([(2, 'd'), (3, 'e')]).unwrap();
    assert_eq!(me.receive_match_since(mark, |m| m.0 >= 2), (2, 'd'));
    assert_eq!(me.receive(), (3, 'e'));
}

/// Signals come before private messages in `receive_any`, which sees the private messages.
#[test]
fn receive_any_sees_private_messages_after_signals() {
    let mut me = Ctx::new();
    me.pid().send_many(["a", "b"]).unwrap();
    assert_eq!(me.receive(), "a");
    let other = Ctx::<()>::new();
    me.monitor(&other.pid());
    drop(other);
    assert!(matches!(me.receive_any(), Received::Signal(_)));
    assert!(matches!(me.receive_any(), Received::Msg("b")));
}

/// A kill takes effect at the next receive even while the mailbox holds private messages.
#[test]
fn a_kill_ends_an_actor_with_private_messages_at_its_next_receive() {
    rt(2)
        .block_on(|| {
            let mut me = Ctx::<u32>::new();
            let reply = me.pid();
            let (go, wait) = (pcml::IVar::new(), pcml::IVar::<()>::new());
            let (go2, wait2) = (go.clone(), wait.clone());
            let pid = actor::spawn(move |mut ctx: Ctx<u32>| {
                let _ = reply.send(ctx.receive()); // takes 1, keeps 2 and 3 private
                go2.put(()).unwrap();
                wait2.get(); // killed meanwhile
                let _ = reply.send(ctx.receive());
            });
            let watch = me.monitor(&pid);
            pid.send_many([1, 2, 3]).unwrap();
            assert_eq!(me.receive(), 1);
            go.get();
            pid.kill("enough");
            wait.put(()).unwrap();
            match me.receive_signal() {
                pcml::actor::Signal::Down {
                    monitor, reason, ..
                } => {
                    assert_eq!(monitor, watch);
                    assert!(reason.is_abnormal(), "{reason}");
                }
                s => panic!("unexpected {s:?}"),
            }
            assert_eq!(me.try_receive(), None);
        })
        .unwrap();
}

/// Async actors take messages private too, and a timed receive in between (an event) sees
/// them.
#[test]
fn async_receives_and_a_timed_receive_share_the_private_messages() {
    rt(1)
        .block_on(|| {
            let mut me = Ctx::<Vec<u32>>::new();
            let reply = me.pid();
            let pid = actor::spawn_async(move |mut ctx: Ctx<u32>| async move {
                let mut got = vec![ctx.recv().await];
                got.push(ctx.recv_match(|m| *m == 4).await);
                got.extend(ctx.recv_timeout(Duration::from_secs(5)).await);
                got.push(ctx.recv().await);
                got.extend(ctx.recv_many_async(1).await);
                let _ = reply.send(got);
            });
            pid.send_many([1, 2, 3, 4, 5]).unwrap();
            assert_eq!(me.receive(), vec![1, 4, 2, 3, 5]);
        })
        .unwrap();
}

/// A selective receive whose predicate panics leaves the mailbox usable, whether the
/// predicate ran on private messages (no lock) or under the mailbox's lock (a receive event
/// alive): the message stays, sends and receives go on.
#[test]
fn a_panicking_predicate_leaves_the_mailbox_usable() {
    let mut me = Ctx::new();
    me.pid().send_many([1, 2]).unwrap();
    for with_event in [false, true] {
        let ev = with_event.then(|| me.receive_match_evt(|m: &u32| *m > 100));
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            me.receive_match(|m: &u32| if *m == 1 { panic!("no") } else { false })
        }));
        assert!(r.is_err());
        me.pid().send(3).unwrap();
        assert_eq!(me.len(), 3);
        drop(ev);
        assert_eq!(me.receive_match(|m| *m == 3), 3);
    }
    assert_eq!(me.recv_many(2), vec![1, 2]);
}
