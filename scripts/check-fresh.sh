#!/bin/sh
# check-fresh.sh -- make check-fresh: the README's quick start on a machine
# that has never seen the project. A clean clone of one commit is put into a
# fresh copy of a Debian 12 (bookworm) root that holds nothing but a minimal
# Debian with make and a C compiler, and the README's two commands run there
# exactly as written (`make demo`, then `make check`), then
# `make demo PLATFORM=slack`. Whatever a test needs beyond that must be
# installed by those commands themselves (make deps), or the check fails.
#
#   sh scripts/check-fresh.sh [REF]     REF: a commit of this repository
#                                       (default HEAD; a clean clone of it,
#                                       so uncommitted changes are not seen)
#
# Needs root (debootstrap, chroot, mounts in a private mount namespace:
# nothing stays mounted) and the network to Debian's archive (debootstrap
# once; make deps inside the root every run). The base root is made once
# with debootstrap into $DIRIGENT_FRESH_ROOT (default
# $HOME/.cache/dirigent-chroot/bookworm-fresh) and copied for every run, so
# what the commands install never stays for the next run. The run's log is
# kept in the copy's folder, printed at the end; the copy is removed on
# success (DIRIGENT_FRESH_KEEP=1 keeps it).
set -eu
REF=${1:-HEAD}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BASE=${DIRIGENT_FRESH_ROOT:-$HOME/.cache/dirigent-chroot/bookworm-fresh}
# A bare Debian 12 with make and a compiler: nothing of the build's own list.
BASE_PKGS="make gcc libc6-dev"
start=$(date +%s)

fail() {
    echo "check-fresh: FAILED: $*" >&2
    exit 1
}
[ "$(id -u)" -eq 0 ] || fail "needs root (debootstrap, chroot, mount)"
unshare -m true 2>/dev/null || fail "cannot make a private mount namespace (unshare -m): a container without CAP_SYS_ADMIN cannot run this check"
commit=$(git -C "$ROOT" rev-parse --verify "$REF^{commit}" 2>/dev/null) ||
    fail "$REF is not a commit of $ROOT"

# ---- the base root, once -----------------------------------------------------------
if [ ! -f "$BASE/.dirigent-fresh" ] || [ "$(cat "$BASE/.dirigent-fresh")" != "$BASE_PKGS" ]; then
    command -v debootstrap >/dev/null 2>&1 ||
        fail "debootstrap is needed once to make the root (sh scripts/deps.sh --fresh)"
    echo "check-fresh: making a Debian 12 minbase root with $BASE_PKGS in $BASE (once, a minute or two)"
    rm -rf "$BASE"
    mkdir -p "$(dirname "$BASE")"
    debootstrap --variant=minbase bookworm "$BASE" http://deb.debian.org/debian >"$BASE.log" 2>&1 ||
        fail "debootstrap failed (network? see $BASE.log)"
    # Services are not started inside a root (as in Debian's container
    # images): postgresql's package would otherwise try to start its own.
    printf '#!/bin/sh\nexit 101\n' >"$BASE/usr/sbin/policy-rc.d"
    chmod 755 "$BASE/usr/sbin/policy-rc.d"
    cp /etc/resolv.conf "$BASE/etc/resolv.conf"
    { chroot "$BASE" apt-get update -qq &&
        chroot "$BASE" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $BASE_PKGS &&
        chroot "$BASE" apt-get clean && rm -rf "$BASE/var/lib/apt/lists/"*; } >>"$BASE.log" 2>&1 ||
        fail "installing $BASE_PKGS into the root failed (see $BASE.log)"
    echo "$BASE_PKGS" >"$BASE/.dirigent-fresh"
fi

# ---- a fresh copy and a clean clone --------------------------------------------------
WORK=$(mktemp -d "${TMPDIR:-/var/tmp}/dirigent-check-fresh.XXXXXX")
R=$WORK/root
LOG=$WORK/run.log
cp -a "$BASE" "$R"
cp /etc/resolv.conf "$R/etc/resolv.conf"
# What the root must not have, or the check proves nothing: none of the
# build's libraries, no test framework, no PostgreSQL, no curl.
for p in libjansson-dev libsqlite3-dev libcurl4-openssl-dev libmicrohttpd-dev check libpq-dev \
         postgresql pkg-config curl git; do
    if chroot "$R" dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q 'ok installed'; then
        fail "the base root has $p; it is meant to start without it (rm -rf $BASE)"
    fi
done
# A clone of the commit alone (no remotes, no other branches): the root has
# no git, so it is made here and copied in.
git clone -q --no-checkout "$ROOT" "$R/src" || fail "git clone of $ROOT failed"
git -C "$R/src" checkout -q "$commit" || fail "checkout of $commit failed"
rm -rf "$R/src/.git"

# ---- the README's commands, exactly as written -----------------------------------------
# The commands the README's quick start gives, so that a README that
# changes them changes this check too.
for s in "make demo" "make check"; do
    grep -qF "$s" "$R/src/README.md" || fail "README.md no longer says '$s'; this check runs what it says"
done
cat >"$R/quick-start.sh" <<'EOF'
#!/bin/sh
# Run inside the fresh root, from the clone.
set -e
cd /src
for step in "make demo" "make check" "make demo PLATFORM=slack"; do
    echo "check-fresh: \$ $step"
    t=$(date +%s)
    $step </dev/null
    echo "check-fresh: $step: passed in $(( $(date +%s) - t )) s"
done
EOF
echo "check-fresh: $commit in $R ($(( $(date +%s) - start )) s to prepare)"
# A private mount namespace: /proc, /sys, /dev, a tmpfs on /dev/shm and
# /tmp, all gone when it ends. The environment is a new login's.
status=0
unshare -m sh -c '
    set -e
    R=$1
    mount --make-rprivate /
    # The root a mount point of its own, as on a machine or in a container:
    # tests that unshare and remount from "/" need it.
    mount --bind "$R" "$R"
    mount -t proc proc "$R/proc"
    mount --rbind /sys "$R/sys"
    mount --rbind /dev "$R/dev"
    mount -t tmpfs tmpfs "$R/dev/shm"
    mount -t tmpfs -o size=4g tmpfs "$R/tmp"
    exec chroot "$R" env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin sh /quick-start.sh
' check-fresh "$R" >"$LOG" 2>&1 || status=$?
grep '^check-fresh: ' "$LOG" || true
if [ "$status" -ne 0 ]; then
    echo "check-fresh: the last 40 lines of $LOG:" >&2
    tail -n 40 "$LOG" >&2
    fail "a quick-start command failed in the fresh root (exit $status); the root is kept in $R"
fi
grep -E '^[0-9]+%: Checks: ' "$LOG" | tail -n 1
[ "${DIRIGENT_FRESH_KEEP:-}" = 1 ] || rm -rf "$WORK"
echo "check-fresh: OK: make demo, make check and make demo PLATFORM=slack passed in a fresh Debian 12 root ($(( $(date +%s) - start )) s)"
