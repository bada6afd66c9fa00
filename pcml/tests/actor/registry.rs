//! The actor registry: names, lookups by type, sending by name, and races.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use pcml::actor::{self, Ctx, RegistryError};

fn rt() -> pcml::Runtime {
    pcml::Runtime::builder().procs(2).build().unwrap()
}

#[test]
fn register_lookup_send_and_unregister() {
    let mut me = Ctx::<u32>::new();
    actor::register("reg-basic", &me.pid()).unwrap();
    assert_eq!(actor::whereis::<u32>("reg-basic"), Some(me.pid()));
    match actor::register("reg-basic", &Ctx::<u32>::new().pid()) {
        Err(RegistryError::Taken { holder, .. }) => assert_eq!(holder, me.id()),
        other => panic!("expected Taken, got {other:?}"),
    }
    actor::send_named("reg-basic", 5u32).unwrap();
    assert_eq!(me.receive(), 5);
    assert!(actor::unregister("reg-basic"));
    assert_eq!(actor::whereis::<u32>("reg-basic"), None);
    let err = actor::send_named("reg-basic", 6u32).unwrap_err();
    assert!(matches!(
        err.reason,
        Some(RegistryError::NotRegistered { .. })
    ));
    assert_eq!(err.into_inner(), 6);
    // The name is free again.
    actor::register("reg-basic", &me.pid()).unwrap();
    actor::unregister("reg-basic");
}

#[test]
fn a_lookup_with_the_wrong_type_is_an_error() {
    let me = Ctx::<String>::new();
    actor::register("reg-type", &me.pid()).unwrap();
    match actor::try_whereis::<u64>("reg-type") {
        Err(RegistryError::WrongType {
            expected, actual, ..
        }) => {
            assert_eq!(expected, "u64");
            assert!(actual.contains("String"));
        }
        other => panic!("expected WrongType, got {other:?}"),
    }
    let err = actor::send_named("reg-type", 1u64).unwrap_err();
    assert!(matches!(err.reason, Some(RegistryError::WrongType { .. })));
    let panicked = std::panic::catch_unwind(|| actor::whereis::<u64>("reg-type"));
    assert!(panicked.is_err());
    assert!(actor::try_whereis::<String>("reg-type").is_ok());
    actor::unregister("reg-type");
}

#[test]
fn names_are_freed_when_their_actor_ends() {
    rt().block_on(|| {
        let mut me = Ctx::<()>::new();
        let (pid, _) = me.spawn_monitor(|mut ctx: Ctx<u8>| {
            actor::register("reg-dies", &ctx.pid()).unwrap();
            ctx.receive();
            panic!("bye");
        });
        while actor::whereis::<u8>("reg-dies").is_none() {
            pcml::yield_now();
        }
        pid.send(0).unwrap();
        me.receive_signal();
        // Freed before the monitor heard of the death.
        assert_eq!(actor::whereis::<u8>("reg-dies"), None);
        assert!(matches!(
            actor::register("reg-dies", &pid),
            Err(RegistryError::Dead { .. })
        ));
    })
    .unwrap();
}

/// Many actors race to register one name: exactly one wins each round, and lookups always
/// see a live winner or nothing.
#[test]
fn registry_races_have_one_winner() {
    const ROUNDS: usize = 50;
    const RACERS: usize = 16;
    rt().block_on(|| {
        for round in 0..ROUNDS {
            let name = format!("reg-race-{round}");
            let wins = Arc::new(AtomicUsize::new(0));
            let mut me = Ctx::<bool>::new();
            let mut pids = Vec::new();
            for _ in 0..RACERS {
                let (name, wins, reply) = (name.clone(), wins.clone(), me.pid());
                pids.push(actor::spawn(move |mut ctx: Ctx<()>| {
                    let won = actor::register(&name, &ctx.pid()).is_ok();
                    if won {
                        wins.fetch_add(1, Ordering::Relaxed);
                    }
                    reply.send(won).unwrap();
                    ctx.receive();
                }));
            }
            let winners = me.recv_many(RACERS).into_iter().filter(|&w| w).count();
            assert_eq!(winners, 1);
            assert_eq!(wins.load(Ordering::Relaxed), 1);
            let holder = actor::whereis::<()>(&name).expect("the winner holds the name");
            assert!(pids.contains(&holder));
            // End them all; the name goes with the winner.
            for p in &pids {
                p.send(()).unwrap();
            }
            while pids.iter().any(|p| p.is_alive()) {
                pcml::yield_now();
            }
            assert_eq!(actor::whereis::<()>(&name), None);
        }
    })
    .unwrap();
}

/// Registering while the actor dies, and re-registering a freed name at once, from many
/// threads: the table never holds a dead actor's name after its death is observed.
#[test]
fn register_races_death() {
    rt().block_on(|| {
        let mut me = Ctx::<()>::new();
        for i in 0..200 {
            let name = format!("reg-death-{}", i % 4);
            let (pid, _) = me.spawn_monitor(|_: Ctx<u8>| {});
            let _ = actor::register(&name, &pid); // may find it dead
            me.receive_signal();
            assert_eq!(
                actor::whereis::<u8>(&name),
                None,
                "{name} outlived its actor"
            );
        }
    })
    .unwrap();
}
