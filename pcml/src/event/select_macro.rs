//! `select!` and `select_biased!`: a choice written as arms whose bodies run in the caller's
//! scope.
//!
//! # Implementation
//! The macro never puts a body into an event. Each arm's event is wrapped with a variant of an
//! enum the macro declares in a block of its own (one variant, and one type parameter, per
//! arm, so the arms' value types are inferred), the choice of those events is synchronized
//! (or polled, with a `default` arm) once, and a `match` on the variant runs the arm's body
//! with its pattern bound. So bodies may borrow and mutate locals, `break`, `continue` and
//! `return`, and the only choice implementation is [`choose`](crate::event::choose)'s (or
//! [`choose_biased`](crate::event::choose_biased)'s). A wrapper is a plain function (the
//! variant's constructor): nothing is allocated for it and nothing is boxed as `Any`.
//!
//! Parsing is a token muncher: `__select_parse!` turns each arm into `((event) (pattern)
//! {body})` and the `default` arm into `[(poll) {body}]` or `[(timeout (d)) {body}]`;
//! `__select_gen!` gives each arm a variant name from a fixed list (macros cannot make new
//! identifiers), which bounds a `select!` to 32 arms.

/// Waits for the first of several operations and runs its arm, as crossbeam-channel's and
/// Go's `select`: a [`choose`](crate::event::choose) whose arms' bodies run in the caller's
/// scope, so they may borrow and mutate local variables, `break`, `continue` and `return`.
///
/// Arms (each body is a block, with or without a comma after it, as in a `match`, or an
/// expression followed by a comma):
/// - `recv(r) -> v => body`: receive from `r` (anything with a `recv_evt()` method: a
///   [`Chan`](crate::chan::Chan), a [`Mailbox`](crate::mailbox::Mailbox), a
///   [`BoundedChan`](crate::bounded::BoundedChan), ...), binding the message to the
///   pattern `v`;
/// - `send(s, msg) -> res => body`: send `msg` on `s` (anything with a `send_evt(msg)`
///   method), binding what the send event yields to `res`;
/// - `pattern = event => body`: any [`Event`](crate::event::Event), e.g. a
///   [`timeout_evt`](crate::time::timeout_evt), a join, a nack or a `choose` of its own;
///   (time as a channel works in `recv` arms: [`time::after`](crate::time::after),
///   [`time::tick`](crate::time::tick));
/// - `default => body`: at most one; makes the `select!` a poll: if no other arm is enabled
///   now, run `body` instead of waiting;
/// - `default(d) => body`: at most one, instead of `default`: wait at most the
///   [`Duration`](std::time::Duration) `d`, then run `body`.
///
/// When several arms are enabled each is equally likely to run, whatever its position and
/// whatever the readiness of the others ([`select_biased!`](macro@crate::select_biased) prefers the
/// first). Patterns must be irrefutable (they bind the arm's value). The messages of `send`
/// arms that lose are dropped, as a losing `send_evt` drops its message. A `select!` with no
/// arm but `default(d)` sleeps for `d`; with no arm at all it blocks forever.
///
/// `select!` synchronizes, so it blocks the calling fiber or OS thread: in async code, use
/// [`select_async!`](macro@crate::select_async), which `.await`s. It takes at most 32 arms.
///
/// # Examples
/// A loop that counts what two producers send, stopping when both are done, with no `'static`
/// closure in sight:
/// ```
/// use pcml::Chan;
///
/// pcml::run(|| {
///     let (nums, words, done) = (Chan::new(), Chan::new(), Chan::new());
///     let (n, d1) = (nums.clone(), done.clone());
///     pcml::spawn(move || { (1..=3).for_each(|i| n.send(i)); d1.send(()) });
///     let (w, d2) = (words.clone(), done.clone());
///     pcml::spawn(move || { w.send("hi"); d2.send(()) });
///
///     let (mut total, mut seen, mut finished) = (0, Vec::new(), 0);
///     while finished < 2 {
///         pcml::select! {
///             recv(nums) -> x => total += x,
///             recv(words) -> s => seen.push(s),
///             recv(done) -> () => finished += 1,
///         }
///     }
///     assert_eq!((total, seen), (6, vec!["hi"]));
/// });
/// ```
///
/// A `default` arm polls; a timeout arm bounds the wait; any event can be an arm:
/// ```
/// use std::time::Duration;
/// use pcml::Chan;
///
/// let ch = Chan::<u32>::new();
/// let got = pcml::select! {
///     recv(ch) -> v => Some(v),
///     default => None,
/// };
/// assert_eq!(got, None);
///
/// let mut log = Vec::new();
/// pcml::select! {
///     recv(ch) -> v => log.push(format!("got {v}")),
///     default(Duration::from_millis(5)) => log.push("timed out".to_string()),
/// }
/// assert_eq!(log, ["timed out"]);
///
/// let out = pcml::select! {
///     v = pcml::always(40).wrap(|x| x + 2) => v,
///     s = ch.send_evt(1) => unreachable!("nobody receives: {s:?}"),
/// };
/// assert_eq!(out, 42);
/// ```
#[macro_export]
macro_rules! select {
    ($($arms:tt)*) => {
        $crate::__select_parse!((sync $crate::event::choose) [] [] $($arms)*)
    };
}

/// [`select!`](macro@crate::select) that prefers its first arms: when several are enabled, the
/// first of them in the order written runs (the `default(d)` timeout counts as the last). It
/// is built on [`choose_biased`](crate::event::choose_biased); use it for priorities, such as
/// a stop signal before more work.
///
/// ```
/// use pcml::event::always;
///
/// let (stop, work) = (pcml::Chan::<()>::new(), pcml::Mailbox::new());
/// work.send(1);
/// work.send(2);
/// let _ = stop.try_send(()); // nobody is receiving: the stop is not sent
/// let mut done = Vec::new();
/// loop {
///     pcml::select_biased! {
///         recv(stop) -> () => break,
///         recv(work) -> job => done.push(job),
///         default => break,
///     }
/// }
/// assert_eq!(done, [1, 2]);
/// assert_eq!(pcml::select_biased! { a = always('a') => a, b = always('b') => b }, 'a');
/// ```
#[macro_export]
macro_rules! select_biased {
    ($($arms:tt)*) => {
        $crate::__select_parse!((sync $crate::event::choose_biased) [] [] $($arms)*)
    };
}

/// [`select!`](macro@crate::select) for async code: the same arms, but the choice is
/// `.await`ed, so it suspends the task instead of blocking its thread. It works in pcml tasks
/// and in any executor, and dropping the future it is part of cancels it (every arm loses). A
/// `default` arm polls, as in `select!`; `default(d)` waits at most `d`.
///
/// ```
/// use std::time::Duration;
///
/// pcml::run(|| {
///     let (tx, rx) = pcml::chan::channel();
///     pcml::spawn(move || (1..=3).for_each(|i| tx.send(i).unwrap()));
///     let total = pcml::spawn_task(async move {
///         let mut total = 0;
///         loop {
///             pcml::select_async! {
///                 recv(rx) -> v => match v {
///                     Ok(v) => total += v,
///                     Err(_) => break total, // the sender is gone
///                 },
///                 default(Duration::from_secs(60)) => panic!("stuck"),
///             }
///         }
///     });
///     assert_eq!(total.join().unwrap(), 6);
/// });
/// ```
#[macro_export]
macro_rules! select_async {
    ($($arms:tt)*) => {
        $crate::__select_parse!((await $crate::event::choose) [] [] $($arms)*)
    };
}

/// [`select_biased!`](macro@crate::select_biased) for async code, as
/// [`select_async!`](macro@crate::select_async).
///
/// ```
/// let v = pcml::run(|| {
///     pcml::spawn_task(async {
///         pcml::select_biased_async! {
///             a = pcml::always(1) => a,
///             b = pcml::always(2) => b,
///         }
///     })
///     .join()
///     .unwrap()
/// });
/// assert_eq!(v, 1);
/// ```
#[macro_export]
macro_rules! select_biased_async {
    ($($arms:tt)*) => {
        $crate::__select_parse!((await $crate::event::choose_biased) [] [] $($arms)*)
    };
}

/// Parses the arms of `select!` (module docs). Not public API.
#[doc(hidden)]
#[macro_export]
macro_rules! __select_parse {
    // Every arm parsed.
    ($choose:tt [$($arms:tt)*] $default:tt) => {
        $crate::__select_gen!($choose [$($arms)*] $default [] [
            __A0 __A1 __A2 __A3 __A4 __A5 __A6 __A7 __A8 __A9 __A10 __A11 __A12 __A13 __A14 __A15
            __A16 __A17 __A18 __A19 __A20 __A21 __A22 __A23 __A24 __A25 __A26 __A27 __A28 __A29
            __A30 __A31
        ])
    };

    // An arm's body: a block (with an optional comma), or an expression and a comma, or a
    // last expression. The block's comma is a rule of its own: `$body:block $(,)? $($rest:tt)*`
    // is ambiguous to macro_rules (the comma fits both `$(,)?` and `$rest`), so a block
    // followed by a comma did not compile.
    (@body $choose:tt [$($arms:tt)*] $default:tt $ev:tt $p:tt $body:block, $($rest:tt)*) => {
        $crate::__select_parse!($choose [$($arms)* ($ev $p $body)] $default $($rest)*)
    };
    (@body $choose:tt [$($arms:tt)*] $default:tt $ev:tt $p:tt $body:block $($rest:tt)*) => {
        $crate::__select_parse!($choose [$($arms)* ($ev $p $body)] $default $($rest)*)
    };
    (@body $choose:tt [$($arms:tt)*] $default:tt $ev:tt $p:tt $body:expr, $($rest:tt)*) => {
        $crate::__select_parse!($choose [$($arms)* ($ev $p { $body })] $default $($rest)*)
    };
    (@body $choose:tt [$($arms:tt)*] $default:tt $ev:tt $p:tt $body:expr) => {
        $crate::__select_parse!($choose [$($arms)* ($ev $p { $body })] $default)
    };
    (@body $($rest:tt)*) => {
        ::core::compile_error!("pcml::select!: expected the arm's body after `=>`")
    };

    // The default arm's body.
    (@default $choose:tt $arms:tt $kind:tt $body:block, $($rest:tt)*) => {
        $crate::__select_parse!($choose $arms [$kind $body] $($rest)*)
    };
    (@default $choose:tt $arms:tt $kind:tt $body:block $($rest:tt)*) => {
        $crate::__select_parse!($choose $arms [$kind $body] $($rest)*)
    };
    (@default $choose:tt $arms:tt $kind:tt $body:expr, $($rest:tt)*) => {
        $crate::__select_parse!($choose $arms [$kind { $body }] $($rest)*)
    };
    (@default $choose:tt $arms:tt $kind:tt $body:expr) => {
        $crate::__select_parse!($choose $arms [$kind { $body }])
    };
    (@default $($rest:tt)*) => {
        ::core::compile_error!("pcml::select!: expected the default arm's body after `=>`")
    };

    // recv(r) -> pattern => body
    ($choose:tt $arms:tt $default:tt recv($r:expr $(,)?) -> $p:pat => $($rest:tt)*) => {
        $crate::__select_parse!(@body $choose $arms $default (($r).recv_evt()) ($p) $($rest)*)
    };
    // send(s, msg) -> pattern => body
    ($choose:tt $arms:tt $default:tt send($s:expr, $m:expr $(,)?) -> $p:pat => $($rest:tt)*) => {
        $crate::__select_parse!(@body $choose $arms $default (($s).send_evt($m)) ($p) $($rest)*)
    };
    ($choose:tt $arms:tt $default:tt recv $($rest:tt)*) => {
        ::core::compile_error!("pcml::select!: a receive arm is `recv(r) -> pattern => body`")
    };
    ($choose:tt $arms:tt $default:tt send $($rest:tt)*) => {
        ::core::compile_error!("pcml::select!: a send arm is `send(s, msg) -> pattern => body`")
    };
    // default(d) => body, default => body
    ($choose:tt $arms:tt [] default($d:expr $(,)?) => $($rest:tt)*) => {
        $crate::__select_parse!(@default $choose $arms (timeout ($d)) $($rest)*)
    };
    ($choose:tt $arms:tt [] default => $($rest:tt)*) => {
        $crate::__select_parse!(@default $choose $arms (poll) $($rest)*)
    };
    ($choose:tt $arms:tt [$($d:tt)+] default $($rest:tt)*) => {
        ::core::compile_error!("pcml::select!: at most one `default` or `default(timeout)` arm")
    };
    ($choose:tt $arms:tt $default:tt default $($rest:tt)*) => {
        ::core::compile_error!(
            "pcml::select!: a default arm is `default => body` or `default(timeout) => body`"
        )
    };
    // pattern = event => body
    ($choose:tt $arms:tt $default:tt $p:pat = $ev:expr => $($rest:tt)*) => {
        $crate::__select_parse!(@body $choose $arms $default ($ev) ($p) $($rest)*)
    };
    ($choose:tt $arms:tt $default:tt $($rest:tt)+) => {
        ::core::compile_error!(
            "pcml::select!: expected an arm: `recv(r) -> v => body`, `send(s, msg) -> res => body`, \
             `pattern = event => body`, `default => body` or `default(timeout) => body`"
        )
    };
}

/// Generates the code of a parsed `select!` (module docs). Not public API.
#[doc(hidden)]
#[macro_export]
macro_rules! __select_gen {
    // Give the next arm a variant name.
    ($choose:tt [$arm:tt $($arms:tt)*] $default:tt [$($named:tt)*] [$name:ident $($names:ident)*]) => {
        $crate::__select_gen!($choose [$($arms)*] $default [$($named)* ($name $arm)] [$($names)*])
    };
    ($choose:tt [$arm:tt $($arms:tt)*] $default:tt $named:tt []) => {
        ::core::compile_error!(
            "pcml::select!: at most 32 arms; for more, synchronize a `choose` of wrapped events"
        )
    };

    // No arm but a default: nothing to choose from.
    ($choose:tt [] [] [] $names:tt) => {
        match $crate::__select_one!($choose $crate::event::never::<::core::convert::Infallible>()) {}
    };
    ($choose:tt [] [(poll) $dbody:block] [] $names:tt) => {
        $dbody
    };
    ($choose:tt [] [(timeout ($d:expr)) $dbody:block] [] $names:tt) => {{
        $crate::__select_one!($choose $crate::time::timeout_evt($d));
        $dbody
    }};

    // No default arm: wait.
    ($choose:tt [] [] [$(($name:ident (($ev:expr) ($p:pat) $body:block)))*] $names:tt) => {{
        #[allow(non_camel_case_types)]
        enum __PcmlSelectArm<$($name),*> { $($name($name)),* }
        match $crate::__select_one!($choose $crate::__select_choice!($choose [
            $($crate::event::Event::wrap($ev, __PcmlSelectArm::$name)),*
        ])) {
            $(__PcmlSelectArm::$name($p) => $body)*
        }
    }};

    // `default`: poll.
    ($choose:tt [] [(poll) $dbody:block] [$(($name:ident (($ev:expr) ($p:pat) $body:block)))*] $names:tt) => {{
        #[allow(non_camel_case_types)]
        enum __PcmlSelectArm<$($name),*> { $($name($name)),* }
        match $crate::event::Event::poll($crate::__select_choice!($choose [
            $($crate::event::Event::wrap($ev, __PcmlSelectArm::$name)),*
        ])) {
            ::core::option::Option::Some(__pcml_arm) => match __pcml_arm {
                $(__PcmlSelectArm::$name($p) => $body)*
            },
            ::core::option::Option::None => $dbody,
        }
    }};

    // `default(d)`: wait at most `d`.
    ($choose:tt [] [(timeout ($d:expr)) $dbody:block] [$(($name:ident (($ev:expr) ($p:pat) $body:block)))*] $names:tt) => {{
        #[allow(non_camel_case_types)]
        enum __PcmlSelectArm<$($name),*> { $($name($name),)* __PcmlTimedOut }
        match $crate::__select_one!($choose $crate::__select_choice!($choose [
            $($crate::event::Event::wrap($ev, __PcmlSelectArm::$name),)*
            $crate::event::Event::wrap($crate::time::timeout_evt($d), |()| __PcmlSelectArm::__PcmlTimedOut),
        ])) {
            $(__PcmlSelectArm::$name($p) => $body)*
            __PcmlSelectArm::__PcmlTimedOut => $dbody,
        }
    }};
}

/// Synchronizes one event, by `sync` or by `.await` as the `select!` variant says. Not public
/// API.
#[doc(hidden)]
#[macro_export]
macro_rules! __select_one {
    ((sync $($choose:tt)*) $ev:expr) => {
        $crate::event::Event::sync($ev)
    };
    ((await $($choose:tt)*) $ev:expr) => {
        ::core::future::IntoFuture::into_future($ev).await
    };
}

/// The choice of a `select!`'s wrapped events, fair or biased as its variant says. Not public
/// API.
#[doc(hidden)]
#[macro_export]
macro_rules! __select_choice {
    (($mode:ident $($choose:tt)*) [$($evs:tt)*]) => {
        $($choose)*([$($evs)*])
    };
}
