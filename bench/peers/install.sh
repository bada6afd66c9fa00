#!/usr/bin/env bash
# Install the Debian peers of the benchmark suite: SML/NJ with its CML library, Erlang/OTP, and
# wrk (the HTTP load generator of the servers section).
# Go is expected to be installed already (it is not taken from Debian here).
#
# Runs as root, or through sudo when it is available. Where apt-get is missing, or where we are
# neither root nor able to sudo, it says so and exits 0: the peers are then skipped by build.sh.
set -u

if ! command -v apt-get >/dev/null 2>&1; then
    echo "install.sh: apt-get not found; skipping the Debian peers (smlnj, libcml-smlnj, erlang-nox, wrk)"
    exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
    SUDO=""
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO="sudo -n"
else
    echo "install.sh: not root and no usable sudo; skipping the Debian peers"
    exit 0
fi

PKGS="smlnj libcml-smlnj erlang-nox wrk"
export DEBIAN_FRONTEND=noninteractive
if ! $SUDO apt-get update; then
    echo "install.sh: apt-get update failed; skipping the Debian peers"
    exit 0
fi
if ! $SUDO apt-get install -y --no-install-recommends $PKGS; then
    echo "install.sh: apt-get install $PKGS failed; the peers that are missing will be skipped"
    exit 0
fi
echo "install.sh: installed $PKGS"
