//! Untyped (Erlang-like) actors: `AnyMsg` mailboxes received by type, signals as messages.

use pcml::actor::{self, AnyMsg, Ctx, ExitReason, Signal};

#[test]
fn receive_by_type_leaves_other_types_in_order() {
    let mut me = Ctx::<AnyMsg>::new();
    let pid = me.pid();
    pid.send_any(1u8).unwrap();
    pid.send_any("a").unwrap();
    pid.send_any(2u8).unwrap();
    pid.send_any("b").unwrap();
    pid.send_any(3u16).unwrap();
    assert_eq!(me.receive_type::<&str>(), "a");
    assert_eq!(me.receive_type::<u16>(), 3);
    assert_eq!(me.receive_type::<u8>(), 1);
    assert_eq!(me.receive_type::<&str>(), "b");
    assert_eq!(me.receive_type::<u8>(), 2);
    assert!(me.is_empty());
}

#[test]
fn untyped_actors_get_signals_as_messages() {
    pcml::Runtime::builder()
        .procs(2)
        .build()
        .unwrap()
        .block_on(|| {
            let mut me = Ctx::<AnyMsg>::new();
            me.trap_exits(true);
            let child = me.spawn_link(|mut c: Ctx<AnyMsg>| {
                let why: String = c.receive_type();
                panic!("{why}");
            });
            let (watched, mref) = me.spawn_monitor_async(|mut c: Ctx<AnyMsg>| async move {
                let _: () = c.recv_type().await;
            });
            me.pid().send_any(0u32).unwrap();
            child.send_any(String::from("told to")).unwrap();
            watched.send_any(()).unwrap();
            let mut got = Vec::new();
            for _ in 0..2 {
                got.push(me.receive_type::<Signal>());
            }
            assert!(got.contains(&Signal::Exit {
                from: child.id(),
                reason: ExitReason::Panic("told to".into())
            }));
            assert!(got.contains(&Signal::Down {
                monitor: mref,
                actor: watched.id(),
                reason: ExitReason::Normal
            }));
            assert_eq!(me.receive_type::<u32>(), 0);
        })
        .unwrap();
}

#[test]
fn a_dead_untyped_actor_gives_the_value_back_unboxed() {
    let pid = Ctx::<AnyMsg>::new().pid();
    assert_eq!(
        pid.send_any(vec![1, 2]).unwrap_err().into_inner(),
        vec![1, 2]
    );
    let _ = actor::whereis::<AnyMsg>("untyped-nobody");
}
