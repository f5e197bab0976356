#!/bin/sh
# release-one-turn.sh -- make check-release, for one release build: the tiny
# host (tests/release/one_turn_host.c, built for ARCH) loads BUILD_DIR's
# dirigent.so and has it decide one turn. arm64 on another machine runs
# under qemu-user (qemu-aarch64 with / as the library root: the arm64
# libraries come from Debian's multiarch packages, sh scripts/deps.sh
# --release arm64).
#
#   sh scripts/release-one-turn.sh BUILD_DIR ARCH
set -eu
B=${1:?usage: release-one-turn.sh BUILD_DIR ARCH}
ARCH=${2:?usage: release-one-turn.sh BUILD_DIR ARCH}
case $(uname -m) in x86_64) HERE=x64 ;; aarch64) HERE=arm64 ;; *) HERE=$(uname -m) ;; esac
RUN=""
if [ "$ARCH" != "$HERE" ]; then
    case $ARCH in
    arm64) RUN="qemu-aarch64 -L /" ;;
    *) echo "release-one-turn: cannot run $ARCH on $HERE" >&2; exit 1 ;;
    esac
    command -v qemu-aarch64 >/dev/null 2>&1 ||
        { echo "release-one-turn: qemu-aarch64 is missing: sh scripts/deps.sh --release arm64" >&2; exit 1; }
fi
WORK=$(mktemp -d "${TMPDIR:-/tmp}/dirigent-one-turn.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
echo "release-one-turn: $ARCH${RUN:+ under $RUN}"
# shellcheck disable=SC2086
env -u LD_LIBRARY_PATH -u DIRIGENT_STORE_URL -u DIRIGENT_MODERATOR_TOKEN \
    $RUN "$B/one-turn-host" "$B/dirigent.so" "$WORK" 2>"$WORK/log" ||
    { cat "$WORK/log" >&2; echo "release-one-turn: FAILED ($ARCH)" >&2; exit 1; }
