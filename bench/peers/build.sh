#!/usr/bin/env bash
# Build the peer programs into bench/peers/target/ (gitignored):
#   target/go/peers                  Go, one binary; GOMAXPROCS from the environment
#   target/cml/peers.<arch>-<os>     SML/NJ heap image, run as `sml @SMLload=<image> ...`
#   target/erlang/peers.beam         Erlang module, run as `erl ... -run peers main ...`
#
# Usage: build.sh [go] [cml] [erlang]     (no argument: all three)
#
# A peer whose toolchain is absent is skipped with a message; that is not an error (exit 0).
# A peer whose toolchain is present but whose build fails makes the script exit 1.
set -u
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
TARGET="$HERE/target"
SMLNJ_HOME="${SMLNJ_HOME:-/usr/lib/smlnj}"
export SMLNJ_HOME

peers=("$@")
[ ${#peers[@]} -eq 0 ] && peers=(go cml erlang)

failed=0

build_go() {
    if ! command -v go >/dev/null 2>&1; then
        echo "build.sh: go: skipped (no go toolchain on PATH)"
        return 0
    fi
    mkdir -p "$TARGET/go"
    # GOTOOLCHAIN=local: use the installed toolchain, never fetch another one.
    if (cd "$HERE/go" && GOTOOLCHAIN=local CGO_ENABLED=0 go build -trimpath -o "$TARGET/go/peers" .); then
        echo "build.sh: go: built $TARGET/go/peers ($(go version | cut -d' ' -f3))"
    else
        echo "build.sh: go: build FAILED" >&2
        return 1
    fi
}

build_cml() {
    local mlbuild
    if command -v ml-build >/dev/null 2>&1; then
        mlbuild="$(command -v ml-build)"
    elif [ -x "$SMLNJ_HOME/bin/ml-build" ]; then
        mlbuild="$SMLNJ_HOME/bin/ml-build"
    else
        echo "build.sh: cml: skipped (ml-build not found; install smlnj and libcml-smlnj: install.sh)"
        return 0
    fi
    if [ ! -d "$SMLNJ_HOME/lib/cml" ]; then
        echo "build.sh: cml: skipped (no CML library in $SMLNJ_HOME/lib/cml; install libcml-smlnj: install.sh)"
        return 0
    fi
    # ml-build writes its .cm/ caches beside the sources: build from a copy inside target/.
    local src="$TARGET/cml/src"
    rm -rf "$src" && mkdir -p "$src"
    cp "$HERE/cml/peers.cm" "$HERE/cml/peers.sml" "$src/"
    rm -f "$TARGET"/cml/peers.*-*
    if (cd "$src" && "$mlbuild" peers.cm PeerBench.main "$TARGET/cml/peers") >"$TARGET/cml/build.log" 2>&1 \
        && ls "$TARGET"/cml/peers.*-* >/dev/null 2>&1; then
        echo "build.sh: cml: built $(ls "$TARGET"/cml/peers.*-*)"
    else
        cat "$TARGET/cml/build.log" >&2
        echo "build.sh: cml: build FAILED (log: $TARGET/cml/build.log)" >&2
        return 1
    fi
}

build_erlang() {
    if ! command -v erlc >/dev/null 2>&1; then
        echo "build.sh: erlang: skipped (erlc not found; install erlang-nox: install.sh)"
        return 0
    fi
    mkdir -p "$TARGET/erlang"
    if erlc -Wall -o "$TARGET/erlang" "$HERE/erlang/peers.erl"; then
        echo "build.sh: erlang: built $TARGET/erlang/peers.beam"
    else
        echo "build.sh: erlang: build FAILED" >&2
        return 1
    fi
}

for p in "${peers[@]}"; do
    case "$p" in
        go) build_go || failed=1 ;;
        cml) build_cml || failed=1 ;;
        erlang) build_erlang || failed=1 ;;
        *) echo "build.sh: unknown peer '$p' (expected go, cml or erlang)" >&2; failed=1 ;;
    esac
done
exit $failed
