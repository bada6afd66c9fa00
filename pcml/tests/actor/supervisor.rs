//! Supervisors: one_for_one and one_for_all restarts, restart kinds, intensity limits,
//! stopping, and dying with a failed parent.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use pcml::actor::{
    self, ChildInfo, ChildSpec, Ctx, ExitReason, Pid, Restart, Signal, Strategy, Supervisor,
    SupervisorMsg,
};

fn rt() -> pcml::Runtime {
    pcml::Runtime::builder().procs(2).build().unwrap()
}

/// A worker that registers `name`, counts its starts, and panics on 0.
fn worker(name: &'static str, starts: Arc<AtomicUsize>) -> ChildSpec {
    ChildSpec::new(name, move || {
        starts.fetch_add(1, Ordering::SeqCst);
        actor::spawn(move |mut ctx: Ctx<u32>| {
            actor::register(name, &ctx.pid()).unwrap();
            loop {
                let n = ctx.receive();
                assert!(n != 0, "{name} got zero");
            }
        })
    })
}

/// The pid registered as `name` that is not `old`, waiting for it to appear.
fn next_pid(name: &str, old: Option<&Pid<u32>>) -> Pid<u32> {
    loop {
        match actor::whereis::<u32>(name) {
            Some(p) if Some(&p) != old => return p,
            _ => pcml::yield_now(),
        }
    }
}

fn children(sup: &Pid<SupervisorMsg>) -> Vec<ChildInfo> {
    let mut me = Ctx::new();
    sup.send(SupervisorMsg::WhichChildren(me.pid())).unwrap();
    me.receive()
}

#[test]
fn one_for_one_restarts_only_the_failed_child() {
    rt().block_on(|| {
        let (sa, sb) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let sup = Supervisor::new(Strategy::OneForOne)
            .child(worker("sup11-a", sa.clone()))
            .child(worker("sup11-b", sb.clone()))
            .start();
        let a = next_pid("sup11-a", None);
        let b = next_pid("sup11-b", None);
        a.send(0).unwrap();
        let a2 = next_pid("sup11-a", Some(&a));
        assert!(a2.is_alive() && b.is_alive());
        assert_eq!(
            (sa.load(Ordering::SeqCst), sb.load(Ordering::SeqCst)),
            (2, 1)
        );
        let info = children(&sup);
        assert_eq!(info[0].restarts, 1);
        assert_eq!(info[1].restarts, 0);
        assert_eq!(info[1].id, Some(b.id()));
        // Stop: children are killed, the supervisor ends normally.
        let mut me = Ctx::<()>::new();
        me.monitor(&sup);
        sup.send(SupervisorMsg::Stop).unwrap();
        assert!(matches!(
            me.receive_signal(),
            Signal::Down {
                reason: ExitReason::Normal,
                ..
            }
        ));
        assert!(!a2.is_alive() && !b.is_alive());
    })
    .unwrap();
}

#[test]
fn one_for_all_restarts_every_child() {
    rt().block_on(|| {
        let (sa, sb) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let sup = Supervisor::new(Strategy::OneForAll)
            .child(worker("sup1a-a", sa.clone()))
            .child(worker("sup1a-b", sb.clone()))
            .start();
        let a = next_pid("sup1a-a", None);
        let b = next_pid("sup1a-b", None);
        b.send(0).unwrap();
        let a2 = next_pid("sup1a-a", Some(&a));
        let b2 = next_pid("sup1a-b", Some(&b));
        assert!(!a.is_alive() && !b.is_alive());
        assert!(a2.is_alive() && b2.is_alive());
        assert_eq!(
            (sa.load(Ordering::SeqCst), sb.load(Ordering::SeqCst)),
            (2, 2)
        );
        sup.send(SupervisorMsg::Stop).unwrap();
    })
    .unwrap();
}

#[test]
fn restart_kinds_decide_what_comes_back() {
    rt().block_on(|| {
        let starts = [
            Arc::new(AtomicUsize::new(0)),
            Arc::new(AtomicUsize::new(0)),
            Arc::new(AtomicUsize::new(0)),
        ];
        // Each child ends normally on 1 and panics on 0.
        let spec = |name: &'static str, n: &Arc<AtomicUsize>, r: Restart| {
            let n = n.clone();
            ChildSpec::new(name, move || {
                n.fetch_add(1, Ordering::SeqCst);
                actor::spawn(move |mut ctx: Ctx<u32>| {
                    actor::register(name, &ctx.pid()).unwrap();
                    let m = ctx.receive();
                    assert!(m != 0, "zero");
                })
            })
            .restart(r)
        };
        let sup = Supervisor::new(Strategy::OneForOne)
            .intensity(10, Duration::from_secs(60))
            .child(spec("kind-perm", &starts[0], Restart::Permanent))
            .child(spec("kind-trans", &starts[1], Restart::Transient))
            .child(spec("kind-temp", &starts[2], Restart::Temporary))
            .start();
        // Normal ends: only the permanent one comes back.
        for name in ["kind-perm", "kind-trans", "kind-temp"] {
            next_pid(name, None).send(1).unwrap();
        }
        let wait_for = |want: [usize; 3], ids: [bool; 3]| loop {
            let info = children(&sup);
            let got = [0, 1, 2].map(|i| starts[i].load(Ordering::SeqCst));
            let running = [0, 1, 2].map(|i| info[i].id.is_some());
            if got == want && running == ids {
                break;
            }
            pcml::time::sleep(Duration::from_millis(1));
        };
        wait_for([2, 1, 1], [true, false, false]);
        sup.send(SupervisorMsg::Stop).unwrap();

        // Abnormal ends: permanent and transient come back.
        for s in &starts {
            s.store(0, Ordering::SeqCst);
        }
        let sup = Supervisor::new(Strategy::OneForOne)
            .intensity(10, Duration::from_secs(60))
            .child(spec("kind-perm2", &starts[0], Restart::Permanent))
            .child(spec("kind-trans2", &starts[1], Restart::Transient))
            .child(spec("kind-temp2", &starts[2], Restart::Temporary))
            .start();
        for name in ["kind-perm2", "kind-trans2", "kind-temp2"] {
            next_pid(name, None).send(0).unwrap();
        }
        loop {
            let info = children(&sup);
            let got = [0, 1, 2].map(|i| starts[i].load(Ordering::SeqCst));
            let running = [0, 1, 2].map(|i| info[i].id.is_some());
            if got == [2, 2, 1] && running == [true, true, false] {
                break;
            }
            pcml::time::sleep(Duration::from_millis(1));
        }
        sup.send(SupervisorMsg::Stop).unwrap();
    })
    .unwrap();
}

/// More failures than the intensity allows: the supervisor kills its children and fails.
#[test]
fn the_supervisor_gives_up_past_its_intensity() {
    rt().block_on(|| {
        let starts = Arc::new(AtomicUsize::new(0));
        let mut me = Ctx::<()>::new();
        let sup = Supervisor::new(Strategy::OneForOne)
            .intensity(2, Duration::from_secs(60))
            .child(worker("sup-give-up", starts.clone()))
            .start();
        me.monitor(&sup);
        let mut old: Option<Pid<u32>> = None;
        for _ in 0..3 {
            let p = next_pid("sup-give-up", old.as_ref());
            p.send(0).unwrap();
            old = Some(p);
        }
        match me.receive_signal() {
            Signal::Down {
                reason: ExitReason::Killed(why),
                ..
            } => assert!(why.contains("gave up"), "{why}"),
            s => panic!("unexpected {s:?}"),
        }
        // 1 start + 2 restarts; the third failure ended it.
        assert_eq!(starts.load(Ordering::SeqCst), 3);
        assert_eq!(actor::whereis::<u32>("sup-give-up"), None);
    })
    .unwrap();
}

/// A supervisor linked to a parent that fails takes its children down and fails too.
#[test]
fn a_supervisor_dies_with_its_parent() {
    rt().block_on(|| {
        let mut me = Ctx::<()>::new();
        let starts = Arc::new(AtomicUsize::new(0));
        let s = starts.clone();
        let (parent, _) = me.spawn_monitor(move |mut ctx: Ctx<u8>| {
            ctx.trap_exits(true);
            let _sup = Supervisor::new(Strategy::OneForOne)
                .child(worker("sup-parent-child", s))
                .start_link(&ctx);
            ctx.receive();
            panic!("parent fails");
        });
        let child = next_pid("sup-parent-child", None);
        let mref = me.monitor(&child);
        parent.send(0).unwrap();
        let mut seen = 0;
        while seen < 2 {
            if let Signal::Down {
                monitor, reason, ..
            } = me.receive_signal()
            {
                if monitor == mref {
                    assert!(matches!(reason, ExitReason::Killed(_)), "{reason:?}");
                }
                seen += 1;
            }
        }
        pcml::time::sleep(Duration::from_millis(2));
        assert_eq!(starts.load(Ordering::SeqCst), 1);
    })
    .unwrap();
}

/// Async children and many restarts: every crash is followed by exactly one restart.
#[test]
fn many_restarts_of_async_children() {
    rt().block_on(|| {
        let starts = Arc::new(AtomicUsize::new(0));
        let s = starts.clone();
        let sup = Supervisor::new(Strategy::OneForOne)
            .intensity(1_000, Duration::from_secs(600))
            .child(ChildSpec::new("sup-async", move || {
                s.fetch_add(1, Ordering::SeqCst);
                actor::spawn_async(|mut ctx: Ctx<u32>| async move {
                    actor::register("sup-async", &ctx.pid()).unwrap();
                    let n = ctx.recv().await;
                    assert!(n != 0, "zero");
                })
            }))
            .start();
        let mut old = None;
        for _ in 0..200 {
            let p = next_pid("sup-async", old.as_ref());
            p.send(0).unwrap();
            old = Some(p);
        }
        next_pid("sup-async", old.as_ref());
        assert_eq!(starts.load(Ordering::SeqCst), 201);
        assert_eq!(children(&sup)[0].restarts, 200);
        sup.send(SupervisorMsg::Stop).unwrap();
    })
    .unwrap();
}

/// A transient child that ends normally at once is not restarted: it is linked before it
/// starts, so its real reason reaches the supervisor (not "no such actor").
#[test]
fn an_instantly_finished_transient_child_stays_finished() {
    rt().block_on(|| {
        for _ in 0..50 {
            let starts = Arc::new(AtomicUsize::new(0));
            let s = starts.clone();
            let sup = Supervisor::new(Strategy::OneForOne)
                .child(
                    ChildSpec::new("instant", move || {
                        s.fetch_add(1, Ordering::SeqCst);
                        actor::spawn_async(|_: Ctx<()>| async {})
                    })
                    .restart(Restart::Transient),
                )
                .start();
            while children(&sup)[0].id.is_some() {
                pcml::yield_now();
            }
            // Give a wrong restart time to happen.
            pcml::time::sleep(Duration::from_millis(1));
            assert_eq!(starts.load(Ordering::SeqCst), 1);
            sup.send(SupervisorMsg::Stop).unwrap();
        }
    })
    .unwrap();
}

/// Other actors a start function spawns are not the supervisor's children: their failures
/// neither restart the child nor end the supervisor.
#[test]
fn helpers_spawned_by_a_start_function_are_not_supervised() {
    rt().block_on(|| {
        let starts = Arc::new(AtomicUsize::new(0));
        let s = starts.clone();
        let mut me = Ctx::<()>::new();
        let sup = Supervisor::new(Strategy::OneForOne)
            .intensity(0, Duration::from_secs(60))
            .child(ChildSpec::new("with-helper", move || {
                s.fetch_add(1, Ordering::SeqCst);
                let helper = actor::spawn(|mut c: Ctx<()>| {
                    c.receive();
                    panic!("helper fails");
                });
                let h = helper.clone();
                actor::spawn(move |mut c: Ctx<u32>| {
                    actor::register("with-helper", &c.pid()).unwrap();
                    h.send(()).unwrap();
                    c.receive();
                })
            }))
            .start();
        me.monitor(&sup);
        next_pid("with-helper", None);
        pcml::time::sleep(Duration::from_millis(5));
        assert_eq!(starts.load(Ordering::SeqCst), 1);
        assert_eq!(me.try_receive_signal(), None, "the supervisor is alive");
        sup.send(SupervisorMsg::Stop).unwrap();
        assert!(matches!(
            me.receive_signal(),
            Signal::Down {
                reason: ExitReason::Normal,
                ..
            }
        ));
    })
    .unwrap();
}
