//! Calls a registered Erlang process and waits for its answer with a timeout.
//!
//! ```text
//! erl -name erl@127.0.0.1 -setcookie secret
//! cargo run --release -p pcml-dist --example dist_call -- caller@127.0.0.1 secret erl@127.0.0.1
//! ```
//!
//! The called process is `rex`, the `gen_server` behind Erlang's `rpc`, asked for
//! `erlang:system_info(otp_release)`: the call is `gen_server:call({rex, Node}, ...)` made
//! from pcml ([`Node::call`](pcml_dist::Node::call)), and gives up after 5 seconds.

use std::time::Duration;

use pcml::actor::Ctx;
use pcml_dist::NodeBuilder;
use pcml_dist::term::{FromTerm, IntoTerm, Term, atom, format, tuple};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [name, cookie, server] = &args[..] else {
        eprintln!(
            "usage: dist_call NAME COOKIE ERLANG_NODE   (e.g. caller@127.0.0.1 secret erl@127.0.0.1)"
        );
        std::process::exit(2);
    };
    let (name, cookie, server) = (name.clone(), cookie.clone(), server.clone());
    let code = pcml::run(move || {
        let node = match NodeBuilder::new(&name).cookie(&cookie).start() {
            Ok(n) => n,
            Err(e) => {
                eprintln!("dist_call: {e}");
                return 1;
            }
        };
        let mut me = Ctx::<Term>::new();
        // rex's request: {call, Module, Function, Args, GroupLeader}; our pid is the group
        // leader (any output of the call would come to us).
        let request = tuple(vec![
            atom("call"),
            atom("erlang"),
            atom("system_info"),
            vec![atom("otp_release")].into_term(),
            node.erl_pid(&me.pid()).into_term(),
        ]);
        match node.call(&mut me, &server, "rex", request, Duration::from_secs(5)) {
            Ok(reply) => {
                // A charlist, as Erlang strings are.
                let release = String::from_term(reply.clone()).unwrap_or_else(|_| format(&reply));
                println!("{server} runs OTP {release}");
                0
            }
            Err(e) => {
                eprintln!("dist_call: calling rex on {server}: {e}");
                1
            }
        }
    });
    std::process::exit(code);
}
