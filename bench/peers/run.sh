#!/usr/bin/env bash
# Run one built peer program and print its RESULT line (see README.md).
#
# Usage: run.sh PEER PROGRAM N [PROCS] [BRANCH | REPS]
#   PEER     go | cml | erlang
#   PROGRAM  spawn | pingpong | parpingpong | primes | skynet, or (erlang only) seed 000's
#            skynet-paper | bombing1 | bombing2 | bitonic, or (go only) workerpool
#   N        the count (skynet: the number of leaves; skynet-paper: the depth; bombing: the
#            messages; bitonic: the numbers)
#   PROCS    go: GOMAXPROCS; erlang: schedulers (+S PROCS); cml: must be 1 (it has one proc).
#            Omitted: the peer's default (go: GOMAXPROCS from the environment or all cores;
#            erlang: one scheduler per core).
#   BRANCH   skynet only: children per node (default 10)
#   REPS     skynet-paper, bombing1, bombing2, bitonic (required): timed runs to average
#
# Environment: SML_RTS_FLAGS, for cml only, adds SML/NJ run-time options before the program's
# arguments, e.g. SML_RTS_FLAGS=@SMLalloc=4M (a larger allocation arena; skynet's million
# live threads are GC-bound with the default). Unset by default: the peers run as installed.
#
# Exit status: the program's (0 check ok, 1 check FAIL, 2 bad arguments), or 3 when the peer
# has not been built (run build.sh; a peer whose toolchain is absent is never built).
set -u
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
TARGET="$HERE/target"

usage() {
    echo "usage: run.sh (go|cml|erlang) (spawn|pingpong|parpingpong|primes|skynet) N [PROCS] [BRANCH]" >&2
    echo "       run.sh erlang (skynet-paper|bombing1|bombing2|bitonic) N PROCS REPS" >&2
    echo "       run.sh go workerpool N [PROCS]" >&2
    exit 2
}

[ $# -ge 3 ] && [ $# -le 5 ] || usage
PEER="$1"; PROGRAM="$2"; N="$3"; PROCS="${4:-}"; BRANCH="${5:-}"

case "$PROGRAM" in
    spawn|pingpong|parpingpong|primes) [ -z "$BRANCH" ] || usage ;;
    skynet-paper|bombing1|bombing2|bitonic) [ -n "$BRANCH" ] || usage ;;
    workerpool) [ "$PEER" = go ] && [ -z "$BRANCH" ] || usage ;;
    skynet) ;;
    *) usage ;;
esac
case "$N" in ''|*[!0-9]*) usage ;; esac
case "$PROCS" in *[!0-9]*) usage ;; esac
case "$BRANCH" in *[!0-9]*) usage ;; esac

ARGS=("$PROGRAM" "$N")
[ -n "$BRANCH" ] && ARGS+=("$BRANCH")

not_built() {
    echo "run.sh: $PEER: not built ($1); run $HERE/build.sh" >&2
    exit 3
}

case "$PEER" in
    go)
        [ -x "$TARGET/go/peers" ] || not_built "no $TARGET/go/peers"
        if [ -n "$PROCS" ]; then
            export GOMAXPROCS="$PROCS"
        fi
        exec "$TARGET/go/peers" "${ARGS[@]}"
        ;;
    cml)
        if [ -n "$PROCS" ] && [ "$PROCS" != 1 ]; then
            echo "run.sh: cml: SML/NJ CML runs on one proc only (PROCS=$PROCS)" >&2
            exit 2
        fi
        heap=""
        for f in "$TARGET"/cml/peers.*-*; do
            [ -f "$f" ] && heap="$f"
        done
        [ -n "$heap" ] || not_built "no heap image $TARGET/cml/peers.<arch>-<os>"
        SML="$(command -v sml || echo "${SMLNJ_HOME:-/usr/lib/smlnj}/bin/sml")"
        # SML_RTS_FLAGS is split into words on purpose: it may hold several @SML options.
        # shellcheck disable=SC2086
        exec "$SML" @SMLload="$heap" ${SML_RTS_FLAGS:-} "${ARGS[@]}"
        ;;
    erlang)
        [ -f "$TARGET/erlang/peers.beam" ] || not_built "no $TARGET/erlang/peers.beam"
        SCHED=()
        [ -n "$PROCS" ] && SCHED=(+S "$PROCS:$PROCS")
        # +P: room for skynet's 1.1 million processes (the default limit is 262,144).
        # ERL_CRASH_DUMP_SECONDS=0: a crash writes no erl_crash.dump into the current directory.
        ERL_CRASH_DUMP_SECONDS=0 exec erl "${SCHED[@]}" +P 4194304 -noshell \
            -pa "$TARGET/erlang" -run peers main "${ARGS[@]}"
        ;;
    *) usage ;;
esac
