//! A pcml node with an `echo` actor that Erlang processes can call.
//!
//! ```text
//! cargo run --release -p pcml-dist --example dist_echo -- echo@127.0.0.1 secret
//! erl -name e@127.0.0.1 -setcookie secret
//! 1> {echo, 'echo@127.0.0.1'} ! {self(), hello}, flush().
//! Shell got {echo,hello}
//! 2> {echo, 'echo@127.0.0.1'} ! stop.
//! ```
//!
//! `echo` answers `{Pid, Term}` with `{echo, Term}` sent to `Pid`, and ends with reason
//! `normal` on the atom `stop`; the program then stops the node and exits. EPMD is found as
//! `erl` finds it (`ERL_EPMD_PORT`, else 4369), and started if none runs.

use pcml::actor::{Ctx, Signal};
use pcml_dist::NodeBuilder;
use pcml_dist::term::{ErlPid, FromTerm, Term, atom, is_atom, tuple};

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(name), Some(cookie)) = (args.next(), args.next()) else {
        eprintln!("usage: dist_echo NAME COOKIE   (NAME as alive@host, or alive for this host)");
        std::process::exit(2);
    };
    pcml::run(move || {
        let node = match NodeBuilder::new(&name).cookie(&cookie).start() {
            Ok(n) => n,
            Err(e) => {
                eprintln!("dist_echo: {e}");
                std::process::exit(1);
            }
        };
        let mut me = Ctx::<()>::new();
        let n = node.clone();
        let (echo, _) = me.spawn_monitor(move |mut ctx: Ctx<Term>| {
            loop {
                let t = ctx.receive();
                if is_atom(&t, "stop") {
                    return; // reason normal
                }
                match <(ErlPid, Term)>::from_term(t) {
                    Ok((from, msg)) => {
                        if let Ok(reply) = n.pid_of::<Term>(&from) {
                            let _ = reply.send(tuple(vec![atom("echo"), msg]));
                        }
                    }
                    Err(e) => eprintln!("echo: ignored a message: {e}"),
                }
            }
        });
        node.register("echo", &echo).expect("the name echo is free");
        println!(
            "{} ready: {{echo, '{}'}} ! {{self(), Term}}",
            node.name(),
            node.name()
        );
        if let Signal::Down { reason, .. } = me.receive_signal() {
            println!("echo ended: {reason}");
        }
        // Give the proxies a moment to tell Erlang monitors and links of echo's end.
        pcml::time::sleep(std::time::Duration::from_millis(200));
        node.stop();
    });
}
