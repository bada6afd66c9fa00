//! Logging through `tracing` (feature `tracing`): the events pcml emits, with their fields,
//! captured by a small subscriber installed as the process's global default.
//!
//! Run with `cargo test --profile ci -p pcml --features tracing --test log_tracing` (the
//! binary requires the feature).

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, Once};
use std::time::{Duration, Instant};

use pcml::actor::{self, ChildSpec, Ctx, Strategy, Supervisor};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

/// One captured event.
#[derive(Debug, Clone)]
struct Captured {
    target: String,
    level: Level,
    fields: HashMap<String, String>,
}

impl Captured {
    fn message(&self) -> &str {
        self.fields.get("message").map_or("", String::as_str)
    }
    fn field(&self, name: &str) -> Option<&str> {
        self.fields.get(name).map(String::as_str)
    }
}

static EVENTS: Mutex<Vec<Captured>> = Mutex::new(Vec::new());

struct Fields(HashMap<String, String>);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0
            .insert(field.name().to_string(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_string(), value.to_string());
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().to_string(), value.to_string());
    }
}

/// Keeps every event pcml emits.
struct Capture;

impl Subscriber for Capture {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.target().starts_with("pcml")
    }
    fn max_level_hint(&self) -> Option<tracing::level_filters::LevelFilter> {
        Some(tracing::level_filters::LevelFilter::TRACE)
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Id::from_u64(NEXT.fetch_add(1, Ordering::Relaxed))
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut fields = Fields(HashMap::new());
        event.record(&mut fields);
        EVENTS.lock().unwrap().push(Captured {
            target: event.metadata().target().to_string(),
            level: *event.metadata().level(),
            fields: fields.0,
        });
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| tracing::subscriber::set_global_default(Capture).unwrap());
}

/// Waits (up to a minute) for an event that `pred` accepts, and returns it.
fn wait_for(what: &str, pred: impl Fn(&Captured) -> bool) -> Captured {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(e) = EVENTS.lock().unwrap().iter().find(|e| pred(e)) {
            return e.clone();
        }
        assert!(Instant::now() < deadline, "no {what} event");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn of_thread(e: &Captured, id: pcml::ThreadId) -> bool {
    e.field("thread") == Some(&id.as_u64().to_string())
}

#[test]
fn spawn_and_exit_of_fibers_and_tasks() {
    install();
    let (fiber, task, named) = pcml::run(|| {
        let f = pcml::spawn(|| 1);
        let t = pcml::spawn_task(async { 2 });
        let n = pcml::SpawnBuilder::new()
            .name("logged")
            .spawn(|| 3)
            .unwrap();
        let ids = (f.id(), t.id(), n.id());
        assert_eq!(f.join().unwrap() + t.join().unwrap() + n.join().unwrap(), 6);
        ids
    });
    for (id, kind) in [(fiber, "fiber"), (task, "task"), (named, "fiber")] {
        let spawn = wait_for("spawn", |e| e.message() == "spawn" && of_thread(e, id));
        assert_eq!(spawn.target, "pcml::sched");
        assert_eq!(spawn.level, Level::TRACE);
        assert_eq!(spawn.field("kind"), Some(kind), "{spawn:?}");
        // Every spawn names its site: the caller of spawn, here.
        let site = spawn.field("site").unwrap();
        assert!(site.contains("log_tracing.rs"), "{site}");
        let exit = wait_for("exit", |e| e.message() == "exit" && of_thread(e, id));
        assert_eq!(exit.field("reason"), Some("returned"), "{exit:?}");
    }
    let spawn = wait_for("named spawn", |e| {
        e.message() == "spawn" && of_thread(e, named)
    });
    assert_eq!(spawn.field("name"), Some("logged"), "{spawn:?}");
    let site = spawn.field("site").unwrap();
    assert!(site.contains("log_tracing.rs"), "{site}");
}

#[test]
fn a_panic_is_logged_and_an_unjoined_one_as_an_error() {
    install();
    let (joined, unjoined) = pcml::run(|| {
        let j = pcml::spawn(|| -> u8 { panic!("joined boom") });
        let jid = j.id();
        assert!(j.join().unwrap_err().is_panic());
        let u = pcml::spawn(|| -> u8 { panic!("unjoined boom") });
        let uid = u.id();
        drop(u);
        // Until it has run: a fiber still unstarted when main returns is dropped unrun.
        while !EVENTS
            .lock()
            .unwrap()
            .iter()
            .any(|e| e.message() == "thread panicked and nobody joined it" && of_thread(e, uid))
        {
            pcml::time::sleep(Duration::from_millis(1));
        }
        (jid, uid)
    });
    let warn = wait_for("panic", |e| {
        e.message() == "thread panicked" && of_thread(e, joined)
    });
    assert_eq!(warn.level, Level::WARN);
    assert!(
        warn.field("report").unwrap().contains("joined boom"),
        "{warn:?}"
    );
    let exit = wait_for("exit", |e| e.message() == "exit" && of_thread(e, joined));
    assert_eq!(exit.field("reason"), Some("panicked"));
    let err = wait_for("unjoined panic", |e| {
        e.message() == "thread panicked and nobody joined it" && of_thread(e, unjoined)
    });
    assert_eq!(err.level, Level::ERROR);
    assert!(
        err.field("report").unwrap().contains("unjoined boom"),
        "{err:?}"
    );
    // Only the unjoined one is an error.
    assert!(!EVENTS.lock().unwrap().iter().any(|e| {
        e.message() == "thread panicked and nobody joined it" && of_thread(e, joined)
    }));
}

#[test]
fn an_actor_crash_is_logged_with_its_report() {
    install();
    let id = pcml::run(|| {
        let a = actor::spawn(|mut ctx: Ctx<u32>| {
            let n = ctx.receive();
            assert!(n != 7, "actor got seven");
        });
        a.send(7).unwrap();
        while a.is_alive() {
            pcml::yield_now();
        }
        a.id()
    });
    let crash = wait_for("actor crash", |e| {
        e.message() == "actor crashed" && e.field("actor") == Some(&id.as_u64().to_string())
    });
    assert_eq!(crash.target, "pcml::actor");
    assert_eq!(crash.level, Level::ERROR);
    assert!(
        crash.field("reason").unwrap().starts_with("panicked"),
        "{crash:?}"
    );
    assert!(
        crash.field("report").unwrap().contains("actor got seven"),
        "{crash:?}"
    );
    assert_eq!(crash.field("observed"), Some("false"));
}

/// For the supervised children that register as `name`: waits for the first one, sends it
/// `ok` and then `culprit` (which makes it crash), and waits until the supervisor has
/// restarted it (a new actor holds the name, so the crash was logged). Returns the first
/// child's id.
fn crash_and_wait_for_restart(
    name: &str,
    ok: (u32, &'static str),
    culprit: (u32, &'static str),
) -> actor::ActorId {
    let first = loop {
        if let Some(p) = actor::whereis::<(u32, &'static str)>(name) {
            break p;
        }
        pcml::yield_now();
    };
    first.send(ok).unwrap();
    first.send(culprit).unwrap();
    while actor::whereis::<(u32, &'static str)>(name).is_none_or(|p| p.id() == first.id()) {
        pcml::time::sleep(Duration::from_millis(1));
    }
    first.id()
}

#[test]
fn a_supervised_crash_carries_the_last_message() {
    install();
    let first = pcml::run(|| {
        let sup = Supervisor::new(Strategy::OneForOne)
            .child(ChildSpec::new("log-last-message", || {
                actor::spawn(|mut ctx: Ctx<(u32, &'static str)>| {
                    ctx.report_last_message(true);
                    actor::register("log-last-message", &ctx.pid()).unwrap();
                    loop {
                        let (n, _) = ctx.receive();
                        assert!(n < 3, "too big");
                    }
                })
            }))
            .start();
        let first =
            crash_and_wait_for_restart("log-last-message", (1, "small"), (7, "the culprit"));
        drop(sup);
        first
    });
    let crash = wait_for("actor crash", |e| {
        e.message() == "actor crashed" && e.field("actor") == Some(&first.as_u64().to_string())
    });
    assert_eq!(crash.field("observed"), Some("true"), "{crash:?}");
    assert!(
        crash.field("report").unwrap().contains("too big"),
        "{crash:?}"
    );
    assert_eq!(
        crash.field("last_message"),
        Some("(7, \"the culprit\")"),
        "{crash:?}"
    );
}

/// A child spec that asks for the last message (`ChildSpec::with_last_message`): the
/// child's crash event carries it, also when the child receives with `receive_any`.
#[test]
fn a_child_spec_asks_for_the_last_message() {
    install();
    let first = pcml::run(|| {
        let sup = Supervisor::new(Strategy::OneForOne)
            .child(ChildSpec::with_last_message("log-spec-last", || {
                actor::spawn(|mut ctx: Ctx<(u32, &'static str)>| {
                    actor::register("log-spec-last", &ctx.pid()).unwrap();
                    loop {
                        if let actor::Received::Msg((n, _)) = ctx.receive_any() {
                            assert!(n < 3, "too big");
                        }
                    }
                })
            }))
            .start();
        let first = crash_and_wait_for_restart("log-spec-last", (2, "small"), (9, "from the spec"));
        drop(sup);
        first
    });
    let crash = wait_for("actor crash", |e| {
        e.message() == "actor crashed" && e.field("actor") == Some(&first.as_u64().to_string())
    });
    assert_eq!(crash.field("observed"), Some("true"), "{crash:?}");
    assert_eq!(
        crash.field("last_message"),
        Some("(9, \"from the spec\")"),
        "{crash:?}"
    );
}

#[test]
fn an_async_actor_keeps_its_last_message_cut_to_a_thousand_bytes() {
    install();
    let id = pcml::run(|| {
        let a = actor::spawn_async(|mut ctx: Ctx<String>| async move {
            ctx.report_last_message(true);
            loop {
                let m = ctx.recv().await;
                assert!(m.len() < 100, "too long");
            }
        });
        a.send("short".to_string()).unwrap();
        a.send("x".repeat(5000)).unwrap();
        while a.is_alive() {
            pcml::time::sleep(Duration::from_millis(1));
        }
        a.id()
    });
    let crash = wait_for("actor crash", |e| {
        e.message() == "actor crashed" && e.field("actor") == Some(&id.as_u64().to_string())
    });
    let last = crash.field("last_message").unwrap();
    assert!(last.starts_with("\"xxx"), "{last}");
    assert!(last.ends_with("x..."), "{last}");
    assert_eq!(last.len(), 1003, "{last}");
}

#[test]
fn supervisor_restarts_and_giving_up_are_logged() {
    install();
    let sup = pcml::run(|| {
        let sup = Supervisor::new(Strategy::OneForOne)
            .intensity(2, Duration::from_secs(60))
            .child(ChildSpec::new("log-crasher", || {
                actor::spawn(|mut ctx: Ctx<u32>| {
                    actor::register("log-crasher", &ctx.pid()).unwrap();
                    let _ = ctx.receive();
                    panic!("crasher crashed");
                })
            }))
            .start();
        let id = sup.id();
        // Crash the child until the supervisor gives up (the third crash in a minute).
        while sup.is_alive() {
            if let Some(c) = actor::whereis::<u32>("log-crasher") {
                let _ = c.send(0);
            }
            pcml::yield_now();
        }
        id
    });
    let sup_id = sup.as_u64().to_string();
    let restarts: Vec<_> = EVENTS
        .lock()
        .unwrap()
        .iter()
        .filter(|e| e.message() == "child restarted" && e.field("supervisor") == Some(&sup_id))
        .cloned()
        .collect();
    assert_eq!(restarts.len(), 2, "{restarts:?}");
    for (i, r) in restarts.iter().enumerate() {
        assert_eq!(r.level, Level::INFO);
        assert_eq!(r.field("child"), Some("log-crasher"));
        assert_eq!(r.field("restarts"), Some(&*(i + 1).to_string()));
        assert!(
            r.field("reason").unwrap().contains("crasher crashed"),
            "{r:?}"
        );
    }
    let gave_up = wait_for("give up", |e| {
        e.message() == "supervisor gave up" && e.field("supervisor") == Some(&sup_id)
    });
    assert_eq!(gave_up.level, Level::ERROR);
    assert_eq!(gave_up.field("max_restarts"), Some("2"));
    assert_eq!(gave_up.field("child"), Some("log-crasher"));
    // The children's panics are crashes too, observed (the supervisor is linked to them).
    let crashes = EVENTS
        .lock()
        .unwrap()
        .iter()
        .filter(|e| {
            e.message() == "actor crashed"
                && e.field("report")
                    .is_some_and(|r| r.contains("crasher crashed"))
        })
        .count();
    assert_eq!(crashes, 3);
}

#[test]
fn a_deadlock_is_logged_with_its_dump() {
    install();
    let rt = pcml::Runtime::builder().procs(1).build().unwrap();
    let r = rt.block_on(|| {
        let ch = pcml::Chan::<u8>::new();
        pcml::SpawnBuilder::new()
            .name("log-stuck")
            .spawn(move || ch.recv())
            .unwrap()
            .join()
            .unwrap()
    });
    assert!(
        matches!(r, Err(pcml::RuntimeError::Deadlock { .. })),
        "{r:?}"
    );
    let Err(pcml::RuntimeError::Deadlock { blocked, dump, .. }) = r else {
        unreachable!()
    };
    // Other tests' runtimes may deadlock in parallel: this one's event carries this dump.
    let dump = dump.to_string();
    let d = wait_for("deadlock", |e| {
        e.message() == "deadlock" && e.field("dump") == Some(&*dump)
    });
    assert_eq!(d.target, "pcml::sched");
    assert_eq!(d.level, Level::ERROR);
    assert_eq!(d.field("blocked"), Some(&*blocked.to_string()), "{d:?}");
}
